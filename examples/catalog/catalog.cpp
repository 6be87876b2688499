#include "catalog.hpp"

namespace fuseflow::catalog {

Monoid mssp() {
  return monoid<Tuple<int, int, int, int>>(
      [](const Expr& a, const Expr& b) {
        return tuple(max(max(a[0], b[0]), a[2] + b[1]),  // best: inside a, inside b, or across
                     max(a[1], a[3] + b[1]),             // best prefix
                     max(b[2], a[2] + b[3]),             // best suffix
                     a[3] + b[3]);                       // total
      },
      tuple(0, 0, 0, 0), non_commutative, "mssp");
}

Expr mssp_parts(const Expr& x) {
  return map(x, [](const Expr& v) {
    Expr p = max(v, 0);
    return tuple(p, p, p, v);
  });
}

Monoid matmul2x2(const Type& element) {
  Type t = Type::tuple({element, element, element, element});
  return monoid(
      t,
      [&](const Expr& a, const Expr& b) {
        return tuple(cast(element, a[0] * b[0] + a[1] * b[2]), cast(element, a[0] * b[1] + a[1] * b[3]),
                     cast(element, a[2] * b[0] + a[3] * b[2]), cast(element, a[2] * b[1] + a[3] * b[3]));
      },
      tuple(cast(element, 1), cast(element, 0), cast(element, 0), cast(element, 1)), non_commutative, "matmul2x2");
}

Monoid linear_recurrence() {
  return monoid<Tuple<float, float>>(
      [](const Expr& l, const Expr& r) { return tuple(l[0] * r[0], r[0] * l[1] + r[1]); },
      tuple(1.0f, 0.0f), non_commutative, "linear_recurrence");
}

namespace {
std::vector<Entry> make_entries() {
  return {
      {"sum", "sum of an f32 array", [] { return Program(reduce(input<float>("x"), plus)); }},
      {"sum_of_squares", "quickstart: sum of x * x", [] {
         auto x = input<float>("x");
         return Program(reduce(x * x, plus));
       }},
      {"dot", "dot product: the map x * y fused into the reduction", [] {
         auto x = input<float>("x");
         auto y = input<float>("y");
         return Program(reduce(x * y, plus));
       }},
      {"argmax", "(value, index) of the largest f32; ties give the lowest index", [] {
         auto x = input<float>("x");
         return Program(reduce(zip(x, index()), argmax));
       }},
      {"mssp", "maximum segment sum: a non-commutative 4 x i32 monoid", [] {
         auto x = input<int>("x");
         return Program(reduce(mssp_parts(x), mssp()));
       }},
      {"matmul2x2", "product of 2x2 i32 matrices in order: non-commutative", [] {
         auto m = input<Tuple<int, int, int, int>>("m");
         return Program(reduce(m, matmul2x2(ScalarType::I32)));
       }},
      {"sum_max_argmin", "three reductions of x in one pass", [] {
         auto x = input<float>("x");
         return Program(outputs(reduce(x, plus), reduce(x, max), reduce(zip(x, index()), argmin)));
       }},
      {"filter_sum", "sum of the elements above a threshold parameter: a masked reduction", [] {
         auto x = input<float>("x");
         auto t = param<float>("threshold");
         return Program(reduce(filter(x, x > t), plus));
       }},
      {"normalize", "x / sum(x): the sum stays on the device for the second kernel", [] {
         auto x = input<float>("x");
         return Program(x / reduce(x, plus));
       }},
      {"sum_staged", "sum with the order-preserving strategy forced", [] {
         return Program(reduce(input<float>("x"), plus, strategy::staged));
       }},
      {"sum_tree", "sum with the multi-pass tree strategy (the course's, for study)", [] {
         return Program(reduce(input<float>("x"), plus, strategy::tree));
       }},
      {"sum_atomic", "sum with one atomicAdd per element (the course's, for study)", [] {
         return Program(reduce(input<float>("x"), plus, strategy::atomic));
       }},
      {"mssp_tree", "maximum segment sum with the tree strategy: order kept across levels", [] {
         auto x = input<int>("x");
         return Program(reduce(mssp_parts(x), mssp(), strategy::tree));
       }},
      {"inclusive_sum_f32", "inclusive prefix sums of f32 (single pass, decoupled look-back)", [] {
         return Program(scan(input<float>("x"), plus));
       }},
      {"exclusive_sum_i32", "exclusive prefix sums of i32: element i is the sum of the elements before it", [] {
         return Program(scan(input<int>("x"), plus, exclusive));
       }},
      {"max_scan", "running maximum of f32", [] { return Program(scan(input<float>("x"), max)); }},
      {"linear_recurrence", "x[i] = a[i] * x[i-1] + b[i]: a non-commutative scan over (a, b) pairs, x is field 1", [] {
         auto a = input<float>("a");
         auto b = input<float>("b");
         return Program(get<1>(scan(zip(a, b), linear_recurrence())));
       }},
      {"linear_recurrence_pairs", "the linear recurrence's whole scan: every (a, b) prefix pair is written (8 bytes)", [] {
         auto a = input<float>("a");
         auto b = input<float>("b");
         return Program(scan(zip(a, b), linear_recurrence()));
       }},
      {"mssp_prefix", "maximum segment sum of every prefix: an inclusive scan with the 4 x i32 monoid", [] {
         auto x = input<int>("x");
         return Program(scan(mssp_parts(x), mssp()));
       }},
      {"scan_epilogue", "prefix sums times 2: the map after the scan is applied before the store", [] {
         return Program(scan(input<float>("x"), plus) * 2.0f);
       }},
      {"masked_scan", "prefix sums of the elements above a threshold, n outputs: a masked scan, scan(select(x > t, x, 0))", [] {
         auto x = input<float>("x");
         auto t = param<float>("threshold");
         return Program(scan(select(x > t, x, 0.0f), plus));
       }},
      {"scan_reduce_then_scan", "inclusive prefix sums of f32 with the three-phase reduce_then_scan strategy", [] {
         return Program(scan(input<float>("x"), plus, inclusive, strategy::reduce_then_scan));
       }},
      {"histogram_256", "256-bin histogram of i32 values by their low byte (x & 255): privatised shared-memory counts", [] {
         auto x = input<int>("x");
         return Program(histogram(x & 255, 256));
       }},
      {"histogram_f32", "100-bin histogram of f32: bin = i32((x - lo) * scale), bins outside [0, 100) dropped", [] {
         auto x = input<float>("x");
         auto lo = param<float>("lo");
         auto scale = param<float>("scale");
         return Program(histogram(cast<int>((x - lo) * scale), 100));
       }},
      {"histogram_65536_u64", "65536-bin histogram with u64 counts: the bins do not fit in shared memory, global atomics", [] {
         auto x = input<int>("x");
         return Program(histogram(x & 65535, 65536, ScalarType::U64));
       }},
      {"segmented_sum", "f32 sum of each segment [offsets[s], offsets[s+1]): load-balanced merge path", [] {
         auto x = input<float>("x");
         auto offsets = input<int>("offsets");
         return Program(segmented_reduce(x, offsets, plus));
       }},
      {"segmented_mssp", "maximum segment sum of each segment by offsets: non-commutative, exact", [] {
         auto x = input<int>("x");
         auto offsets = input<int>("offsets");
         return Program(segmented_reduce(mssp_parts(x), offsets, mssp()));
       }},
      {"counting_sort", "stable counting sort of i32 keys over bins 0..8 (the course's [8,5,1,3,7,8,6,5,3,8])", [] {
         return Program(counting_sort(input<int>("k"), 9));
       }},
      {"sort_by_key_256", "u32 values sorted by u32 keys in [0, 256), stable: keys and values staged through shared memory", [] {
         const KeyedResult sorted = sort_by_key(input<unsigned>("k"), input<unsigned>("v"), 256);
         return Program(std::vector<Expr>{sorted.keys, sorted.values});
       }},
      {"sort_by_key_f32_bins", "f32 values sorted by a fused key i32(x * 8) over 8 bins, with their (value, index) pairs", [] {
         auto x = input<float>("x");
         return Program(sort_by_key(cast<int>(x * 8.0f), zip(x, index()), 8).values);
       }},
      {"counting_sort_4096", "counting sort of i32 keys x & 4095 over 4096 bins: too many to stage, written from registers", [] {
         return Program(counting_sort(input<int>("x") & 4095, 4096));
       }},
      {"filter_positive", "stream compaction: the elements of x above 0, in order; the count is written on the device", [] {
         auto x = input<float>("x");
         return Program(filter(x, x > 0.0f));
       }},
      {"filter_map", "filter -> map: the survivors above a threshold parameter, doubled before they are written", [] {
         auto x = input<float>("x");
         auto t = param<float>("threshold");
         return Program(filter(x, x > t) * 2.0f);
       }},
      {"filter_pairs", "compaction of (value, index) tuples of i32: the positions of the even elements", [] {
         auto x = input<int>("x");
         return Program(filter(zip(x, index()), (x & 1) == 0));
       }},
      {"segmented_scan_sum", "f32 prefix sums restarting at each segment [offsets[s], offsets[s+1]): one look-back pass", [] {
         auto x = input<float>("x");
         auto offsets = input<int>("offsets");
         return Program(segmented_scan(x, offsets, plus));
       }},
      {"segmented_scan_exclusive_i32", "exclusive i32 prefix sums per segment: a segment's first element gets 0", [] {
         auto x = input<int>("x");
         auto offsets = input<int>("offsets");
         return Program(segmented_scan(x, offsets, plus, exclusive));
       }},
      {"segmented_linear_recurrence", "x[i] = a[i] * x[i-1] + b[i] restarting at each segment: non-commutative, x is field 1", [] {
         auto a = input<float>("a");
         auto b = input<float>("b");
         auto offsets = input<int>("offsets");
         return Program(get<1>(segmented_scan(zip(a, b), offsets, linear_recurrence())));
       }},
      {"scan_by_key_sum", "f32 prefix sums restarting where the i32 key changes (runs of equal keys)", [] {
         auto k = input<int>("k");
         auto x = input<float>("x");
         return Program(scan_by_key(k, x, plus));
       }},
      {"scan_by_key_mssp", "exclusive maximum segment sum per run of equal (i32, f32) keys: tuple keys, non-commutative", [] {
         auto k = input<int>("k");
         auto c = input<float>("c");
         auto x = input<int>("x");
         return Program(scan_by_key(zip(k, c), mssp_parts(x), mssp(), exclusive));
       }},
      {"reduce_by_key_sum", "one key and f32 sum per run of equal i32 keys: the run count is written on the device", [] {
         auto k = input<int>("k");
         auto x = input<float>("x");
         KeyedResult r = reduce_by_key(k, x, plus);
         return Program(outputs(r.keys, r.values));
       }},
      {"reduce_by_key_mssp", "maximum segment sum of each run of equal i32 keys (values only): non-commutative", [] {
         auto k = input<int>("k");
         auto x = input<int>("x");
         return Program(reduce_by_key(k, mssp_parts(x), mssp()).values);
       }},
      {"log_sum_exp", "m + log(sum(exp(x - m))), m = max(x): an output computed from two reductions' results", [] {
         auto x = input<float>("x");
         auto m = reduce(x, max);
         return Program(m + log(reduce(exp(x - m), plus)));
       }},
      {"sort_pairs_u32", "u32 values sorted by u32 keys over all 32 bits: a stable radix sort, four 8-bit passes", [] {
         const KeyedResult sorted = sort_by_key(input<unsigned>("k"), input<unsigned>("v"));
         return Program(std::vector<Expr>{sorted.keys, sorted.values});
       }},
      {"sort_keys_f32", "f32 keys sorted alone: -0.0 before +0.0, NaNs last; four passes, the keys ping-ponged in scratch", [] {
         return Program(sort(input<float>("x")));
       }},
      {"sort_pairs_u32_bits_0_8", "u32 values sorted by bits [0, 8) of u32 keys: one radix pass of 256 bins", [] {
         const KeyedResult sorted = sort_by_key(input<unsigned>("k"), input<unsigned>("v"), {0, 8});
         return Program(std::vector<Expr>{sorted.keys, sorted.values});
       }},
      {"softmax_rows", "per-row softmax over rows of 1024 f32 (ff::rows, ff::broadcast): one kernel, a row in registers", [] {
         auto x = input<float>("x");
         const auto offs = rows(x, 1024);
         const auto e = exp(x - broadcast(segmented_reduce(x, offs, max), offs));
         return Program(e / broadcast(segmented_reduce(e, offs, plus), offs));
       }},
  };
}
}  // namespace

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = make_entries();
  return all;
}

const Entry& find(const std::string& name) {
  for (const auto& e : entries())
    if (e.name == name) return e;
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.name;
  throw GraphError("no example program named '" + name + "' (known: " + known + ")");
}

}  // namespace fuseflow::catalog
