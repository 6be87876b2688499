// The scratch each kernel of a step uses, as sizes of the launch (ScratchBuffer): the one
// source of what the step's launch pattern (schedule.cpp and beside the strategies)
// allocates for its Scratch arguments (ScratchBuffer::size), and the look-back status it
// binds, said as data so explain can print it and tests can check it without running the
// schedule.
#include <string>

#include "scan_context.hpp"
#include "schedule.hpp"
#include "strategy.hpp"

namespace fuseflow::codegen {

namespace {

using Per = ScratchBuffer::Per;

ScratchBuffer buffer(const Arg& a, std::string role, std::size_t bytes, Per per, std::int64_t divisor = 1) {
  return {a.name, std::move(role), bytes, per, divisor, false};
}

// The look-back status a kernel binds (TileStatus): 8 bytes per 4 bytes of value, per tile
// and per 32 tiles (lookback_status_bytes); not cleared between launches (epochs).
void add_status(const KernelSpec& k, std::size_t value_bytes, std::vector<ScratchBuffer>& out) {
  for (const Arg& a : k.args)
    if (a.kind == Arg::Kind::TileStatus)
      out.push_back(buffer(a, "look-back status, plus an entry per 32 tiles; kept between launches, by epoch",
                           lookback_status_bytes(value_bytes, 1) / 2, Per::Tile));
}

// A Onesweep sort's scratch (strategies/onesweep_kernels.cpp, onesweep_launches); false for
// the three-kernel counting sort's.
bool onesweep_scratch(const KernelSpec& k, const Arg& a, std::vector<ScratchBuffer>& out) {
  bool onesweep = false;
  std::int64_t digits = 1, bins = 0;
  for (const auto& [name, value] : k.tuning) {
    if (name == "digits") digits = value;
    if (name == "bins") bins = value;
    if (name == "portion_tiles" || name == "digits") onesweep = true;
  }
  if (!onesweep) return false;
  const std::size_t size = a.type.size();
  if (a.name == "digit_counts") {
    ScratchBuffer b = buffer(a, "every digit's count of each bin, shared by the passes",
                             size * static_cast<std::size_t>(digits * bins), Per::Fixed);
    b.zeroed = true;
    out.push_back(b);
  } else if (a.name == "lookback") {
    ScratchBuffer b = buffer(a, "look-back: each tile's count of each bin, flagged, shared by the passes", size,
                             Per::BinTile);
    b.zeroed = true;
    out.push_back(b);
  } else if (a.name == "bin_starts") {
    out.push_back(buffer(a, "each bin's start in a portion of the tiles (a row per portion of 2^30 elements)",
                         size * static_cast<std::size_t>(bins), Per::Fixed));
  } else {
    out.push_back(buffer(a, "the keys or values between two passes (two such arrays, used in turn)", size,
                         Per::Element));
  }
  return true;
}

std::vector<ScratchBuffer> describe(const StepSpec& step, const KernelSpec& k, int nth) {
  std::vector<ScratchBuffer> out;
  for (const Arg& a : k.args) {
    if (a.kind != Arg::Kind::Scratch) continue;
    const std::size_t size = a.type.size();
    switch (step.kind) {
      case StepSpec::Kind::OnePass:
        if (step.bins > 0)  // a weighted histogram's per-block sums
          out.push_back(buffer(a, std::to_string(step.bins) + " values per block, for the largest grid (" +
                                      std::to_string(k.max_grid) + ")",
                               size * static_cast<std::size_t>(step.bins) * static_cast<std::size_t>(k.max_grid), Per::Fixed));
        else
          out.push_back(buffer(a, "one value per block, for the largest grid (" + std::to_string(k.max_grid) + ")",
                               size * static_cast<std::size_t>(k.max_grid), Per::Fixed));
        break;
      case StepSpec::Kind::Tree:
        out.push_back(buffer(a, nth == 0 ? "the first level's block partials" : "a level's block partials (per level)",
                             size, Per::Element, k.block));
        break;
      case StepSpec::Kind::Lookback:
        out.push_back(buffer(a, "one fold per tile", size, Per::Tile));
        break;
      case StepSpec::Kind::ReduceThenScan:
        out.push_back(buffer(a, "one block sum per block, shared by the three kernels", step.value_bytes, Per::Block));
        break;
      case StepSpec::Kind::CountingSort:
      case StepSpec::Kind::RadixSort:
        if (onesweep_scratch(k, a, out)) break;
        if (step.kind == StepSpec::Kind::RadixSort) {
          if (a.name == "tile_counts" || a.name == "positions")
            out.push_back(buffer(a, a.name == "tile_counts" ? "each tile's count of each bin, shared by the passes"
                                                            : "each tile's output position of each bin, shared by the passes",
                                 size, Per::BinTile));
          else
            out.push_back(buffer(a, "the keys or values between two passes (two such arrays, used in turn)", size,
                                 Per::Element));
          break;
        }
        out.push_back(buffer(a, a.name == "tile_counts" ? "each tile's count of each bin" : "each tile's output position of each bin",
                             size, Per::BinTile));
        break;
      case StepSpec::Kind::Broadcast:
        if (a.name == "out" || a.name.rfind("seg", 0) == 0) {
          out.push_back(buffer(a, "one result per segment of a reduction, shared by the step's kernels that read or write it",
                               size, Per::Segment));
          break;
        }
        [[fallthrough]];
      case StepSpec::Kind::SegmentedReduce:
        if (a.name == "deferred")
          out.push_back(buffer(a, "one bit per segment the short pass leaves to the merge path", 4, Per::Segment, 32));
        else
          out.push_back(buffer(a, "one carry per block, for the largest grid (" + std::to_string(k.max_grid) + ")",
                               size * static_cast<std::size_t>(k.max_grid), Per::Fixed));
        break;
      case StepSpec::Kind::HistogramSorted:  // the sort's, then the run and bin kernels' (histogram_sorted.cpp)
        if (onesweep_scratch(k, a, out)) break;
        if (histogram_bucketed_scratch(k, a, out)) break;  // histogram_bucketed.cpp's slice and bin kernels
        if (a.name == "runs") {
          ScratchBuffer r = buffer(a, "each bin's run [start, end) of the sorted pairs, shared by the run and bin kernels",
                                   2 * size * static_cast<std::size_t>(step.bins), Per::Fixed);
          r.zeroed = true;
          out.push_back(r);
        } else if (a.name == "piece_sums") {
          out.push_back(buffer(a, "each piece's part of its first run, shared by the run and bin kernels", size,
                               Per::Element, histogram_sorted_piece()));
        } else {
          out.push_back(buffer(a, "the sorted keys or weights the sort's last pass wrote (its keys_out, values_out)",
                               size, Per::Element));
        }
        break;
    }
  }
  if (step.kind == StepSpec::Kind::Lookback) add_status(k, step.value_bytes, out);
  if (step.kind == StepSpec::Kind::CountingSort || step.kind == StepSpec::Kind::RadixSort) add_status(k, sizeof(std::uint64_t), out);
  return out;
}

}  // namespace

std::string to_string(const ScratchBuffer& b) {
  std::string s = b.name + ": " + std::to_string(b.bytes) + " B";
  const std::string d = b.divisor > 1 ? " / " + std::to_string(b.divisor) + ")" : "";
  const std::string open = b.divisor > 1 ? "ceil(" : "";
  switch (b.per) {
    case ScratchBuffer::Per::Fixed: break;
    case ScratchBuffer::Per::Block: s += " x grid"; break;
    case ScratchBuffer::Per::Tile: s += " x tiles"; break;
    case ScratchBuffer::Per::Element: s += " x " + open + "n" + d; break;
    case ScratchBuffer::Per::Segment: s += " x " + open + "segments" + d; break;
    case ScratchBuffer::Per::BinTile: s += " x bins x tiles"; break;
  }
  if (b.zeroed) s += ", zeroed";
  return s + " (" + b.role + ")";
}

std::size_t ScratchBuffer::size(const LaunchExtents& e) const {
  std::int64_t count = 1;
  switch (per) {
    case Per::Fixed: break;
    case Per::Block: count = e.grid; break;
    case Per::Tile: count = e.tiles; break;
    case Per::Element: count = e.elements; break;
    case Per::Segment: count = e.segments; break;
    case Per::BinTile: count = e.bin_tiles; break;
  }
  return bytes * static_cast<std::size_t>((count + divisor - 1) / divisor);
}

void describe_scratch(const StepSpec& step, Plan& plan) {
  for (int i = 0; i < step.kernels; ++i) {
    KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(step.kernel + i));
    k.scratch = describe(step, k, i);
  }
}

}  // namespace fuseflow::codegen
