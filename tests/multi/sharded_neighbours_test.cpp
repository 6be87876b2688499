// Shifts over shards (the halo exchange, runtime/src/multi/halo.cpp): adjacent and forward
// differences, shifts longer than the shards (the halo spans several ranks), shifts of
// maps with index() and of shifts, against the CPU reference (bit for bit) and one GPU,
// for world sizes 1..8 (in process on the emulator) or every GPU count (NCCL), shards
// empty, uneven and large; fresh random inputs, outputs poisoned.
#include <cmath>
#include <cstring>

#include "multi_test_support.hpp"

namespace ff = fuseflow;
using namespace fuseflow::multi_test;

TEST_CASE("sharded shift: adjacent difference bit for bit with one GPU, forward difference, reduce of it") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto program = ff::outputs(x - ff::shift(x, -1, 0.0f), ff::shift(x, 1, 3.0f) - x,
                             ff::reduce(ff::abs(k - ff::shift(k, -1, 0)), ff::plus));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<float> xs = random_floats(n);
      std::vector<int> ks = random_ints(n, -1000, 1000);
      auto [back, fwd, total] = srt.run(program, {{x, srt.scatter(xs)}, {k, srt.scatter(ks)}});
      ff::HostBindings hb;
      hb.bind(x, ff::HostArray::from(xs)).bind(k, ff::HostArray::from(ks));
      auto want = reference(program, hb);
      CHECK(back.layout() == ff::ShardLayout::even(n, w));
      const std::vector<float> got = back.download<float>();
      CHECK(got == want[0].array.to_vector<float>());
      CHECK(fwd.download<float>() == want[1].array.to_vector<float>());
      CHECK(total.value() == want[2].scalar);
      // One GPU: the same bits.
      ff::Runtime& one = srt.runtime(0);
      auto dx = one.upload(xs);
      auto dk = one.upload(ks);
      auto single = one.run(program, {{x, dx}, {k, dk}});
      const std::vector<float> s = single[0].download<float>();
      REQUIRE(s.size() == got.size());
      CHECK((n == 0 || std::memcmp(s.data(), got.data(), n * sizeof(float)) == 0));
    }
}

TEST_CASE("sharded shift: longer than the shards, of a map with index(), of a shift, uneven shards") {
  auto k = ff::input<int>("k");
  auto program = ff::outputs(ff::shift(k, -5, -1), ff::shift(k, 7, -2),
                             ff::shift(k * 3 + ff::cast<int>(ff::index()), -2, -3),
                             ff::shift(ff::shift(k, -1, 5), 3, 9) + k,
                             ff::reduce(ff::shift(k, 2, 0) * ff::cast<int>(ff::index()), ff::plus));
  for (int w : worlds())
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{12},
                          std::size_t{1000}}) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<int> ks = random_ints(n, -1000, 1000);
      ff::ShardedArray<int> dk = srt.scatter(ks);
      // Uneven shards too: rank r holds r * 2 elements while they last, the last the rest.
      std::vector<ff::DeviceArray<int>> mine;
      std::vector<ff::device_span<int>> spans;
      std::size_t at = 0;
      for (std::size_t i = 0; i < srt.local_count(); ++i) {
        const int r = srt.local_rank(i);
        std::size_t len = std::min(n - at, static_cast<std::size_t>(r) * 2);
        if (r == w - 1) len = n - at;
        mine.push_back(srt.runtime(i).upload(std::vector<int>(ks.begin() + static_cast<long>(at),
                                                               ks.begin() + static_cast<long>(at + len))));
        spans.emplace_back(mine.back());
        at += len;
      }
      ff::HostBindings hb;
      hb.bind(k, ff::HostArray::from(ks));
      auto want = reference(program, hb);
      for (const ff::ShardedArray<int>& bound : {dk, srt.adopt(spans)}) {
        auto got = srt.run(program, {{k, bound}});
        for (std::size_t o = 0; o < 4; ++o) {
          CAPTURE(o);
          CHECK(got[o].layout() == bound.layout());
          CHECK(got[o].download<int>() == want[o].array.to_vector<int>());
        }
        CHECK(got[4].value() == want[4].scalar);
      }
    }
}

TEST_CASE("sharded shift: what a halo of inputs cannot give says so") {
  auto& srt = world(2);
  auto x = ff::input<float>("x");
  auto dx = srt.scatter(random_floats(10));
  CHECK_THROWS_WITH_AS(srt.run(ff::shift(ff::scan(x, ff::plus), -1, 0.0f), {{x, dx}}),
                       doctest::Contains("a shift of"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::scan(ff::shift(x, -1, 0.0f), ff::plus), {{x, dx}}),
                       doctest::Contains("a scan of a shifted array"), ff::GraphError);
}

TEST_CASE("sharded gather: a table on the host (uploaded to every rank) or sharded (all-gathered), checked and not") {
  auto x = ff::input<float>("x");
  auto idx = ff::input<int>("idx");
  auto t = ff::input<float>("t");
  auto program = ff::outputs(ff::gather(t, idx) * x, ff::gather_unchecked(t, idx + 0),
                             ff::reduce(ff::gather(t, idx), ff::plus), ff::reduce(ff::gather(t, idx), ff::max));
  for (int w : worlds())
    for (std::size_t n : sizes())
      for (std::size_t m : {std::size_t{1}, std::size_t{5}, std::size_t{300}}) {
        CAPTURE(w);
        CAPTURE(n);
        CAPTURE(m);
        auto& srt = world(w);
        std::vector<float> xs = random_floats(n), ts = random_floats(m);
        std::vector<int> is = random_ints(n, 0, static_cast<int>(m) - 1);
        ff::HostBindings hb;
        hb.bind(x, ff::HostArray::from(xs)).bind(idx, ff::HostArray::from(is)).bind(t, ff::HostArray::from(ts));
        auto want = reference(program, hb);
        double scale = 0, sum = 0;  // f64: the reference's f32 sum rounds more than the device's tree
        for (int i : is) {
          scale += std::fabs(ts[static_cast<std::size_t>(i)]);
          sum += ts[static_cast<std::size_t>(i)];
        }
        auto dx = srt.scatter(xs);
        auto di = srt.scatter(is);
        for (const ff::ShardedBinding& table : {ff::ShardedBinding(ff::HostArray::from(ts)),
                                                ff::ShardedBinding(srt.scatter(ts))}) {
          CAPTURE(table.is_replicated());
          auto got = srt.run(program, {{x, dx}, {idx, di}, {t, table}});
          CHECK(got[0].layout() == ff::ShardLayout::even(n, w));
          CHECK(got[0].download<float>() == want[0].array.to_vector<float>());
          CHECK(got[1].download<float>() == want[1].array.to_vector<float>());
          CHECK(std::fabs(got[2].as<float>() - sum) <= 1e-5 * scale + 1e-6);
          CHECK(got[3].value() == want[3].scalar);
        }
        // New contents of the same length: uploaded again (the host tables are cached by bytes).
        std::vector<float> ts2 = ts;
        for (float& v : ts2) v += 2.0f;
        hb.bind(t, ff::HostArray::from(ts2));
        auto want2 = reference(program, hb);
        auto got2 = srt.run(program, {{x, dx}, {idx, di}, {t, ff::HostArray::from(ts2)}});
        CHECK(got2[1].download<float>() == want2[1].array.to_vector<float>());
        CHECK(got2[3].value() == want2[3].scalar);
      }
}

TEST_CASE("sharded gather: the first bad index names its global position; what cannot be a table says so") {
  auto idx = ff::input<int>("idx");
  auto t = ff::input<float>("t");
  for (int w : worlds()) {
    CAPTURE(w);
    auto& srt = world(w);
    std::vector<int> is = random_ints(1000, 0, 9);
    is[617] = 10;
    is[912] = -3;
    auto di = srt.scatter(is);
    const std::vector<float> ts(10, 1.0f);
    for (const ff::ShardedBinding& table : {ff::ShardedBinding(ff::HostArray::from(ts)),
                                            ff::ShardedBinding(srt.scatter(ts))}) {
      CHECK_THROWS_WITH_AS(srt.run(ff::reduce(ff::gather(t, idx), ff::plus), {{idx, di}, {t, table}}),
                           doctest::Contains("gather: the index at position 617 is 10, outside the table 't' of 10 "
                                             "elements"),
                           ff::GraphError);
      // The same program with a good index runs after the error.
      float sum = srt.run(ff::reduce(ff::gather(t, idx), ff::plus), {{idx, srt.scatter(random_ints(100, 0, 9))},
                                                                     {t, table}});
      CHECK(sum == 100.0f);
    }
  }
  auto& srt = world(2);
  auto x = ff::input<float>("x");
  auto dx = srt.scatter(random_floats(10));
  auto di = srt.scatter(random_ints(10, 0, 9));
  CHECK_THROWS_WITH_AS(srt.run(ff::gather(x, idx) + x, {{x, dx}, {idx, di}}),
                       doctest::Contains("is the table of a gather and is read element by element too"),
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::gather(t, idx), {{idx, di}}), doctest::Contains("input 't' is not bound"),
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::gather(t, idx), {{idx, di}, {t, 2.0f}}),
                       doctest::Contains("input 't' is bound to the scalar"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::gather_unchecked(x * 2.0f, idx), {{x, dx}, {idx, di}}),
                       doctest::Contains("must be an input"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(x, ff::plus), {{x, ff::HostArray::from(std::vector<float>(10, 1.0f))}}),
                       doctest::Contains("only the offsets of a segmented op and the table of a gather can be"),
                       ff::GraphError);
}
