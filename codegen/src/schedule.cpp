// Plan::schedule: the steps (StepSpec, data the planner wrote) turned into launches for the
// lengths of a run, in order, with the scratch they share. The two simplest patterns are
// here; the others beside their strategies (schedule.hpp).
#include "schedule.hpp"

#include <algorithm>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow::codegen {

const char* step_kind_name(StepSpec::Kind kind) {
  switch (kind) {
    case StepSpec::Kind::OnePass: return "one pass";
    case StepSpec::Kind::Tree: return "tree";
    case StepSpec::Kind::Lookback: return "look-back";
    case StepSpec::Kind::ReduceThenScan: return "reduce-then-scan";
    case StepSpec::Kind::CountingSort: return "counting sort";
    case StepSpec::Kind::SegmentedReduce: return "segmented reduce";
    case StepSpec::Kind::RadixSort: return "radix sort";
    case StepSpec::Kind::Broadcast: return "broadcast";
    case StepSpec::Kind::HistogramSorted: return "histogram sorted";
  }
  return "?";
}

std::size_t allocate_scratch(ScheduleBuilder& b, const KernelSpec& k, std::size_t j, const LaunchExtents& extents) {
  if (j >= k.scratch.size())
    throw InternalError("schedule: kernel " + k.name + " has no description of its scratch buffer " + std::to_string(j));
  return b.allocate(k.scratch[j].size(extents));
}

void one_pass_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (n <= 0 && !step.launch_empty) return;
  const KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(step.kernel));
  Launch l;
  l.kernel = step.kernel;
  l.n = n;
  l.grid = grid_for(n, k.items_per_block_step, k.max_grid);
  for (std::size_t j = 0; j < k.scratch.size(); ++j) l.scratch.push_back(allocate_scratch(b, k, j, {l.grid}));
  b.launch(std::move(l));
}

// The tree's levels: the first kernel over the inputs (one block at least), then the second
// over partials until one block is left; each level's partials are accumulators of one per
// block (the level kernel's Scratch arguments: 0 the level before, 1 its own).
void tree_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  const int first = step.kernel, level = step.kernel + 1;
  const KernelSpec& first_kernel = plan.kernels.at(static_cast<std::size_t>(first));
  const KernelSpec& level_kernel = plan.kernels.at(static_cast<std::size_t>(level));
  const std::int64_t block = first_kernel.block;
  std::int64_t blocks = std::max<std::int64_t>(1, (n + block - 1) / block);
  std::size_t in = allocate_scratch(b, first_kernel, 0, {blocks, 0, blocks * block});
  b.launch({first, n, static_cast<int>(blocks), {in}});
  for (std::int64_t m = blocks; m > 1; m = blocks) {
    blocks = (m + block - 1) / block;
    std::size_t next = allocate_scratch(b, level_kernel, 1, {blocks, 0, m});
    b.launch({level, m, static_cast<int>(blocks), {in, next}});
    in = next;
  }
}

namespace {

void append(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  switch (step.kind) {
    case StepSpec::Kind::OnePass: return one_pass_launches(plan, step, n, b);
    case StepSpec::Kind::Tree: return tree_launches(plan, step, n, b);
    case StepSpec::Kind::Lookback: return lookback_launches(plan, step, n, b);
    case StepSpec::Kind::ReduceThenScan: return reduce_then_scan_launches(plan, step, n, b);
    case StepSpec::Kind::CountingSort: return counting_sort_launches(plan, step, n, b);
    case StepSpec::Kind::SegmentedReduce: return segmented_reduce_launches(plan, step, n, b);
    case StepSpec::Kind::RadixSort: return radix_sort_launches(plan, step, n, b);
    case StepSpec::Kind::Broadcast: return broadcast_launches(plan, step, n, b);
    case StepSpec::Kind::HistogramSorted: return histogram_sorted_launches(plan, step, n, b);
  }
  throw InternalError("schedule: a step of unknown kind " + std::to_string(static_cast<int>(step.kind)));
}

}  // namespace

Schedule Plan::schedule(std::int64_t n) const {
  ScheduleBuilder b(0);
  for (const auto& im : intermediates)
    b.intermediate(im.output < 0 ? im.bytes(im.fixed >= 0 ? im.fixed : im.domain ? b.length(im.domain) : n) : 0, im.zeroed);
  for (const auto& step : steps) append(*this, step, step.over ? b.length(step.over) : n, b);
  return b.take();
}

Schedule Plan::schedule(const std::vector<std::int64_t>& lengths) const {
  ScheduleBuilder b(0, lengths);
  for (const auto& im : intermediates)
    b.intermediate(im.output < 0 ? im.bytes(im.fixed >= 0 ? im.fixed : lengths.at(static_cast<std::size_t>(im.domain))) : 0,
                   im.zeroed);
  for (const auto& step : steps) append(*this, step, lengths.at(static_cast<std::size_t>(step.over)), b);
  return b.take();
}

std::size_t ScheduleBuilder::allocate(std::size_t bytes, bool zeroed) {
  std::size_t at = (schedule_.scratch_bytes + 255) / 256 * 256;
  schedule_.scratch_bytes = at + bytes;
  if (zeroed && bytes) schedule_.zeroed.emplace_back(at, bytes);
  return at;
}

std::int64_t ScheduleBuilder::length(int d) const {
  if (d < 0 || static_cast<std::size_t>(d) >= lengths_.size())
    throw GraphError("schedule: the length of input domain " + std::to_string(d) +
                     " is not known; a program whose inputs have several lengths (a segmented op's offsets) is "
                     "scheduled with the length of each: Plan::schedule(lengths)");
  return lengths_[static_cast<std::size_t>(d)];
}

int grid_for(std::int64_t n, std::int64_t per_block, int max_grid) {
  return static_cast<int>(std::clamp<std::int64_t>((n + per_block - 1) / per_block, 1, max_grid));
}

}  // namespace fuseflow::codegen
