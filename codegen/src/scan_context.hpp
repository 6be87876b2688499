#pragma once
// The text every scan strategy shares. A scan kernel evaluates one scan (its context's op):
// its input map inlined into the loads (prologue), optionally a mask (a scan of a filter's
// result: a dropped element contributes the identity, see compacts_survivors), every
// program output computed from the scan's elements (the context's outputs) as an epilogue
// applied before the store, and, in the look-back scans, the reductions folded into its
// pass (the context's reduces: their inputs are among the scan's, so the kernel reads the
// data once for all of them; DESIGN.md, fusion rules).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel_context.hpp"
#include "policy.hpp"

namespace fuseflow::codegen {

// A scan of a filter's result (passes/scans.cpp, survivors_scan): the context's mask is the
// survivors' predicate and its op scans (value, survivor count) pairs; the store writes
// survivors only, each at its position among them (the count before it), and element
// n - 1 each output's count (OutputCount arguments, after each output).
bool compacts_survivors(const KernelContext& g);
// Output `o` is the scan itself (stored as it is, no epilogue): its result, or the value
// field of a scan of a filter's result.
bool stores_scan_itself(const KernelContext& g, const Expr& o);

// Tuning constants of a tiled scan, chosen from the element sizes.
struct ScanTiling {
  int block = 256;
  int items = 1;  // consecutive elements per thread per tile
  int min_blocks = 0;  // > 0: __launch_bounds__ asks registers to fit this many blocks per SM
  // The thread's elements are read from the input stage twice (its total, then its scan,
  // written back over the input) instead of being held in registers: tiles larger than
  // registers allow, so fewer look-backs per element.
  bool staged = false;
  int tile() const { return block * items; }
};
// `shared_stages`: the kernel shares one buffer between the input and scanned stages where
// it can (scan_stages_can_share), so a tile may take more elements.
ScanTiling scan_tiling(const KernelContext& g, bool shared_stages);
// No output is an epilogue over the inputs: the input stages die before the store.
bool scan_stages_can_share(const KernelContext& g);
// The staged tile (ScanTiling::staged) a plain look-back scan takes from
// the scan policy's staged_from elements, where it applies: one 4-byte input, 4-byte values, no
// epilogue over the input, no reductions folded in, no scan_tile option. Else nullopt.
std::optional<ScanTiling> staged_scan_tiling(const KernelContext& g);
// The ring's constants of a pipelined kernel (scan_pipeline.cuh), one line each: kTile,
// kStages (with the shared memory they take) and kScanWarps (`warps_are`: what those
// warps do, for its comment).
void emit_pipeline_ring(SourceWriter& w, int tile, int stages, int warps, const std::string& warps_are);

// Writes the pieces of a scan kernel: signature, functions, tile load, thread and block
// scan, the store through shared memory with the epilogue.
class ScanKernelWriter {
 public:
  ScanKernelWriter(const KernelContext& g, std::string kernel_name, ScanTiling tiling);

  std::string acc() { return types_.name(g_.op->monoid.type()); }
  CudaTypes& types() { return types_; }
  const std::string& name() const { return name_; }
  const KernelContext& group() const { return g_; }
  const ScanTiling& tiling() const { return tiling_; }
  bool inclusive() const { return g_.op->scan_kind == ScanKind::Inclusive; }
  // The name of input j (g.leaves.inputs): its argument is in_<name>, its stage stage_<name>.
  const std::string& input_name(std::size_t j) const { return input_names_[j]; }

  // Inputs, n, parameters, scalars read, then (with_outputs) the outputs, then `extra`.
  std::vector<Arg> args(bool with_inputs, bool with_outputs, const std::vector<Arg>& extra) const;
  // "extern "C" __global__ void NAME(params) {" for `args`.
  void open_kernel(SourceWriter& w, const std::vector<Arg>& args);
  // namespace { kBlock, and for tiled kernels kItems, kTile, slot(), then `more` lines }.
  void emit_constants(SourceWriter& w, bool tiled = true, const std::vector<std::string>& more = {});
  // identity and combine; with `elements`, also element(inputs..., i), and with
  // `epilogues` epilogue_j(scanned, inputs..., i) for each output that is not the scan itself.
  void emit_functions(SourceWriter& w, bool elements, bool epilogues);
  // `const auto NAME = [&](inputs..., i) -> T { ... }`: `e` (of type T) at element i, over
  // the same leaves as element().
  void emit_map_function(SourceWriter& w, const std::string& name, const Expr& e);
  // No output is an epilogue over the inputs, so the input stages die before the store.
  bool stages_can_share() const;
  // "stage_x[slot], ..., index": the staged inputs of tile element `slot`, as element() and
  // emit_map_function's functions take them.
  std::string element_call(const std::string& slot, const std::string& index) const;
  // Fused reductions (scan_fold.cpp; nothing when the group has none). Arguments: their
  // results and the per-tile partials. fold_identity / fold_combine / fold_element(inputs...,
  // i) over one accumulator with a field per reduction, and `fold`, scan_tile.cuh's
  // TileFold over them (the tile's fold into tile_folds[tile], the last tile's combine of
  // the partials in tile order and the stores of the results). fold_call(): "fold", or
  // "ff::NoTileFold()" without reductions.
  std::vector<Arg> fold_args() const;
  void emit_fold_functions(SourceWriter& w);
  std::string fold_call() const { return g_.reduces.empty() ? "ff::NoTileFold()" : "fold"; }

  // The tiled kernels that call scan_tile.cuh (scan_tile.cpp): namespace { kBlock,
  // kMinBlocks, kItems, kTile, kInclusive, the input stages' byte offsets kStage_<input>
  // and kInputStageBytes }.
  void emit_tile_constants(SourceWriter& w);
  // After emit_functions: load(stages, slot, i), staged_element(stages, slot, i) and, with
  // `stores`, store(stages, scanned, slot, i) (each output, its epilogue applied).
  void emit_tile_functors(SourceWriter& w, bool stores);
  // "ff::stage<T>(stages, kStage_x)[slot], ..., index": the staged inputs of a tile slot.
  std::string staged_call(const std::string& slot, const std::string& index);
  // The store of a scan of a filter's result (compacts_survivors): survivors only, each at
  // its position among them; element n - 1 writes each output's count.
  void emit_survivor_store(SourceWriter& w);
  std::string fold_summary() const;

  // Header comment + includes (scan.cuh, then `more_includes`) + structs + body.
  std::string assemble(const std::string& strategy_comment, const std::string& body,
                       const std::vector<std::string>& more_includes = {});

 private:
  // The parameter list of element() and of emit_map_function's functions.
  std::string element_params();
  // The CUDA name of a leaf of a map: an input's stage value, i, a parameter, a scalar
  // result read; in an epilogue also the scan's own element ("scanned").
  std::string leaf_name(const Expr& leaf, bool in_epilogue) const;
  Type fold_type() const;

  const KernelContext& g_;
  std::string name_;
  ScanTiling tiling_;
  CudaTypes types_;
  std::vector<std::string> input_names_;
};

std::string scan_kernel_name(const KernelContext& g, const char* strategy);

KernelSpec emit_scan_lookback(const KernelContext& g, const ScanTiling& tiling);
// The pipelined look-back scan (scan_pipelined.cpp, scan_pipeline.cuh): where it applies
// (pipelined_scan_applies: sm_90 or later, one 4-byte input, 4-byte values, no mask, no
// reductions folded in, no scan_tile option, the policy's pipeline on), it is the second
// kernel of a plain scan in place of the staged tile, launched from the scan policy's staged_from
// elements.
bool pipelined_scan_applies(const KernelContext& g);
// The stores of a pipelined scanner's outputs (store4 and store1): per output `o`, whether
// it is 16-byte aligned (`quads`), its four-element store (`four`) and its one-element
// store (`one`); value(k_index, plus) is the text of the value of element k ("[k]", "
// + k"; "" and "" for the one element).
struct QuadStores {
  std::vector<std::string> quads, four, one;
  void add(const std::string& o, const std::function<std::string(const std::string&, const std::string&)>& value);
};
// The tuning values of a pipelined strategy (the scan's, the segmented ring's): its first
// kernel's block, items and min_blocks, then the ring's tile, stages, scanner warps and staged_from.
std::vector<std::pair<std::string, std::int64_t>> pipelined_tuning(const ScanPolicy& s, int block, int items,
                                                                   int min_blocks);
KernelSpec emit_scan_pipelined(const KernelContext& g);
// Three kernels: per-block reduce, scan of the block sums, scan of each block's chunk.
std::vector<KernelSpec> emit_scan_reduce_then_scan(const KernelContext& g);

// Segmented scans (segmented_scan by offsets, scan_by_key) and reduce_by_key
// (segmented_scan.cpp): the look-back scan over (value, heads) pieces. Segment heads come
// from the offsets when `offsets` is given (their inputs and input domain), else from a
// change of g.op->keys (whose inputs are among g.leaves). reduce_by_key's g.outputs are
// its results (keys: index 0, values: index 1), each written with its count.
KernelSpec emit_segmented_scan(const KernelContext& g, const SegmentOffsets* offsets, const Target& t);
KernelSpec emit_reduce_by_key(const KernelContext& g, const Target& t);
// Where reduce_by_key's two-phase scatter (segmented_scan.cuh, reduce_by_key_tile) puts a
// tile's runs (strategies/reduce_by_key_stages.cpp): `keys` and `values` the text of their
// byte offsets into the input stages (kStage_<input>, or ff::segmented::kRunKeysOwnArray),
// `why` a phrase for the kernel's comment; nullopt where they fit nowhere. `input_names`:
// the stages' names, as ScanKernelWriter::input_name.
struct RunStages {
  std::string keys, values, why;
};
std::optional<RunStages> reduce_by_key_run_stages(const KernelContext& g, const ScanTiling& t,
                                                  const std::vector<std::string>& input_names);
// The pieces' type, (value, head flag) or (value, head count) as a tuple: the look-back
// status holds them.
Type segmented_piece_type(const KernelContext& g);

// The step of a look-back kernel (StepSpec::Kind::Lookback): one block per tile, with the
// look-back status (values of type `status`) it needs; with `kernels` 2, kernel + 1 (the
// staged-tile or the pipelined kernel) instead from `from` elements, its grid at most its
// max_grid when that is set. No launch when n is 0, unless the kernel folds reductions or
// `launch_empty` (a compaction, whose one tile writes the count 0). Compaction uses it too
// (filter_plan.cpp), with 64-bit survivor counts for `status`.
StepSpec lookback_step(int kernel, int kernels, const Type& status, std::int64_t from = INT64_MAX,
                       bool launch_empty = false);

// Bytes of look-back tile status for `tiles` tiles of values of `value_bytes` bytes
// (scan.cuh's LookbackState layout).
std::size_t lookback_status_bytes(std::size_t value_bytes, std::int64_t tiles);

}  // namespace fuseflow::codegen
