// The debug check of a custom monoid's laws. It runs when an op (reduce, scan, segmented
// ...) first combines the monoid with its elements, not in ff::monoid() itself: a monoid's
// laws need to hold only on the values its elements can take. The maximum segment sum's
// identity (0, 0, 0, 0) is an identity for every tuple an element or a combination of
// elements makes, but not for an arbitrary 4-tuple, so a check on arbitrary random tuples
// would reject a correct program.
#include "monoid_laws.hpp"

#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/frontend/settings.hpp"

namespace fuseflow::detail {
namespace {

constexpr std::size_t kElements = 6;  // random elements the laws are checked on
constexpr int kTriples = 48;          // random (x, y, z) for associativity

// Small values, so that integer combines do not overflow (a wrapped sum breaks laws such
// as a + max(b, c) == max(a + b, a + c) that a monoid may rely on) and float sums of a few
// of them are exact: floats are multiples of 1/8 in [-4, 4].
Value random_value(const Type& t, std::mt19937_64& rng) {
  if (t.is_tuple()) {
    std::vector<Value> fields;
    for (const Type& f : t.fields()) fields.push_back(random_value(f, rng));
    return Value::tuple(std::move(fields));
  }
  const ScalarType s = t.scalar();
  const auto small = static_cast<std::int64_t>(rng() % 65) - 32;  // [-32, 32]
  if (t.is_bool()) return Value((rng() & 1) != 0);
  if (t.is_floating()) return Value::from_double(s, static_cast<double>(small) / 8);
  if (t.is_unsigned_integer()) return Value::from_uint(s, static_cast<std::uint64_t>(small + 32));
  return Value::from_int(s, small);
}

// Equal, or for floats within a relative 1e-4: float monoids (a sum, a linear recurrence,
// Welford's mean and variance) are associative only up to rounding.
bool close(const Value& a, const Value& b) {
  if (a.is_tuple()) {
    for (std::size_t f = 0; f < a.fields().size(); ++f)
      if (!close(a[f], b[f])) return false;
    return true;
  }
  if (a == b) return true;  // +0 == -0 and NaN == NaN
  if (!a.type().is_floating()) return false;
  const double x = a.as_double(), y = b.as_double();
  return std::fabs(x - y) <= 1e-4 * (1 + std::fabs(x) + std::fabs(y));  // false for NaN
}

// The elements `values` takes on random inputs and parameters, or none when the CPU
// reference cannot evaluate them.
std::vector<Value> random_elements(const Expr& values, std::mt19937_64& rng) {
  try {
    const Program program(values);
    HostBindings bindings;
    for (const Expr& in : program.inputs()) {
      std::vector<Value> data;
      const std::int64_t declared = in.node().length;
      const std::size_t n = declared >= 0 ? static_cast<std::size_t>(declared) : kElements;
      if (n > 64) return {};
      for (std::size_t i = 0; i < n; ++i) data.push_back(random_value(in.type(), rng));
      bindings.bind(in, HostArray::from_values(in.type(), data));
    }
    for (const Expr& p : program.params()) bindings.bind(p, random_value(p.type(), rng));
    const HostArray elements = evaluate(program, bindings).at(0).array;
    std::vector<Value> out;
    for (std::size_t i = 0; i < elements.size(); ++i) out.push_back(elements.at(i));
    return out;
  } catch (const GraphError&) {
    return {};  // raw CUDA, random offsets or keys the op rejects: nothing to check on
  }
}

}  // namespace

namespace {
// -1: not set (the build's default); 0: off; 1: on.
std::atomic<int> monoid_checks_setting{-1};
}  // namespace

bool monoid_checks_enabled() {
  if (std::optional<bool> set = monoid_checks()) return *set;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

void check_monoid_laws(const Monoid& typed, const Expr& values, const std::string& op) {
  if (typed.is_builtin() || !monoid_checks_enabled()) return;
  std::mt19937_64 rng(0x66666d6f6e6f6964ULL);  // fixed: the same program always checks alike
  std::vector<Value> pool = random_elements(values, rng);
  if (pool.empty()) return;
  const auto combine = [&](const Value& a, const Value& b) { return evaluate_combine(typed, a, b); };
  // Combinations of neighbours too: a reduction's partial results are such values.
  for (std::size_t i = 0, n = pool.size(); i + 1 < n; ++i) pool.push_back(combine(pool[i], pool[i + 1]));

  const std::string who = op + ": monoid " + typed.name();
  const Value& e = typed.identity();
  const std::string id = " (identity " + e.to_string() + ")";
  for (const Value& x : pool) {
    if (Value r = combine(e, x); !close(r, x))
      throw GraphError(who + " fails the identity law: combine(identity, x) = " + r.to_string() + " for x = " +
                       x.to_string() + id + "; the identity must leave every element unchanged");
    if (Value r = combine(x, e); !close(r, x))
      throw GraphError(who + " fails the identity law: combine(x, identity) = " + r.to_string() + " for x = " +
                       x.to_string() + id + "; the identity must leave every element unchanged");
  }
  // Plain modulo, not a distribution: the values (and so the messages) are the same with
  // every standard library.
  const auto pick = [&]() -> const Value& { return pool[rng() % pool.size()]; };
  for (int t = 0; t < kTriples; ++t) {
    const Value &x = pick(), &y = pick(), &z = pick();
    const Value left = combine(combine(x, y), z), right = combine(x, combine(y, z));
    if (!close(left, right))
      throw GraphError(who + " is not associative: combine(combine(x, y), z) = " + left.to_string() +
                       " but combine(x, combine(y, z)) = " + right.to_string() + " for x = " + x.to_string() +
                       ", y = " + y.to_string() + ", z = " + z.to_string());
    if (!typed.is_commutative()) continue;
    const Value xy = combine(x, y), yx = combine(y, x);
    if (!close(xy, yx))
      throw GraphError(who + " is declared commutative but combine(x, y) = " + xy.to_string() +
                       " and combine(y, x) = " + yx.to_string() + " for x = " + x.to_string() + ", y = " +
                       y.to_string() + " (declare it ff::non_commutative)");
  }
}

}  // namespace fuseflow::detail

namespace fuseflow {

void set_monoid_checks(std::optional<bool> enabled) {
  detail::monoid_checks_setting.store(enabled ? (*enabled ? 1 : 0) : -1, std::memory_order_relaxed);
}

std::optional<bool> monoid_checks() {
  const int set = detail::monoid_checks_setting.load(std::memory_order_relaxed);
  if (set < 0) return std::nullopt;
  return set == 1;
}

}  // namespace fuseflow
