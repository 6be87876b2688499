#pragma once
// What an emitter is given: the ops fused into one kernel, the program-level leaves they
// read, and the target. Built by the planner; shared by every strategy's emitter.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda_names.hpp"
#include "expr_emitter.hpp"
#include "fuseflow/codegen/plan.hpp"
#include "policy.hpp"

namespace fuseflow::codegen {

// What every pass that builds kernels is given (plan() makes one, after classify): the
// program, its text for the kernels' header comments, the scalar slots of its reductions,
// and the tuning policies.
struct PlanContext {
  const Program& program;
  std::string program_text;
  std::vector<Type> slot_types;          // type of every scalar slot
  std::map<const OpNode*, int> slot_of;  // slot of every reduction
  const Policies& policies;              // the target's tuning, the caller's options applied
};

// One reduction inside a fused reduce kernel.
struct FusedReduce {
  std::shared_ptr<const OpNode> op;
  Expr value;       // element value, filter results substituted
  Expr mask;        // bool per element (filter -> reduce), or empty
  int output_slot;  // scalar slot the result goes to
};

struct ReduceGroup {
  std::vector<FusedReduce> reduces;
  std::vector<Expr> inputs;  // the program inputs read, in program order
  std::vector<int> input_ids;
  std::vector<Expr> params;  // parameters used
  std::vector<int> param_ids;
  std::vector<int> scalars_read;  // slots of earlier reductions used by the maps
  std::vector<Expr> tables;       // inputs read at computed positions (gather, shift), in program order
  std::vector<int> table_ids;
  bool checked_gather = false;    // a checked gather sets the gather_invalid flag
  std::vector<Type> slot_types;   // type of every slot of the program
  std::map<const OpNode*, int> slot_of;  // the slot of every reduction of the program
  Strategy strategy = Strategy::Automatic;
  std::string program_text;  // to_string of the program, for the header comment
};

// The text shared by every reduce strategy: header comment, tuple structs, the
// accumulator type, the combine and element lambdas, and the final combine.
class ReduceKernelWriter {
 public:
  // How block results leave the kernel: the last block combines block partials
  // (partials + ticket arguments), each block writes its partial (partials only), or the
  // kernel writes the outputs itself (atomics: neither).
  enum class Partials : std::uint8_t { LastBlockCombines, PerBlock, None };
  ReduceKernelWriter(const ReduceGroup& g, std::string kernel_name, Partials partials = Partials::LastBlockCombines);

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

  // The full file: header comment + the device library header `include` + structs + body.
  std::string assemble(const std::string& strategy_comment, const std::string& body,
                       const std::string& include = "collectives.cuh");

  std::string input_name(std::size_t j) const { return input_names_[j]; }
  const ReduceGroup& group() const { return g_; }
  const std::string& name() const { return name_; }

 private:
  const ReduceGroup& g_;
  std::string name_;
  Partials partials_;
  CudaTypes types_;
  Type acc_type_;
  std::vector<std::string> input_names_;
};

// The arguments of an element-wise kernel's leaves (map, histogram, compaction), in
// order: the inputs (in_<name>, each input's C name, unique after sanitizing, appended to
// `names`), n, the parameters (p_<name>) and the scalar results read (s<slot>).
std::vector<Arg> elementwise_args(const ReduceGroup& g, std::vector<std::string>& names);
// The arguments of the tables the group's gathers and shifts read (tab_<name> and its
// length tab_<name>_n, see ExprEmitter) and, with a checked gather, its flag
// gather_invalid: appended by every kernel's argument list after the parameters.
void append_table_args(std::vector<Arg>& args, const ReduceGroup& g);
// A leaf of an element-wise expression as an element-wise kernel spells it: input j as
// inputs[j], the index as i, a parameter as p_<name>, a reduction's result as r<slot>.
// `what` names the expression in the error for any other leaf.
std::string elementwise_leaf(const ReduceGroup& g, const std::vector<std::string>& inputs, const Expr& leaf,
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
                             const std::vector<Arg>& args, const ReduceGroup& g, int min_blocks = 0);

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

// A group with the context's program text and slots and no leaves yet.
ReduceGroup group_in(const PlanContext& c);
// Fills the group's leaf lists (inputs, parameters and scalar slots, in program order)
// from the expressions it evaluates.
void fill_leaves(ReduceGroup& g, const Program& p, const std::vector<Expr>& exprs,
                 const std::map<const OpNode*, int>& slot_of);

// The arguments of `e` that it reads element by element: all but a gather's table.
std::vector<Expr> table_free_args(const Expr& e);
// Fills the group's tables (the inputs `exprs` read at computed positions: gather tables
// and shifted arrays, in program order) and whether a checked gather is among them.
void fill_tables(ReduceGroup& g, const Program& p, const std::vector<Expr>& exprs);
// Before the other passes: the domain of every input read only as a gather's table (one
// of its own, as its length is its own: Plan::input_domain), and the flag of checked
// gathers (Plan::checked_offsets[kGatherFlag], a null op) when the program has one.
void plan_tables(const Program& p, Plan& plan);

std::string sanitize(const std::string& name);  // a C identifier from a user's name
std::string reduce_kernel_name(const ReduceGroup& g, const char* strategy);
// Elements per vector load: 16 bytes of the widest input, when every input is a scalar
// (1 otherwise, or with no inputs).
int vector_load_width(const ReduceGroup& g);
// `identity` and `combine` for reductions fused into one accumulator of type `acc` (field
// j for reduction j when there are several): combine(a, b) with a covering lower indices.
void emit_fused_monoid(SourceWriter& w, CudaTypes& types, const std::vector<FusedReduce>& reduces,
                       const std::string& acc, const std::string& identity, const std::string& combine);

// Strategy emitters.
KernelSpec emit_reduce_chunked(const ReduceGroup& g, const ReducePolicy& policy, const Target& t);
KernelSpec emit_reduce_staged(const ReduceGroup& g, const ReducePolicy& policy, const Target& t);
// Tree: kernel 0 reduces kBlock-element blocks of the input, kernel 1 reduces blocks of
// partials; the schedule repeats kernel 1 until one value is left.
std::vector<KernelSpec> emit_reduce_tree(const ReduceGroup& g, const ReducePolicy& policy, const Target& t);
// Atomic: kernel 0 writes the identity, kernel 1 adds every element with an atomic.
std::vector<KernelSpec> emit_reduce_atomic(const ReduceGroup& g, const ReducePolicy& policy, const Target& t);
// The element-wise kernel of the array outputs `outputs` (program outputs `output_ids`).
KernelSpec emit_map(const std::vector<Expr>& outputs, const std::vector<int>& output_ids, const ReduceGroup& leaves,
                const MapPolicy& policy, const Target& t);

}  // namespace fuseflow::codegen
