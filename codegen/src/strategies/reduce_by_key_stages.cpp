// Where reduce_by_key's two-phase scatter (segmented_scan.cuh, reduce_by_key_tile) puts a
// tile's runs: the keys over input stages the key does not read (the tile's elements are
// in registers by then), the values over stages clear of the keys once every key is read.
// Both stay inside the tile's input stages, so staging costs no shared memory and no
// occupancy (bench/RESULTS.md, seventeenth run: an array of their own for the keys took
// every shape from 6 to 5 blocks per SM, and the long-run shapes lost 6-7%). Where the key
// reads every stage, the keys get an array of their own and the values go over the stages,
// within the scan policy's stage bytes (static shared memory under 48 KB).
#include <set>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

namespace {

// Whether `e` reads `input` anywhere in it (conservative for the stages its key reads).
bool reads(const Expr& e, const Expr& input, std::set<const ExprNode*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return false;
  if (same_node(e, input)) return true;
  for (const auto& a : e.args())
    if (reads(a, input, seen)) return true;
  return false;
}

}  // namespace

std::optional<RunStages> reduce_by_key_run_stages(const KernelContext& g, const ScanTiling& t,
                                                  const std::vector<std::string>& input_names) {
  const auto& inputs = g.leaves.inputs;
  const std::size_t tile = static_cast<std::size_t>(t.tile());
  const std::size_t slots = static_cast<std::size_t>(shared::stage_slots(t.tile()));
  const std::size_t key_bytes = g.op->keys.type().size() * tile, value_bytes = g.op->monoid.type().size() * tile;
  // The stages as the kernel lays them out (scan_tile.cuh, stage_bytes): one after another,
  // each rounded up to 16 bytes; stage j is [offset[j], offset[j + 1]).
  std::vector<std::size_t> offset(inputs.size() + 1, 0);
  std::vector<bool> read(inputs.size());
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    offset[j + 1] = offset[j] + (slots * inputs[j].type().size() + 15) / 16 * 16;
    std::set<const ExprNode*> seen;
    read[j] = reads(g.op->keys, inputs[j], seen);
  }
  const std::size_t total = offset.back();
  // [at, at + bytes) lies inside the stages and overlaps none the key reads.
  const auto clear_of_keys = [&](std::size_t at, std::size_t bytes) {
    for (std::size_t j = 0; j < inputs.size(); ++j)
      if (read[j] && offset[j] < at + bytes && at < offset[j + 1]) return false;
    return at + bytes <= total;
  };
  // The first stage the keys may start at, then the first the values may start at.
  for (std::size_t kj = 0; kj < inputs.size(); ++kj) {
    if (!clear_of_keys(offset[kj], key_bytes)) continue;
    const std::size_t key_end = offset[kj] + key_bytes;
    for (std::size_t vj = 0; vj < inputs.size(); ++vj) {
      const std::size_t at = offset[vj];
      if (at + value_bytes <= total && (at + value_bytes <= offset[kj] || at >= key_end))
        return RunStages{"kStage_" + input_names[kj], "kStage_" + input_names[vj],
                         "its run keys over the stage of " + input_names[kj] +
                             " (the key does not read it), then its run values over the stage of " + input_names[vj]};
    }
  }
  std::size_t in_bytes = 0;
  for (const auto& in : inputs) in_bytes += in.type().size();
  if (g.op->monoid.type().size() <= in_bytes &&
      (in_bytes + g.op->keys.type().size()) * slots <= g.policies().scan.max_stage_bytes)
    return RunStages{"ff::segmented::kRunKeysOwnArray", "0",
                     "its run keys in an array of their own (the key reads every stage), then its run values over "
                     "the input stages"};
  return std::nullopt;
}

}  // namespace fuseflow::codegen
