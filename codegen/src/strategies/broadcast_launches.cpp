// The launches of the general per-segment broadcast's step (StepSpec::Kind::Broadcast; the
// kernels: strategies/broadcast.cpp): each segmented reduction's kernels, then the map, with
// the per-segment buffers shared between them.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "../array_ops.hpp"
#include "../rows.hpp"
#include "../schedule.hpp"
#include "../strategy.hpp"

namespace fuseflow::codegen {

// The step's launches: each reduction as the segmented reduce's step launches it (the
// short pass when the segments average at most kShortSegment elements, then the merge
// path; nothing without segments), then the map over n. Each reduction's segments are
// those of its own offsets (a program may have several offsets arrays). The per-segment
// buffers (seg<r>, a reduction's `out`) are allocated once and shared by the kernels that
// name them; the other scratch is each reduction's own.
void broadcast_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  const int ops = static_cast<int>(step.bins);
  const int per_op = (step.kernels - 1) / std::max(1, ops);
  // Each reduction's segments: its offsets' domain is the count argument of its kernels.
  const auto segments_of = [&](const KernelSpec& k) {
    for (const Arg& a : k.args)
      if (a.kind == Arg::Kind::Length && a.name == "offsets_count") {
        const std::int64_t count = b.length(a.index);
        if (count < 1) throw GraphError("broadcast: the offsets are empty; s segments need s + 1 offsets");
        return count - 1;
      }
    throw InternalError("codegen: the broadcast's reduction kernel " + k.name + " has no offsets_count argument");
  };
  std::vector<std::int64_t> segments;
  for (int op = 0; op < ops; ++op)
    segments.push_back(segments_of(plan.kernels.at(static_cast<std::size_t>(step.kernel + (op + 1) * per_op - 1))));
  std::map<std::string, std::size_t> shared;
  const auto bind = [&](const KernelSpec& k, int op, const LaunchExtents& extents, std::map<std::string, std::size_t>& own) {
    std::vector<std::size_t> at;
    std::size_t j = 0;  // the Scratch argument's position, as KernelSpec::scratch lists them
    for (const Arg& a : k.args) {
      if (a.kind != Arg::Kind::Scratch) continue;
      const std::string key = a.name == "out" ? "seg" + std::to_string(op) : a.name;
      std::size_t offset = 0;
      if (key.size() > 3 && key.rfind("seg", 0) == 0 && std::isdigit(static_cast<unsigned char>(key[3]))) {  // seg<r>: reduction r's results, one per segment of its offsets
        const std::int64_t count = segments.at(static_cast<std::size_t>(std::stoi(key.substr(3))));
        if (!shared.count(key)) shared[key] = allocate_scratch(b, k, j, {0, 0, 0, std::max<std::int64_t>(1, count)});
        offset = shared[key];
      } else {
        if (!own.count(key)) own[key] = allocate_scratch(b, k, j, extents);
        offset = own[key];
      }
      at.push_back(offset);  // the runtime binds Scratch arguments in argument order
      ++j;
    }
    return at;
  };
  for (int op = 0; op < ops; ++op) {
    const std::int64_t segs = segments[static_cast<std::size_t>(op)];
    if (segs == 0) continue;
    const int first = step.kernel + op * per_op, merge_index = first + per_op - 1;
    const KernelSpec& merge = plan.kernels.at(static_cast<std::size_t>(merge_index));
    std::map<std::string, std::size_t> own;
    Launch m{merge_index, n, grid_for(n + segs, merge.items_per_block_step, merge.max_grid), {}};
    const LaunchExtents extents{m.grid, 0, n, segs};
    if (per_op == 2 && n <= kShortSegment * segs) {
      const KernelSpec& s = plan.kernels.at(static_cast<std::size_t>(first));
      Launch l{first, n, grid_for(segs, s.items_per_block_step, s.max_grid), bind(s, op, extents, own)};
      b.launch(std::move(l));
    }
    m.scratch = bind(merge, op, extents, own);
    b.launch(std::move(m));
  }
  if (n <= 0) return;
  const int map_index = step.kernel + step.kernels - 1;
  const KernelSpec& map = plan.kernels.at(static_cast<std::size_t>(map_index));
  Launch l{map_index, n, grid_for(n, map.items_per_block_step, map.max_grid), {}};
  std::map<std::string, std::size_t> own;
  l.scratch = bind(map, -1, {l.grid, 0, n, segments.empty() ? 0 : segments.front()}, own);
  b.launch(std::move(l));
}

}  // namespace fuseflow::codegen
