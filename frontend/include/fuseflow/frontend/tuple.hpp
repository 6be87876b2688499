#pragma once
// ff::Tuple<Ts...>: the host-side value of a fuseflow tuple type. Its bytes are laid out
// exactly as the plain C struct the code generator emits (fields in order, each at its
// natural alignment, size rounded up to the largest alignment), so a DeviceArray of
// Tuples can be copied to and from the device as is. std::tuple cannot serve: libstdc++
// stores its elements in reverse order.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <type_traits>

namespace fuseflow {

namespace detail {
template <class... Ts>
struct TupleLayout {
  static constexpr std::size_t count = sizeof...(Ts);
  static constexpr std::size_t alignment = std::max({alignof(Ts)...});
  static constexpr std::array<std::size_t, count> offsets = [] {
    std::array<std::size_t, count> out{};
    constexpr std::array<std::size_t, count> sizes{sizeof(Ts)...};
    constexpr std::array<std::size_t, count> aligns{alignof(Ts)...};
    std::size_t at = 0;
    for (std::size_t i = 0; i < count; ++i) {
      at = (at + aligns[i] - 1) / aligns[i] * aligns[i];
      out[i] = at;
      at += sizes[i];
    }
    return out;
  }();
  static constexpr std::size_t size =
      ((offsets[count - 1] + sizeof(std::tuple_element_t<count - 1, std::tuple<Ts...>>)) +
       alignment - 1) / alignment * alignment;
};
}  // namespace detail

template <class... Ts>
struct Tuple {
  static_assert(sizeof...(Ts) > 0, "ff::Tuple needs at least one field");
  static_assert((std::is_trivially_copyable_v<Ts> && ...), "tuple fields must be trivially copyable");
  using Layout = detail::TupleLayout<Ts...>;
  template <std::size_t I>
  using Field = std::tuple_element_t<I, std::tuple<Ts...>>;

  Tuple() { std::memset(bytes, 0, sizeof bytes); }
  explicit Tuple(Ts... values) : Tuple() { store(std::index_sequence_for<Ts...>{}, values...); }

  template <std::size_t I>
  Field<I> get() const {
    Field<I> v;
    std::memcpy(&v, bytes + Layout::offsets[I], sizeof v);
    return v;
  }
  template <std::size_t I>
  void set(Field<I> v) {
    std::memcpy(bytes + Layout::offsets[I], &v, sizeof v);
  }

  friend bool operator==(const Tuple& a, const Tuple& b) {
    return a.equal(b, std::index_sequence_for<Ts...>{});
  }

  alignas(Layout::alignment) unsigned char bytes[Layout::size];

 private:
  template <std::size_t... I>
  void store(std::index_sequence<I...>, Ts... values) {
    (set<I>(values), ...);
  }
  template <std::size_t... I>
  bool equal(const Tuple& o, std::index_sequence<I...>) const {
    return ((get<I>() == o.template get<I>()) && ...);
  }
};

template <class... Ts>
Tuple(Ts...) -> Tuple<Ts...>;

template <std::size_t I, class... Ts>
auto get(const Tuple<Ts...>& t) {
  return t.template get<I>();
}

template <class... Ts>
Tuple<Ts...> make_tuple(Ts... values) {
  return Tuple<Ts...>(values...);
}

}  // namespace fuseflow

// Structured bindings: auto [value, index] = argmax_result;
template <class... Ts>
struct std::tuple_size<fuseflow::Tuple<Ts...>> : std::integral_constant<std::size_t, sizeof...(Ts)> {};
template <std::size_t I, class... Ts>
struct std::tuple_element<I, fuseflow::Tuple<Ts...>> {
  using type = std::tuple_element_t<I, std::tuple<Ts...>>;
};
