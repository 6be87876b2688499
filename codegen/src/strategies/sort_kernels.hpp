#pragma once
// The three kernels of one counting-sort pass (tile counts, their scan, the scatter:
// sort_pass_kernels.cpp) and the Onesweep kernels (onesweep_kernels.cpp), shared by the
// counting sort (counting_sort.cpp: one pass by a small key) and the radix sort
// (radix_sort.cpp: one pass per digit). The algorithms are in <fuseflow/counting_sort.cuh>,
// <fuseflow/radix_sort.cuh> and <fuseflow/onesweep.cuh>; the emitters' shared pieces are in
// sort_kernel_parts.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "../array_ops.hpp"

namespace fuseflow::codegen {

// The tuning of one pass (from SortPolicy): one table for its three kernels, which share
// the tile.
struct SortTuning {
  int block = 256;
  int items = 16;
  int scatter_threads_per_sm = 768;
  bool staged = true;
  int copies = 1;
  std::int64_t bins = 0;         // counts per tile
  std::size_t shared_bytes = 0;  // of the scatter
  int tile() const { return block * items; }
  int warps() const { return block / 32; }
};
// The tile for `bins` counts per tile, keys and values of the op's types.
SortTuning sort_tuning(const OpNode& op, std::int64_t bins, const SortPolicy& policy);

// How one pass bins, reads and writes.
struct SortPass {
  std::string prefix;                      // kernel names: prefix + "_tile_counts_" ...
  std::string suffix;                      // after the type names ("" or "_bits0_8")
  std::vector<std::string> bin_constants;  // constexpr lines naming the bins
  std::string bins_arg;                    // the bins as a template argument: "kKeyBins" or "Digit"
  bool by_functor = false;                 // the *_by kernels (bins_arg is a functor type)
  std::string bins_text;                   // the bins, in words, for the summaries
  std::string why;
  std::string scatter_note;                // a line of the scatter's header comment, or ""
  bool from_scratch = false;               // keys (and values) from scratch keys_in, values_in
  bool to_scratch = false;                 // keys (and values) into scratch keys_out, values_out
  std::string step;                        // "1/3" ... in the summaries: "counting sort 1/3"
  bool onesweep = false;                   // a Onesweep pass (<fuseflow/onesweep.cuh>)
};

// Tile counts: Scratch arguments keys_in (from_scratch), then tile_counts.
KernelSpec emit_sort_tile_counts(const OpNode& op, const KernelContext& key_leaves, const SortTuning& s,
                                 const SortPass& pass);
// The exclusive scan of the [bins x tiles] counts: Scratch tile_counts, positions.
KernelSpec emit_sort_scan_counts(const KernelContext& g, const SortPolicy& policy, const SortPass& pass);
// The scatter: Scratch keys_in, values_in (from_scratch), keys_out, values_out
// (to_scratch), then positions.
KernelSpec emit_sort_scatter(const OpNode& op, const KernelContext& leaves, const std::vector<SortOutput>& outputs,
                             const SortTuning& s, const SortPass& pass);

// ---- Onesweep (<fuseflow/onesweep.cuh>): every digit's histogram in one read, then one
// kernel per digit that ranks, looks back over per-bin tile counts and scatters.

// The policy (the same on sm_80 and sm_90: nothing sm_90-only is used).
struct OnesweepPolicy {
  int block = 384;                   // threads of a pass (one per bin looks back: bins <= block)
  int blocks_per_sm = 2;             // the pass's register budget (__launch_bounds__)
  std::size_t shared_limit = 46 * 1024;  // static shared memory of a pass
  std::size_t thread_bytes = 184;    // bytes of keys and values a thread holds per tile
  int max_items = 23;                // elements per thread per tile (CUB's for 32-bit keys on sm_90)
  int histogram_block = 256;
  int histogram_items = 16;          // keys per thread per chunk of the histogram
  int histogram_grid = 1056;         // at most this many histogram blocks (8 per SM of an H100)
  std::int64_t max_bins = 384;       // a counting sort with more bins (plus one) keeps the three-kernel pass
  // Keys alone (no values): a smaller tile and more blocks per SM, CUB's sm_90 choice for
  // 32-bit keys alone (384 x 19 for f32, 384 x 20 for other keys, 56 registers: 3 blocks).
  int keys_only_items = 20;
  int keys_only_float_items = 19;
  int keys_only_blocks_per_sm = 3;
};
// max_items: ptxas (CUDA 12, sm_90) fits 23 in the 80 registers of 2 blocks of 384 per SM
// without spilling in every pass of a sort of u32 keys with u32 values, of f32 keys alone
// and of a counting sort by 256 keys (counting_sort.cuh's write_staged_tile keeps the
// compiler from hoisting every item's loads; without that, 18 and more spilled).
// keys_only_*: ptxas (CUDA 13, sm_90) fits f32 keys alone at 19 items in the 56 registers
// of 3 blocks of 384 (4 bytes spilled, as CUB's own keys-only pass: 56 registers, 8 bytes
// of stack); at 23 items and 2 blocks a pass kept only 24 warps per SM where CUB keeps 36.
inline constexpr OnesweepPolicy kOnesweepPolicy{};
std::vector<std::pair<std::string, std::int64_t>> onesweep_tuning_values(const OnesweepPolicy& p);

struct OnesweepTuning {
  int block = 384;
  int items = 16;
  int blocks_per_sm = 2;
  std::int64_t bins = 0;
  std::size_t shared_bytes = 0;
  std::int64_t portion_tiles = 0;  // tiles per launch: a portion's counts stay below 2^30
  int tile() const { return block * items; }
};
OnesweepTuning onesweep_tuning(const OpNode& op, std::int64_t bins, const OnesweepPolicy& policy);

// The all-digit histogram: `digits_type` names the digits functor (ff::sort::RadixDigits<0,
// 32>), `digits` x `row_bins` counts. Scratch: digit_counts.
KernelSpec emit_onesweep_histogram(const OpNode& op, const KernelContext& key_leaves, const std::string& digits_type,
                                   int digits, std::int64_t row_bins, const OnesweepPolicy& policy,
                                   const SortPass& pass);
// A pass by digit `digit`. Scratch: keys_in, values_in (from_scratch), keys_out, values_out
// (to_scratch), digit_counts, bin_starts (the bin starts of the portions after the first),
// lookback (the look-back entries); then the tile counter.
KernelSpec emit_onesweep_pass(const OpNode& op, const KernelContext& leaves, const std::vector<SortOutput>& outputs,
                              const OnesweepTuning& s, const SortPass& pass, int digit, std::int64_t row_bins,
                              int parity);
// The launches: the histogram over n, then per pass one launch per portion of the tiles.
// `kernels` are the histogram's index then the passes'. Returns where the last pass wrote
// its keys and values when it writes scratch (keys_out, values_out), else zeros.
struct SortedScratch {
  std::size_t keys = 0, values = 0;
  std::size_t digit_counts = 0;  // the histogram's counts (histogram_bucketed.cpp reads its buckets' counts)
};
SortedScratch onesweep_launches(const Plan& plan, int first, int passes, std::int64_t n, ScheduleBuilder& b);

// The radix sort of g's op (radix_sort.cpp): the histogram and one Onesweep pass per 8-bit
// digit of [begin_bit, end_bit), kernels named prefix + "_histograms_..." and prefix +
// "_onesweep_..."; last_to_scratch: the last pass writes scratch keys_out, values_out (a
// step after the sort reads them: histogram_sorted.cpp) instead of the program outputs.
std::vector<KernelSpec> emit_radix_sort(const KernelContext& g, const OnesweepPolicy& policy, const std::string& prefix,
                                        bool last_to_scratch);

// The registry blocks' shared pieces: a context reading what the keys alone read (the tile
// counts), the program outputs that are the sort's results, the policy values by name.
KernelContext keys_context(const KernelContext& g);
std::vector<SortOutput> sort_outputs(const KernelContext& g);
std::vector<std::pair<std::string, std::int64_t>> sort_tuning_values(const SortPolicy& s);

}  // namespace fuseflow::codegen
