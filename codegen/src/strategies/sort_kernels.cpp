// The kernels of one counting-sort pass (sort_kernels.hpp): the tile shape, the scatter's
// kind ("staged": the tile sorted in shared memory and copied out coalesced, while the
// bins fit; "direct" from registers above), the fused key and value expressions or the
// scratch arrays a pass reads, and the stores into the outputs or the next pass's scratch.
#include "sort_kernels.hpp"

#include <algorithm>
#include <bit>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

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

namespace {

// `const auto fn = [&](const long long i) -> T { ... };`: expression e of element i (input x
// as in_x[i]), or, reading scratch, element i of `array`.
void emit_element_function(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                           const std::vector<std::string>& names, const std::string& fn, const Expr& e,
                           const std::string& array = "") {
  w.open("const auto " + fn + " = [&](const long long i) -> " + types.name(e.type()));
  if (!array.empty()) {
    w.line("return " + array + "[i];");
    return w.close("};");
  }
  std::vector<std::string> loads;
  for (const auto& n : names) loads.push_back("in_" + n + "[i]");
  ExprEmitter emitter(w, types,
                      [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a counting sort's keys or values"); });
  w.line("return " + emitter.emit(e) + ";");
  w.close("};");
}

std::string source(const std::string& name, const KernelContext& g, const std::string& summary, const std::string& note,
                   const CudaTypes& types, const SourceWriter& body, const SortPass& pass) {
  return kernel_source(name, g.program_text(), "strategy: " + summary + (note.empty() ? "" : "\n" + note),
                       {pass.onesweep ? "onesweep.cuh" : pass.by_functor ? "radix_sort.cuh" : "counting_sort.cuh"}, types, body.str());
}

// The fields the three kernels share: one block per tile of `tile` items, the grid
// growing with n (no grid cap), the reason the sort was chosen; the Scratch arguments
// numbered in order, as the launches bind them.
KernelSpec tile_kernel(const std::string& name, int block, int tile, int items, std::vector<Arg> args,
                       const SortPass& pass) {
  int scratch = 0;
  for (Arg& a : args)
    if (a.kind == Arg::Kind::Scratch) a.index = scratch++;
  KernelSpec k;
  k.name = name;
  k.block = block;
  k.max_grid = 0;
  k.any_grid = false;
  k.items_per_block_step = tile;
  k.tuning = {{"block", block}, {"items", items}};
  k.args = std::move(args);
  k.why = pass.why;
  return k;
}

// The kernel's arguments before its own scratch: the fused inputs, or n and the scratch
// arrays of the keys (and values) a later pass reads.
std::vector<Arg> read_args(const OpNode& op, const KernelContext& g, const SortPass& pass, bool values,
                           std::vector<std::string>& names) {
  if (!pass.from_scratch) return elementwise_args(g, names);
  std::vector<Arg> args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                           {Arg::Kind::Scratch, 0, "keys_in", op.keys.type()}};
  if (values) args.push_back({Arg::Kind::Scratch, 0, "values_in", op.values.type()});
  return args;
}

// The scatter's arguments after what it reads: the program outputs, or the next pass's
// scratch keys_out, values_out.
void add_write_args(const OpNode& op, const std::vector<SortOutput>& outputs, const SortPass& pass,
                    std::vector<Arg>& args) {
  if (pass.to_scratch) {
    args.push_back({Arg::Kind::Scratch, 0, "keys_out", op.keys.type()});
    if (op.values.valid()) args.push_back({Arg::Kind::Scratch, 0, "values_out", op.values.type()});
  } else {
    for (const auto& o : outputs)
      args.push_back({Arg::Kind::Output, o.program_output, "out" + std::to_string(o.program_output),
                      op.output_types[static_cast<std::size_t>(o.result)]});
  }
}

// The stores of result r (0 keys, 1 values): into every program output that is r, or the
// next pass's scratch. Returns the names of the key and value store functors.
std::pair<std::string, std::string> emit_stores(SourceWriter& w, CudaTypes& types, const OpNode& op,
                                                const std::vector<SortOutput>& outputs, const SortPass& pass) {
  const auto store = [&](int r, const std::string& fn, const std::string& type) {
    std::vector<std::string> targets;
    if (pass.to_scratch) targets.push_back(r == 0 ? "keys_out" : "values_out");
    for (const auto& o : outputs)
      if (!pass.to_scratch && o.result == r) targets.push_back("out" + std::to_string(o.program_output));
    if (targets.empty()) return std::string("ff::sort::Discard{}");
    w.open("const auto " + fn + " = [&](const unsigned long long p, const " + type + "& v)");
    for (const auto& t : targets) w.line(t + "[p] = v;");
    w.close("};");
    return fn;
  };
  const std::string store_key = store(0, "store_key", types.name(op.keys.type()));
  return {store_key, op.values.valid() ? store(1, "store_value", types.name(op.values.type())) : "ff::sort::Discard{}"};
}

}  // namespace

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
  const bool with_values = op.values.valid();
  std::vector<Arg> args = read_args(op, g, pass, with_values, names);
  add_write_args(op, outputs, pass, args);
  args.push_back({Arg::Kind::Scratch, 0, "positions", ScalarType::U64});
  const std::string name = pass.prefix + "_scatter_" + (s.staged ? "staged_" : "direct_") +
                           short_type_name(op.keys.type()) +
                           (with_values ? "_" + short_type_name(op.values.type()) : "") + pass.suffix;

  SourceWriter w;
  std::vector<std::string> constants = {"constexpr int kBlock = " + std::to_string(s.block) + ";",
                                        "constexpr int kItems = " + std::to_string(s.items) +
                                            ";  // elements per thread per tile"};
  constants.insert(constants.end(), pass.bin_constants.begin(), pass.bin_constants.end());
  constants.push_back(std::string("constexpr bool kStaged = ") + (s.staged ? "true" : "false") + ";  // " +
                      (s.staged ? "the tile is sorted in shared memory, then copied out coalesced"
                                : "elements are written straight from registers"));
  emit_constants(w, constants);
  open_elementwise_kernel(w, types, name, s.block, args, pass.from_scratch ? KernelContext{} : g,
                          s.scatter_threads_per_sm / s.block);
  emit_element_function(w, types, g, names, "key_at", op.keys, pass.from_scratch ? "keys_in" : "");
  if (with_values) emit_element_function(w, types, g, names, "value_at", op.values, pass.from_scratch ? "values_in" : "");
  const auto [store_key, store_value] = emit_stores(w, types, op, outputs, pass);
  w.line(std::string("ff::sort::scatter_tile") + (pass.by_functor ? "_by" : "") + "<kBlock, kItems, " + pass.bins_arg +
         ", kStaged>(n, positions, key_at, " + std::string(with_values ? "value_at" : "ff::sort::NoValues{}") + ", " +
         store_key + ", " + store_value + ");");
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

// ---- Onesweep -----------------------------------------------------------------------------

std::vector<std::pair<std::string, std::int64_t>> onesweep_tuning_values(const OnesweepPolicy& p) {
  return {{"onesweep_block", p.block},
          {"onesweep_blocks_per_sm", p.blocks_per_sm},
          {"onesweep_shared_limit", static_cast<std::int64_t>(p.shared_limit)},
          {"onesweep_thread_bytes", static_cast<std::int64_t>(p.thread_bytes)},
          {"onesweep_max_items", p.max_items},
          {"histogram_block", p.histogram_block},
          {"histogram_items", p.histogram_items},
          {"histogram_grid", p.histogram_grid},
          {"onesweep_max_bins", p.max_bins}};
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

KernelSpec emit_onesweep_pass(const OpNode& op, const KernelContext& g, const std::vector<SortOutput>& outputs,
                              const OnesweepTuning& s, const SortPass& pass, int digit, std::int64_t row_bins,
                              int parity) {
  CudaTypes types;
  std::vector<std::string> names;
  const bool with_values = op.values.valid();
  std::vector<Arg> args = read_args(op, g, pass, with_values, names);
  add_write_args(op, outputs, pass, args);
  args.push_back({Arg::Kind::Scratch, 0, "digit_counts", ScalarType::U64});
  args.push_back({Arg::Kind::Scratch, 0, "bin_starts", ScalarType::U64});
  args.push_back({Arg::Kind::Scratch, 0, "lookback", ScalarType::U32});
  args.push_back({Arg::Kind::Ticket, kTicketTileCounter, "tile_counter", ScalarType::U32});
  const std::string name = pass.prefix + "_onesweep_" + short_type_name(op.keys.type()) +
                           (with_values ? "_" + short_type_name(op.values.type()) : "") + pass.suffix;
  SourceWriter w;
  std::vector<std::string> constants = {"constexpr int kBlock = " + std::to_string(s.block) + ";",
                                        "constexpr int kItems = " + std::to_string(s.items) +
                                            ";  // elements per thread per tile"};
  constants.insert(constants.end(), pass.bin_constants.begin(), pass.bin_constants.end());
  constants.push_back("constexpr int kDigit = " + std::to_string(digit) + ";  // row of digit_counts");
  constants.push_back("constexpr int kRowBins = " + std::to_string(row_bins) + ";");
  constants.push_back("constexpr int kParity = " + std::to_string(parity) + ";  // the look-back flags of this pass");
  constants.push_back("constexpr long long kPortionTiles = " + std::to_string(s.portion_tiles) +
                      ";  // tiles per launch: counts below 2^30");
  emit_constants(w, constants);
  open_elementwise_kernel(w, types, name, s.block, args, pass.from_scratch ? KernelContext{} : g, s.blocks_per_sm);
  emit_element_function(w, types, g, names, "key_at", op.keys, pass.from_scratch ? "keys_in" : "");
  if (with_values) emit_element_function(w, types, g, names, "value_at", op.values, pass.from_scratch ? "values_in" : "");
  const auto [store_key, store_value] = emit_stores(w, types, op, outputs, pass);
  w.line("ff::sort::onesweep_pass<kBlock, kItems, " + pass.bins_arg +
         ", kDigit, kRowBins, kParity, kPortionTiles>(n, digit_counts, bin_starts, lookback, tile_counter, key_at, " +
         std::string(with_values ? "value_at" : "ff::sort::NoValues{}") + ", " + store_key + ", " + store_value + ");");
  w.close();
  KernelSpec k = tile_kernel(name, s.block, s.tile(), s.items, args, pass);
  k.tuning.push_back({"bins", s.bins});
  k.tuning.push_back({"portion_tiles", s.portion_tiles});
  k.summary = pass.step + " Onesweep pass: tiles of " + std::to_string(s.tile()) + " elements (block " +
              std::to_string(s.block) + " x " + std::to_string(s.items) + ") in atomic-counter order, " +
              pass.bins_text + ", stable ranks within each warp's chunk by ballots over " +
              std::to_string(std::bit_width(static_cast<std::uint64_t>(s.bins - 1))) +
              " bits (one shared atomic per bin and round), decoupled look-back over per-bin tile counts (flag and "
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

void onesweep_launches(const Plan& plan, int first, int passes, std::int64_t n, ScheduleBuilder& b) {
  if (n == 0) return;
  const KernelSpec& histogram = plan.kernels.at(static_cast<std::size_t>(first));
  const KernelSpec& pass0 = plan.kernels.at(static_cast<std::size_t>(first) + 1);
  const std::int64_t tile = pass0.items_per_block_step, bins = tuning_of(pass0, "bins");
  const std::int64_t tiles = (n + tile - 1) / tile, portion_tiles = tuning_of(pass0, "portion_tiles");
  const std::int64_t portions = (tiles + portion_tiles - 1) / portion_tiles;
  if (tiles > UINT32_MAX)
    throw GraphError("sort: " + std::to_string(n) + " elements are more tiles than a 32-bit tile counter counts");
  std::size_t element_bytes[4] = {0, 0, 0, 0};  // keys_in, values_in, keys_out, values_out
  const char* element_names[4] = {"keys_in", "values_in", "keys_out", "values_out"};
  for (int p = 0; p < passes; ++p)
    for (const Arg& a : plan.kernels.at(static_cast<std::size_t>(first + 1 + p)).args)
      for (int e = 0; e < 4; ++e)
        if (a.kind == Arg::Kind::Scratch && a.name == element_names[e]) element_bytes[e] = a.type.size();
  // The keys and values between passes: two arrays each, used in turn (one for two passes).
  const auto un = static_cast<std::size_t>(n);
  std::size_t keys[2] = {0, 0}, values[2] = {0, 0};
  for (int i = 0; i < std::min(passes - 1, 2); ++i) {
    keys[i] = b.allocate(un * element_bytes[2]);
    if (element_bytes[3]) values[i] = b.allocate(un * element_bytes[3]);
  }
  const std::size_t digit_counts =
      b.allocate(static_cast<std::size_t>(tuning_of(histogram, "digits") * tuning_of(histogram, "bins")) * 8, true);
  const std::size_t status = b.allocate(static_cast<std::size_t>(tiles * bins) * 4, true);
  const std::size_t starts = b.allocate(static_cast<std::size_t>(portions * bins) * 8);
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
    for (std::int64_t q = 0; q < portions; ++q)
      b.launch({first + 1 + p, n, static_cast<int>(std::min(portion_tiles, tiles - q * portion_tiles)), scratch});
  }
}

KernelContext keys_context(const KernelContext& g) {
  KernelContext keys = g;
  keys.leaves = g.key_leaves;
  return keys;
}

std::vector<SortOutput> sort_outputs(const KernelContext& g) {
  std::vector<SortOutput> outputs;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) outputs.push_back({g.output_ids[j], g.outputs[j].node().index});
  return outputs;
}

std::vector<std::pair<std::string, std::int64_t>> sort_tuning_values(const SortPolicy& s) {
  return {{"thread_bytes", static_cast<std::int64_t>(s.thread_bytes)}, {"max_items", s.max_items},
          {"copies_budget", static_cast<std::int64_t>(s.copies_budget)}, {"max_copies", s.max_copies},
          {"scan_block", s.scan_block}, {"scan_items", s.scan_items}};
}

}  // namespace fuseflow::codegen
