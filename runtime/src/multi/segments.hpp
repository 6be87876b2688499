#pragma once
// Where a segmented op's segments lie over the shards (segments.cpp). Offsets are global:
// segment s is [O[s], O[s+1]) of the whole array. Rank r owns the segments that start in
// its shard [a_r, b_r) (the last rank also those starting at the end, which are empty):
// [lo_r, lo_{r+1}). Its shard holds, in order:
//   - a head: [a_r, min(O[lo_r], b_r)), the piece of segment lo_r - 1 (started on a rank
//     before; when lo_r == 0, elements before O[0], which belong to no segment);
//   - its own segments, the last one cut at b_r when it goes on.
// A cut segment's value is its owner's piece folded with the heads of the ranks after it
// that it covers (in rank order); a scan's carry into rank r's head is the fold of the
// tail pieces of the ranks before it in the same segment.
#include <array>
#include <cstddef>
#include <vector>

#include "fuseflow/runtime/sharded.hpp"

namespace fuseflow::detail {

class SegmentSplit {
 public:
  // `bounds`: the m + 1 global offsets, checked (segment_bounds).
  SegmentSplit(std::vector<std::size_t> bounds, ShardLayout layout);

  std::size_t segments() const { return bounds_.size() - 1; }
  std::size_t first_owned(int r) const { return lo_.at(static_cast<std::size_t>(r)); }
  std::size_t owned(int r) const { return first_owned(r + 1) - first_owned(r); }
  // The offsets the shard's op runs with. A reduce: the head as segment 0, then the
  // owned segments (owned(r) + 2 offsets). A scan: the head as segment 0 only where it
  // belongs to a segment (lo_r > 0), then the owned ones.
  std::vector<long long> local_offsets(int r, bool scan) const;
  long long head_end(int r) const;  // the head's end in the shard (0: none)
  // The ranks after r whose heads continue r's last owned segment, in order (none when r
  // owns no segment).
  std::vector<int> heads_after(int r) const;
  // Scans: the shard's tail piece (the part of the last segment it touches) and the
  // ranks before r whose tail pieces lie in r's head segment, in order.
  std::array<long long, 2> tail(int r) const;
  std::vector<int> tails_before(int r) const;

 private:
  long long local(int r, std::size_t s) const;  // O[s] in shard r, clamped to it
  long long tail_segment(int r) const;          // -1: none
  std::vector<std::size_t> bounds_;
  std::vector<std::size_t> lo_;  // world + 1
  ShardLayout layout_;
};

}  // namespace fuseflow::detail
