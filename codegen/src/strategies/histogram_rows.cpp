// Weighted histogram of many bins ("histogram rows"): histogram(bin, weights, bins) whose
// per-warp sums do not fit in shared memory (histogram.cpp's "weighted" kernel keeps a copy
// per warp there: about 12000 bins of 4-byte sums). Deterministic for float weights: the
// same bits on every run of the same program, n and device, with no float atomics.
//
// Two kernels, one step (StepSpec::Kind::HistogramRows), sharing one scratch buffer:
//   1. ff_histogram_weighted_rows_<T>: every block owns a row of `bins` sums in global
//      scratch (grid x bins), which only it writes. It zeroes its row, then takes tiles of
//      1024 consecutive elements, one per thread; in a tile each warp combines its lanes of
//      one bin in lane order, the warps' sums of one bin meet in a shared-memory table keyed
//      by bin, and the slot's owner adds them in warp order into the row (one global
//      read-modify-write per distinct bin of the tile; no two threads touch one bin in a
//      tile, and tiles are separated by __syncthreads). So a row adds its elements in a
//      fixed order (ff::histogram_weighted_rows, <fuseflow/histogram.cuh>).
//   2. ff_histogram_weighted_columns_<T>: each bin's sum of its column over the rows, in
//      row order, one thread per bin (coalesced reads; ff::histogram_weighted_columns).
// Speed: per element one load and, for a bin new in its tile, one random read-modify-write
// of a row (L2 while the rows fit, about 50 MB on the H100); per run the rows are zeroed
// and read once (2 x grid x bins x 4 or 8 bytes). The grid is the resident blocks, fewer
// when the rows would pass kRowsBudget, and a block takes at least bins / 4 elements so
// that its row costs no more traffic than its elements. A sort by bin and a reduce by key
// would be deterministic too, at several passes over the data instead of one.
// Integer weights take the same path (their sums wrap in the unsigned twin), so every
// weighted histogram gives one answer for one n, whatever its type.
#include <algorithm>

#include "../array_ops.hpp"
#include "../schedule.hpp"
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {

constexpr int kRowsBlock = 1024;    // threads and elements per tile (a warp mask per table slot: <= 1024)
constexpr int kColumnsBlock = 256;  // threads of the column sums, one bin each
constexpr int kTilesPerBlock = 4;   // tiles a block takes at least before another block (and row) pays
constexpr std::size_t kRowsBudget = std::size_t{256} << 20;  // bytes of rows (grid x bins sums) at most

// The largest grid: resident blocks, fewer when their rows would pass kRowsBudget; 0 when
// one row does not fit it.
int rows_max_grid(const KernelContext& g) {
  const std::size_t row = static_cast<std::size_t>(g.op->bins) * weighted_histogram_acc(g.op->output_types[0]).size();
  const Target& t = g.target();
  const int resident = t.sm_count * std::max(1, t.max_threads_per_sm / kRowsBlock);
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(resident), kRowsBudget / row));
}

std::string too_many_bins(const KernelContext& g) {
  const Type& sum = g.op->output_types[0];
  return "keeps a row of " + std::to_string(g.op->bins) + " sums of " + sum.name() + " per block in at most " +
         std::to_string(kRowsBudget >> 20) + " MiB of scratch, so it takes at most " +
         std::to_string(kRowsBudget / weighted_histogram_acc(sum).size()) + " bins of " + sum.name();
}

std::vector<KernelSpec> emit_histogram_rows(const KernelContext& g) {
  const OpNode& op = *g.op;
  const int output = g.output_ids.at(0);
  const Type& sum_type = op.output_types[0];
  const Type acc = weighted_histogram_acc(sum_type);
  const int max_grid = rows_max_grid(g);
  if (max_grid < 1) throw GraphError("histogram: a weighted histogram " + too_many_bins(g));
  const std::string bins = std::to_string(op.bins);
  const std::int64_t per_block = std::max<std::int64_t>(std::int64_t{kRowsBlock} * kTilesPerBlock, op.bins / 4);

  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  args.push_back({Arg::Kind::Scratch, 0, "rows", acc});
  const std::string rows_name = "ff_histogram_weighted_rows_" + short_type_name(sum_type);
  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kRowsBlock) + ";  // elements per tile, one per thread",
                     "constexpr long long kBins = " + bins + ";"});
  open_elementwise_kernel(w, types, rows_name, kRowsBlock, args, g);
  emit_bin_and_weight(w, types, g, names, acc);
  std::string pointers;
  for (const auto& n : names) pointers += ", in_" + n;
  w.line();
  w.comment("This block's row of `rows` (grid x kBins), added tile by tile in a fixed order.");
  w.line("ff::histogram_weighted_rows<kBlock, kBins, " + types.name(acc) + ">(n, bin_of, weight_of, rows" + pointers +
         ");");
  w.close();

  KernelSpec rows;
  rows.name = rows_name;
  rows.block = kRowsBlock;
  rows.max_grid = max_grid;
  rows.items_per_block_step = static_cast<int>(std::min<std::int64_t>(per_block, INT32_MAX));
  rows.any_grid = false;  // float sums round by the grid: it stays the plan's
  rows.tuning = {{"block", kRowsBlock}, {"tiles_per_block", kTilesPerBlock}, {"items_per_block", per_block}};
  rows.args = args;
  rows.summary = "histogram, weighted rows (deterministic): " + bins + " bins of " + sum_type.name() +
                 " sums, a row per block in global scratch (" + std::to_string(op.bins * acc.size()) +
                 " bytes each), tiles of " + std::to_string(kRowsBlock) +
                 " elements combined by bin in shared memory (lanes in lane order, warps in warp order) and added "
                 "into the row; grid <= " + std::to_string(max_grid) + ", >= " + std::to_string(per_block) +
                 " elements per block";
  rows.why = "the per-warp sums of " + bins + " bins do not fit in shared memory: each block adds its elements "
             "into a row of its own in a fixed order, with no atomics, so float sums are the same bits on every run";
  rows.source = kernel_source(rows_name, g.program_text(),
                              "strategy: " + rows.summary + "\nBins outside [0, kBins) are dropped.", {"histogram.cuh"},
                              types, w.str());

  CudaTypes column_types;
  const std::vector<Arg> column_args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                                        {Arg::Kind::Output, output, "sums", sum_type},
                                        {Arg::Kind::Scratch, 0, "rows", acc}};
  const std::string columns_name = "ff_histogram_weighted_columns_" + short_type_name(sum_type);
  SourceWriter c;
  emit_constants(c, {"constexpr int kBlock = " + std::to_string(kColumnsBlock) + ";  // one bin per thread",
                     "constexpr long long kBins = " + bins + ";"});
  c.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kColumnsBlock) + ") " + columns_name + "(");
  emit_kernel_parameters(c, column_types, column_args);
  c.comment("n is the number of rows (the first kernel's grid); each bin's column is added in row order.");
  c.line("ff::histogram_weighted_columns<kBlock, kBins>(n, rows, sums);");
  c.close();

  KernelSpec columns;
  columns.name = columns_name;
  columns.block = kColumnsBlock;
  columns.max_grid = static_cast<int>(std::min<std::int64_t>((op.bins + kColumnsBlock - 1) / kColumnsBlock, 65535));
  columns.items_per_block_step = kColumnsBlock;
  columns.tuning = {{"block", kColumnsBlock}};
  columns.args = column_args;
  columns.summary = "histogram, weighted rows, column sums: each of " + bins + " bins summed over the rows in row "
                    "order; block " + std::to_string(kColumnsBlock);
  columns.why = "the rows of " + rows_name + " are one histogram per block: each bin's sum is its column, added in "
                "a fixed order";
  columns.source = kernel_source(columns_name, g.program_text(), "strategy: " + columns.summary, {"histogram.cuh"},
                                 column_types, c.str());
  return {rows, columns};
}

}  // namespace

// The rows kernel over n (no launch for n = 0: the zeroed output is the answer), then the
// column sums over the bins, its n the rows kernel's grid; both bind the same rows.
void histogram_rows_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (n <= 0) return;
  const KernelSpec& rows = plan.kernels.at(static_cast<std::size_t>(step.kernel));
  const KernelSpec& columns = plan.kernels.at(static_cast<std::size_t>(step.kernel + 1));
  const int grid = grid_for(n, rows.items_per_block_step, rows.max_grid);
  const std::size_t at = allocate_scratch(b, rows, 0, {grid});
  b.launch({step.kernel, n, grid, {at}});
  b.launch({step.kernel + 1, grid, grid_for(step.bins, columns.items_per_block_step, columns.max_grid), {at}});
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
namespace fuseflow::codegen {

namespace {
class HistogramRows final : public RegisteredStrategy {
 public:
  HistogramRows() : RegisteredStrategy("histogram weighted rows", "histogram") {}
  Applies applies(const KernelContext& g) const override {
    if (!g.value.valid()) return {false, "sums weights: the histogram has none"};
    // Past its limit it still applies (the family's last): emit names the limit in a GraphError.
    return {true, "a row of sums per block in global scratch, added in a fixed order, then summed by column"};
  }
  TuningValues tuning(const Policies&) const override {
    return {{"block", kRowsBlock}, {"tiles_per_block", kTilesPerBlock},
            {"rows_budget", static_cast<std::int64_t>(kRowsBudget)}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_histogram_rows(g); }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::HistogramRows, first, 2, -1, 0, INT64_MAX, g.op->bins, false}};
  }
};

}  // namespace

const RegisteredStrategy& histogram_rows_strategy() {
  static const HistogramRows s;
  return s;
}

}  // namespace fuseflow::codegen
