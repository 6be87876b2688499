// Types (type.hpp), host tuples (tuple.hpp) and values (value.hpp): scalar sizes, the C
// struct layout of tuples, C++'s usual arithmetic conversions, and the byte form a value
// has in device memory.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "fuseflow/frontend/type.hpp"
#include "fuseflow/frontend/value.hpp"

namespace ff = fuseflow;
using ff::ScalarType;
using ff::Type;

namespace {
Type tuple_of(std::vector<Type> fields) { return Type::tuple(std::move(fields)); }

// Checks that ff::Tuple<Ts...> lays out its bytes exactly as Type::size/field_offset say.
template <class... Ts, std::size_t... I>
void check_host_layout(std::index_sequence<I...>) {
  using T = ff::Tuple<Ts...>;
  const Type t = ff::type_of<T>();
  CHECK(sizeof(T) == t.size());
  CHECK(alignof(T) == t.alignment());
  CHECK(((T::Layout::offsets[I] == t.field_offset(I)) && ...));
}
template <class... Ts>
void check_host_layout() {
  INFO("tuple ", ff::type_of<ff::Tuple<Ts...>>().name());
  check_host_layout<Ts...>(std::index_sequence_for<Ts...>{});
}

// Writes v as bytes, reads it back and checks that nothing changed.
void check_round_trip(const ff::Value& v) {
  INFO("value ", v.to_string(), " of type ", v.type().name());
  std::vector<unsigned char> bytes(v.type().size(), 0xAB);
  v.to_bytes(bytes.data());
  const ff::Value back = ff::Value::from_bytes(v.type(), bytes.data());
  CHECK(back.type() == v.type());
  CHECK(back == v);
}
}  // namespace

TEST_CASE("scalar types have the sizes and names of their C++ counterparts") {
  CHECK(ff::scalar_size(ScalarType::Bool) == sizeof(bool));
  CHECK(ff::scalar_size(ScalarType::I8) == 1);
  CHECK(ff::scalar_size(ScalarType::U8) == 1);
  CHECK(ff::scalar_size(ScalarType::I16) == 2);
  CHECK(ff::scalar_size(ScalarType::U16) == 2);
  CHECK(ff::scalar_size(ScalarType::I32) == 4);
  CHECK(ff::scalar_size(ScalarType::U32) == 4);
  CHECK(ff::scalar_size(ScalarType::F32) == 4);
  CHECK(ff::scalar_size(ScalarType::I64) == 8);
  CHECK(ff::scalar_size(ScalarType::U64) == 8);
  CHECK(ff::scalar_size(ScalarType::F64) == 8);
  CHECK(Type(ScalarType::F64).alignment() == 8);
  CHECK(Type(ScalarType::I16).size() == 2);

  CHECK(ff::scalar_name(ScalarType::Bool) == "bool");
  CHECK(ff::scalar_name(ScalarType::I8) == "i8");
  CHECK(ff::scalar_name(ScalarType::U16) == "u16");
  CHECK(ff::scalar_name(ScalarType::I64) == "i64");
  CHECK(ff::scalar_name(ScalarType::F32) == "f32");
  CHECK(ff::scalar_name(ScalarType::F64) == "f64");
}

TEST_CASE("every row of the scalar type table agrees with its C++ type") {
  for (const ff::ScalarInfo& row : ff::all_scalar_types()) {
    CAPTURE(row.name);
    ff::visit_scalar(row.type, [&row](auto zero) {
      using T = decltype(zero);
      CHECK(ff::type_of<T>() == Type(row.type));
      CHECK(row.size == sizeof(T));
      CHECK(row.is_floating() == std::is_floating_point_v<T>);
      CHECK(row.is_signed_integer() == (std::is_signed_v<T> && std::is_integral_v<T>));
      CHECK(row.is_unsigned_integer() == (std::is_unsigned_v<T> && !std::is_same_v<T, bool>));
    });
    CHECK(ff::scalar_name(row.type) == row.name);
    CHECK(ff::scalar_info(row.type).type == row.type);
  }
  CHECK(ff::unsigned_of(ScalarType::I32) == ScalarType::U32);
  CHECK(ff::unsigned_of(ScalarType::I64) == ScalarType::U64);
}

TEST_CASE("type_of maps each C++ arithmetic type to its fuseflow scalar") {
  CHECK(ff::type_of<bool>() == Type(ScalarType::Bool));
  CHECK(ff::type_of<std::int8_t>() == Type(ScalarType::I8));
  CHECK(ff::type_of<char>() == Type(ScalarType::I8));
  CHECK(ff::type_of<std::int16_t>() == Type(ScalarType::I16));
  CHECK(ff::type_of<int>() == Type(ScalarType::I32));
  CHECK(ff::type_of<std::int64_t>() == Type(ScalarType::I64));
  CHECK(ff::type_of<long long>() == Type(ScalarType::I64));
  CHECK(ff::type_of<std::uint8_t>() == Type(ScalarType::U8));
  CHECK(ff::type_of<std::uint16_t>() == Type(ScalarType::U16));
  CHECK(ff::type_of<unsigned>() == Type(ScalarType::U32));
  CHECK(ff::type_of<std::uint64_t>() == Type(ScalarType::U64));
  CHECK(ff::type_of<unsigned long long>() == Type(ScalarType::U64));
  CHECK(ff::type_of<float>() == Type(ScalarType::F32));
  CHECK(ff::type_of<double>() == Type(ScalarType::F64));
  CHECK(ff::type_of<ff::Tuple<int, float>>() == tuple_of({ScalarType::I32, ScalarType::F32}));
}

TEST_CASE("type predicates classify scalars as C++ does, bool counting as integral") {
  const Type b = ScalarType::Bool, i = ScalarType::I16, u = ScalarType::U64, f = ScalarType::F32;
  const Type pair = tuple_of({ScalarType::I32, ScalarType::I32});
  CHECK(b.is_integral());
  CHECK(b.is_bool());
  CHECK_FALSE(b.is_signed_integer());
  CHECK_FALSE(b.is_unsigned_integer());
  CHECK(i.is_signed_integer());
  CHECK_FALSE(i.is_unsigned_integer());
  CHECK(u.is_unsigned_integer());
  CHECK(u.is_integral());
  CHECK(f.is_floating());
  CHECK_FALSE(f.is_integral());
  CHECK(pair.is_tuple());
  CHECK_FALSE(pair.is_scalar());
  CHECK_FALSE(pair.is_integral());
  CHECK_FALSE(pair.is_floating());
  CHECK(pair.arity() == 2);
  CHECK(f.arity() == 0);
}

TEST_CASE("a tuple is laid out as a C struct: natural alignment, size rounded to the largest") {
  SUBCASE("equal fields pack without padding") {
    const Type t = tuple_of({ScalarType::I32, ScalarType::I32, ScalarType::I32, ScalarType::I32});
    CHECK(t.size() == 16);
    CHECK(t.alignment() == 4);
    CHECK(t.field_offset(3) == 12);
  }
  SUBCASE("a small field before a large one is padded up to the large one's alignment") {
    const Type t = tuple_of({ScalarType::I8, ScalarType::I32, ScalarType::I8});
    CHECK(t.field_offset(0) == 0);
    CHECK(t.field_offset(1) == 4);
    CHECK(t.field_offset(2) == 8);
    CHECK(t.size() == 12);
    CHECK(t.alignment() == 4);
  }
  SUBCASE("trailing padding rounds the size to the largest alignment") {
    const Type t = tuple_of({ScalarType::F64, ScalarType::Bool});
    CHECK(t.field_offset(1) == 8);
    CHECK(t.size() == 16);
    CHECK(t.alignment() == 8);
  }
  SUBCASE("mixed 2-, 4- and 8-byte fields") {
    const Type t = tuple_of({ScalarType::U16, ScalarType::F32, ScalarType::U8, ScalarType::I64});
    CHECK(t.field_offset(0) == 0);
    CHECK(t.field_offset(1) == 4);
    CHECK(t.field_offset(2) == 8);
    CHECK(t.field_offset(3) == 16);
    CHECK(t.size() == 24);
  }
  SUBCASE("a nested tuple is aligned as its largest field and keeps its own padding") {
    const Type inner = tuple_of({ScalarType::I16, ScalarType::I8});
    CHECK(inner.size() == 4);
    CHECK(inner.alignment() == 2);
    const Type t = tuple_of({ScalarType::I8, inner, ScalarType::I8});
    CHECK(t.field_offset(1) == 2);
    CHECK(t.field_offset(2) == 6);
    CHECK(t.size() == 8);
    CHECK(t.alignment() == 2);
    CHECK(t.name() == "(i8, (i16, i8), i8)");
  }
  SUBCASE("a nested tuple with an 8-byte field aligns the outer tuple to 8") {
    const Type inner = tuple_of({ScalarType::F64, ScalarType::I32});
    const Type t = tuple_of({ScalarType::I32, inner});
    CHECK(inner.size() == 16);
    CHECK(t.field_offset(1) == 8);
    CHECK(t.size() == 24);
    CHECK(t.alignment() == 8);
  }
}

TEST_CASE("tuple types compare by their fields and print as parenthesised lists") {
  const Type a = tuple_of({ScalarType::F32, ScalarType::I64});
  const Type b = tuple_of({ScalarType::F32, ScalarType::I64});
  const Type c = tuple_of({ScalarType::I64, ScalarType::F32});
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != Type(ScalarType::F32));
  CHECK(tuple_of({ScalarType::F32}) != Type(ScalarType::F32));
  CHECK(a.name() == "(f32, i64)");
  CHECK(tuple_of({a, ScalarType::Bool}).name() == "((f32, i64), bool)");
}

TEST_CASE("misusing a type throws a GraphError that names the type") {
  CHECK_THROWS_WITH_AS(Type::tuple({}), "fuseflow: a tuple type needs at least one field", ff::GraphError);
  const Type pair = tuple_of({ScalarType::F32, ScalarType::I32});
  CHECK_THROWS_WITH_AS(pair.field_offset(2), "fuseflow: field 2 of (f32, i32): out of range", ff::GraphError);
  CHECK_THROWS_WITH_AS(pair.scalar(), "fuseflow: expected a scalar type, got (f32, i32)", ff::GraphError);
}

TEST_CASE("usual arithmetic conversions follow C++, integer promotion included") {
  using S = ScalarType;
  CHECK(ff::usual_arithmetic_conversion(S::I8, S::I8) == S::I32);
  CHECK(ff::usual_arithmetic_conversion(S::U8, S::U16) == S::I32);
  CHECK(ff::usual_arithmetic_conversion(S::Bool, S::Bool) == S::I32);
  CHECK(ff::usual_arithmetic_conversion(S::U32, S::I32) == S::U32);
  CHECK(ff::usual_arithmetic_conversion(S::I32, S::U32) == S::U32);
  CHECK(ff::usual_arithmetic_conversion(S::I64, S::U32) == S::I64);
  CHECK(ff::usual_arithmetic_conversion(S::U32, S::I64) == S::I64);
  CHECK(ff::usual_arithmetic_conversion(S::U64, S::I64) == S::U64);
  CHECK(ff::usual_arithmetic_conversion(S::I8, S::U64) == S::U64);
  CHECK(ff::usual_arithmetic_conversion(S::U16, S::I64) == S::I64);
  CHECK(ff::usual_arithmetic_conversion(S::I16, S::I64) == S::I64);
  CHECK(ff::usual_arithmetic_conversion(S::F32, S::I64) == S::F32);
  CHECK(ff::usual_arithmetic_conversion(S::U64, S::F32) == S::F32);
  CHECK(ff::usual_arithmetic_conversion(S::F32, S::F64) == S::F64);
  CHECK(ff::usual_arithmetic_conversion(S::I8, S::F64) == S::F64);
  CHECK(ff::usual_arithmetic_conversion(S::F32, S::F32) == S::F32);

  CHECK(ff::integer_promotion(S::Bool) == S::I32);
  CHECK(ff::integer_promotion(S::U16) == S::I32);
  CHECK(ff::integer_promotion(S::U32) == S::U32);
  CHECK(ff::integer_promotion(S::I64) == S::I64);
}

TEST_CASE("conversions agree with the C++ compiler's own") {
  using S = ScalarType;
  auto same = [](auto a, auto b, S expected) {
    using R = decltype(a + b);
    CHECK(ff::type_of<R>() == Type(expected));
  };
  same(std::int8_t{}, std::int8_t{}, ff::usual_arithmetic_conversion(S::I8, S::I8));
  same(std::uint32_t{}, std::int32_t{}, ff::usual_arithmetic_conversion(S::U32, S::I32));
  same(std::int64_t{}, std::uint32_t{}, ff::usual_arithmetic_conversion(S::I64, S::U32));
  same(std::uint64_t{}, std::int64_t{}, ff::usual_arithmetic_conversion(S::U64, S::I64));
  same(float{}, std::int64_t{}, ff::usual_arithmetic_conversion(S::F32, S::I64));
  same(float{}, double{}, ff::usual_arithmetic_conversion(S::F32, S::F64));
  same(std::uint16_t{}, std::uint32_t{}, ff::usual_arithmetic_conversion(S::U16, S::U32));
}

TEST_CASE("ff::Tuple's host layout equals Type::size and Type::field_offset") {
  check_host_layout<int, int, int, int>();
  check_host_layout<std::int8_t, float, std::int16_t>();
  check_host_layout<double, bool>();
  check_host_layout<std::uint16_t, float, std::uint8_t, std::int64_t>();
  check_host_layout<float, std::int64_t>();
  check_host_layout<std::int8_t, ff::Tuple<std::int16_t, std::int8_t>, std::int8_t>();
  check_host_layout<int, ff::Tuple<double, int>>();
}

TEST_CASE("ff::Tuple stores fields in declaration order at their offsets") {
  const ff::Tuple<std::int8_t, double, int> t(std::int8_t{7}, 2.5, -3);
  double d = 0;
  std::memcpy(&d, t.bytes + 8, sizeof d);
  int i = 0;
  std::memcpy(&i, t.bytes + 16, sizeof i);
  CHECK(t.bytes[0] == 7);
  CHECK(d == 2.5);
  CHECK(i == -3);
  CHECK(ff::get<1>(t) == 2.5);
  auto [a, b, c] = t;
  CHECK(a == 7);
  CHECK(b == 2.5);
  CHECK(c == -3);
}

TEST_CASE("every scalar value survives to_bytes and from_bytes") {
  check_round_trip(ff::Value(true));
  check_round_trip(ff::Value(false));
  check_round_trip(ff::Value(std::int8_t{-128}));
  check_round_trip(ff::Value(std::int16_t{-12345}));
  check_round_trip(ff::Value(std::int32_t{std::numeric_limits<std::int32_t>::min()}));
  check_round_trip(ff::Value(std::int64_t{-1234567890123456789}));
  check_round_trip(ff::Value(std::uint8_t{255}));
  check_round_trip(ff::Value(std::uint16_t{65535}));
  check_round_trip(ff::Value(std::uint32_t{4000000000u}));
  check_round_trip(ff::Value(std::numeric_limits<std::uint64_t>::max()));
  check_round_trip(ff::Value(-0.1f));
  check_round_trip(ff::Value(std::numeric_limits<float>::infinity()));
  check_round_trip(ff::Value(1e300));
  check_round_trip(ff::Value(std::numeric_limits<double>::quiet_NaN()));
}

TEST_CASE("tuple values survive to_bytes and from_bytes, nested tuples included") {
  check_round_trip(ff::Value::tuple({ff::Value(std::int8_t{-1}), ff::Value(3.5), ff::Value(true)}));
  check_round_trip(ff::Value::tuple(
      {ff::Value(1), ff::Value::tuple({ff::Value(std::int16_t{-2}), ff::Value(std::uint8_t{200})}),
       ff::Value(std::uint64_t{1} << 40)}));
}

TEST_CASE("a value's bytes are the bytes of the ff::Tuple with the same fields") {
  using T = ff::Tuple<std::int8_t, ff::Tuple<std::int16_t, float>, std::int64_t>;
  const T host(std::int8_t{-5}, ff::Tuple<std::int16_t, float>(std::int16_t{300}, 0.25f), std::int64_t{-9});
  const ff::Value v = host;
  CHECK(v.type() == ff::type_of<T>());
  CHECK(v[1][0] == ff::Value(std::int16_t{300}));
  CHECK(v[1][1] == ff::Value(0.25f));
  std::array<unsigned char, sizeof(T)> bytes{};
  v.to_bytes(bytes.data());
  CHECK(std::memcmp(bytes.data(), host.bytes, sizeof(T)) == 0);
  CHECK(v.as<T>() == host);
  CHECK(ff::Value::from_bytes(v.type(), host.bytes) == v);
}

TEST_CASE("a scalar's bytes are its little-endian C++ representation") {
  std::array<unsigned char, 4> bytes{};
  ff::Value(std::int32_t{-2}).to_bytes(bytes.data());
  CHECK(bytes == std::array<unsigned char, 4>{0xFE, 0xFF, 0xFF, 0xFF});
  const unsigned char one = 1, seven = 7;
  CHECK(ff::Value::from_bytes(ScalarType::Bool, &one) == ff::Value(true));
  CHECK(ff::Value::from_bytes(ScalarType::Bool, &seven).as_bool());
  unsigned char out = 0xFF;
  ff::Value(true).to_bytes(&out);
  CHECK(out == 1);
}

TEST_CASE("converting a value to a C++ type of a different fuseflow type throws") {
  const ff::Value v(2.5f);
  CHECK(v.as<float>() == 2.5f);
  CHECK_THROWS_WITH_AS(v.as<double>(), "fuseflow: cannot convert a result of type f32 to f64", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Value(1)[0], "fuseflow: field 0 of a i32 value: out of range", ff::GraphError);
}

TEST_CASE("values convert between scalar types as static_cast does") {
  CHECK(ff::Value(300).cast(ScalarType::U8) == ff::Value(std::uint8_t{44}));
  CHECK(ff::Value(-1).cast(ScalarType::U32) == ff::Value(std::uint32_t{0xFFFFFFFFu}));
  CHECK(ff::Value(-2.75).cast(ScalarType::I32) == ff::Value(-2));
  CHECK(ff::Value(std::uint8_t{200}).cast(ScalarType::I8) == ff::Value(std::int8_t{-56}));
  CHECK(ff::Value(3).cast(ScalarType::Bool) == ff::Value(true));
  CHECK(ff::Value(0.1).cast(ScalarType::F32) == ff::Value(0.1f));
}

TEST_CASE("values print as the DSL writes literals") {
  CHECK(ff::Value(3).to_string() == "3");
  CHECK(ff::Value(std::int64_t{3}).to_string() == "3L");
  CHECK(ff::Value(3u).to_string() == "3u");
  CHECK(ff::Value(std::uint64_t{3}).to_string() == "3uL");
  CHECK(ff::Value(2.0f).to_string() == "2.0f");
  CHECK(ff::Value(2.5).to_string() == "2.5");
  CHECK(ff::Value(std::int8_t{-4}).to_string() == "i8(-4)");
  CHECK(ff::Value(false).to_string() == "false");
  CHECK(ff::Value::tuple({ff::Value(1), ff::Value(0.5f)}).to_string() == "(1, 0.5f)");
}
