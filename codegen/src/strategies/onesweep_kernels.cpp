// The Onesweep sort's kernels (sort_kernels.hpp): the histogram of every digit in one read
// of the keys, then one pass per digit that ranks a tile, looks back over per-bin tile
// counts and scatters; their tuning, and the launches of the whole sort. The algorithms
// are in <fuseflow/onesweep.cuh>.
#include <algorithm>
#include <bit>
#include <vector>

#include "sort_kernel_parts.hpp"

namespace fuseflow::codegen {

using namespace sort_parts;

std::vector<std::pair<std::string, std::int64_t>> onesweep_tuning_values(const OnesweepPolicy& p) {
  return {{"onesweep_block", p.block},
          {"onesweep_blocks_per_sm", p.blocks_per_sm},
          {"onesweep_shared_limit", static_cast<std::int64_t>(p.shared_limit)},
          {"onesweep_thread_bytes", static_cast<std::int64_t>(p.thread_bytes)},
          {"onesweep_max_items", p.max_items},
          {"histogram_block", p.histogram_block},
          {"histogram_items", p.histogram_items},
          {"histogram_grid", p.histogram_grid},
          {"onesweep_max_bins", p.max_bins},
          {"onesweep_keys_only_items", p.keys_only_items},
          {"onesweep_keys_only_float_items", p.keys_only_float_items},
          {"onesweep_keys_only_blocks_per_sm", p.keys_only_blocks_per_sm}};
}

OnesweepTuning onesweep_tuning(const OpNode& op, std::int64_t bins, const OnesweepPolicy& policy) {
  const std::size_t key = op.keys.type().size();
  const std::size_t value = op.values.valid() ? op.values.type().size() : 0;
  OnesweepTuning s;
  s.block = policy.block;
  s.blocks_per_sm = policy.blocks_per_sm;
  s.bins = bins;
  s.items = static_cast<int>(
      std::clamp<std::size_t>(policy.thread_bytes / (key + value), 1, static_cast<std::size_t>(policy.max_items)));
  if (value == 0) {
    // Keys alone: the tile and register budget of more blocks per SM (more warps to hide
    // the ranking's and the look-back's latency; nothing else to keep in registers).
    s.items = std::min(s.items, op.keys.type().scalar() == ScalarType::F32 ? policy.keys_only_float_items : policy.keys_only_items);
    s.blocks_per_sm = policy.keys_only_blocks_per_sm;
  }
  // The tile's keys or values staged (the per-warp 32-bit counts share those bytes), the
  // bins' output distances, the block scan's warp totals (BinCounts), the tile id.
  const auto bytes = [&] {
    const auto b = static_cast<std::size_t>(bins);
    return std::max(static_cast<std::size_t>(s.block / 32) * b * 4,
                    static_cast<std::size_t>(s.tile()) * std::max(key, value)) +
           b * 8 + static_cast<std::size_t>(s.block / 32) * 16 + 4;
  };
  while (s.items > 1 && bytes() > policy.shared_limit) --s.items;
  s.shared_bytes = bytes();
  s.portion_tiles = ((std::int64_t{1} << 30) - 1) / s.tile();
  return s;
}

KernelSpec emit_onesweep_histogram(const OpNode& op, const KernelContext& g, const std::string& digits_type, int digits,
                                   std::int64_t row_bins, const OnesweepPolicy& policy, const SortPass& pass) {
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  args.push_back({Arg::Kind::Scratch, 0, "digit_counts", ScalarType::U64});
  const std::string name = pass.prefix + "_histograms_" + short_type_name(op.keys.type()) + pass.suffix;
  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(policy.histogram_block) + ";",
                     "constexpr int kItems = " + std::to_string(policy.histogram_items) + ";  // keys per thread per chunk",
                     "using Digits = " + digits_type + ";  // " + std::to_string(digits) + " digit(s) of " +
                         std::to_string(row_bins) + " bins"});
  open_elementwise_kernel(w, types, name, policy.histogram_block, args, g);
  emit_element_function(w, types, g, names, "key_at", op.keys);
  w.line("ff::sort::digit_histograms<kBlock, kItems, Digits>(n, key_at, digit_counts);");
  w.close();
  KernelSpec k = tile_kernel(name, policy.histogram_block, policy.histogram_block * policy.histogram_items,
                             policy.histogram_items, args, pass);
  k.max_grid = policy.histogram_grid;
  k.tuning.push_back({"digits", digits});
  k.tuning.push_back({"bins", row_bins});
  k.summary = pass.step + " histograms: every digit's counts (" + std::to_string(digits) + " x " +
              std::to_string(row_bins) + " bins) in one read of the keys, chunks of " +
              std::to_string(policy.histogram_block * policy.histogram_items) + " keys, at most " +
              std::to_string(policy.histogram_grid) + " blocks, shared-memory counts added once per run of equal digits";
  k.source = source(name, g, k.summary, "", types, w, pass);
  return k;
}

namespace {
// Bins whose last alone needs the top bit (a counting sort by 2^m keys: 2^m + 1 bins):
// full tiles rank by one ballot fewer when the histogram counted nothing in that bin.
std::string narrow_note(std::int64_t bins) {
  const auto wide = std::bit_width(static_cast<std::uint64_t>(bins - 1));
  const auto narrow = std::bit_width(static_cast<std::uint64_t>(bins - 2));
  if (narrow == wide) return "";
  return " (" + std::to_string(narrow) + " in full tiles when no key falls in the last bin)";
}
}  // namespace

KernelSpec emit_onesweep_pass(const OpNode& op, const KernelContext& g, const std::vector<SortOutput>& outputs,
                              const OnesweepTuning& s, const SortPass& pass, int digit, std::int64_t row_bins,
                              int parity) {
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = scatter_args(op, g, outputs, pass, names);
  args.push_back({Arg::Kind::Scratch, 0, "digit_counts", ScalarType::U64});
  args.push_back({Arg::Kind::Scratch, 0, "bin_starts", ScalarType::U64});
  args.push_back({Arg::Kind::Scratch, 0, "lookback", ScalarType::U32});
  args.push_back({Arg::Kind::Ticket, kTicketTileCounter, "tile_counter", ScalarType::U32});
  const std::string name = pass.prefix + "_onesweep_" + short_type_name(op.keys.type()) +
                           (op.values.valid() ? "_" + short_type_name(op.values.type()) : "") + pass.suffix;
  SourceWriter w;
  std::vector<std::string> constants = tile_constants(s.block, s.items, pass);
  constants.push_back("constexpr int kDigit = " + std::to_string(digit) + ";  // row of digit_counts");
  constants.push_back("constexpr int kRowBins = " + std::to_string(row_bins) + ";");
  constants.push_back("constexpr int kParity = " + std::to_string(parity) + ";  // the look-back flags of this pass");
  constants.push_back("constexpr long long kPortionTiles = " + std::to_string(s.portion_tiles) +
                      ";  // tiles per launch: counts below 2^30");
  emit_constants(w, constants);
  open_elementwise_kernel(w, types, name, s.block, args, pass.from_scratch ? KernelContext{} : g, s.blocks_per_sm);
  const std::string functors = emit_scatter_functors(w, types, g, names, op, outputs, pass);
  w.line("ff::sort::onesweep_pass<kBlock, kItems, " + pass.bins_arg +
         ", kDigit, kRowBins, kParity, kPortionTiles>(n, digit_counts, bin_starts, lookback, tile_counter, " + functors +
         ");");
  w.close();
  KernelSpec k = tile_kernel(name, s.block, s.tile(), s.items, args, pass);
  k.tuning.push_back({"bins", s.bins});
  k.tuning.push_back({"portion_tiles", s.portion_tiles});
  k.summary = pass.step + " Onesweep pass: tiles of " + std::to_string(s.tile()) + " elements (block " +
              std::to_string(s.block) + " x " + std::to_string(s.items) + ") in atomic-counter order, " +
              pass.bins_text + ", stable ranks within each warp's chunk by ballots over " +
              std::to_string(std::bit_width(static_cast<std::uint64_t>(s.bins - 1))) + " bits" + narrow_note(s.bins) +
              " (one shared atomic per bin and round), decoupled look-back over per-bin tile counts (flag and "
              "30-bit count in one word), the keys staged in shared memory before the look-back and written "
              "coalesced, the values after them, " + std::to_string(s.shared_bytes) +
              " bytes of shared memory, registers for " + std::to_string(s.blocks_per_sm) + " blocks per SM";
  k.source = source(name, g, k.summary, pass.scatter_note, types, w, pass);
  return k;
}

namespace {
std::int64_t tuning_of(const KernelSpec& k, const std::string& name) {
  for (const auto& [key, value] : k.tuning)
    if (key == name) return value;
  throw InternalError("sort: kernel " + k.name + " has no tuning value " + name);
}
}  // namespace

SortedScratch onesweep_launches(const Plan& plan, int first, int passes, std::int64_t n, ScheduleBuilder& b) {
  if (n == 0) return {};
  const KernelSpec& histogram = plan.kernels.at(static_cast<std::size_t>(first));
  // Each pass has its own tile (a narrower last digit needs less shared memory for its
  // bins, so its tile may hold more elements) and so its own tile and portion counts: the
  // kernel counts its tiles from its tile, and its launches must cover exactly those (a
  // block past them would draw a tile id after the counter was reset, and the next launch's
  // tiles would wait on entries nobody writes). The look-back entries and the portions'
  // bin starts are sized for the pass that needs the most.
  struct PassTiles {
    std::int64_t tiles, portion_tiles, portions;
  };
  std::vector<PassTiles> pass_tiles;
  std::int64_t status_entries = 0, start_entries = 0;
  for (int p = 0; p < passes; ++p) {
    const KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(first + 1 + p));
    const std::int64_t tile = k.items_per_block_step, bins = tuning_of(k, "bins");
    const std::int64_t tiles = (n + tile - 1) / tile, portion_tiles = tuning_of(k, "portion_tiles");
    if (tiles > UINT32_MAX)
      throw GraphError("sort: " + std::to_string(n) + " elements are more tiles than a 32-bit tile counter counts");
    pass_tiles.push_back({tiles, portion_tiles, (tiles + portion_tiles - 1) / portion_tiles});
    status_entries = std::max(status_entries, tiles * bins);
    start_entries = std::max(start_entries, pass_tiles.back().portions * bins);
  }
  std::size_t element_bytes[4] = {0, 0, 0, 0};  // keys_in, values_in, keys_out, values_out
  const char* element_names[4] = {"keys_in", "values_in", "keys_out", "values_out"};
  for (int p = 0; p < passes; ++p)
    for (const Arg& a : plan.kernels.at(static_cast<std::size_t>(first + 1 + p)).args)
      for (int e = 0; e < 4; ++e)
        if (a.kind == Arg::Kind::Scratch && a.name == element_names[e]) element_bytes[e] = a.type.size();
  // The keys and values between passes: two arrays each, used in turn (one for two passes,
  // unless the last pass writes scratch too).
  bool last_to_scratch = false;
  for (const Arg& a : plan.kernels.at(static_cast<std::size_t>(first + passes)).args)
    last_to_scratch = last_to_scratch || (a.kind == Arg::Kind::Scratch && a.name == "keys_out");
  const auto un = static_cast<std::size_t>(n);
  std::size_t keys[2] = {0, 0}, values[2] = {0, 0};
  for (int i = 0; i < std::min(last_to_scratch ? passes : passes - 1, 2); ++i) {
    keys[i] = b.allocate(un * element_bytes[2]);
    if (element_bytes[3]) values[i] = b.allocate(un * element_bytes[3]);
  }
  const std::size_t digit_counts =
      b.allocate(static_cast<std::size_t>(tuning_of(histogram, "digits") * tuning_of(histogram, "bins")) * 8, true);
  const std::size_t status = b.allocate(static_cast<std::size_t>(status_entries) * 4, true);
  const std::size_t starts = b.allocate(static_cast<std::size_t>(start_entries) * 8);
  const std::int64_t chunk = histogram.items_per_block_step;
  b.launch({first, n, static_cast<int>(std::min<std::int64_t>((n + chunk - 1) / chunk, histogram.max_grid)), {digit_counts}});
  for (int p = 0; p < passes; ++p) {
    const KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(first + 1 + p));
    std::vector<std::size_t> scratch;
    for (const Arg& a : k.args) {
      if (a.kind != Arg::Kind::Scratch) continue;
      if (a.name == "keys_in") scratch.push_back(keys[(p - 1) % 2]);
      else if (a.name == "values_in") scratch.push_back(values[(p - 1) % 2]);
      else if (a.name == "keys_out") scratch.push_back(keys[p % 2]);
      else if (a.name == "values_out") scratch.push_back(values[p % 2]);
      else if (a.name == "digit_counts") scratch.push_back(digit_counts);
      else if (a.name == "bin_starts") scratch.push_back(starts);
      else if (a.name == "lookback") scratch.push_back(status);
      else throw InternalError("sort: a Onesweep pass has an unknown scratch argument " + a.name);
    }
    const PassTiles& t = pass_tiles[static_cast<std::size_t>(p)];
    for (std::int64_t q = 0; q < t.portions; ++q)
      b.launch({first + 1 + p, n, static_cast<int>(std::min(t.portion_tiles, t.tiles - q * t.portion_tiles)), scratch});
  }
  if (!last_to_scratch) return {};
  return {keys[(passes - 1) % 2], values[(passes - 1) % 2], digit_counts};
}

}  // namespace fuseflow::codegen
