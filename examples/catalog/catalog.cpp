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
