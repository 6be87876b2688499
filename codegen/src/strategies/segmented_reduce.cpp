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
#include <algorithm>

#include "../array_ops.hpp"

namespace fuseflow::codegen {

SegmentedTuning segmented_tuning(const Type& acc) {
  // A tile stages one 4-byte end and one value per item: at most 24 KB of shared memory,
  // so eight blocks of 256 threads fit on an SM.
  SegmentedTuning s;
  const std::size_t per_item = 4 + acc.size();
  s.items = static_cast<int>(std::clamp<std::size_t>(24 * 1024 / (static_cast<std::size_t>(s.block) * per_item), 1, 8));
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
  const std::size_t smem = static_cast<std::size_t>(tuning.tile()) * (4 + acc.size()) +
                           static_cast<std::size_t>(tuning.block) * 8 + (tuning.block / 32) * (8 + acc.size());
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int blocks_per_sm = std::max(1, std::min(t.max_threads_per_sm / tuning.block, by_smem));
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
  w.line("}  // namespace");
  w.line();
  w.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(tuning.block) + ") " + name + "(");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    std::string decl;
    switch (a.kind) {
      case Arg::Kind::Input:
      case Arg::Kind::Scalar: decl = "const " + types.name(a.type) + "* __restrict__ " + a.name; break;
      case Arg::Kind::Length: decl = "const long long " + a.name; break;
      case Arg::Kind::Param: decl = "const " + types.name(a.type) + " " + a.name; break;
      case Arg::Kind::Ticket:
      case Arg::Kind::InvalidFlag: decl = "unsigned int* __restrict__ " + a.name; break;
      default: decl = types.name(a.type) + "* __restrict__ " + a.name; break;
    }
    w.line("    " + decl + (i + 1 < args.size() ? "," : ") {"));
  }
  w.indent();
  k.emit_functions(w);
  // offset_at(s): offsets[s] (any integral map of the offsets' inputs), clamped to [0, n].
  emit_offset_at(w, types, op, offsets, "reduce_by_offsets flags decreasing ones");
  std::vector<std::string> loads;
  for (std::size_t j = 0; j < leaves.inputs.size(); ++j) loads.push_back("in_" + k.input_name(j) + "[i]");
  w.line("const auto value_at = [&](const long long i) -> " + acc_name + " { return " + k.element_call(loads, "i") + "; };");
  w.line("ff::segmented::reduce_by_offsets<kBlock, kItems>(offsets_count - 1, value_at, offset_at, combine, identity, out,");
  w.line("                                                 carry_segment, carry_value, head_value, ticket, offsets_invalid);");
  w.close();

  Kernel out;
  out.name = name;
  out.block = tuning.block;
  out.max_grid = max_grid;
  out.items_per_block_step = tuning.tile();
  out.args = args;
  out.summary = "segmented reduce, merge path (load-balanced): block " + std::to_string(tuning.block) + ", " +
                std::to_string(tuning.items) + " items per thread, tiles of " + std::to_string(tuning.tile()) +
                " items (elements + segment ends), " + std::to_string(smem) + " bytes of shared memory, grid <= " +
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
