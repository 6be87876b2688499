// Segmented reduce and scan over shards against the CPU reference over the whole input:
// offsets that cut segments at every shard boundary (one element either side), one
// segment spanning every rank, empty segments and shards, elements outside every segment,
// a non-commutative tuple monoid (only a fold in rank order gets it right). Worlds 1..8
// in process on the emulator, every GPU count over NCCL. Fresh random inputs, outputs
// poisoned; integers and tuples compare exactly.
#include <algorithm>

#include "multi_test_support.hpp"

namespace ff = fuseflow;
using namespace fuseflow::multi_test;

namespace {

using Affine = ff::Tuple<unsigned, unsigned>;  // x -> a * x + b, composed left to right

ff::Monoid affine() {
  return ff::monoid<Affine>(
      [](auto f, auto g) { return ff::tuple(f[0] * g[0], f[1] * g[0] + g[1]); },
      ff::tuple(1u, 0u), ff::non_commutative, "affine");
}

// Offset sets over n elements sharded evenly over w ranks, each a case of its own.
std::vector<std::vector<long long>> offset_cases(std::size_t n, int w) {
  const ff::ShardLayout layout = ff::ShardLayout::even(n, w);
  const auto nn = static_cast<long long>(n);
  std::vector<std::vector<long long>> out;
  out.push_back({0, nn});  // one segment over every rank
  // Cuts one element either side of every shard boundary (and on it).
  std::vector<long long> around{0};
  for (int r = 1; r < w; ++r) {
    const auto b = static_cast<long long>(layout.offset(r));
    for (long long c : {b - 1, b, b + 1}) around.push_back(std::clamp(c, 0LL, nn));
  }
  around.push_back(nn);
  std::sort(around.begin(), around.end());
  out.push_back(around);
  // Random cuts with repeats (empty segments), first after 0 and last before n (elements
  // in no segment).
  std::vector<long long> cuts;
  const std::size_t m = 1 + rng()() % (n / 3 + 3);
  for (std::size_t i = 0; i <= m; ++i) cuts.push_back(n ? static_cast<long long>(rng()() % (n + 1)) : 0);
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(cuts.back());  // an empty last segment
  out.push_back(cuts);
  out.push_back({nn});  // no segment at all
  return out;
}

// The ranks' segment counts agree with the documented layout: rank r holds the segments
// starting in its shard (the last rank also those starting at the end).
void check_segment_layout(const ff::ShardLayout& got, const std::vector<long long>& offsets,
                          const ff::ShardLayout& shards) {
  const int w = shards.world();
  REQUIRE(got.world() == w);
  CHECK(got.global_size() == offsets.size() - 1);
  for (int r = 0; r < w; ++r)
    for (std::size_t s = got.offset(r); s < got.offset(r + 1); ++s) {
      CHECK(static_cast<std::size_t>(offsets[s]) >= shards.offset(r));
      if (r + 1 < w) CHECK(static_cast<std::size_t>(offsets[s]) < shards.offset(r + 1));
    }
}

std::vector<std::size_t> segment_sizes() {
  std::vector<std::size_t> out = {0, 1, 2, 5, 9, 100, 1001};
  if (!emulated()) out.push_back((std::size_t{1} << 20) + 3);
  return out;
}

}  // namespace

TEST_CASE("sharded segmented reduce and scan: i32 plus and a non-commutative tuple monoid, cut at every boundary") {
  auto k = ff::input<int>("k");
  auto a = ff::input<unsigned>("a");
  auto b = ff::input<unsigned>("b");
  auto offs = ff::input<long long>("offsets");
  auto f = ff::zip(a, b);
  auto program = ff::outputs(ff::segmented_reduce(k, offs, ff::plus), ff::segmented_reduce(f, offs, affine()),
                             ff::segmented_scan(k, offs, ff::plus, ff::inclusive),
                             ff::segmented_scan(f, offs, affine(), ff::exclusive),
                             ff::segmented_scan(f, offs, affine(), ff::inclusive));
  for (int w : worlds())
    for (std::size_t n : segment_sizes())
      for (const std::vector<long long>& os : offset_cases(n, w)) {
        CAPTURE(w);
        CAPTURE(n);
        CAPTURE(os.size());
        auto& srt = world(w);
        std::vector<int> ks = random_ints(n, -1000, 1000);
        std::vector<unsigned> as(n), bs(n);
        for (std::size_t i = 0; i < n; ++i) {
          as[i] = static_cast<unsigned>(rng()()) | 1u;
          bs[i] = static_cast<unsigned>(rng()());
        }
        auto dk = srt.scatter(ks);
        auto da = srt.scatter(as);
        auto db = srt.scatter(bs);
        ff::HostArray ho = ff::HostArray::from(os);
        auto got = srt.run(program, {{k, dk}, {a, da}, {b, db}, {offs, ho}});
        ff::HostBindings hb;
        hb.bind(k, ff::HostArray::from(ks)).bind(a, ff::HostArray::from(as)).bind(b, ff::HostArray::from(bs));
        hb.bind(offs, ho);
        auto want = reference(program, hb);
        check_segment_layout(got[0].layout(), os, dk.layout());
        CHECK(got[1].layout() == got[0].layout());
        CHECK(got[0].download<int>() == want[0].array.to_vector<int>());
        CHECK(got[1].download<Affine>() == want[1].array.to_vector<Affine>());
        CHECK(got[2].layout() == dk.layout());
        CHECK(got[2].download<int>() == want[2].array.to_vector<int>());
        CHECK(got[3].download<Affine>() == want[3].array.to_vector<Affine>());
        CHECK(got[4].download<Affine>() == want[4].array.to_vector<Affine>());
      }
}

TEST_CASE("sharded segmented ops: the offsets must be a host array, of valid offsets, read only as offsets") {
  auto& srt = world(std::min(3, worlds().back()));  // 3 ranks, or every GPU of a smaller machine
  auto x = ff::input<int>("x");
  auto offs = ff::input<int>("offsets");
  auto dx = srt.scatter(std::vector<int>(10, 1));
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_reduce(x, offs, ff::plus),
                               {{x, dx}, {offs, ff::HostArray::from(std::vector<int>{0, 11})}}),
                       doctest::Contains("segmented_reduce: offset 1 is 11, beyond the end of the 10 values"),
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_scan(x, offs, ff::plus),
                               {{x, dx}, {offs, ff::HostArray::from(std::vector<int>{0, 6, 4})}}),
                       doctest::Contains("segmented_scan: offset 2 is 4, less than offset 1 (6)"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_reduce(x, offs + 1, ff::plus),
                               {{x, dx}, {offs, ff::HostArray::from(std::vector<int>{0, 6})}}),
                       doctest::Contains("must be an input bound to a host array"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(x, ff::plus), {{x, ff::HostArray::from(std::vector<int>{0, 6})}}),
                       doctest::Contains("input 'x' is bound to a host array; only the offsets of a segmented op"),
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_reduce(x, offs, ff::plus),
                               {{x, dx}, {offs, ff::HostArray::from(std::vector<long long>{0, 6})}}),
                       doctest::Contains("input 'offsets' holds i32 but was bound to a host array of i64"),
                       ff::GraphError);
  auto same = ff::input<int>("o2");
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_scan(same, same, ff::plus),
                               {{same, ff::HostArray::from(std::vector<int>{0, 1})}}),
                       doctest::Contains("is the offsets of a segmented op and is read elsewhere too"), ff::GraphError);
  // A segmented reduce's result is only known once the shards are combined.
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_reduce(x, offs, ff::plus) * 2,
                               {{x, dx}, {offs, ff::HostArray::from(std::vector<int>{0, 6})}}),
                       doctest::Contains("uses the result of a segmented_reduce"), ff::GraphError);
}

namespace {

// Keys in runs of random lengths, some longer than a shard, some a single element; runs
// also start exactly on, and one element either side of, every shard boundary.
std::vector<int> run_keys(std::size_t n, int w) {
  const ff::ShardLayout layout = ff::ShardLayout::even(n, w);
  std::vector<bool> starts(n, false);
  for (std::size_t i = 0; i < n; ++i) starts[i] = rng()() % (n / 4 + 2) == 0;
  for (int r = 1; r < w; ++r)
    for (long long d : {-1LL, 0LL, 1LL}) {
      const long long at = static_cast<long long>(layout.offset(r)) + d;
      if (at >= 0 && at < static_cast<long long>(n) && rng()() % 2) starts[static_cast<std::size_t>(at)] = true;
    }
  std::vector<int> keys(n);
  int key = static_cast<int>(rng()() % 5);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && starts[i]) key = (key + 1 + static_cast<int>(rng()() % 3)) % 5;  // never the same key again
    keys[i] = key;
  }
  return keys;
}

}  // namespace

TEST_CASE("sharded reduce_by_key: runs across boundaries, over one shard or all, a non-commutative tuple monoid") {
  auto key = ff::input<int>("key");
  auto k = ff::input<int>("k");
  auto a = ff::input<unsigned>("a");
  auto b = ff::input<unsigned>("b");
  auto sums = ff::reduce_by_key(key, k, ff::plus);
  auto maps = ff::reduce_by_key(key * 2, ff::zip(a, b), affine());
  // Both results of one, only the values of the other (its keys are compared all the same).
  auto program = ff::outputs(sums.keys, sums.values, maps.values);
  for (int w : worlds())
    for (std::size_t n : segment_sizes())
      for (int rep = 0; rep < 3; ++rep) {
        CAPTURE(w);
        CAPTURE(n);
        auto& srt = world(w);
        std::vector<int> keys = rep == 2 ? std::vector<int>(n, 7) : run_keys(n, w);  // one run over every rank
        std::vector<int> ks = random_ints(n, -1000, 1000);
        std::vector<unsigned> as(n), bs(n);
        for (std::size_t i = 0; i < n; ++i) {
          as[i] = static_cast<unsigned>(rng()()) | 1u;
          bs[i] = static_cast<unsigned>(rng()());
        }
        auto dkey = srt.scatter(keys);
        auto dk = srt.scatter(ks);
        auto da = srt.scatter(as);
        auto db = srt.scatter(bs);
        auto got = srt.run(program, {{key, dkey}, {k, dk}, {a, da}, {b, db}});
        ff::HostBindings hb;
        hb.bind(key, ff::HostArray::from(keys)).bind(k, ff::HostArray::from(ks));
        hb.bind(a, ff::HostArray::from(as)).bind(b, ff::HostArray::from(bs));
        auto want = reference(program, hb);
        CHECK(got[0].download<int>() == want[0].array.to_vector<int>());
        CHECK(got[1].download<int>() == want[1].array.to_vector<int>());
        CHECK(got[2].download<Affine>() == want[2].array.to_vector<Affine>());
        CHECK(got[0].size() == want[0].array.size());
        CHECK(got[1].layout() == got[0].layout());
        // Rank r holds the runs starting in its shard: their first elements lie in it.
        const ff::ShardLayout& runs = got[0].layout();
        std::size_t run = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (i > 0 && keys[i] == keys[i - 1]) continue;
          int holder = 0;
          while (runs.offset(holder + 1) <= run) ++holder;
          CHECK(i >= dkey.layout().offset(holder));
          CHECK(i < dkey.layout().offset(holder + 1));
          ++run;
        }
      }
}

TEST_CASE("sharded scan_by_key: runs across boundaries carry the ranks before, inclusive and exclusive") {
  auto key = ff::input<int>("key");
  auto k = ff::input<int>("k");
  auto a = ff::input<unsigned>("a");
  auto b = ff::input<unsigned>("b");
  auto program = ff::outputs(ff::scan_by_key(key, k, ff::plus, ff::inclusive),
                             ff::scan_by_key(key, ff::zip(a, b), affine(), ff::exclusive),
                             ff::scan_by_key(key + 1, ff::zip(a, b), affine(), ff::inclusive));
  for (int w : worlds())
    for (std::size_t n : segment_sizes())
      for (int rep = 0; rep < 3; ++rep) {
        CAPTURE(w);
        CAPTURE(n);
        auto& srt = world(w);
        std::vector<int> keys = rep == 2 ? std::vector<int>(n, -3) : run_keys(n, w);
        std::vector<int> ks = random_ints(n, -1000, 1000);
        std::vector<unsigned> as(n), bs(n);
        for (std::size_t i = 0; i < n; ++i) {
          as[i] = static_cast<unsigned>(rng()()) | 1u;
          bs[i] = static_cast<unsigned>(rng()());
        }
        auto dkey = srt.scatter(keys);
        auto dk = srt.scatter(ks);
        auto da = srt.scatter(as);
        auto db = srt.scatter(bs);
        auto got = srt.run(program, {{key, dkey}, {k, dk}, {a, da}, {b, db}});
        ff::HostBindings hb;
        hb.bind(key, ff::HostArray::from(keys)).bind(k, ff::HostArray::from(ks));
        hb.bind(a, ff::HostArray::from(as)).bind(b, ff::HostArray::from(bs));
        auto want = reference(program, hb);
        CHECK(got[0].layout() == dkey.layout());
        CHECK(got[0].download<int>() == want[0].array.to_vector<int>());
        CHECK(got[1].download<Affine>() == want[1].array.to_vector<Affine>());
        CHECK(got[2].download<Affine>() == want[2].array.to_vector<Affine>());
      }
}

TEST_CASE("sharded segmented ops: the offsets are cut once and cached; new contents (same length) are picked up") {
  // The runtime keeps each segmented op's offsets cut to the shards, and compares the
  // bound offsets with what it cut last: these runs change the contents at the same
  // length (the cached device arrays are reused), go back to earlier ones, and change the
  // sharding under unchanged offsets. Every result against the CPU reference.
  auto k = ff::input<int>("k");
  auto offs = ff::input<long long>("offsets");
  auto program = ff::outputs(ff::segmented_reduce(k, offs, ff::plus), ff::segmented_scan(k, offs, ff::plus));
  for (int w : worlds()) {
    CAPTURE(w);
    auto& srt = world(w);
    const std::size_t n = 997;
    std::vector<int> ks = random_ints(n, -1000, 1000);
    auto dk = srt.scatter(ks);
    auto check = [&](const ff::ShardedArray<int>& keys, const std::vector<int>& host,
                     const std::vector<long long>& os) {
      ff::HostArray ho = ff::HostArray::from(os);
      auto got = srt.run(program, {{k, keys}, {offs, ho}});
      ff::HostBindings hb;
      hb.bind(k, ff::HostArray::from(host)).bind(offs, ho);
      auto want = reference(program, hb);
      check_segment_layout(got[0].layout(), os, keys.layout());
      CHECK(got[0].download<int>() == want[0].array.to_vector<int>());
      CHECK(got[1].download<int>() == want[1].array.to_vector<int>());
    };
    std::vector<long long> first{0, 100, 400, 997}, second{0, 333, 334, 997}, third{0, 5, 990, 997};
    check(dk, ks, first);
    check(dk, ks, first);   // unchanged: from the cache
    check(dk, ks, second);  // same length, new contents
    check(dk, ks, third);
    check(dk, ks, first);   // back to the first
    // The same offsets over another sharding (uneven shards): cut again.
    std::vector<ff::device_span<int>> spans;
    std::vector<ff::DeviceArray<int>> own;
    const ff::ShardLayout uneven = ff::ShardLayout::from_sizes([&] {
      std::vector<std::size_t> sizes(static_cast<std::size_t>(w), 0);
      sizes.back() = n;  // every element on the last rank
      return sizes;
    }());
    for (std::size_t i = 0; i < srt.local_count(); ++i) {
      const int r = srt.local_rank(i);
      own.push_back(srt.runtime(i).upload(std::span<const int>(ks).subspan(uneven.offset(r), uneven.size(r))));
      spans.emplace_back(own.back());
    }
    auto adopted = srt.adopt(spans);
    REQUIRE(adopted.layout() == uneven);
    check(adopted, ks, first);
    check(dk, ks, first);
  }
}
