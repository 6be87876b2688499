// Segmented reduce by offsets (CSR), any monoid: "merge path" (load-balanced).
//
// Why one strategy: the segment lengths are only known on the device, at run time, and
// the three shapes that matter (one huge segment, random lengths 10..50, millions of
// segments of 3) want different thread/warp/block-per-segment kernels, each of which is
// slow on one of the others. Splitting the merge of segment ends and elements evenly
// (ff::segmented::reduce_by_offsets in <fuseflow/segmented.cuh>) costs the same per item
// for every shape, empty segments included: one pass over the elements and the offsets,
// one write per segment, no second kernel. A block owns a contiguous range of tiles and
// carries the open segment from tile to tile in order; the last block completes the
// segments that cross block boundaries. Order is preserved throughout, so non-commutative
// monoids (maximum segment sum) are exact, and floats give the same bits on every run.
//
// Where the time goes, and what keeps it down: the next tile is loaded into registers
// while the current one is reduced (a block always has a tile's loads in flight); a tile
// with no segment end (inside a long segment) is read with 16-byte vector loads straight
// into registers and never staged; other tiles stage ends and values in padded
// (conflict-free) shared memory, mark where segments start with a bit per element, and
// each thread folds its consecutive elements with no branch per element; threads join
// their partial segments with a ballot plus one shuffle per step (no 64-bit segment ids),
// and one thread per segment end reads its segment's value and writes it, coalesced.
// Tiles of 256 x 16 items for 4-byte values.
#include <algorithm>

#include "../array_ops.hpp"
#include "../tile_override.hpp"

namespace fuseflow::codegen {

// Static shared memory of a tile: per item one 4-byte end and one value (padded by one
// slot in 32), a head byte per item (as words, plus 4), and per thread its tile_segment,
// open value and first head.
std::size_t segmented_shared_bytes(const SegmentedTuning& s, const Type& acc) {
  const std::size_t tile = static_cast<std::size_t>(s.tile()), block = static_cast<std::size_t>(s.block);
  return (tile + tile / 32) * (4 + acc.size()) + ((tile + 3) / 4 + 4) * 4 + block * (8 + acc.size() + 1) +
         (block / 32) * (4 + acc.size() + 8 + acc.size());
}

SegmentedTuning segmented_tuning(const Type& acc) {
  SegmentedTuning s;
  TileOverride o;
  if (tile_override("FUSEFLOW_SEGMENTED_TILE", 16, o)) {
    s.block = o.block;
    s.items = o.items;
    s.min_blocks = o.min_blocks;
    if (segmented_shared_bytes(s, acc) > 48 * 1024)
      throw GraphError("FUSEFLOW_SEGMENTED_TILE: " + std::to_string(s.block) + " x " + std::to_string(s.items) +
                       " items of " + std::to_string(acc.size()) + "-byte values need " +
                       std::to_string(segmented_shared_bytes(s, acc)) + " bytes of shared memory, over 48 KB");
    return s;
  }
  // As many items per thread as fit in 46 KB of static shared memory (under the 48 KB
  // limit), at most 16, a multiple of 4 where possible (tiles with no segment end load
  // 4-element vectors). Measured on the H100 at 2^28 (bench/RESULTS.md, the
  // FUSEFLOW_SEGMENTED_TILE sweep): 256 x 16 beat 256 x 12 by 8% on segments of 10..50
  // and 4% on segments of 3; more resident blocks (smaller tiles) did not help.
  s.items = 16;
  while (s.items > 1 && segmented_shared_bytes(s, acc) > 46 * 1024) s.items -= s.items > 4 ? 4 : 1;
  return s;
}

Kernel emit_segmented_reduce(const std::shared_ptr<const OpNode>& node, const ReduceGroup& leaves, const ReduceGroup& offsets, int offsets_domain,
                             int output, int check, const Target& t) {
  const OpNode& op = *node;
  ReduceGroup g = leaves;
  g.reduces = {FusedReduce{node, op.values, Expr(), -1}};
  const Type& acc = op.monoid.type();
  const std::string name = "ff_segmented_reduce_" + short_type_name(acc) + "_" + sanitize(op.monoid.name());
  ReduceKernelWriter k(g, name, ReduceKernelWriter::Partials::None);
  const SegmentedTuning tuning = segmented_tuning(acc);
  // Tiles holding no segment end load vectors (1: they are staged like the others).
  const int vec = vector_load_width(leaves);
  const bool vector_tiles = vec > 1 && tuning.items % vec == 0;
  const std::size_t smem = segmented_shared_bytes(tuning, acc);
  // Resident blocks per SM: by threads, by shared memory, and at most 4 so that each
  // thread may hold the next tile in registers (64 registers at 4 x 256 threads).
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int blocks_per_sm = tuning.min_blocks > 0 ? tuning.min_blocks
                                                 : std::max(1, std::min({t.max_threads_per_sm / tuning.block, by_smem, 4}));
  const int max_grid = t.sm_count * blocks_per_sm;

  CudaTypes& types = k.types();
  const std::string acc_name = k.acc();
  std::vector<Arg> args;
  for (std::size_t j = 0; j < leaves.inputs.size(); ++j)
    args.push_back({Arg::Kind::Input, leaves.input_ids[j], "in_" + k.input_name(j), leaves.inputs[j].type()});
  args.push_back({Arg::Kind::Length, 0, "n", ScalarType::I64});
  for (const Arg& a : offsets_args(offsets, offsets_domain)) args.push_back(a);
  for (std::size_t j = 0; j < leaves.params.size(); ++j)
    args.push_back({Arg::Kind::Param, leaves.param_ids[j], "p_" + sanitize(leaves.params[j].node().name),
                    leaves.params[j].type()});
  for (int s : leaves.scalars_read)
    args.push_back({Arg::Kind::Scalar, s, "s" + std::to_string(s), leaves.slot_types[static_cast<std::size_t>(s)]});
  args.push_back({Arg::Kind::Output, output, "out", acc});
  args.push_back({Arg::Kind::Scratch, 0, "carry_segment", ScalarType::I64});
  args.push_back({Arg::Kind::Scratch, 1, "carry_value", acc});
  args.push_back({Arg::Kind::Scratch, 2, "head_value", acc});
  args.push_back({Arg::Kind::Ticket, 0, "ticket", ScalarType::U32});
  args.push_back({Arg::Kind::InvalidFlag, check, "offsets_invalid", ScalarType::U32});

  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(tuning.block) + ";");
  w.line("constexpr int kItems = " + std::to_string(tuning.items) + ";  // merge items (elements + segment ends) per thread per tile");
  w.line("constexpr int kVec = " + std::to_string(vec) + ";  // elements per vector load in tiles with no segment end");
  w.line("constexpr int kMinBlocks = " + std::to_string(blocks_per_sm) + ";  // resident blocks per SM (the grid is sized for them)");
  w.line("}  // namespace");
  w.line();
  w.line("extern \"C\" __global__ void __launch_bounds__(kBlock, kMinBlocks) " + name + "(");
  emit_kernel_parameters(w, types, args);
  k.emit_functions(w);
  // offset_at(s): offsets[s] (any integral map of the offsets' inputs), clamped to [0, n].
  emit_offset_at(w, types, op, offsets, "reduce_by_offsets flags decreasing ones");
  std::vector<std::string> loads, vector_loads, misaligned;
  for (std::size_t j = 0; j < leaves.inputs.size(); ++j) {
    loads.push_back("in_" + k.input_name(j) + "[i]");
    vector_loads.push_back(k.input_name(j) + "_v.v[k]");
    misaligned.push_back("ff::misalignment<kVec>(in_" + k.input_name(j) + ")");
  }
  w.line("const auto value_at = [&](const long long i) -> " + acc_name + " { return " + k.element_call(loads, "i") + "; };");
  w.comment(vector_tiles ? "A tile holding no segment end is read with vector loads straight into registers, when every\n"
                           "input is aligned to a whole vector (otherwise it is staged like the others)."
                         : "Vector loads would not fit the tile layout (kItems % kVec != 0, or tuple inputs): every tile is\n"
                           "staged.");
  std::string aligned;
  for (std::size_t j = 0; j < misaligned.size(); ++j) aligned += (j ? " | " : "") + misaligned[j];
  w.line("const bool vectors_aligned = " + (aligned.empty() ? std::string("true") : "(" + aligned + ") == 0") + ";");
  w.open("const auto vector_at = [&](const long long i, " + acc_name + "* v)");
  for (std::size_t j = 0; j < leaves.inputs.size(); ++j)
    w.line("const ff::Vec<" + types.name(leaves.inputs[j].type()) + ", kVec> " + k.input_name(j) + "_v = ff::load_vec<kVec>(in_" +
           k.input_name(j) + " + i);");
  w.line("#pragma unroll");
  w.line("for (int k = 0; k < kVec; ++k) v[k] = " + k.element_call(vector_loads, "i + k") + ";");
  w.close("};");
  w.line("ff::segmented::reduce_by_offsets<kBlock, kItems, kVec>(offsets_count - 1, value_at, vector_at, vectors_aligned, offset_at,");
  w.line("                                                       combine, identity, out, carry_segment, carry_value, head_value,");
  w.line("                                                       ticket, offsets_invalid);");
  w.close();

  Kernel out;
  out.name = name;
  out.block = tuning.block;
  out.max_grid = max_grid;
  out.items_per_block_step = tuning.tile();
  out.args = args;
  out.summary = "segmented reduce, merge path (load-balanced): block " + std::to_string(tuning.block) + ", " +
                std::to_string(tuning.items) + " items per thread, tiles of " + std::to_string(tuning.tile()) +
                " items (elements + segment ends), " + std::to_string(smem) + " bytes of shared memory, " +
                (vector_tiles ? std::to_string(vec) + "-element vector loads in tiles with no segment end"
                              : std::string("every tile staged")) +
                ", the next tile prefetched into registers, grid <= " +
                std::to_string(max_grid) + " (" + std::to_string(blocks_per_sm) + " x " + std::to_string(t.sm_count) +
                " SMs), each block a contiguous range of tiles";
  out.why = "segment lengths are known only on the device: splitting elements and segment ends evenly is fast for "
            "one huge segment, random lengths and millions of tiny or empty segments alike, and keeps element order" +
            std::string(op.monoid.is_commutative() ? "" : " (the monoid is non-commutative)");
  SourceWriter head;
  head.line("// fuseflow kernel " + name);
  head.line("//");
  head.comment(g.program_text);
  head.line("//");
  head.comment("strategy: " + out.summary +
               "\nOffsets are clamped to [0, n], so bad ones never read or write out of bounds; one outside [0, n] or "
               "below its predecessor sets offsets_invalid, which run() reports as an error. An empty segment gives the "
               "identity.");
  head.line("#include <fuseflow/collectives.cuh>");
  head.line("#include <fuseflow/segmented.cuh>");
  head.line();
  std::string defs = types.definitions();
  out.source = head.str() + (defs.empty() ? "" : defs + "\n") + w.str();
  return out;
}

}  // namespace fuseflow::codegen
