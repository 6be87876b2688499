// Shifts over shards: the halo exchange (halo.hpp). Every rank contributes |k| elements
// per (input, k), so the all-gather moves world x |k| elements per rank and shift; a
// table then holds the |k| elements the rank's shard reads beyond its ends.
#include "halo.hpp"

#include <algorithm>
#include <cstring>

namespace fuseflow::detail {

bool halos_on_device(const std::vector<ShardHalo>& halos, const ShardLayout& layout) {
  for (const ShardHalo& h : halos)
    for (int r = 0; r < layout.world(); ++r)
      if (static_cast<long long>(layout.size(r)) < (h.k < 0 ? -static_cast<long long>(h.k) : h.k)) return false;
  return true;
}

GatherItem halo_item(Runtime& rt, const ShardHalo& h, const DeviceBytes& shard) {
  const std::size_t elem = h.input.type().size();
  const auto count = static_cast<std::size_t>(h.k < 0 ? -static_cast<long long>(h.k) : h.k);
  const std::size_t n = shard.count;
  if (n >= count) return device_item(shard.ptr + (h.k < 0 ? (n - count) * elem : 0), count * elem);
  GatherItem it;
  it.bytes = count * elem;
  it.host.assign(it.bytes, std::byte{0});
  if (n) {
    const std::vector<std::byte> mine = rt.download(device_span<std::byte>(shard.ptr, n * elem));
    std::memcpy(it.host.data() + (h.k < 0 ? (count - n) * elem : 0), mine.data(), mine.size());
  }
  return it;
}

std::vector<std::byte> halo_table(const ShardHalo& h, const ShardLayout& layout, int rank, const Gathered& all,
                                  std::size_t item) {
  const std::size_t elem = h.input.type().size();
  const auto count = h.k < 0 ? -static_cast<long long>(h.k) : static_cast<long long>(h.k);
  const auto total = static_cast<long long>(layout.global_size());
  const auto off = static_cast<long long>(layout.offset(rank));
  const auto size = static_cast<long long>(layout.size(rank));
  std::vector<std::byte> table(static_cast<std::size_t>(count) * elem, std::byte{0});
  const std::vector<std::size_t>& o = layout.offsets;
  for (long long j = 0; j < count; ++j) {
    const long long g = h.k < 0 ? off + j + h.k : off + size + j;
    if (g < 0 || g >= total) continue;
    // The rank holding g: the last whose shard starts at or before it (empty shards skipped).
    const auto q = static_cast<std::size_t>(std::upper_bound(o.begin(), o.end(), static_cast<std::size_t>(g)) - o.begin() - 1);
    // Its part: its last |k| elements, ending at its shard's end (k < 0), or its first k.
    const long long at = h.k < 0 ? g - (static_cast<long long>(o[q + 1]) - count) : g - static_cast<long long>(o[q]);
    std::memcpy(table.data() + static_cast<std::size_t>(j) * elem,
                all.host + all.block[item] + q * static_cast<std::size_t>(count) * elem + static_cast<std::size_t>(at) * elem,
                elem);
  }
  return table;
}

namespace {
std::size_t largest(const ShardLayout& layout) {
  std::size_t m = 0;
  for (int r = 0; r < layout.world(); ++r) m = std::max(m, layout.size(r));
  return m;
}
}  // namespace

GatherItem table_item(Runtime& rt, const ShardLayout& layout, std::size_t elem, const DeviceBytes& shard) {
  const std::size_t m = largest(layout), n = shard.count;
  if (n == m && m) return device_item(shard.ptr, m * elem);
  GatherItem it;
  it.bytes = std::max<std::size_t>(m, 1) * elem;  // a value per rank, even when every shard is empty
  it.host.assign(it.bytes, std::byte{0});
  if (n) {
    const std::vector<std::byte> mine = rt.download(device_span<std::byte>(shard.ptr, n * elem));
    std::memcpy(it.host.data(), mine.data(), mine.size());
  }
  return it;
}

std::vector<std::byte> table_whole(const ShardLayout& layout, std::size_t elem, const Gathered& all, std::size_t item) {
  const std::size_t m = std::max<std::size_t>(largest(layout), 1);
  std::vector<std::byte> whole(layout.global_size() * elem);
  for (int q = 0; q < layout.world(); ++q)
    if (layout.size(q))
      std::memcpy(whole.data() + layout.offset(q) * elem, all.host + all.block[item] + static_cast<std::size_t>(q) * m * elem,
                  layout.size(q) * elem);
  return whole;
}

}  // namespace fuseflow::detail
