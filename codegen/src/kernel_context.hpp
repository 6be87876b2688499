#pragma once
// The kernel-building context (KernelContext): what every strategy's emitter is given, and
// the text its writers share. Built by the planner's passes.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda_names.hpp"
#include "expr_emitter.hpp"
#include "fuseflow/codegen/plan.hpp"
#include "policy.hpp"
#include "scalar_epilogue.hpp"

namespace fuseflow::codegen {

// What plan() gives every pass, once, after classify: the program, its text for the
// kernels' header comments, the scalar slots of its reductions, the tuning policies (the
// caller's options applied) and the target.
struct PlanContext {
  const Program& program;
  std::string program_text;
  std::vector<Type> slot_types;          // type of every scalar slot
  std::map<const OpNode*, int> slot_of;  // slot of every reduction
  const Policies& policies;              // the target's tuning, the caller's options applied
  const Target& target;
};

// What a kernel reads besides its own roles: the program inputs, parameters and scalar
// slots (earlier reductions' results) its expressions use, in program order.
// A segmented reduction's per-segment results that a kernel reads through ff::broadcast
// (the broadcast strategy): argument seg<op> (op: its number in the program's ops), a
// scratch buffer or, when the result is program output `output`, that output.
struct BroadcastRead {
  const OpNode* op = nullptr;
  int op_index = 0;
  Type type;
  int output = -1;
};

struct Leaves {
  std::vector<Expr> inputs;
  std::vector<int> input_ids;  // their program input numbers
  std::vector<Expr> params;
  std::vector<int> param_ids;
  std::vector<int> scalars_read;
  std::vector<Expr> tables;     // inputs read at computed positions (gather, shift), in program order
  std::vector<int> table_ids;
  bool checked_gather = false;  // a checked gather sets the gather_invalid flag
  std::vector<BroadcastRead> broadcasts;  // appended after the tables (elementwise_args)
};

// One reduction inside a fused kernel.
struct FusedReduce {
  std::shared_ptr<const OpNode> op;
  Expr value;       // element value, filter results substituted
  Expr mask;        // bool per element (filter -> reduce), or empty
  int output_slot;  // scalar slot the result goes to
};

// The offsets of a segmented op (segmented_reduce, segmented_scan): the inputs they read,
// their input domain (their own length) and the index of their offsets_invalid flag
// (Plan::checked_offsets).
struct SegmentOffsets {
  Leaves leaves;
  int domain = 0;
  int check = 0;
};

// The one kernel-building context: what every strategy's applies, emit and schedule are
// given (strategy.hpp). The plan-wide data, then the group of nodes the strategy's kernels
// fuse, by role; a role the family does not have stays empty. The writers
// (ReduceKernelWriter, ScanKernelWriter, the element-wise helpers) are helpers over it.
struct KernelContext {
  const PlanContext* plan = nullptr;
  // The op the kernels are built around (a scan, filter, histogram, segmented op, counting
  // sort or reduce_by_key); empty for reductions and the element-wise map.
  std::shared_ptr<const OpNode> op;
  Expr value;  // the op's element value, filter results substituted (scan, filter)
  Expr mask;   // bool per element: a scan's (a dropped element is the identity), a filter's keep
  std::vector<FusedReduce> reduces;  // the reduce kernel's reductions, or those folded into a scan
  // The program outputs the kernels write: a map's, a scan's (the scan or maps of it, its
  // epilogues), a compaction's (the filter's result or maps of it), an array op's.
  std::vector<Expr> outputs;
  std::vector<int> output_ids;  // their program output numbers
  Leaves leaves;                // what the kernels read
  std::optional<SegmentOffsets> offsets;  // a segmented op's, by offsets
  std::vector<SegmentOffsets> more_offsets;  // a broadcast map's offsets after the first (broadcast.cpp)
  Leaves key_leaves;                      // counting_sort: what its keys alone read
  std::vector<ScalarEpilogue> epilogues;  // a reduce kernel's: computed in store(total) after the final combine
  Expr key;  // a histogram's bin, filter results substituted (an i64 -1, dropped, where their mask is false)
  // A scan's: the reductions folded in read its element (index() among a filter's
  // survivors, the scan's count of those before), so they fold after the scan.
  bool folds_scanned = false;

  const Policies& policies() const { return plan->policies; }
  const Target& target() const { return plan->target; }
  const std::string& program_text() const { return plan->program_text; }
  const Type& slot_type(int slot) const { return plan->slot_types.at(static_cast<std::size_t>(slot)); }
  int slot_of(const OpNode* reduction) const { return plan->slot_of.at(reduction); }
};

// The text shared by every reduce strategy: header comment, tuple structs, the
// accumulator type, the combine and element lambdas, and the final combine.
class ReduceKernelWriter {
 public:
  // How block results leave the kernel: the last block combines block partials
  // (partials + ticket arguments), each block writes its partial (partials only), or the
  // kernel writes the outputs itself (atomics: neither).
  enum class Partials : std::uint8_t { LastBlockCombines, PerBlock, None };
  ReduceKernelWriter(const KernelContext& g, std::string kernel_name, Partials partials = Partials::LastBlockCombines);

  const Type& acc_type() const { return acc_type_; }
  std::string acc() { return types_.name(acc_type_); }
  CudaTypes& types() { return types_; }

  // Kernel parameters in order; the launch passes them the same way.
  std::vector<Arg> args() const;
  // "extern "C" __global__ void NAME(params) {" — opens the body.
  void open_kernel(SourceWriter& w, int block);
  // Defines `identity`, `combine` and `element(...)` inside the kernel body.
  void emit_functions(SourceWriter& w) {
    emit_combine(w);
    emit_element(w);
  }
  // `identity` and `combine` alone (kernels that read accumulators, not inputs).
  void emit_combine(SourceWriter& w);
  // Reads of earlier results, then `element(...)`.
  void emit_element(SourceWriter& w);
  // The output stores for `total` (an accumulator), one per fused reduction.
  void emit_output_stores(SourceWriter& w, const std::string& total);
  // The call of `element` for element index `index_expr`, reading input j as
  // `load(j)`, e.g. "element(in_x[i], i)".
  std::string element_call(const std::vector<std::string>& input_values, const std::string& index_expr) const;
  // The same, reading every input at `index`: "element(in_x[i], in_y[i], i)".
  std::string element_at(const std::string& index) const;
  // `store(total)`: the output stores of an accumulator, for the device library's reduce
  // templates (<fuseflow/reduce.cuh>).
  void emit_store(SourceWriter& w);
  // The input pointers in the order `element` takes them: "in_x, in_y" (input_list), and
  // each after ", " (input_pointers, to follow other arguments).
  std::string input_list() const;
  std::string input_pointers() const { return input_names_.empty() ? "" : ", " + input_list(); }

  // The body of a kernel that reads the inputs: `constants` (emit_constants), the
  // signature, identity, combine, element and store, then `call`, the device library's
  // algorithm (<fuseflow/reduce.cuh>) over them.
  std::string body(int block, const std::vector<std::string>& constants, const std::string& call);
  // A spec of this kernel: its name, args, strategy, block and source ("strategy: " +
  // summary, then `body`); the caller fills in the rest.
  KernelSpec spec(Strategy strategy, int block, const std::string& summary, const std::string& body);

  // The full file: header comment + the device library header `include` + structs + body.
  std::string assemble(const std::string& strategy_comment, const std::string& body,
                       const std::string& include = "collectives.cuh");

  std::string input_name(std::size_t j) const { return input_names_[j]; }
  const KernelContext& group() const { return g_; }
  const std::string& name() const { return name_; }

 private:
  const KernelContext& g_;
  std::string name_;
  Partials partials_;
  CudaTypes types_;
  Type acc_type_;
  std::vector<std::string> input_names_;
};

// The arguments of an element-wise kernel's leaves (map, histogram, compaction), in
// order: the inputs (in_<name>, each input's C name, unique after sanitizing, appended to
// `names`), n, the parameters (p_<name>) and the scalar results read (s<slot>).
std::vector<Arg> elementwise_args(const KernelContext& g, std::vector<std::string>& names);
// The arguments of the tables the kernel's gathers and shifts read (tab_<name> and its
// length tab_<name>_n, see ExprEmitter) and, with a checked gather, its flag
// gather_invalid: appended by every kernel's argument list after the parameters.
void append_table_args(std::vector<Arg>& args, const Leaves& l);
// A leaf of an element-wise expression as an element-wise kernel spells it: input j as
// inputs[j], the index as i, a parameter as p_<name>, a reduction's result as r<slot>, a
// broadcast of segmented reduction q (the context's offsets, one input) as
// seg<q>[ff::rows::segment_of(off_<name>, offsets_count - 1, i)] (<fuseflow/rows.cuh>).
// `what` names the expression in the error for any other leaf.
std::string elementwise_leaf(const KernelContext& g, const std::vector<std::string>& inputs, const Expr& leaf,
                             const std::string& what);

// A kernel's complete source: the header comment (its name, the program, the strategy and
// its constants), `includes` (device library headers such as "compact.cuh"), the tuple
// structs of `types`, then `body`.
std::string kernel_source(const std::string& name, const std::string& program_text, const std::string& strategy,
                          const std::vector<std::string>& includes, const CudaTypes& types, const std::string& body);

// A kernel parameter's declaration: inputs and reduction results as const pointers, n and
// parameters by value, outputs and scratch as pointers to their type, tickets and flags
// as unsigned int*, the look-back status as void*, its epoch as unsigned int.
std::string arg_declaration(CudaTypes& types, const Arg& a);
// The parameter list after "name(": one declaration per line, then ") {", indented.
void emit_kernel_parameters(SourceWriter& w, CudaTypes& types, const std::vector<Arg>& args);
// The arguments of a look-back kernel's tile ids and status (scan.cuh): the tile counter
// (Ticket 1), the status of values of `status_type` and the launch's epoch.
std::vector<Arg> lookback_args(const Type& status_type);

// The kernel's compile-time constants: `lines` inside an anonymous namespace, then a blank
// line.
void emit_constants(SourceWriter& w, const std::vector<std::string>& lines);

// Opens an element-wise kernel (map, histogram, compaction): the signature from `args`
// (inputs and reduction results as const pointers, n, parameters by value, outputs and
// scratch as pointers), then the reads of the reductions' results the maps use, as
// r<slot>. With `min_blocks`, __launch_bounds__ asks for that many resident blocks per SM.
void open_elementwise_kernel(SourceWriter& w, CudaTypes& types, const std::string& name, int block,
                             const std::vector<Arg>& args, const KernelContext& g, int min_blocks = 0);

// ---- planner passes shared by the planning files --------------------------------------

// A node with its filter results substituted (see resolve_filters).
struct ResolvedFilters {
  Expr expr;                    // the node, each filter result replaced by the filter's values
  std::vector<Expr> conjuncts;  // the predicates of those filters (substituted), in order
  bool filtered = false;        // a filter result was replaced below it
};
using FilterMemo = std::map<const ExprNode*, ResolvedFilters>;

// Replaces each filter result in `e` by the filter's values, and ands the filters'
// predicates (also substituted) onto `mask`: reduce(filter(x, p)) == masked reduce.
// GraphError for an array result that is not a filter's, and for index() in a map of a
// filter's result (it would mean the position among the survivors).
Expr resolve_filters(const Expr& e, Expr& mask, FilterMemo& memo);

// The leaves (inputs, parameters and scalar slots, in program order) of the expressions a
// kernel evaluates.
Leaves leaves_in(const PlanContext& c, const std::vector<Expr>& exprs);
// A context of `c` with no roles yet.
KernelContext context_in(const PlanContext& c);

// The arguments of `e` that it reads element by element: all but a gather's table.
std::vector<Expr> table_free_args(const Expr& e);
// Fills the leaves' tables (the inputs `exprs` read at computed positions: gather tables
// and shifted arrays, in program order) and whether a checked gather is among them.
void fill_tables(Leaves& g, const Program& p, const std::vector<Expr>& exprs);
// Before the other passes: the domain of every input read only as a gather's table (one
// of its own, as its length is its own: Plan::input_domain), and the flag of checked
// gathers (Plan::checked_offsets[kGatherFlag], a null op) when the program has one.
void plan_tables(const Program& p, Plan& plan);

std::string sanitize(const std::string& name);  // a C identifier from a user's name
std::string reduce_kernel_name(const KernelContext& g, const char* strategy);
// Elements per vector load: 16 bytes of the widest input, when every input is a scalar
// (1 otherwise, or with no inputs).
int vector_load_width(const KernelContext& g);
// `identity` and `combine` for reductions fused into one accumulator of type `acc` (field
// j for reduction j when there are several): combine(a, b) with a covering lower indices.
void emit_fused_monoid(SourceWriter& w, CudaTypes& types, const std::vector<FusedReduce>& reduces,
                       const std::string& acc, const std::string& identity, const std::string& combine);

// Strategy emitters.
KernelSpec emit_reduce_chunked(const KernelContext& g);
KernelSpec emit_reduce_staged(const KernelContext& g);
// Tree: kernel 0 reduces kBlock-element blocks of the input, kernel 1 reduces blocks of
// partials; the schedule repeats kernel 1 until one value is left.
std::vector<KernelSpec> emit_reduce_tree(const KernelContext& g);
// Atomic: kernel 0 writes the identity, kernel 1 adds every element with an atomic.
std::vector<KernelSpec> emit_reduce_atomic(const KernelContext& g);
// The element-wise kernel of the array outputs g.outputs.
KernelSpec emit_map(const KernelContext& g);

}  // namespace fuseflow::codegen
