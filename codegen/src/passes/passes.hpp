#pragma once
// The planner's passes, each taking and returning plain data; plan() (planner.cpp) runs
// them in order:
//   classify   (classify.cpp)    each op and program output by what plans it; the
//                                reductions' scalar slots (the plan's buffers for results)
//   choose     (scans.cpp,       scans group the outputs they write and take the
//               reductions.cpp)  reductions they can fold; the other reductions share
//                                kernels by stage and strategy
//   emit       (reductions.cpp, scans.cpp, array_ops.cpp, filter_plan.cpp, here)
//                                each group's kernels and schedule steps, in launch order,
//                                from the strategy the registry picks for it (strategy.hpp:
//                                the forced one, or the first of its family that applies)
// Array ops (histogram, segmented ops, counting sort) and compactions are planned by
// array_ops.cpp, segmented_plan.cpp and filter_plan.cpp, which assign their input
// domains and output shapes as they go.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../array_ops.hpp"
#include "../compact_context.hpp"
#include "../policy.hpp"
#include "../strategy.hpp"

namespace fuseflow::codegen {

// A reduction of the program, filters resolved into its mask.
struct PlannedReduce {
  FusedReduce fused;
  int stage = 0;  // after every reduction whose result it reads
  Strategy strategy = Strategy::Automatic;
  bool folded_into_scan = false;  // computed by a scan's kernel (fold_reductions_into_scans)
  // index() beside a filter's result in its values (the position among the survivors): the
  // placeholder leaf standing for it in fused.value, replaced by plan_position_scans.
  Expr survivor_position;
};

// What classify finds: the reductions and their scalar slots, and the program outputs by
// what plans them.
struct Classified {
  std::string program_text;
  std::vector<Type> slot_types;          // per scalar slot
  std::map<const OpNode*, int> slot_of;  // per reduction
  std::vector<PlannedReduce> reduces;
  std::vector<Expr> array_outputs;  // element-wise outputs (the final map), filters resolved
  std::vector<int> array_output_ids;
  std::vector<int> scan_output_ids;      // outputs over a scan's result
  std::vector<int> array_op_output_ids;  // histogram, segmented ops, counting sort, reduce_by_key
  std::vector<int> filter_output_ids;    // compacted filters and maps of them
  std::vector<ScalarEpilogue> epilogues;  // expressions of reductions' results (epilogues.cpp)
};

// Leaves of an expression: inputs, parameters and scalar results it reads.
void collect_leaves(const Expr& e, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& inputs,
                    std::set<const ExprNode*>& params, std::set<const OpNode*>& scalars);
[[noreturn]] void unsupported(const std::string& what);
// `e` with each node for which `leaf` gives an expression replaced by it (`leaf` gives an
// empty Expr for the nodes it keeps).
Expr substitute(const Expr& e, const std::function<Expr(const Expr&)>& leaf);

// classify.cpp. Also gives each reduction a scalar slot (plan.scalars, scalar_bytes) and
// each output its slot or -1 (plan.output_scalar). GraphError naming an op this version
// cannot plan.
Classified classify(const Program& program, Plan& plan, FilterMemo& memo);

// scans.cpp
bool is_scan(OpKind k);
const OpNode* scan_of(const Expr& output);  // the scan an output reads, or nullptr
// A scan's context: the scan, its value and mask, the outputs over it, what it reads.
std::vector<KernelContext> group_scans(const PlanContext& c, const std::vector<int>& output_ids, FilterMemo& memo);
// A scan of a filter's result (the context's mask): rewritten to scan (value, survivor
// count) pairs, its outputs over the value field (scan_context.hpp, compacts_survivors).
void survivors_scan(KernelContext& g);
// Program outputs `output_ids` over a filter's survivors (the compactions plan_filters would
// plan) whose predicate a scan of survivors in `groups` has: written by that scan's kernel,
// at the same positions, and taken out of `output_ids`. One pass for both.
void adopt_filter_outputs(const Program& program, std::vector<KernelContext>& groups, std::vector<int>& output_ids);
// The reductions that read index() among a filter's survivors: each folded into a scan of
// its own that counts the survivors before each element (exclusive), after the scan, from
// its count. GraphError where another reduction or a scan reads such a result (it runs
// after them).
void plan_position_scans(const PlanContext& c, std::vector<PlannedReduce>& reduces, std::vector<KernelContext>& groups);
void fold_reductions_into_scans(std::vector<PlannedReduce>& reduces, std::vector<KernelContext>& groups);
void emit_scans(const std::vector<KernelContext>& groups, Plan& plan);

// reductions.cpp: the kernels of the reductions not folded into a scan, stage by stage;
// in a stage, one per registered strategy: the automatic reductions of the stage take the
// first reduce strategy that applies to all of them (chunked when every monoid is
// commutative, else staged), a forced one the strategy it names (a GraphError saying why
// when that does not apply); reductions with the same strategy share its kernel.
struct ReduceKernelChoice {
  int stage = 0;
  const RegisteredStrategy* strategy = nullptr;
  std::string why;  // why the registry chose it (of the first member that chose it)
  std::vector<const PlannedReduce*> members;
  bool last_of_stage = false;
  bool last_stage = false;
  std::vector<ScalarEpilogue> epilogues;  // computed by its last block (place_epilogues)
};
std::vector<ReduceKernelChoice> choose_reduce_kernels(const std::vector<PlannedReduce>& reduces, const PlanContext& c);
void emit_reductions(const std::vector<ReduceKernelChoice>& choices, const PlanContext& c, Plan& plan);

// epilogues.cpp: the slot of a scalar epilogue (classify), and where each is computed:
// added to the last reduce kernel's choice, or returned for a kernel after all others.
ScalarEpilogue plan_scalar_epilogue(const Program& program, int output, const std::map<const OpNode*, int>& slot_of,
                                    Plan& plan);
std::vector<ScalarEpilogue> place_epilogues(const std::vector<ScalarEpilogue>& epilogues,
                                            const std::vector<PlannedReduce>& reduces,
                                            std::vector<ReduceKernelChoice>& kernels);

// stages.cpp: a program in which a later op or map reads an array op's result (a sort's,
// reduce_by_key's) planned as two stages joined into one plan, the results between them in
// intermediates (Plan::intermediates); nothing when no such result is read.
std::optional<Plan> plan_in_stages(const Program& program, const Target& target, const PlanOptions& options);
// broadcast_plan.cpp: stage 1 of a program whose broadcasts other ops read: its segmented
// reductions (the outputs, their per-segment results) on the broadcast path, whose map checks
// that the offsets cover every element (no element-wise output).
Plan plan_segment_results(const Program& program, const Target& target, const PlanOptions& options);
// key_runs.cpp: the run number (1, 2, ...) of each element of reduce_by_key's keys, a scan
// of head flags (stage 1 beside it, for broadcast_by_key); GraphError for keys whose
// element before it cannot be read (a tuple type, other arrays than inputs).
Expr key_run_numbers(const OpNode& reduce_by_key);

// log_sum_exp.cpp: reduce(f, max) and reduce(exp(f - max), plus), read by nothing but
// scalar outputs, become one reduction over the online (max, scaled sum) monoid; the
// outputs reading them become epilogues of its total (a note in the plan says so).
void fuse_log_sum_exp(const Program& program, Classified& c, Plan& plan);

// stage_reads.cpp: which ops the staging pass cuts the program after, and the refusal of
// reduce_by_key's runs mixed with arrays of another length.
// The segmented reductions over an offsets input whose broadcasts the program reads beside
// ops of other kinds, and the reduce_by_key ops read through broadcast_by_key.
std::set<const OpNode*> spread_ops(const Program& program);
// The ops of a staged kind whose array result is read other than as a program output.
void find_reads(const Expr& e, bool as_output, bool in_filter, std::set<const void*>& seen,
                std::set<const OpNode*>& read);
// GraphError where an expression (or an op's values, predicate and keys together) mixes
// reduce_by_key's runs with another array.
void check_runs_alone(const std::vector<Expr>& together, const std::set<const OpNode*>& read);
void check_runs(const Expr& e, std::set<const void*>& seen, const std::set<const OpNode*>& read);

// stage_feeds.cpp: scan_by_key, reduce_by_key, sorts and segmented ops by offsets of a
// filter's result, which the staging pass runs over the survivors it compacted into an
// intermediate.
// Whether `op` reads a filter's result among its keys or values.
bool feeds_on_filter(const OpNode& op);
// The reductions over index() beside a filter's result (the position among the survivors)
// that another reduction or a scan reads: staged like the ops above (their values
// compacted, then reduced with the count as a mask), as one pass cannot order them.
std::set<const OpNode*> position_reductions_read(const Program& program);
// Whether two different inputs read by `exprs` have one name (a stage 2 cut again, whose
// own stage 2 reads the outer cut's ff_stage_k and its own).
bool names_clash(const std::vector<Expr>& exprs);
// What stage 1 compacts for it: its keys and values zipped (or the one it has).
Expr feed_operands(const OpNode& op);
// The op over `staged` (the compacted operands, `count` of them valid: a table of one u64
// element); the program reads result i of the original op as filter(results[i], mask),
// whose survivors are the first slots (as results[i] itself where mask is empty: a
// segmented reduction's, one per segment).
struct FeedCut {
  std::shared_ptr<const OpNode> op;
  std::vector<Expr> results;
  Expr mask;
};
FeedCut feed_cut(const std::shared_ptr<const OpNode>& op, const Expr& staged, const Expr& count);

// stage_domains.cpp: segment offsets the program computes (a scan of row lengths, a sort's
// keys, a map of an offsets input under a broadcast), staged alone into an intermediate of
// their own length, over their own domain (StepSpec::over).
// The offsets expressions to stage: those of segmented ops that read an array result, and
// those of broadcasts that are not an input (nor ff::rows); GraphError for offsets that read
// a filter's or reduce_by_key's result (their length only the device counts).
std::set<const ExprNode*> staged_offsets(const Program& program);
// A part of stage 1, planned as a program of its own: the cut's results `members`, on the
// broadcast path (`spread`), or an array of its own length alone over its own domain (`own`).
struct StagePart {
  std::vector<std::size_t> members;
  bool spread = false;
  bool own = false;
};
// The parts, in launch order: each own-length result alone, the spread reductions, the rest.
std::vector<StagePart> stage_parts(std::size_t results, const std::function<bool(std::size_t)>& spread,
                                   const std::set<int>& own_lengths);
// GraphError where an own-length part has no input's length: a fill's, a histogram's bins,
// segments, a count.
void check_own_length(const Plan& part, const OutputShape& shape, const std::string& what);
// The GraphError text for an input read as elements and as the source of computed offsets.
std::string mixed_lengths(const Expr& input, const std::string& offsets);
// The program inputs that own-length parts read as their elements: the domain each is in,
// and the offsets it makes (in words).
using OwnInputs = std::map<int, std::pair<int, std::string>>;
// The program domain an own-length part `stage` runs over (`stage_domain`: its plan's domain
// of each of its inputs): that of the program inputs it reads as elements (an earlier such
// part's), else a new one of `joined`, which they are put in. GraphError when it reads no
// input as elements, or one an earlier part put in another domain.
int own_domain(const Program& program, const Program& stage, const std::vector<int>& stage_domain, Plan& joined,
               OwnInputs& own);
// A program in one line (its statements joined by "; "), for the staging pass's note.
std::string one_line(const Program& p);

// computed_tables.cpp: a gather's table or a shift's array that the program computes.
// The program with every gather of a map of inputs rewritten to the map of the gathered
// inputs (nothing when there is none).
struct FusedTables {
  Program program;
  std::vector<std::set<const ExprNode*>> same_length;  // per gathered map: its inputs, of one length
};
std::optional<FusedTables> fuse_table_maps(const Program& program);
// That program's plan (planned again, so what it still computes is staged), under the user's
// ops where a checked segmented op was rewritten, each map's inputs in one domain.
Plan plan_fused_tables(const Program& original, const FusedTables& tables, const Target& target,
                       const PlanOptions& options);
// The tables and shifted arrays that are not inputs, and broadcasts over ff::rows beside other
// ops, which the staging pass computes in stage 1 (n elements each, or a gather table's own
// length: bins, segments); GraphError for one of a length only the device counts.
std::set<const ExprNode*> computed_tables(const Program& program);
// Whether a computed gather table has a length of its own that stage 1 gives it: every
// array it reads a histogram's bins or a segmented reduction's results.
bool own_length_table(const Expr& table);
// Sizes the intermediate of such a table from its stage 1 part's output shape: a fixed count
// (bins) or a domain's length less some (segments); GraphError for one only the device counts.
void size_own_table(Intermediate& im, const Plan& part, const OutputShape& shape, const std::string& what);

}  // namespace fuseflow::codegen
