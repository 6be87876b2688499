// The kernels of one counting-sort pass (sort_kernels.hpp): the tile shape, the scatter's
// kind ("staged": the tile sorted in shared memory and copied out coalesced, while the
// bins fit; "direct" from registers above), the fused key and value expressions or the
// scratch arrays a pass reads, and the stores into the outputs or the next pass's scratch.
// The algorithms are in <fuseflow/counting_sort.cuh> and <fuseflow/radix_sort.cuh>.
#include <algorithm>
#include <bit>

#include "../scan_context.hpp"
#include "sort_kernel_parts.hpp"

namespace fuseflow::codegen {

using namespace sort_parts;

SortTuning sort_tuning(const OpNode& op, std::int64_t bin_count, const SortPolicy& policy) {
  const std::size_t kSharedLimit = policy.shared_limit, kThreadBytes = policy.thread_bytes,
                    kMaxItems = static_cast<std::size_t>(policy.max_items);
  const std::size_t key = op.keys.type().size();
  const std::size_t value = op.values.valid() ? op.values.type().size() : 0;
  SortTuning s;
  s.scatter_threads_per_sm = policy.scatter_threads_per_sm;
  s.bins = bin_count;
  const auto bins = static_cast<std::size_t>(s.bins);
  s.items = static_cast<int>(std::clamp<std::size_t>(kThreadBytes / (key + value), 1, kMaxItems));
  // The staged scatter's shared memory: each bin's position, then the per-warp 16-bit
  // counts or the tile's keys or values (the same bytes, used one after the other).
  const auto staged_bytes = [&] {
    return bins * 8 + std::max(static_cast<std::size_t>(s.warps()) * bins * 2,
                               static_cast<std::size_t>(s.tile()) * std::max(key, value));
  };
  while (s.items > 1 && staged_bytes() > kSharedLimit) --s.items;
  s.shared_bytes = staged_bytes();
  if (s.shared_bytes > kSharedLimit) {
    s.staged = false;
    s.items = static_cast<int>(std::clamp<std::size_t>(kThreadBytes / (key + value), 1, kMaxItems));
    while (static_cast<std::size_t>(s.warps()) * bins * 2 > kSharedLimit) s.block /= 2;
    s.shared_bytes = static_cast<std::size_t>(s.warps()) * bins * 2;
  }
  s.copies = static_cast<int>(
      std::clamp<std::size_t>(policy.copies_budget / (bins * 4), 1, std::min(policy.max_copies, s.warps())));
  return s;
}

KernelSpec emit_sort_tile_counts(const OpNode& op, const KernelContext& g, const SortTuning& s, const SortPass& pass) {
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = read_args(op, g, pass, false, names);
  args.push_back({Arg::Kind::Scratch, 0, "tile_counts", ScalarType::U32});
  const std::string name = pass.prefix + "_tile_counts_" + short_type_name(op.keys.type()) + pass.suffix;

  SourceWriter w;
  std::vector<std::string> constants = {"constexpr int kBlock = " + std::to_string(s.block) + ";",
                                        "constexpr int kTile = " + std::to_string(s.tile()) +
                                            ";  // elements per tile (block " + std::to_string(s.block) + " x " +
                                            std::to_string(s.items) + ")"};
  constants.insert(constants.end(), pass.bin_constants.begin(), pass.bin_constants.end());
  constants.push_back("constexpr int kCopies = " + std::to_string(s.copies) + ";  // private copies of the tile's counts");
  emit_constants(w, constants);
  open_elementwise_kernel(w, types, name, s.block, args, pass.from_scratch ? KernelContext{} : g);
  emit_element_function(w, types, g, names, "key_at", op.keys, pass.from_scratch ? "keys_in" : "");
  w.line(std::string("ff::sort::count_tile") + (pass.by_functor ? "_by" : "") + "<kBlock, kTile, " + pass.bins_arg +
         ", kCopies>(n, key_at, tile_counts);");
  w.close();

  KernelSpec k = tile_kernel(name, s.block, s.tile(), s.items, args, pass);
  k.summary = pass.step + " 1/3, tile counts: tiles of " + std::to_string(s.tile()) + " elements (block " +
              std::to_string(s.block) + " x " + std::to_string(s.items) + "), " + pass.bins_text + ", " +
              std::to_string(s.copies) + " private copies of 32-bit counts in shared memory; each tile's counts are "
              "one column of the bin-major [bins x tiles] count matrix";
  k.source = source(name, g, k.summary, "", types, w, pass);
  return k;
}

KernelSpec emit_sort_scan_counts(const KernelContext& g, const SortPolicy& policy, const SortPass& pass) {
  const int kScanBlock = policy.scan_block, kScanItems = policy.scan_items;
  CudaTypes types;
  std::vector<Arg> args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                           {Arg::Kind::Scratch, 0, "tile_counts", ScalarType::U32},
                           {Arg::Kind::Scratch, 1, "positions", ScalarType::U64}};
  for (const Arg& a : lookback_args(ScalarType::U64)) args.push_back(a);
  const std::string name = pass.prefix + "_scan_u64" + pass.suffix;
  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kScanBlock) + ";",
                     "constexpr int kItems = " + std::to_string(kScanItems) + ";  // counts per thread"});
  open_elementwise_kernel(w, types, name, kScanBlock, args, KernelContext{});
  w.comment("n is the number of counts: bins x tiles.");
  w.line("ff::sort::exclusive_scan_counts<kBlock, kItems>(tile_counts, positions, n, tile_counter, tile_status, epoch);");
  w.close();

  KernelSpec k = tile_kernel(name, kScanBlock, kScanBlock * kScanItems, kScanItems, args, pass);
  k.summary = pass.step + " 2/3, exclusive scan of the count matrix in bin-major order into 64-bit output "
              "positions: single pass, decoupled look-back, block " + std::to_string(kScanBlock) + ", " +
              std::to_string(kScanItems) + " counts per thread";
  k.source = source(name, g, k.summary, "", types, w, pass);
  return k;
}

KernelSpec emit_sort_scatter(const OpNode& op, const KernelContext& g, const std::vector<SortOutput>& outputs,
                             const SortTuning& s, const SortPass& pass) {
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = scatter_args(op, g, outputs, pass, names);
  args.push_back({Arg::Kind::Scratch, 0, "positions", ScalarType::U64});
  const std::string name = pass.prefix + "_scatter_" + (s.staged ? "staged_" : "direct_") +
                           short_type_name(op.keys.type()) +
                           (op.values.valid() ? "_" + short_type_name(op.values.type()) : "") + pass.suffix;

  SourceWriter w;
  std::vector<std::string> constants = tile_constants(s.block, s.items, pass);
  constants.push_back(std::string("constexpr bool kStaged = ") + (s.staged ? "true" : "false") + ";  // " +
                      (s.staged ? "the tile is sorted in shared memory, then copied out coalesced"
                                : "elements are written straight from registers"));
  emit_constants(w, constants);
  open_elementwise_kernel(w, types, name, s.block, args, pass.from_scratch ? KernelContext{} : g,
                          s.scatter_threads_per_sm / s.block);
  const std::string functors = emit_scatter_functors(w, types, g, names, op, outputs, pass);
  w.line(std::string("ff::sort::scatter_tile") + (pass.by_functor ? "_by" : "") + "<kBlock, kItems, " + pass.bins_arg +
         ", kStaged>(n, positions, " + functors + ");");
  w.close();

  KernelSpec k = tile_kernel(name, s.block, s.tile(), s.items, args, pass);
  k.summary = pass.step + " 3/3, scatter (" + (s.staged ? "staged" : "direct") + "): tiles of " +
              std::to_string(s.tile()) + " elements (block " + std::to_string(s.block) + " x " +
              std::to_string(s.items) + "), " + pass.bins_text + ", stable ranks within each warp's chunk by ballots over " +
              std::to_string(std::bit_width(static_cast<std::uint64_t>(s.bins - 1))) +
              " bits, per-warp 16-bit counts scanned in bin-major order, " + std::to_string(s.shared_bytes) +
              " bytes of shared memory, registers for " + std::to_string(s.scatter_threads_per_sm / s.block) +
              " blocks per SM";
  k.why = s.staged ? "the tile's per-warp counts, its sorted keys or values and each bin's output position fit in shared "
                     "memory: each bin's run of a tile is written coalesced"
                   : "the per-warp counts of " + std::to_string(s.bins) +
                         " bins leave no room to stage a tile in shared memory; the runs of a bin in a tile are short, so "
                         "elements are written straight from registers";
  k.source = source(name, g, k.summary, pass.scatter_note, types, w, pass);
  return k;
}

}  // namespace fuseflow::codegen
