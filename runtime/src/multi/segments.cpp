#include "segments.hpp"

#include <algorithm>

namespace fuseflow::detail {

SegmentSplit::SegmentSplit(std::vector<std::size_t> bounds, ShardLayout layout)
    : bounds_(std::move(bounds)), layout_(std::move(layout)) {
  const std::size_t m = segments();
  const auto world = static_cast<std::size_t>(layout_.world());
  lo_.push_back(0);
  for (std::size_t r = 1; r < world; ++r) {
    const std::size_t a = layout_.offsets[r];
    lo_.push_back(static_cast<std::size_t>(
        std::lower_bound(bounds_.begin(), bounds_.begin() + static_cast<std::ptrdiff_t>(m), a) - bounds_.begin()));
  }
  lo_.push_back(m);
}

long long SegmentSplit::local(int r, std::size_t s) const {
  const std::size_t a = layout_.offset(r), b = layout_.offset(r + 1), o = bounds_.at(s);
  return static_cast<long long>(std::clamp(o, a, b) - a);
}

std::vector<long long> SegmentSplit::local_offsets(int r, bool scan) const {
  std::vector<long long> out;
  const std::size_t lo = first_owned(r), hi = first_owned(r + 1);
  if (!scan || lo > 0) out.push_back(0);
  for (std::size_t s = lo; s <= hi; ++s) out.push_back(local(r, s));
  return out;
}

long long SegmentSplit::head_end(int r) const { return first_owned(r) > 0 ? local(r, first_owned(r)) : 0; }

std::vector<int> SegmentSplit::heads_after(int r) const {
  std::vector<int> out;
  if (owned(r) == 0) return out;
  for (int q = r + 1; q < layout_.world() && first_owned(q) == first_owned(r + 1); ++q) out.push_back(q);
  return out;
}

long long SegmentSplit::tail_segment(int r) const {
  const std::size_t lo = first_owned(r), hi = first_owned(r + 1);
  if (hi > lo) return static_cast<long long>(hi) - 1;
  return static_cast<long long>(lo) - 1;
}

std::array<long long, 2> SegmentSplit::tail(int r) const {
  const std::size_t lo = first_owned(r), hi = first_owned(r + 1);
  if (hi > lo) return {local(r, hi - 1), local(r, hi)};
  if (lo > 0) return {0, local(r, lo)};
  return {0, 0};
}

std::vector<int> SegmentSplit::tails_before(int r) const {
  std::vector<int> out;
  if (first_owned(r) == 0) return out;
  const auto s = static_cast<long long>(first_owned(r)) - 1;
  for (int q = 0; q < r; ++q)
    if (tail_segment(q) == s) out.push_back(q);
  return out;
}

}  // namespace fuseflow::detail
