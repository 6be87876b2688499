// Host threads and several Runtimes (runtime.hpp "Thread safety"): 8 threads running
// different programs on one Runtime, all at once, each result checked against the CPU
// reference; two Runtimes with their own streams used at the same time from two threads.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "catalog/catalog.hpp"
#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

// A program over one i32 input x, checked exactly against the CPU reference (integers,
// tuples: no rounding to allow for).
struct Job {
  std::string name;
  std::function<ff::Program(const ff::Expr& x)> build;
};

const std::vector<Job>& jobs() {
  static const std::vector<Job> all = {
      {"sum", [](const ff::Expr& x) { return ff::Program(ff::reduce(x, ff::plus)); }},
      {"max and argmin", [](const ff::Expr& x) {
         return ff::Program(ff::outputs(ff::reduce(x, ff::max), ff::reduce(ff::zip(x, ff::index()), ff::argmin)));
       }},
      {"mssp", [](const ff::Expr& x) { return ff::Program(ff::reduce(ff::catalog::mssp_parts(x), ff::catalog::mssp())); }},
      {"inclusive scan", [](const ff::Expr& x) { return ff::Program(ff::scan(x, ff::plus)); }},
      {"exclusive max scan", [](const ff::Expr& x) { return ff::Program(ff::scan(x * 3, ff::max, ff::exclusive)); }},
      {"histogram", [](const ff::Expr& x) { return ff::Program(ff::histogram(x & 63, 64)); }},
      {"map", [](const ff::Expr& x) { return ff::Program(x * x - 7); }},
      {"x minus its sum", [](const ff::Expr& x) { return ff::Program(x - ff::reduce(x, ff::plus)); }},
  };
  return all;
}

// Runs `job` on `rt` `rounds` times with fresh inputs; returns "" or what went wrong.
std::string run_job(ff::Runtime& rt, const Job& job, std::uint64_t seed, int rounds) {
  std::mt19937_64 g(seed);
  const auto x = ff::input<int>("x");
  const ff::Program program = job.build(x);
  for (int round = 0; round < rounds; ++round) {
    const auto n = static_cast<std::int64_t>(g() % 300000);
    std::vector<int> xs(static_cast<std::size_t>(n));
    for (auto& v : xs) v = static_cast<int>(g() % 2001) - 1000;
    ff::DeviceArray<int> dx = rt.upload(xs);
    std::vector<ff::Result> got = rt.run(program, {{x, dx}});
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(xs));
    const std::vector<ff::HostResult> want = ff::evaluate(program, b);
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::string where = job.name + ", output " + std::to_string(i) + ", n = " + std::to_string(n);
      if (want[i].is_scalar) {
        if (got[i].value() != want[i].scalar) return where + ": got " + got[i].value().to_string() + ", want " + want[i].scalar.to_string();
        continue;
      }
      const ff::HostArray& w = want[i].array;
      if (got[i].size() != w.size()) return where + ": " + std::to_string(got[i].size()) + " elements";
      if (w.type() == ff::type_of<int>()) {
        if (got[i].download<int>() != w.to_vector<int>()) return where + ": the array differs";
      } else if (got[i].download<unsigned>() != w.to_vector<unsigned>()) {
        return where + ": the array differs";
      }
    }
  }
  return "";
}

}  // namespace

TEST_CASE("8 threads running different programs on one Runtime all get the reference's results") {
  ff::Runtime& rt = ff::test::runtime();
  const int rounds = ff::test::max_elements() < (1 << 20) ? 2 : 6;
  std::vector<std::string> errors(jobs().size());
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  const std::uint64_t seed = ff::test::rng()();
  for (std::size_t t = 0; t < jobs().size(); ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < static_cast<int>(jobs().size())) std::this_thread::yield();  // start together
      try {
        errors[t] = run_job(rt, jobs()[t], seed + t, rounds);
      } catch (const std::exception& e) {
        errors[t] = jobs()[t].name + ": threw " + e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) CHECK_MESSAGE(e.empty(), e);
}

TEST_CASE("8 threads running the same program on one Runtime all get their own right answers") {
  ff::Runtime& rt = ff::test::runtime();
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  const std::uint64_t seed = ff::test::rng()();
  for (std::size_t t = 0; t < errors.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        errors[t] = run_job(rt, jobs()[1], seed + 100 + t, 4);
      } catch (const std::exception& e) {
        errors[t] = std::string("threw ") + e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) CHECK_MESSAGE(e.empty(), e);
}

TEST_CASE("two Runtimes on two streams run at the same time from two threads") {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  ff::Runtime first(options), second(options);
  CHECK(first.stream() != second.stream());
  std::string errors[2];
  const std::uint64_t seed = ff::test::rng()();
  std::thread a([&] {
    try {
      for (std::size_t j = 0; j < jobs().size(); j += 2) errors[0] += run_job(first, jobs()[j], seed + j, 3);
    } catch (const std::exception& e) {
      errors[0] += std::string("threw ") + e.what();
    }
  });
  std::thread b([&] {
    try {
      for (std::size_t j = 1; j < jobs().size(); j += 2) errors[1] += run_job(second, jobs()[j], seed + j, 3);
    } catch (const std::exception& e) {
      errors[1] += std::string("threw ") + e.what();
    }
  });
  a.join();
  b.join();
  CHECK_MESSAGE(errors[0].empty(), errors[0]);
  CHECK_MESSAGE(errors[1].empty(), errors[1]);
}

TEST_CASE("run_async on two Runtimes overlaps, and each result is read back right") {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  ff::Runtime first(options), second(options);
  const std::int64_t n = std::min<std::int64_t>(1 << 22, ff::test::max_elements());
  std::vector<long long> xs(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<long long>(i % 1000) - 400;
  long long want = 0;
  for (long long v : xs) want += v;
  const auto x = ff::input<long long>("x");
  const ff::Expr sum = ff::reduce(x, ff::plus), doubled = ff::reduce(x * 2LL, ff::plus);
  ff::DeviceArray<long long> a = first.upload(xs), b = second.upload(xs);
  ff::Result ra = first.run_async(sum, {{x, a}});
  ff::Result rb = second.run_async(doubled, {{x, b}});
  CHECK(rb.value() == ff::Value(2 * want));
  CHECK(ra.value() == ff::Value(want));
}
