// Monoids (monoid.hpp): the identity each built-in has for each element type, that
// built-ins are commutative, custom monoids traced from lambdas, and every misuse's
// GraphError.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fuseflow/frontend/monoid.hpp"
#include "fuseflow/frontend/program.hpp"
#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/frontend/settings.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;
using ff::ScalarType;
using ff::Type;

namespace {
const std::vector<ScalarType> kNumeric = {ScalarType::I8,  ScalarType::I16, ScalarType::I32, ScalarType::I64,
                                          ScalarType::U8,  ScalarType::U16, ScalarType::U32, ScalarType::U64,
                                          ScalarType::F32, ScalarType::F64};
const std::vector<ScalarType> kIntegral = {ScalarType::Bool, ScalarType::I8,  ScalarType::I16,
                                           ScalarType::I32,  ScalarType::I64, ScalarType::U8,
                                           ScalarType::U16,  ScalarType::U32, ScalarType::U64};

ff::Value identity_of(const ff::Monoid& m, const Type& t) { return m.instantiate(t, "reduce").identity(); }

using Mssp = ff::Tuple<int, int, int, int>;
ff::Monoid mssp() {
  return ff::monoid<Mssp>(
      [](auto a, auto b) {
        return ff::tuple(ff::max(ff::max(a[0], b[0]), a[2] + b[1]), ff::max(a[1], a[3] + b[1]),
                         ff::max(b[2], a[2] + b[3]), a[3] + b[3]);
      },
      ff::tuple(0, 0, 0, 0), ff::non_commutative, "mssp");
}
}  // namespace

TEST_CASE("plus has identity 0 and times identity 1 in every numeric type") {
  for (ScalarType s : kNumeric) {
    INFO("type ", ff::scalar_name(s));
    CHECK(identity_of(ff::plus, s) == ff::Value::from_int(s, 0));
    CHECK(identity_of(ff::times, s) == ff::Value::from_int(s, 1));
    CHECK(identity_of(ff::plus, s).type() == Type(s));
  }
  CHECK(identity_of(ff::plus, ScalarType::F32) == ff::Value(0.0f));
  CHECK(identity_of(ff::times, ScalarType::U64) == ff::Value(std::uint64_t{1}));
}

TEST_CASE("min's identity is the largest value of its type, +inf for floats") {
  CHECK(identity_of(ff::min, ScalarType::F32) == ff::Value(std::numeric_limits<float>::infinity()));
  CHECK(identity_of(ff::min, ScalarType::F64) == ff::Value(std::numeric_limits<double>::infinity()));
  CHECK(identity_of(ff::min, ScalarType::I8) == ff::Value(std::int8_t{127}));
  CHECK(identity_of(ff::min, ScalarType::I32) == ff::Value(std::numeric_limits<std::int32_t>::max()));
  CHECK(identity_of(ff::min, ScalarType::I64) == ff::Value(std::numeric_limits<std::int64_t>::max()));
  CHECK(identity_of(ff::min, ScalarType::U16) == ff::Value(std::uint16_t{65535}));
  CHECK(identity_of(ff::min, ScalarType::U64) == ff::Value(std::numeric_limits<std::uint64_t>::max()));
  CHECK(identity_of(ff::min, ScalarType::Bool) == ff::Value(true));
}

TEST_CASE("max's identity is the lowest value of its type, -inf for floats") {
  CHECK(identity_of(ff::max, ScalarType::F32) == ff::Value(-std::numeric_limits<float>::infinity()));
  CHECK(identity_of(ff::max, ScalarType::F64) == ff::Value(-std::numeric_limits<double>::infinity()));
  CHECK(identity_of(ff::max, ScalarType::I8) == ff::Value(std::int8_t{-128}));
  CHECK(identity_of(ff::max, ScalarType::I16) == ff::Value(std::int16_t{-32768}));
  CHECK(identity_of(ff::max, ScalarType::I32) == ff::Value(std::numeric_limits<std::int32_t>::min()));
  CHECK(identity_of(ff::max, ScalarType::I64) == ff::Value(std::numeric_limits<std::int64_t>::min()));
  CHECK(identity_of(ff::max, ScalarType::U32) == ff::Value(std::uint32_t{0}));
  CHECK(identity_of(ff::max, ScalarType::Bool) == ff::Value(false));
}

TEST_CASE("bitwise and has all bits set; or and xor have none") {
  CHECK(identity_of(ff::bit_and, ScalarType::U8) == ff::Value(std::uint8_t{0xFF}));
  CHECK(identity_of(ff::bit_and, ScalarType::U16) == ff::Value(std::uint16_t{0xFFFF}));
  CHECK(identity_of(ff::bit_and, ScalarType::U32) == ff::Value(std::uint32_t{0xFFFFFFFFu}));
  CHECK(identity_of(ff::bit_and, ScalarType::U64) == ff::Value(~std::uint64_t{0}));
  CHECK(identity_of(ff::bit_and, ScalarType::I32) == ff::Value(-1));
  CHECK(identity_of(ff::bit_and, ScalarType::I8) == ff::Value(std::int8_t{-1}));
  CHECK(identity_of(ff::bit_or, ScalarType::I64) == ff::Value(std::int64_t{0}));
  CHECK(identity_of(ff::bit_xor, ScalarType::U32) == ff::Value(std::uint32_t{0}));
}

TEST_CASE("logical and starts true and logical or starts false") {
  CHECK(identity_of(ff::logical_and, ScalarType::Bool) == ff::Value(true));
  CHECK(identity_of(ff::logical_or, ScalarType::Bool) == ff::Value(false));
}

TEST_CASE("argmax's identity is the lowest value with the largest index; argmin's the largest value") {
  const Type f32_i64 = Type::tuple({ScalarType::F32, ScalarType::I64});
  CHECK(identity_of(ff::argmax, f32_i64) ==
        ff::Value::tuple({ff::Value(-std::numeric_limits<float>::infinity()),
                          ff::Value(std::numeric_limits<std::int64_t>::max())}));
  CHECK(identity_of(ff::argmin, f32_i64) ==
        ff::Value::tuple({ff::Value(std::numeric_limits<float>::infinity()),
                          ff::Value(std::numeric_limits<std::int64_t>::max())}));
  const Type i32_u32 = Type::tuple({ScalarType::I32, ScalarType::U32});
  CHECK(identity_of(ff::argmax, i32_u32) ==
        ff::Value::tuple({ff::Value(std::numeric_limits<std::int32_t>::min()), ff::Value(0xFFFFFFFFu)}));
}

TEST_CASE("built-in monoids are commutative, generic, and instantiate to a combine of their type") {
  const std::vector<ff::Monoid> scalar_builtins = {ff::plus, ff::times, ff::min, ff::max, ff::bit_and,
                                                   ff::bit_or, ff::bit_xor};
  for (const ff::Monoid& m : scalar_builtins) {
    INFO("monoid ", m.name());
    CHECK(m.is_builtin());
    CHECK(m.is_commutative());
    CHECK_FALSE(m.is_typed());
    for (ScalarType s : {ScalarType::I8, ScalarType::U16, ScalarType::I64}) {
      const ff::Monoid typed = m.instantiate(s, "reduce");
      CHECK(typed.is_typed());
      CHECK(typed.is_commutative());
      CHECK(typed.type() == Type(s));
      CHECK(typed.combine().type() == Type(s));
      CHECK(typed.identity().type() == Type(s));
    }
  }
  for (const ff::Monoid& m : {ff::logical_and, ff::logical_or}) {
    CHECK(m.is_commutative());
    CHECK(m.instantiate(ScalarType::Bool, "scan").combine().type() == Type(ScalarType::Bool));
  }
  const Type pair = Type::tuple({ScalarType::F64, ScalarType::I32});
  for (const ff::Monoid& m : {ff::argmin, ff::argmax}) {
    const ff::Monoid typed = m.instantiate(pair, "reduce");
    CHECK(typed.is_commutative());
    CHECK(typed.combine().type() == pair);
  }
}

TEST_CASE("built-in names are the DSL's spelling") {
  CHECK(ff::plus.name() == "plus");
  CHECK(ff::Monoid(ff::max).name() == "max");
  CHECK(ff::Monoid(ff::min).kind() == ff::MonoidKind::Min);
  CHECK(ff::logical_or.name() == "logical_or");
  CHECK(ff::bit_xor.name() == "bit_xor");
  CHECK(ff::argmax.name() == "argmax");
}

TEST_CASE("a built-in that does not apply to the element type throws naming the op, monoid and type") {
  const Type pair = Type::tuple({ScalarType::F32, ScalarType::F32});
  CHECK_THROWS_WITH_AS(ff::plus.instantiate(pair, "reduce"),
                       "fuseflow: reduce: monoid plus needs a scalar element type (use a custom monoid for "
                       "tuples), got (f32, f32)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::plus.instantiate(ScalarType::Bool, "scan"),
                       "fuseflow: scan: monoid plus needs a numeric type (bool: use logical_or / logical_and), "
                       "got bool",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::times.instantiate(ScalarType::Bool, "reduce"),
                       "fuseflow: reduce: monoid times needs a numeric type (bool: use logical_or / logical_and), "
                       "got bool",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::logical_and.instantiate(ScalarType::I32, "reduce"),
                       "fuseflow: reduce: monoid logical_and needs bool elements, got i32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::logical_or.instantiate(ScalarType::F32, "reduce"),
                       "fuseflow: reduce: monoid logical_or needs bool elements, got f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::bit_and.instantiate(ScalarType::F32, "reduce"),
                       "fuseflow: reduce: monoid bit_and needs an integral type, got f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::bit_or.instantiate(ScalarType::F64, "reduce"),
                       "fuseflow: reduce: monoid bit_or needs an integral type, got f64", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::bit_xor.instantiate(ScalarType::F32, "scan"),
                       "fuseflow: scan: monoid bit_xor needs an integral type, got f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::argmax.instantiate(ScalarType::F32, "reduce"),
                       "fuseflow: reduce: monoid argmax needs (value, index) pairs such as zip(x, index()), got f32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::argmin.instantiate(Type::tuple({ScalarType::F32, ScalarType::F32}), "reduce"),
                       "fuseflow: reduce: monoid argmin needs (value, index) pairs such as zip(x, index()), got "
                       "(f32, f32)",
                       ff::GraphError);
}

TEST_CASE("bit ops accept every integral type, bool included") {
  for (ScalarType s : kIntegral) {
    INFO("type ", ff::scalar_name(s));
    CHECK(ff::bit_or.instantiate(s, "reduce").type() == Type(s));
  }
}

TEST_CASE("a custom monoid keeps its type, combine, identity and non-commutative flag") {
  const ff::Monoid m = mssp();
  CHECK_FALSE(m.is_builtin());
  CHECK(m.kind() == ff::MonoidKind::Custom);
  CHECK(m.is_typed());
  CHECK(m.name() == "mssp");
  CHECK_FALSE(m.is_commutative());
  CHECK(m.type() == ff::type_of<Mssp>());
  CHECK(m.combine().type() == ff::type_of<Mssp>());
  CHECK(m.identity() == ff::Value(Mssp(0, 0, 0, 0)));
  // Instantiating for its own type keeps the same monoid, flag included.
  const ff::Monoid same = m.instantiate(ff::type_of<Mssp>(), "reduce");
  CHECK(&same.node() == &m.node());
  CHECK_FALSE(same.is_commutative());
}

TEST_CASE("a custom monoid is commutative only when told, and unnamed ones are called custom") {
  const ff::Monoid m = ff::monoid<float>([](auto a, auto b) { return a + b; }, 0.0f, ff::commutative);
  CHECK(m.is_commutative());
  CHECK(m.name() == "custom");
  CHECK(m.identity() == ff::Value(0.0f));
  const ff::Monoid first = ff::monoid(
      ScalarType::I32, [](auto a, auto b) { return ff::select(a == 0, b, a); }, 0, ff::non_commutative, "first");
  CHECK_FALSE(first.is_commutative());
  CHECK(first.type() == Type(ScalarType::I32));
}

TEST_CASE("a custom monoid's combine function is traced once over the operands a and b") {
  int calls = 0;
  const ff::Monoid m = ff::monoid<int>(
      [&](auto a, auto b) {
        ++calls;
        return a * b;
      },
      1, ff::commutative);
  CHECK(calls == 1);
  CHECK(ff::to_string(m.combine()) == "a * b");
  REQUIRE(m.combine().args().size() == 2);
  CHECK(m.combine().args()[0].kind() == ff::ExprKind::Operand);
  CHECK(m.combine().args()[0].node().index == 0);
  CHECK(m.combine().args()[1].node().index == 1);
}

TEST_CASE("a custom monoid used on elements of another type throws naming both types") {
  CHECK_THROWS_WITH_AS(mssp().instantiate(ScalarType::I32, "reduce"),
                       "fuseflow: reduce: monoid mssp is over (i32, i32, i32, i32) but the elements are i32",
                       ff::GraphError);
}

TEST_CASE("a combine function with one or three arguments throws naming its arity") {
  auto one = [] { return ff::monoid<int>([](auto a) { return a; }, 0, ff::commutative); };
  CHECK_THROWS_WITH_AS(one(), "fuseflow: monoid: the combine function must take 2 arguments (a, b), it takes 1",
                       ff::GraphError);
  auto three = [] {
    return ff::monoid<int>([](auto a, auto b, auto c) { return a + b + c; }, 0, ff::commutative, "sum3");
  };
  CHECK_THROWS_WITH_AS(three(),
                       "fuseflow: monoid sum3: the combine function must take 2 arguments (a, b), it takes 3",
                       ff::GraphError);
  auto none = [] { return ff::monoid<int>([] { return ff::Expr(0); }, 0, ff::commutative); };
  CHECK_THROWS_WITH_AS(none(),
                       "fuseflow: monoid: the combine function must be callable as combine(a, b) with two "
                       "ff::Expr operands",
                       ff::GraphError);
}

TEST_CASE("a combine function returning another type throws naming both types") {
  auto wider = [] { return ff::monoid<int>([](auto a, auto b) { return a + b * 1.5; }, 0, ff::commutative); };
  CHECK_THROWS_WITH_AS(wider(),
                       "fuseflow: monoid: the combine function returns f64 but the monoid is over i32 (use "
                       "ff::cast for narrowing)",
                       ff::GraphError);
  auto small = [] {
    return ff::monoid<std::int8_t>([](auto a, auto b) { return a + b; }, ff::constant<std::int8_t>(0),
                                   ff::commutative, "add8");
  };
  CHECK_THROWS_WITH_AS(small(),
                       "fuseflow: monoid add8: the combine function returns i32 but the monoid is over i8 (use "
                       "ff::cast for narrowing)",
                       ff::GraphError);
  auto scalar_for_tuple = [] {
    return ff::monoid<ff::Tuple<int, int>>([](auto a, auto b) { return a[0] + b[0]; }, ff::tuple(0, 0),
                                           ff::commutative);
  };
  CHECK_THROWS_WITH_AS(scalar_for_tuple(),
                       "fuseflow: monoid: the combine function returns i32 but the monoid is over (i32, i32) (use "
                       "ff::cast for narrowing)",
                       ff::GraphError);
}

TEST_CASE("an identity of the wrong type throws naming both types") {
  auto float_identity = [] { return ff::monoid<int>([](auto a, auto b) { return a + b; }, 0.0f, ff::commutative); };
  CHECK_THROWS_WITH_AS(float_identity(),
                       "fuseflow: monoid: the identity has type f32 but the monoid is over i32", ff::GraphError);
  auto short_tuple = [] {
    return ff::monoid<ff::Tuple<int, int>>([](auto a, auto b) { return ff::tuple(a[0] + b[0], a[1] + b[1]); },
                                           ff::tuple(0), ff::commutative, "pairsum");
  };
  CHECK_THROWS_WITH_AS(short_tuple(),
                       "fuseflow: monoid pairsum: the identity has type (i32) but the monoid is over (i32, i32)",
                       ff::GraphError);
}

TEST_CASE("a combine function that uses an input, a parameter or the index throws") {
  const auto x = ff::input<int>("x");
  const auto p = ff::param<int>("p");
  auto with_input = [&] { return ff::monoid<int>([&](auto a, auto b) { return a + b + x; }, 0, ff::commutative); };
  CHECK_THROWS_WITH_AS(with_input(),
                       "fuseflow: monoid: the combine function uses input 'x'; it may use only a, b and constants",
                       ff::GraphError);
  auto with_param = [&] {
    return ff::monoid<int>([&](auto a, auto b) { return ff::max(a, b) * p; }, 0, ff::commutative, "scaled");
  };
  CHECK_THROWS_WITH_AS(
      with_param(),
      "fuseflow: monoid scaled: the combine function uses parameter 'p'; it may use only a, b and constants",
      ff::GraphError);
  auto with_index = [] {
    return ff::monoid<std::int64_t>([](auto a, auto b) { return a + b + ff::index(); }, std::int64_t{0},
                                    ff::commutative);
  };
  CHECK_THROWS_WITH_AS(with_index(), "fuseflow: monoid: the combine function may use only a, b and constants",
                       ff::GraphError);
}

// ---- the debug check of a custom monoid's laws (set_monoid_checks) -----------------------

namespace {

// Turns the check on or off for one scope (the tests build with NDEBUG, where the check
// is off unless asked for), then back to what it was.
class MonoidChecks {
 public:
  explicit MonoidChecks(bool enabled) : old_(ff::monoid_checks()) { ff::set_monoid_checks(enabled); }
  ~MonoidChecks() { ff::set_monoid_checks(old_); }
  MonoidChecks(const MonoidChecks&) = delete;
  MonoidChecks& operator=(const MonoidChecks&) = delete;

 private:
  std::optional<bool> old_;
};

using ff::test::graph_error_of;

// Plus with 1 as its "identity".
ff::Monoid plus_from_one() {
  return ff::monoid<int>([](auto a, auto b) { return a + b; }, ff::Expr(1), ff::commutative, "plus_from_one");
}

// a + b + a * b * b: 0 is a two-sided identity, but the combine is not associative.
ff::Monoid skewed() {
  return ff::monoid<int>([](auto a, auto b) { return a + b + a * b * b; }, ff::Expr(0), ff::non_commutative, "skewed");
}

// 2 x 2 integer matrix products, associative with the identity matrix but not commutative.
ff::Monoid matmul(ff::Commutativity c) {
  using M = ff::Tuple<int, int, int, int>;
  return ff::monoid<M>(
      [](auto a, auto b) {
        return ff::tuple(a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                         a[2] * b[1] + a[3] * b[3]);
      },
      ff::tuple(1, 0, 0, 1), c, "matmul");
}

}  // namespace

TEST_CASE("with monoid checks on, an identity that is not one is reported with the values") {
  MonoidChecks on(true);
  const auto x = ff::input<int>("x");
  // The first random element is -30: plus_from_one(1, -30) = -29.
  CHECK(graph_error_of([&] { ff::reduce(x, plus_from_one()); }) ==
        "fuseflow: reduce: monoid plus_from_one fails the identity law: combine(identity, x) = -29 for x = -30 "
        "(identity 1); the identity must leave every element unchanged");
  CHECK(graph_error_of([&] { ff::scan(x, plus_from_one()); }).rfind("fuseflow: scan: monoid plus_from_one fails the identity law", 0) == 0);
}

TEST_CASE("with monoid checks on, a combine that is not associative is reported with the values") {
  MonoidChecks on(true);
  const auto x = ff::input<int>("x");
  const auto off = ff::input<int>("off");
  // The values come from the fixed random elements and their combinations; the results
  // were checked by hand (i32 arithmetic wraps).
  CHECK(graph_error_of([&] { ff::reduce(x, skewed()); }) ==
        "fuseflow: reduce: monoid skewed is not associative: combine(combine(x, y), z) = 391843945 but "
        "combine(x, combine(y, z)) = 1708294921 for x = 4657, y = -7694, z = 931");
  CHECK(graph_error_of([&] { ff::segmented_reduce(x, off, skewed()); })
            .rfind("fuseflow: segmented_reduce: monoid skewed is not associative", 0) == 0);
}

TEST_CASE("with monoid checks on, a monoid declared commutative that is not is reported") {
  MonoidChecks on(true);
  const auto x = ff::input<int>("x");
  const auto parts = ff::zip(x, x + 1, x - 1, x * 2);
  CHECK(graph_error_of([&] { ff::reduce(parts, matmul(ff::commutative)); }) ==
        "fuseflow: reduce: monoid matmul is declared commutative but combine(x, y) = (-1706696, -2901374, -2597573, "
        "-4425972) and combine(y, x) = (-1600706, -2745194, -2636273, -4531962) for x = (544, 866, 767, 1358), "
        "y = (-915, -1438, -1396, -2447) (declare it ff::non_commutative)");
  CHECK(graph_error_of([&] { ff::reduce(parts, matmul(ff::non_commutative)); }) == "(no GraphError thrown)");
}

TEST_CASE("with monoid checks on, lawful monoids pass, float ones up to rounding") {
  MonoidChecks on(true);
  const auto xi = ff::input<int>("x");
  CHECK(graph_error_of([&] {
          ff::reduce(ff::map(xi, [](auto v) { auto p = ff::max(v, 0); return ff::tuple(p, p, p, v); }), mssp());
        }) == "(no GraphError thrown)");
  // Welford's (count, mean, M2), as in examples/custom_monoid.
  auto welford = ff::monoid<ff::Tuple<double, double, double>>(
      [](auto a, auto b) {
        auto n = a[0] + b[0];
        auto safe_n = ff::select(n > 0.0, n, 1.0);
        auto delta = b[1] - a[1];
        return ff::tuple(n, a[1] + delta * (b[0] / safe_n), a[2] + b[2] + delta * delta * (a[0] * b[0] / safe_n));
      },
      ff::tuple(0.0, 0.0, 0.0), ff::commutative, "welford");
  const auto xf = ff::input<float>("x");
  CHECK(graph_error_of([&] {
          ff::reduce(ff::map(xf, [](auto v) { return ff::tuple(1.0, ff::cast<double>(v), 0.0); }), welford);
        }) == "(no GraphError thrown)");
  // A linear recurrence x[i] = a[i] * x[i-1] + b[i] over floats: products round.
  auto recurrence = ff::monoid<ff::Tuple<float, float>>(
      [](auto l, auto r) { return ff::tuple(l[0] * r[0], r[0] * l[1] + r[1]); }, ff::tuple(1.0f, 0.0f),
      ff::non_commutative, "linear_recurrence");
  const auto b = ff::input<float>("b");
  CHECK(graph_error_of([&] { ff::scan(ff::zip(xf * 0.37f, b), recurrence); }) == "(no GraphError thrown)");
}

TEST_CASE("set_monoid_checks decides until it is reset to the build's default") {
  const std::optional<bool> before = ff::monoid_checks();
  ff::set_monoid_checks(true);
  CHECK(ff::monoid_checks() == std::optional<bool>(true));
  ff::set_monoid_checks(false);
  CHECK(ff::monoid_checks() == std::optional<bool>(false));
  ff::set_monoid_checks(std::nullopt);
  CHECK_FALSE(ff::monoid_checks().has_value());
  ff::set_monoid_checks(before);
}

TEST_CASE("the monoid check is off when set off, and skips elements it cannot evaluate") {
  const auto x = ff::input<int>("x");
  {
    MonoidChecks off(false);
    CHECK(graph_error_of([&] { ff::reduce(x, plus_from_one()); }) == "(no GraphError thrown)");
  }
  MonoidChecks on(true);
  // Raw CUDA runs only on the device: nothing to check the laws on.
  CHECK(graph_error_of([&] { ff::reduce(ff::cuda_expr<int>("__popc($0)", x), plus_from_one()); }) ==
        "(no GraphError thrown)");
  // Built-ins are not checked (float plus is associative only up to rounding).
  CHECK(graph_error_of([&] { ff::reduce(ff::cast<float>(x), ff::plus); }) == "(no GraphError thrown)");
}

TEST_CASE("a built-in instantiated twice for one type is one node; another type gets its own") {
  const Type pair = Type::tuple({ScalarType::F32, ScalarType::I64});
  const ff::Monoid a = ff::argmax.instantiate(pair, "reduce");
  const ff::Monoid b = ff::Monoid::builtin(ff::MonoidKind::ArgMax).instantiate(pair, "reduce");
  CHECK(&a.node() == &b.node());  // rebuilding a program does not trace argmax's combine again
  const ff::Monoid c = ff::argmin.instantiate(pair, "reduce");
  CHECK(&c.node() != &a.node());
  CHECK(c.identity()[0].as_float() == std::numeric_limits<float>::infinity());
  CHECK(a.identity()[0].as_float() == -std::numeric_limits<float>::infinity());
  const ff::Monoid d = ff::plus.instantiate(Type(ScalarType::F64), "scan");
  const ff::Monoid e = ff::plus.instantiate(Type(ScalarType::I32), "scan");
  CHECK(&d.node() != &e.node());
  CHECK(d.type() == Type(ScalarType::F64));
  CHECK(e.type() == Type(ScalarType::I32));
  CHECK(e.identity() == ff::Value(0));
}

TEST_CASE("a custom monoid's identity given as a tuple of literals is the same value the reference computes") {
  const ff::Monoid m = ff::monoid<ff::Tuple<int, float>>(
      [](const ff::Expr& a, const ff::Expr& b) { return ff::tuple(a[0] + b[0], a[1] * b[1]); },
      ff::tuple(0, 1.0f), ff::non_commutative, "sum_product");
  CHECK(m.identity().type() == Type::tuple({ScalarType::I32, ScalarType::F32}));
  CHECK(m.identity() == ff::evaluate_constant(ff::tuple(0, 1.0f)));
  CHECK(m.identity()[1].as_float() == 1.0f);
  // Not a literal: still evaluated (by the CPU reference).
  const ff::Monoid n = ff::monoid<int>([](const ff::Expr& a, const ff::Expr& b) { return a + b; },
                                       ff::cast<int>(ff::Expr(2.0f)) - 2, ff::commutative, "plus_cast");
  CHECK(n.identity() == ff::Value(0));
}

namespace {
// One lambda type, so that every call below shares its trace memo (monoid.hpp).
ff::Monoid shifted_sum(float zero, const char* name, ff::Commutativity c) {
  return ff::monoid<float>([](const ff::Expr& a, const ff::Expr& b) { return a + b; }, zero, c, name);
}
}  // namespace

TEST_CASE("a captureless combine is traced once while its name, type, identity and commutativity repeat") {
  const ff::Monoid first = shifted_sum(0.0f, "s", ff::commutative);
  const ff::Monoid again = shifted_sum(0.0f, "s", ff::commutative);
  CHECK(&first.node() == &again.node());
  // Anything that differs traces anew, and the monoid has what was asked.
  const ff::Monoid negative_zero = shifted_sum(-0.0f, "s", ff::commutative);
  CHECK(&negative_zero.node() != &first.node());
  CHECK(std::signbit(negative_zero.identity().as_float()));
  const ff::Monoid renamed = shifted_sum(-0.0f, "t", ff::commutative);
  CHECK(&renamed.node() != &negative_zero.node());
  CHECK(renamed.name() == "t");
  const ff::Monoid ordered = shifted_sum(-0.0f, "t", ff::non_commutative);
  CHECK(&ordered.node() != &renamed.node());
  CHECK(!ordered.is_commutative());
  CHECK(shifted_sum(1.0f, "t", ff::non_commutative).identity().as_float() == 1.0f);
  // A combine with captures is traced every time: what it captured may differ.
  float scale = 2.0f;
  auto scaled = [&scale] {
    return ff::monoid<float>([&scale](const ff::Expr& a, const ff::Expr& b) { return a + b * scale; }, 0.0f,
                             ff::non_commutative);
  };
  const ff::Monoid two = scaled();
  scale = 3.0f;
  CHECK(&scaled().node() != &two.node());
}
