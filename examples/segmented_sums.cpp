// segmented_sums: sums over segments, given two ways.
//
// An order log, sorted by day and within a day by customer: each order has a customer id
// and an amount. The days are segments given by offsets (CSR: day d is the orders
// [offsets[d], offsets[d+1])); the customers are runs of equal consecutive keys.
//   - segmented_reduce(amount, offsets, plus): one total per day;
//   - segmented_scan(amount, offsets, plus): the running total within each day;
//   - reduce_by_key(customer, amount, plus): one (customer, total) per run of orders by
//     the same customer. How many runs there are is known only once the kernel has run:
//     the result's size() reads the count the kernel wrote.
// One program, three kernels, each reading the orders once. Segment lengths can be
// anything (empty days included): the work is split by elements, not by segments.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto amount = ff::input<float>("amount");
  auto customer = ff::input<int>("customer");
  auto offsets = ff::input<int>("offsets");
  ff::KeyedResult per_customer = ff::reduce_by_key(customer, amount, ff::plus);
  auto program = ff::outputs(ff::segmented_reduce(amount, offsets, ff::plus), ff::segmented_scan(amount, offsets, ff::plus),
                             per_customer.keys, per_customer.values);
  if (example::no_gpu(program)) return 0;

  // Days of 0..2000 orders; within a day, runs of 1..20 orders by one customer. Amounts
  // are whole numbers, so every sum is exact in f32 and the checks below can use ==.
  const std::size_t n = 1 << 20;
  std::vector<float> amounts(n);
  std::vector<int> customers(n), day_offsets = {0};
  unsigned state = 2024;
  auto next = [&state](unsigned range) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % range;
  };
  for (std::size_t i = 0; i < n;) {
    const int who = static_cast<int>(next(1000));
    for (unsigned k = 1 + next(20); k > 0 && i < n; --k, ++i) {
      customers[i] = who;
      amounts[i] = static_cast<float>(1 + next(100));
    }
  }
  while (static_cast<std::size_t>(day_offsets.back()) < n)
    day_offsets.push_back(static_cast<int>(std::min<std::size_t>(n, day_offsets.back() + next(2001))));

  ff::Runtime rt;
  auto da = rt.upload(amounts);
  auto dc = rt.upload(customers);
  auto doff = rt.upload(day_offsets);
  auto [day_totals, running, who, totals] = rt.run(program, {{amount, da}, {customer, dc}, {offsets, doff}});
  const std::vector<float> got_days = day_totals.download<float>(), got_running = running.download<float>();
  const std::vector<int> got_who = who.download<int>();
  const std::vector<float> got_totals = totals.download<float>();

  // The same sums on the host.
  bool ok = got_days.size() == day_offsets.size() - 1 && got_running.size() == n;
  for (std::size_t d = 0; ok && d + 1 < day_offsets.size(); ++d) {
    float sum = 0;
    for (int i = day_offsets[d]; i < day_offsets[d + 1]; ++i) {
      sum += amounts[static_cast<std::size_t>(i)];
      ok = ok && got_running[static_cast<std::size_t>(i)] == sum;
    }
    ok = ok && got_days[d] == sum;
  }
  std::vector<int> want_who;
  std::vector<float> want_totals;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 0 || customers[i] != customers[i - 1]) {
      want_who.push_back(customers[i]);
      want_totals.push_back(0);
    }
    want_totals.back() += amounts[i];
  }
  ok = ok && got_who == want_who && got_totals == want_totals;
  std::printf("segmented sums of %zu orders: %zu days, %zu customer runs (first: customer %d spent %.0f): %s\n", n,
              got_days.size(), got_who.size(), got_who.empty() ? -1 : got_who[0], got_totals.empty() ? 0.0 : got_totals[0],
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
