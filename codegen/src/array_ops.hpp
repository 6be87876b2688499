#pragma once
// Ops whose result is an array of its own length, not of the elements' length: a
// histogram (one count per bin), a segmented reduction by offsets (one value per
// segment) and reduce_by_key (one key and value per run, a count only the device knows);
// and a counting sort, whose results (sorted keys, permuted values) are not
// element-wise. Each such op gets its own kernels, planned after the program's
// reductions (so its maps may read their results) and before the element-wise outputs.
#include <map>
#include <string>
#include <vector>

#include "kernel_context.hpp"
#include "policy.hpp"
#include "scan_context.hpp"

namespace fuseflow::codegen {

// Whether program output `e` is the result of such an op.
bool is_array_op(const Expr& e);

// The inputs, parameters and scalar results `exprs` read, for `op`'s kernel; GraphError
// naming `op` for an array result of another op among them, or when they read no input.
Leaves leaves_of(const PlanContext& c, const std::vector<Expr>& exprs, const std::string& op);
// The leaves of a segmented op's offsets: inputs only (GraphError for a parameter or a
// reduction's result).
Leaves offsets_leaves(const PlanContext& c, const OpNode& op);
// The input domain of a segmented op's offsets (their own length): the one of an earlier
// segmented op over the same offsets, or a new one. GraphError naming `op` when an input is
// read both as offsets and as elements.
int offsets_domain(const PlanContext& c, const Leaves& offsets, const std::string& op, Plan& plan);

// Segmented scans and reduce_by_key (segmented_plan.cpp). plan_segmented_scan plans the
// kernel of a segmented_scan or scan_by_key and its outputs (g: the scan's context
// group_scans made) and appends its schedule step; plan_reduce_by_key plans every program
// output of a reduce_by_key op (keys and values, each with its device-written count) once.
void plan_segmented_scan(const KernelContext& g, Plan& plan);
void plan_reduce_by_key(const PlanContext& c, const std::shared_ptr<const OpNode>& op, Plan& plan);

// Plans program output `output` (the result of `op`): appends its kernels and schedule
// step, and sets its output shape and its inputs' domains.
void plan_array_op(const PlanContext& c, const std::shared_ptr<const OpNode>& op, int output, Plan& plan);

// The emitters. The context's op is the histogram or segmented reduction, its leaves what
// the op's element-wise expressions read, its one output the op's result; a segmented
// reduction's offsets are the context's offsets.
KernelSpec emit_histogram(const KernelContext& g);
// index() beside a filter's result inside a histogram (histogram_positions.cpp): whether
// `op` reads one; the placeholder input that stands for it (an i64 that is no program
// input); `e` with index() replaced by it (e unchanged without one); the scan that writes
// each element's count of survivors before it (`mask`: the survivors) into a new
// intermediate, planned now, with `position` added to g's leaves (its input id -1 - k);
// returns k. bind_survivor_positions turns the histogram kernels' (from `first`) argument
// for it into that intermediate.
// survivor_count_scan: the exclusive scan of 1 per survivor of `mask` (0 per dropped
// element; 1 everywhere without a mask) in type `t` (U64 or I64), the survivors before each
// element (also passes/scans.cpp's, for reductions over such an index()).
std::shared_ptr<OpNode> survivor_count_scan(const Expr& mask, ScalarType t);
bool reads_survivor_index(const OpNode& op);
Expr survivor_position_input();
Expr with_survivor_position(const Expr& e, const Expr& position);
int plan_survivor_positions(const PlanContext& c, const Expr& mask, const Expr& position, KernelContext& g, Plan& plan);
void bind_survivor_positions(Plan& plan, int first, int k);
// Shared by the weighted histograms (histogram.cpp, histogram_sorted.cpp): bin_of(inputs..., i)
// and, with a weight (g.value), weight_of(inputs..., i) returning `acc`, the fused
// expressions of element i (`names`: the inputs' C names, elementwise_args); the type sums
// are added in (an integer's unsigned twin, so they wrap); and how many warps' private sums
// the shared-memory kernel keeps (0: they do not fit, histogram_sorted.cpp plans it).
void emit_bin_and_weight(SourceWriter& w, CudaTypes& types, const KernelContext& g, const std::vector<std::string>& names,
                         const Type& acc);
Type weighted_histogram_acc(const Type& sum_type);
int weighted_histogram_warps(const KernelContext& g);
// Returns the short-segment pass and the merge-path kernel, in launch order (the merge
// path alone without the policy's short pass); with two, both take the mask of segments
// the first left as their last Scratch argument (one bit per segment, rounded up to words).
std::vector<KernelSpec> emit_segmented_reduce(const KernelContext& g);

// Counting sort: the tile counts, the scan of the counts, the scatter (three kernels, in
// that order; StepSpec::Kind::CountingSort launches them). `outputs` lists the program outputs that
// are the op's results (result 0 the sorted keys, 1 the values); `keys` reads what the
// keys read (its leaves), `g` what the keys and values read.
struct SortOutput {
  int program_output;
  int result;
};
inline constexpr std::int64_t kMaxCountingSortBins = 8192;
std::vector<KernelSpec> emit_counting_sort(const OpNode& op, const KernelContext& keys, const KernelContext& g,
                                       const std::vector<SortOutput>& outputs, const SortPolicy& policy);

// The offsets of a segmented op (segment_offsets.cpp): their kernel arguments (an
// off_<name> pointer per input, then offsets_count, the length of their domain) and the
// device lambda offset_at(s), offsets[s] clamped to [0, n] and flagged in offsets_invalid
// when outside; `note` says in the comment who flags decreasing offsets; `flag` is the
// statement that flags one (a kernel may set a local and store it once, at its end).
std::vector<Arg> offsets_args(const Leaves& offsets, int domain);
void emit_offset_at(SourceWriter& w, CudaTypes& types, const OpNode& op, const Leaves& offsets,
                    const std::string& note, const std::string& flag = "*offsets_invalid = 1u");

// The longest segment the segmented reduce's short pass folds (a thread each); the pass
// runs when the segments average at most this many elements (n <= this x segments).
inline constexpr std::int64_t kShortSegment = 8;

// Tuning of the segmented reduction, shared by its emitter and its schedule step.
struct SegmentedTuning {
  int block = 256;
  int items = 8;  // merge items (elements + segment ends) per thread per tile
  int min_blocks = 0;  // > 0: resident blocks per SM asked of __launch_bounds__ (PlanOptions::segmented_tile)
  int tile() const { return block * items; }
};
// From the policy: its tile option (ConfigError when that needs more than its shared
// limit), else as many items per thread as fit its shared budget.
SegmentedTuning segmented_tuning(const Type& acc, const SegmentedPolicy& policy);
// The static shared memory of a merge-path tile of `s` over accumulators of type `acc`.
std::size_t segmented_shared_bytes(const SegmentedTuning& s, const Type& acc);

}  // namespace fuseflow::codegen
