// Stable counting sort by a small integer key (counting_sort, sort_by_key): per-tile
// counts (ff_counting_sort_tile_counts_*), one exclusive scan of them into 64-bit output
// positions (ff_counting_sort_scan_u64, decoupled look-back), a scatter
// (ff_counting_sort_scatter_*) that ranks each element within its tile and bin by per-warp
// ballots; the algorithm and why it is stable are in ff::sort, <fuseflow/counting_sort.cuh>.
// Here: the tile shape, the scatter's kind ("staged": the tile sorted in shared memory and
// copied out coalesced, while the bins fit; "direct" from registers above), the fused key
// and value expressions and the output stores. A key outside [0, bins) goes to one more
// bin after every key in range (the CPU reference's definition): a permutation of n.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "../array_ops.hpp"
#include "../scan_context.hpp"
#include "../schedule.hpp"

namespace fuseflow::codegen {

namespace {

// The tuning of one sort (from SortPolicy): one table for all three kernels, which share
// the tile.
struct SortTuning {
  int block = 256;
  int items = 16;
  int scatter_threads_per_sm = 768;
  bool staged = true;
  int copies = 1;
  std::int64_t bins = 0;        // key bins + 1: the last holds the keys outside [0, key bins)
  std::size_t shared_bytes = 0;  // of the scatter
  int tile() const { return block * items; }
  int warps() const { return block / 32; }
};

SortTuning sort_tuning(const OpNode& op, const SortPolicy& policy) {
  const std::size_t kSharedLimit = policy.shared_limit, kThreadBytes = policy.thread_bytes,
                    kMaxItems = static_cast<std::size_t>(policy.max_items);
  if (op.bins > kMaxCountingSortBins)
    throw GraphError("counting_sort: " + std::to_string(op.bins) + " bins is more than the " +
                     std::to_string(kMaxCountingSortBins) + " this version sorts by (a tile's per-warp counts live in "
                     "shared memory); sort by a coarser key, or in two stable passes: by the low bits, then the high bits");
  const std::size_t key = op.keys.type().size();
  const std::size_t value = op.values.valid() ? op.values.type().size() : 0;
  SortTuning s;
  s.scatter_threads_per_sm = policy.scatter_threads_per_sm;
  s.bins = op.bins + 1;
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

// `const auto fn = [&](const long long i) -> T { ... };`: expression e of element i (input x as in_x[i]).
void emit_element_function(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                           const std::vector<std::string>& names, const std::string& fn, const Expr& e) {
  w.open("const auto " + fn + " = [&](const long long i) -> " + types.name(e.type()));
  std::vector<std::string> loads;
  for (const auto& n : names) loads.push_back("in_" + n + "[i]");
  ExprEmitter emitter(w, types,
                      [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a counting sort's keys or values"); });
  w.line("return " + emitter.emit(e) + ";");
  w.close("};");
}

std::string source(const std::string& name, const KernelContext& g, const std::string& summary, const std::string& note,
                   const CudaTypes& types, const SourceWriter& body) {
  return kernel_source(name, g.program_text(), "strategy: " + summary + (note.empty() ? "" : "\n" + note),
                       {"counting_sort.cuh"}, types, body.str());
}

const char* kWhy = "a stable counting sort (DESIGN.md): per-tile counts, one exclusive scan of them, a scatter; the "
                   "per-tile positions keep equal keys in input order";

std::string bins_text(const OpNode& op) {
  return std::to_string(op.bins + 1) + " bins (" + std::to_string(op.bins) + " keys + 1 for keys outside [0, " +
         std::to_string(op.bins) + "))";
}

// The fields the three kernels share: one block per tile of `tile` items, the grid
// growing with n (no grid cap), the reason the sort was chosen.
KernelSpec tile_kernel(const std::string& name, int block, int tile, int items, std::vector<Arg> args) {
  KernelSpec k;
  k.name = name;
  k.block = block;
  k.max_grid = 0;
  k.any_grid = false;
  k.items_per_block_step = tile;
  k.tuning = {{"block", block}, {"items", items}};
  k.args = std::move(args);
  k.why = kWhy;
  return k;
}

KernelSpec emit_tile_counts(const OpNode& op, const KernelContext& g, const SortTuning& s) {
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  args.push_back({Arg::Kind::Scratch, 0, "tile_counts", ScalarType::U32});
  const std::string name = "ff_counting_sort_tile_counts_" + short_type_name(op.keys.type());

  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(s.block) + ";",
                     "constexpr int kTile = " + std::to_string(s.tile()) + ";  // elements per tile (block " +
                         std::to_string(s.block) + " x " + std::to_string(s.items) + ")",
                     "constexpr long long kKeyBins = " + std::to_string(op.bins) +
                         ";  // keys in [0, kKeyBins); any other key sorts last",
                     "constexpr int kCopies = " + std::to_string(s.copies) + ";  // private copies of the tile's counts"});
  open_elementwise_kernel(w, types, name, s.block, args, g);
  emit_element_function(w, types, g, names, "key_at", op.keys);
  w.line("ff::sort::count_tile<kBlock, kTile, kKeyBins, kCopies>(n, key_at, tile_counts);");
  w.close();

  KernelSpec k = tile_kernel(name, s.block, s.tile(), s.items, args);
  k.summary = "counting sort 1/3, tile counts: tiles of " + std::to_string(s.tile()) + " elements (block " +
              std::to_string(s.block) + " x " + std::to_string(s.items) + "), " + bins_text(op) + ", " +
              std::to_string(s.copies) + " private copies of 32-bit counts in shared memory; each tile's counts are "
              "one column of the bin-major [bins x tiles] count matrix";
  k.source = source(name, g, k.summary, "", types, w);
  return k;
}

KernelSpec emit_scan_counts(const KernelContext& g, const SortPolicy& policy) {
  const int kScanBlock = policy.scan_block, kScanItems = policy.scan_items;
  CudaTypes types;
  std::vector<Arg> args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                           {Arg::Kind::Scratch, 0, "tile_counts", ScalarType::U32},
                           {Arg::Kind::Scratch, 1, "positions", ScalarType::U64}};
  for (const Arg& a : lookback_args(ScalarType::U64)) args.push_back(a);
  const std::string name = "ff_counting_sort_scan_u64";
  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kScanBlock) + ";",
                     "constexpr int kItems = " + std::to_string(kScanItems) + ";  // counts per thread"});
  open_elementwise_kernel(w, types, name, kScanBlock, args, KernelContext{});
  w.comment("n is the number of counts: bins x tiles.");
  w.line("ff::sort::exclusive_scan_counts<kBlock, kItems>(tile_counts, positions, n, tile_counter, tile_status, epoch);");
  w.close();

  KernelSpec k = tile_kernel(name, kScanBlock, kScanBlock * kScanItems, kScanItems, args);
  k.summary = "counting sort 2/3, exclusive scan of the count matrix in bin-major order into 64-bit output "
              "positions: single pass, decoupled look-back, block " + std::to_string(kScanBlock) + ", " +
              std::to_string(kScanItems) + " counts per thread";
  k.source = source(name, g, k.summary, "", types, w);
  return k;
}

KernelSpec emit_scatter(const OpNode& op, const KernelContext& g, const std::vector<SortOutput>& outputs, const SortTuning& s) {
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  const bool with_values = op.values.valid();
  for (const auto& o : outputs)
    args.push_back({Arg::Kind::Output, o.program_output, "out" + std::to_string(o.program_output),
                    op.output_types[static_cast<std::size_t>(o.result)]});
  args.push_back({Arg::Kind::Scratch, 0, "positions", ScalarType::U64});
  const std::string name = std::string("ff_counting_sort_scatter_") + (s.staged ? "staged_" : "direct_") +
                           short_type_name(op.keys.type()) + (with_values ? "_" + short_type_name(op.values.type()) : "");

  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(s.block) + ";",
                     "constexpr int kItems = " + std::to_string(s.items) + ";  // elements per thread per tile",
                     "constexpr long long kKeyBins = " + std::to_string(op.bins) +
                         ";  // keys in [0, kKeyBins); any other key sorts last",
                     std::string("constexpr bool kStaged = ") + (s.staged ? "true" : "false") + ";  // " +
                         (s.staged ? "the tile is sorted in shared memory, then copied out coalesced"
                                   : "elements are written straight from registers")});
  open_elementwise_kernel(w, types, name, s.block, args, g, s.scatter_threads_per_sm / s.block);
  emit_element_function(w, types, g, names, "key_at", op.keys);
  if (with_values) emit_element_function(w, types, g, names, "value_at", op.values);
  // The stores of result r (0 keys, 1 values): into every program output that is r.
  const auto store = [&](int r, const std::string& fn, const std::string& type) {
    std::vector<std::string> targets;
    for (const auto& o : outputs)
      if (o.result == r) targets.push_back("out" + std::to_string(o.program_output));
    if (targets.empty()) return std::string("ff::sort::Discard{}");
    w.open("const auto " + fn + " = [&](const unsigned long long p, const " + type + "& v)");
    for (const auto& t : targets) w.line(t + "[p] = v;");
    w.close("};");
    return fn;
  };
  const std::string store_key = store(0, "store_key", types.name(op.keys.type()));
  const std::string store_value = with_values ? store(1, "store_value", types.name(op.values.type())) : "ff::sort::Discard{}";
  w.line("ff::sort::scatter_tile<kBlock, kItems, kKeyBins, kStaged>(n, positions, key_at, " +
         std::string(with_values ? "value_at" : "ff::sort::NoValues{}") + ", " + store_key + ", " + store_value + ");");
  w.close();

  KernelSpec k = tile_kernel(name, s.block, s.tile(), s.items, args);
  k.summary = std::string("counting sort 3/3, scatter (") + (s.staged ? "staged" : "direct") + "): tiles of " +
              std::to_string(s.tile()) + " elements (block " + std::to_string(s.block) + " x " +
              std::to_string(s.items) + "), " + bins_text(op) + ", stable ranks within each warp's chunk by ballots over " +
              std::to_string(std::bit_width(static_cast<std::uint64_t>(op.bins))) +
              " bits, per-warp 16-bit counts scanned in bin-major order, " + std::to_string(s.shared_bytes) +
              " bytes of shared memory, registers for " + std::to_string(s.scatter_threads_per_sm / s.block) +
              " blocks per SM";
  k.why = s.staged ? "the tile's per-warp counts, its sorted keys or values and each bin's output position fit in shared "
                     "memory: each bin's run of a tile is written coalesced"
                   : "the per-warp counts of " + std::to_string(s.bins) +
                         " bins leave no room to stage a tile in shared memory; the runs of a bin in a tile are short, so "
                         "elements are written straight from registers";
  k.source = source(name, g, k.summary,
                    "Keys outside [0, kKeyBins) follow every key in range, in input order: the output is a permutation.",
                    types, w);
  return k;
}

}  // namespace

std::vector<KernelSpec> emit_counting_sort(const OpNode& op, const KernelContext& key_leaves, const KernelContext& leaves,
                                       const std::vector<SortOutput>& outputs, const SortPolicy& policy) {
  const SortTuning s = sort_tuning(op, policy);
  return {emit_tile_counts(op, key_leaves, s), emit_scan_counts(leaves, policy), emit_scatter(op, leaves, outputs, s)};
}

void counting_sort_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (n == 0) return;
  const int first = step.kernel;
  const std::int64_t tile = plan.kernels.at(static_cast<std::size_t>(first)).items_per_block_step;
  const std::int64_t scan_tile = plan.kernels.at(static_cast<std::size_t>(first) + 1).items_per_block_step;
  const std::int64_t bins = step.bins;
  const std::int64_t tiles = (n + tile - 1) / tile;
  const std::int64_t counts = bins * tiles;
  const std::int64_t scan_tiles = (counts + scan_tile - 1) / scan_tile;
  if (scan_tiles > INT32_MAX)
    throw GraphError("counting_sort: " + std::to_string(n) + " elements over " + std::to_string(bins) +
                     " bins need more tiles than one launch has blocks");
  const std::size_t tile_counts = b.allocate(static_cast<std::size_t>(counts) * 4);
  const std::size_t positions = b.allocate(static_cast<std::size_t>(counts) * 8);
  b.launch({first, n, static_cast<int>(tiles), {tile_counts}});
  b.launch({first + 1, counts, static_cast<int>(scan_tiles), {tile_counts, positions},
            lookback_status_bytes(sizeof(std::uint64_t), scan_tiles)});
  b.launch({first + 2, n, static_cast<int>(tiles), {positions}});
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class CountingSort final : public RegisteredStrategy {
 public:
  CountingSort() : RegisteredStrategy("counting sort", "counting_sort") {}
  Applies applies(const KernelContext&) const override {
    return {true, "small integer keys: tile counts, their scan, a stable scatter"};
  }
  TuningValues tuning(const Policies& p) const override {
    const SortPolicy& s = p.sort;
    return {{"thread_bytes", static_cast<std::int64_t>(s.thread_bytes)}, {"max_items", s.max_items},
            {"copies_budget", static_cast<std::int64_t>(s.copies_budget)}, {"max_copies", s.max_copies},
            {"scan_block", s.scan_block}, {"scan_items", s.scan_items}};
  }
  // The tile counts read what the keys read; the scan and the scatter, keys and values.
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    KernelContext keys = g;
    keys.leaves = g.key_leaves;
    std::vector<SortOutput> outputs;
    for (std::size_t j = 0; j < g.outputs.size(); ++j) outputs.push_back({g.output_ids[j], g.outputs[j].node().index});
    return emit_counting_sort(*g.op, keys, g, outputs, g.policies().sort);
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::CountingSort, first, 3, -1, 0, INT64_MAX, g.op->bins + 1, false}};
  }
};

}  // namespace

const RegisteredStrategy& counting_sort_strategy() {
  static const CountingSort s;
  return s;
}

}  // namespace fuseflow::codegen
