#pragma once
// Tuning policies, in the manner of CUB's: the constants each strategy is tuned with
// (tile shapes, items per thread, shared-memory budgets, when the large-n kernels take
// over, pipeline depth), per target, in one place (policy.cpp), with the caller's
// PlanOptions applied on top. The emitters read their values from here; the values end up
// in the kernels' source, so the kernel cache keeps every variant apart.
//
// Where a policy picks a shape from the program's types (a scan's tile from its element
// sizes), the rule stays with the strategy and its constants are here.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan_options.hpp"
#include "fuseflow/codegen/target.hpp"

namespace fuseflow::codegen {

// Look-back scans (scan_common.cpp scan_tiling, scan_lookback.cpp, scan_pipelined.cpp,
// segmented_scan.cpp) and reduce-then-scan (its tile).
struct ScanPolicy {
  std::optional<TileShape> tile;  // PlanOptions::scan_tile: every look-back scan's one tile
  // Segmented scans and scans by key of 4-byte values (value, head) pieces.
  TileShape pieces{256, 22, 5};
  // Plain scans of at most 8 bytes per element; `narrow_min_blocks` for 4-byte inputs and
  // values whose stages share memory, with no reduction folded in.
  TileShape narrow{192, 22, 0};
  int narrow_min_blocks = 7;
  // Wider elements: `wide_block` threads, `thread_bytes` of values per thread (at most
  // `wide_max_items`).
  int wide_block = 256;
  std::size_t thread_bytes = 64;
  int wide_max_items = 16;
  std::size_t max_stage_bytes = 40 * 1024;  // static shared memory stays under 48 KB
  // The staged tile of large plain scans (read twice from the stage), and the element
  // count from which scans and compactions take their large-n kernel.
  TileShape staged{128, 88, 4};
  std::int64_t staged_from = std::int64_t{1} << 24;
  // The pipelined scan (sm_90): tiles in a ring of stages, scanner warps. `pipeline` is
  // false where the target has none or PlanOptions::scan_pipeline is off.
  bool pipeline = true;
  // The pipelined segmented scans (segmented_scan_pipelined.cpp): PlanOptions::segmented_pipeline.
  bool segmented_pipeline = false;
  int pipe_tile = 12288;
  int pipe_stages = 4;
  int pipe_warps = 8;
  // reduce_by_key (segmented_scan.cpp): a tile of more runs than threads writes its runs'
  // keys and values through shared memory, coalesced (two-phase scatter), instead of one
  // scattered 4-byte write per head and output (ncu, runs of 1..3 at 2^24: 68% of the
  // global sectors were excess, 20% of DRAM throughput).
  bool stage_runs = true;
};

// Stream compaction (filter_compact.cpp).
struct CompactPolicy {
  std::optional<TileShape> tile;  // PlanOptions::filter_tile: block x rows [x min blocks]
  int block = 512;
  int min_blocks = 2;                        // resident blocks per SM asked of __launch_bounds__
  std::size_t thread_bytes = 128;            // bytes of inputs a thread loads per tile
  int max_items = 32;                        // elements per thread per tile
  int max_vec = 8;                           // elements per vector load
  std::size_t max_stage_bytes = 64 * 1024;   // the survivors' stage (dynamic shared memory)
  std::int64_t staged_from = std::int64_t{1} << 24;  // the pipelined kernel from here
  bool pipeline = true;
  int pipe_tile = 13312;
  int pipe_stages = 4;
  int pipe_warps = 8;
  int pipe_depth = 2;                        // tiles between ranking a tile and writing it
  std::size_t pipe_static_bytes = 8192;      // the ring's control state, with room
};

// Segmented reduce (segmented_reduce.cpp): the merge path's tile and the short pass.
struct SegmentedPolicy {
  std::optional<TileShape> tile;  // PlanOptions::segmented_tile
  int block = 256;
  int max_items = 16;                        // merge items per thread, as many as fit ...
  std::size_t shared_budget = 46 * 1024;     // ... in this much static shared memory
  std::size_t shared_limit = 48 * 1024;      // what a chosen tile may take
  int max_blocks_per_sm = 4;
  // When the values read tables (a gather: SpMV's vals * gather(x, cols)), the tile's
  // loads are chains (index, then table) and the table reads hit L2: fewer items per
  // thread (no register spills, ptxas sm_90: 16 items spill at 64 registers, 8 at 48 do
  // not) and more resident blocks (5 x 256 threads at 48 registers) keep more of them in flight.
  int gather_items = 8;
  int gather_blocks_per_sm = 5;
  bool short_pass = true;                    // PlanOptions::segmented_short
  int short_block = 256;
};

// Reductions (reduce_chunked.cpp, reduce_staged.cpp, reduce_tree.cpp, reduce_atomic.cpp).
struct ReducePolicy {
  int block = 256;
  int chunked_unroll = 2;                  // vector loads in flight per input per thread per iteration
  std::size_t staged_lane_bytes = 64;      // input bytes a lane stages per tile
  int staged_max_items = 16;
};

// The element-wise map of array outputs (map.cpp): a grid-strided loop.
struct MapPolicy {
  int block = 256;
};

// Histograms (histogram.cpp).
struct HistogramPolicy {
  int block = 256;
  int unroll = 2;                           // vector loads in flight per input per thread
  int passes = 4;                           // grid-stride passes a block makes at least, so clearing and
                                            // merging its private counts is spread over enough elements
  std::size_t shared_limit = 48 * 1024;     // bytes of private counts a block may hold
  std::size_t copies_budget = 16 * 1024;    // bytes for the copies of small histograms
  // Weighted histograms whose sums fit one column per thread (ff::histogram_weighted_lanes):
  int lane_block = 256;                     // threads per block at most
  int lane_min_block = 128;                 // fewer threads' columns fit: per-warp sums instead
  int lane_unroll = 4;                      // vector loads per input per batch (two batches in flight)
  // Weighted histograms of many bins by coarse buckets (histogram_bucketed.cpp): one stable
  // Onesweep pass by bin >> bucket_bits (at most 256 buckets), then per-warp sums of a
  // bucket's bins in shared memory over slices of the bucket's pairs.
  int bucket_warps = 8;                     // warps (private copies of a bucket's sums) per block at most
  int bucket_min_warps = 4;                 // fewer copies fit: the sorted path (histogram_sorted.cpp) instead
  int bucket_unroll = 4;                    // steps of 32 pairs a warp loads before adding them
  int bucket_slice_bins = 16;               // a slice is this many times a bucket's bins of pairs ...
  int bucket_slice_min = 16384;             // ... and at least this many
};

// Counting sort (counting_sort.cpp): the tile the three kernels share, the count scan.
struct SortPolicy {
  std::size_t shared_limit = 46 * 1024;   // static shared memory of a kernel, less room for small arrays
  std::size_t thread_bytes = 128;         // bytes of keys and values a thread holds per tile
  int max_items = 16;                     // elements per thread per tile
  std::size_t copies_budget = 8 * 1024;   // bytes of private copies of a tile's counts
  int max_copies = 4;
  int scatter_threads_per_sm = 768;       // the scatter's register budget: 3 blocks of 256 per SM
  int scan_block = 256;
  int scan_items = 16;                    // counts per thread of the scan
};

// Per-row programs over ff::rows (rows.cpp): a block holds a row in registers, each
// thread `items` consecutive elements (two 16-byte vectors of f32), the block as many
// threads as the row needs, up to max_block; longer rows take more items per thread, up to
// max_items, beyond which a row does not fit a block. 8 rather than 4: the per-row work of
// a thread (two block reductions, the loop) is paid once per 8 elements, and rows of 1024
// are 4 warps (rows of 4096, 16), not 8 (32): the H100 profile of softmax at 4 items showed
// the kernel issue-bound (0.73 instructions per cycle per scheduler, 70% of DRAM).
// `registers`: the per-thread budget the kernel is compiled for (__launch_bounds__ asks for
// 65536 / (registers x block) resident blocks): rows of 1024 at 128 x 8 compile to 60
// registers unbounded (8 blocks per SM), 56 with no spill when asked for 9.
// Rows longer than `long_row` start from `long_items` instead, with a budget of
// `long_registers`: rows of 4096 at 1024 x 4 compile to 32 registers with no spill when
// asked for two blocks (46 unbounded: one), two blocks fill the SM (2048 threads), where
// 512 x 8 held 64 registers and half the SM's threads.
struct RowsPolicy {
  int items = 8;
  int max_block = 1024;
  int max_items = 16;
  int registers = 56;
  std::int64_t long_row = 2048;
  int long_items = 4;
  int long_registers = 32;
};

struct Policies {
  std::string target;  // the table they came from: "sm_90", "sm_80" or "default"
  ScanPolicy scan;
  CompactPolicy compact;
  SegmentedPolicy segmented;
  ReducePolicy reduce;
  MapPolicy map;
  HistogramPolicy histogram;
  SortPolicy sort;
  RowsPolicy rows;
};

// The policies for `target` with `options` applied (options must be valid: validate()).
Policies policies_for(const Target& target, const PlanOptions& options = {});

}  // namespace fuseflow::codegen
