#pragma once
// The launch patterns of StepSpec (plan.hpp): each turns a step, the plan's kernels and the
// lengths into launches. schedule.cpp dispatches on the step's kind; the patterns of one
// strategy live beside its emitter.
#include <cstdint>

#include "fuseflow/codegen/plan.hpp"

namespace fuseflow::codegen {

void one_pass_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);
void tree_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);
// strategies/scan_lookback.cpp: scans, segmented scans, reduce_by_key and compactions.
// A GraphError when the grid would pass 2^31 - 1 blocks, or (with a domain) when the
// offsets are empty.
void lookback_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);
void reduce_then_scan_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);
void counting_sort_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);
void radix_sort_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);  // radix_sort.cpp
void segmented_reduce_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);
void broadcast_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);  // broadcast_launches.cpp
void histogram_sorted_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);  // histogram_sorted.cpp
int histogram_sorted_piece();
// The bucketed weighted histogram shares the HistogramSorted step (histogram_bucketed.cpp): is it this step's plan.
bool is_histogram_bucketed(const Plan& plan, const StepSpec& step);
// Its slice and bin kernels' scratch (scratch.cpp); false for another kernel's.
bool histogram_bucketed_scratch(const KernelSpec& k, const Arg& a, std::vector<ScratchBuffer>& out);
void histogram_bucketed_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b);  // sorted elements per piece of the run kernel (histogram_sorted.cpp)

// Allocates Scratch argument `j` of `k` (its ScratchBuffer, KernelSpec::scratch[j]) for a
// launch of `extents`, and returns its offset.
std::size_t allocate_scratch(ScheduleBuilder& b, const KernelSpec& k, std::size_t j, const LaunchExtents& extents);

}  // namespace fuseflow::codegen
