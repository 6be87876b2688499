#include "keyed.hpp"

#include <cstring>

#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/runtime/driver_api.hpp"

namespace fuseflow::detail {
namespace {

// Keys compare as the reference does: C++ == per field (-0.0 equals 0.0, NaN nothing).
bool keys_equal(const Value& a, const Value& b) {
  if (a.is_tuple()) {
    for (std::size_t i = 0; i < a.fields().size(); ++i)
      if (!keys_equal(a.fields()[i], b.fields()[i])) return false;
    return true;
  }
  return apply_binary(BinaryOp::Eq, a, b, Type(ScalarType::Bool)).as_bool();
}

GatherItem zeros(std::size_t bytes) {
  GatherItem it;
  it.bytes = bytes;
  it.host.assign(bytes, std::byte{0});
  return it;
}

}  // namespace

void fold_on_device(Runtime& rt, CUdeviceptr at, const Monoid& m, const std::vector<Value>& parts) {
  const Type& t = m.type();
  std::vector<std::byte> bytes = rt.download(device_span<std::byte>(at, t.size()));
  Value acc = Value::from_bytes(t, bytes.data());
  for (const Value& v : parts) acc = evaluate_combine(m, acc, v);
  acc.to_bytes(bytes.data());
  const CUresult r = driver().cuMemcpyHtoDAsync(at, bytes.data(), bytes.size(), rt.stream());
  if (r != CUDA_SUCCESS) throw CudaError("cuMemcpyHtoDAsync", r, cuda_error_name(r), "sharded run");
  rt.synchronize();  // `bytes` lives until the copy is done
}

KeyedRank keyed_items(const Result& keys, const Result& values, std::vector<GatherItem>& items) {
  KeyedRank kr;
  kr.count = keys.size();
  kr.first_item = items.size();
  const auto n = static_cast<unsigned long long>(kr.count);
  GatherItem count = zeros(sizeof n);
  std::memcpy(count.host.data(), &n, sizeof n);
  items.push_back(std::move(count));
  auto at = [&](const Result& r, std::size_t i) {
    const std::size_t t = r.type().size();
    return kr.count ? device_item(r.device_array() + i * t, t) : zeros(t);
  };
  items.push_back(at(keys, 0));
  items.push_back(at(keys, kr.count ? kr.count - 1 : 0));
  items.push_back(at(values, 0));
  return kr;
}

KeyedRank keyscan_items(const Result& keys, const Result& values, const Result& last, std::vector<GatherItem>& items) {
  KeyedRank kr = keyed_items(keys, values, items);  // count, first key, last key, first value
  items.pop_back();
  auto at = [&](const Result& r, std::size_t i) {
    const std::size_t t = r.type().size();
    return kr.count ? device_item(r.device_array() + i * t, t) : zeros(t);
  };
  items.push_back(at(values, kr.count ? kr.count - 1 : 0));
  items.push_back(at(last, 0));
  return kr;
}

KeyScanCarry keyscan_carry(int rank, const Monoid& m, const KeyedRank& mine, const Gathered& all,
                           const std::vector<GatherItem>& items, const Type& key) {
  const std::size_t i0 = mine.first_item;
  auto count = [&](int q) { return all.value(Type(ScalarType::U64), i0, items[i0].bytes, q).as_uint(); };
  KeyScanCarry out;
  out.carry = m.identity();
  if (mine.count == 0) return out;
  const Value first = all.value(key, i0 + 1, items[i0 + 1].bytes, rank);
  std::vector<Value> before;  // in reverse rank order
  for (int q = rank - 1; q >= 0; --q) {
    if (count(q) == 0) continue;
    if (!keys_equal(all.value(key, i0 + 2, items[i0 + 2].bytes, q), first)) break;
    before.push_back(all.value(m.type(), i0 + 3, items[i0 + 3].bytes, q));
    if (count(q) > 1) break;  // its last run starts in its shard
  }
  if (before.empty()) return out;
  for (auto it = before.rbegin(); it != before.rend(); ++it) out.carry = evaluate_combine(m, out.carry, *it);
  out.head_end = all.value(Type(ScalarType::I64), i0 + 4, items[i0 + 4].bytes, rank).as_int() + 1;
  return out;
}

KeyedHeld keyed_combine(Runtime& rt, int rank, int ranks, const Monoid& m, const KeyedRank& mine, const Gathered& all,
                        const std::vector<GatherItem>& items, const Result& keys, const Result& values) {
  const std::size_t i0 = mine.first_item;
  std::vector<std::size_t> count;
  std::vector<Value> first_key, last_key, first_value;
  for (int q = 0; q < ranks; ++q) {
    count.push_back(all.value(Type(ScalarType::U64), i0, items[i0].bytes, q).as_uint());
    first_key.push_back(all.value(keys.type(), i0 + 1, items[i0 + 1].bytes, q));
    last_key.push_back(all.value(keys.type(), i0 + 2, items[i0 + 2].bytes, q));
    first_value.push_back(all.value(values.type(), i0 + 3, items[i0 + 3].bytes, q));
  }
  std::vector<bool> drop(static_cast<std::size_t>(ranks), false);
  int before = -1;  // the nearest rank before with runs
  for (int q = 0; q < ranks; ++q) {
    const auto uq = static_cast<std::size_t>(q);
    if (count[uq] == 0) continue;
    drop[uq] = before >= 0 && keys_equal(last_key[static_cast<std::size_t>(before)], first_key[uq]);
    before = q;
  }
  KeyedHeld out;
  for (int q = 0; q < ranks; ++q)
    out.held.push_back(count[static_cast<std::size_t>(q)] - (drop[static_cast<std::size_t>(q)] ? 1 : 0));
  const auto r = static_cast<std::size_t>(rank);
  out.drop = drop[r];
  if (count[r] == 0 || (count[r] == 1 && drop[r])) return out;  // no run of its own to finish
  std::vector<Value> parts;
  for (int q = rank + 1; q < ranks; ++q) {
    const auto uq = static_cast<std::size_t>(q);
    if (count[uq] == 0) continue;
    if (!drop[uq]) break;
    parts.push_back(first_value[uq]);
    if (count[uq] > 1) break;
  }
  if (!parts.empty()) fold_on_device(rt, values.device_array() + (count[r] - 1) * values.type().size(), m, parts);
  return out;
}

}  // namespace fuseflow::detail
