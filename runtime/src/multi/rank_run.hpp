#pragma once
// One local rank's part of a sharded run (rank_run.cpp), in steps that stop at every
// collective, so that one thread can issue all its local ranks' work step by step (NCCL in
// one process with set_rank_threads(false): each collective step of every rank inside one
// group) or a thread per rank can run them in a row (the default over NCCL, and the
// in-process communicator, whose collectives block):
//   start          bindings; the scans' totals pass queued
//   gather_totals  (collective) the totals gathered into device memory
//   main_pass      the carries (on the device for scalar scans: nothing waits), outputs
//                  allocated, the main program queued
//   gather_main    (collective) reduce partials, counts, heads, run ends; histograms all-reduced
//   fold           the device folds of scalar reductions queued
//   finish         one copy to the host and one wait
//   combine        the host's part of the combine, from a finished rank's copy (in one
//                  process every rank gathered the same bytes: the first rank's copy serves all)
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "fuseflow/runtime/sharded.hpp"
#include "check_bindings.hpp"
#include "gather.hpp"
#include "halo.hpp"
#include "keyed.hpp"
#include "segments.hpp"
#include "shard_plan.hpp"

namespace fuseflow::detail {

// The device fold of a reduction's gathered partials (scalar monoids): partials bound to
// the gathered block, the inclusive scan bound to memory next to it.
struct DeviceFold {
  Expr partials;
  Expr folded;
  Program program;
};

// A segmented op's offsets as the last run saw them, cut to each local rank's shard and
// uploaded. A run compares the bound host offsets with `bytes` (memcmp): equal, nothing is
// checked, cut or uploaded again; different (new contents at the same address too), they
// are checked, cut and uploaded anew.
struct SegmentCache {
  std::vector<std::byte> bytes;
  ScalarType type = ScalarType::I64;
  ShardLayout layout;
  std::optional<SegmentSplit> split;
  std::uint64_t version = 0;  // counts the changes
  // Per local rank: its cut offsets and tail piece, and the version they were uploaded for.
  std::vector<DeviceArray<long long>> offsets, tails;
  std::vector<std::uint64_t> uploaded;
};

// A gather's table bound to a host array, as the last run saw it: a run compares the bound
// bytes with `bytes` (memcmp) and uploads to each local rank only when they changed.
struct TableCache {
  std::vector<std::byte> bytes;
  std::uint64_t version = 0;  // counts the changes
  std::vector<DeviceArray<std::byte>> device;  // per local rank
  std::vector<std::uint64_t> uploaded;         // per local rank: the version it holds
};

// A program's sharded rewrite and what a run needs to know of it, made once per program
// (the caller's Program is kept, so its nodes' addresses stay unique while cached).
struct CachedPlan {
  Program program;
  ShardPlan plan;
  std::optional<Program> totals;              // the scans' per-shard totals (none: no scan)
  bool main_uses_offset = false, main_uses_rank = false, main_uses_size = false, main_uses_global_size = false;
  bool exchange_first = false;                // an exchange before the main pass: scans' totals or shifts' halos
  bool host_carry = false;                    // a carry is folded on the host (waits between the passes)
  std::vector<std::vector<bool>> carry_used;  // per scan, per carry field: main uses it
  std::vector<std::optional<DeviceFold>> folds;  // per output: a Reduce folded on the device
  // Per scan with ShardScan::carries: the world's gathered totals scanned (exclusive) into
  // the carries on the device, after the totals' gather.
  std::vector<std::optional<DeviceFold>> carry_folds;
  std::size_t carry_bytes = 0;  // the carries' room after the gathered totals
  mutable std::vector<SegmentCache> segments;    // per segmented op
  mutable std::vector<TableCache> tables;        // per gather table (ShardPlan::tables)
};

// Per local rank, kept for the runtime's life: the device buffers of the exchanges and
// where their copies land.
struct RankBuffers {
  DeviceArray<std::byte> send, recv, totals;  // totals: the scans' gathered totals
  PinnedHost pinned, pinned_totals;
};

// What one rank produced: scalars (combined), and per output its piece.
struct RankOutput {
  std::vector<Value> scalars;                 // per output (Reduce)
  std::vector<ShardedResult::Piece> pieces;   // per output (arrays)
  std::vector<std::size_t> filter_sizes;      // per output (Filter): every rank's survivors
  std::vector<KeyedHeld> keyed;               // per reduce_by_key: the runs every rank holds
};

// What every rank of one run shares.
struct RunShared {
  const Program& program;
  const CachedPlan& cached;
  const Checked& checked;
  int world = 0;
};

class RankRun {
 public:
  // Kept for the runtime's life (its vectors keep their capacity from run to run).
  RankRun(std::size_t local, Runtime& rt, Communicator& comm, RankBuffers& buffers, RankOutput& out)
      : local_(local), rt_(rt), comm_(comm), buf_(buffers), out_(out), rank_(comm.rank()) {}
  void begin(const RunShared& shared) { s_ = &shared; }
  void start();
  void gather_totals();
  void main_pass();
  void gather_main();
  void fold();
  void finish() { all_.finish(rt_, buf_.recv, buf_.pinned); }
  const Gathered& gathered() const { return all_; }
  void combine(const Gathered& host);
  Runtime& runtime() { return rt_; }

 private:
  const SegmentSplit& split(std::size_t k) const { return *s_->cached.segments[k].split; }
  const RunShared* s_ = nullptr;
  std::size_t local_;
  Runtime& rt_;
  Communicator& comm_;
  RankBuffers& buf_;
  RankOutput& out_;
  int rank_;
  Bindings base_, main_, tails_;
  std::vector<DeviceArray<std::byte>> seg_totals_;
  std::vector<Result> mine_, results_;  // the totals pass's results, the main pass's
  std::vector<GatherItem> titems_, items_;
  std::vector<KeyedRank> runs_, keyed_;
  std::vector<Histo> histos_;
  std::vector<std::size_t> item_of_;
  std::size_t extra_ = 0;
  std::size_t halo_at_ = 0;                     // the halos' first item among titems_
  std::vector<DeviceArray<std::byte>> halo_tables_;
  std::vector<DeviceArray<std::byte>> tables_;  // per gather table bound to a sharded array: its whole copy
  std::vector<std::size_t> table_item_;         // per gather table bound to a sharded array: its item, else SIZE_MAX
  Gathered totals_all_, all_;
};

}  // namespace fuseflow::detail
