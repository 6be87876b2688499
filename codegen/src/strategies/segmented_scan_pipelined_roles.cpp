// The functors the roles of the pipelined segmented scans call (segmented_scan_pipelined.hpp):
//  - the producer's call, by offsets with the heads it marks (PipelinedOffsetHeads);
//  - lift(s, e, i, count, v, heads): the values and head bits of tile elements e .. e + 3
//    of stage s, read from the stage as 16-byte quads, one per input; by key a head where
//    key_at changes (the key of the element before the tile is staged beside it); by
//    offsets a head where the producer's bitmask says so, and the identity, as its own
//    head, outside [offsets[0], offsets[count - 1]) (ff::segmented::lift_by_key,
//    lift_by_offsets);
//  - store4 / store1: every output, its epilogue applied to the staged inputs;
//  - reduce_by_key's run_head and last_run.
#include "segmented_scan_pipelined.hpp"

#include "../array_ops.hpp"

namespace fuseflow::codegen {

namespace {

std::string keys_equal_fields(const Type& t, const std::string& a, const std::string& b) {
  if (t.is_scalar()) return a + " == " + b;
  std::string s;
  for (std::size_t f = 0; f < t.fields().size(); ++f) {
    const std::string field = ".f" + std::to_string(f);
    s += (s.empty() ? "" : " && ") + keys_equal_fields(t.fields()[f], a + field, b + field);
  }
  return s;
}

}  // namespace

void PieceKernel::stage_ptrs(SourceWriter& w) const {
  for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j) {
    const std::string in = k.types().name(g.leaves.inputs[j].type());
    w.line("const " + in + "* const stage_" + k.input_name(j) + " = reinterpret_cast<const " + in +
           "*>(ff::segmented::stage_input<kTile, kInputs>(stage_words, s, " + std::to_string(j) + "));");
  }
}

std::string PieceKernel::staged(const std::string& e, const std::string& i) const {
  std::string s;
  for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j) s += "stage_" + k.input_name(j) + "[" + e + "], ";
  return s + i;
}

void emit_piece_heads_functors(SourceWriter& w, const PieceKernel& p) {
  if (p.offsets) {
    emit_offset_at(w, p.k.types(), *p.g.op, p.offsets->leaves, "the producer checks the pairs of neighbours");
    return;
  }
  const std::string key = p.k.types().name(p.g.op->keys.type());
  p.k.emit_map_function(w, "key_at", p.g.op->keys);
  w.line("const auto same_key = [](const " + key + "& a, const " + key + "& b) -> bool { return " +
         keys_equal_fields(p.g.op->keys.type(), "a", "b") + "; };");
}

void emit_piece_producer(SourceWriter& w, const PieceKernel& p) {
  w.open("if (warp == 0)");
  w.comment("Producer: tile ids from the counter, each input's tile copied into the next free stage" +
            std::string(p.offsets ? ", the tile's\nsegment heads marked from the offsets." : "."));
  std::string ins;
  for (std::size_t j = 0; j < p.g.leaves.inputs.size(); ++j)
    ins += std::string(j ? ", " : "") + "reinterpret_cast<const unsigned*>(in_" + p.k.input_name(j) + ")";
  w.line("const unsigned* const in[kInputs] = {" + ins + "};");
  if (p.offsets) {
    w.line("const ff::segmented::PipelinedOffsetHeads<kTile, decltype(offset_at)> heads{offset_at, offsets_count, "
           "offsets_invalid, head_words, n};");
    w.line("ff::segmented::produce_piece_tiles<kTile, kInputs>(pipeline, stage_words, in, n, tiles, tile_counter, heads);");
  } else {
    w.line("ff::segmented::produce_piece_tiles<kTile, kInputs>(pipeline, stage_words, in, n, tiles, tile_counter,");
    w.line("                                                   [](int, long long, long long) {});");
  }
  w.line("return;");
  w.close();
}

void emit_piece_lift(SourceWriter& w, const PieceKernel& p) {
  ScanKernelWriter& k = p.k;
  const std::size_t inputs = p.g.leaves.inputs.size();
  if (p.offsets) {
    w.comment("Elements outside [first, last) belong to no segment: each is a head of the identity.");
    w.line("const long long first = offset_at(0), last = offset_at(offsets_count - 1);");
  }
  w.comment("Tile elements e .. e + 3 of stage s (global index i), the first `count` before n: their values\n"
            "and head bits (the others: the identity, no head).");
  w.open("const auto lift = [&](const int s, const int e, const long long i, const int count, " + k.acc() +
         " (&v)[4], unsigned& heads)");
  p.stage_ptrs(w);
  std::string quad_call;
  for (std::size_t j = 0; j < inputs; ++j) {
    const std::string in = k.types().name(p.g.leaves.inputs[j].type());
    w.line("const ff::Quad<" + in + "> q_" + k.input_name(j) + " = *reinterpret_cast<const ff::Quad<" + in +
           ">*>(stage_" + k.input_name(j) + " + e);");
    quad_call += "q_" + k.input_name(j) + ".e[k], ";
  }
  w.line("const auto value_at = [&](const int k) { return element(" + quad_call + "i + k); };");
  if (p.offsets) {
    w.line("const unsigned bits = head_words[s * (kTile / 32) + e / 32] >> (e % 32) & 0xfu;");
    w.line("heads = ff::segmented::lift_by_offsets(bits, i, count, first, last, identity, value_at, v);");
  } else {
    w.line("const auto key_of = [&](const int k) { return key_at(" + quad_call + "i + k); };");
    w.line("const auto previous = key_at(" + p.staged("e - 1", "i - 1") + ");  // word -1: the element before the tile");
    w.line("heads = ff::segmented::lift_by_key(previous, i, count, identity, value_at, key_of, same_key, v);");
  }
  w.close("};");
}

void emit_piece_scanners(SourceWriter& w, const PieceKernel& p) {
  const KernelContext& g = p.g;
  ScanKernelWriter& k = p.k;
  const std::string t = k.acc();
  w.comment("Scanners: warp 3 + s scans segment s of every tile and stores it, the epilogue applied to\n"
            "each element on the way; four consecutive elements per lane, one 16-byte store where\n"
            "the output is 4-byte and aligned.");
  QuadStores stores;
  bool reads_inputs = false;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const bool scan_itself = g.outputs[j].kind() == ExprKind::Result;
    reads_inputs = reads_inputs || !scan_itself;
    stores.add("out" + std::to_string(g.output_ids[j]), [&](const std::string& k_index, const std::string& plus) {
      return scan_itself ? "scanned" + k_index
                         : "epilogue" + std::to_string(j) + "(scanned" + k_index + ", " + p.staged("e" + plus, "i" + plus) + ")";
    });
  }
  for (const auto& l : stores.quads) w.line(l);
  w.open("const auto store4 = [&](const int s, const int e, const long long i, const " + t + " (&scanned)[4])");
  if (reads_inputs) p.stage_ptrs(w);
  else w.line("(void)s, (void)e;");
  for (const auto& l : stores.four) w.line(l);
  w.close("};");
  w.open("const auto store1 = [&](const int s, const int e, const long long i, const " + t + " scanned)");
  if (reads_inputs) p.stage_ptrs(w);
  else w.line("(void)s, (void)e;");
  for (const auto& l : stores.one) w.line(l);
  w.close("};");
  w.line(std::string("ff::segmented::scan_piece_tiles<kTile, ") + (k.inclusive() ? "true" : "false") +
         ">(pipeline, warp - 3, n, lift, combine, identity, store4, store1);");
}

// Outputs: keys (result index 0) and values (index 1).
void emit_piece_run_writers(SourceWriter& w, const PieceKernel& p) {
  const KernelContext& g = p.g;
  const std::string t = p.k.acc();
  w.comment("Writers: warp 3 + s takes segment s of every tile. A head starts run `run`: its key, and\n"
            "the value of the run before it.");
  w.open("const auto run_head = [&](const int s, const int e, const long long i, const long long run, const " + t +
         "& previous)");
  bool keys = false;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) keys = keys || g.outputs[j].node().index == 0;
  if (keys) p.stage_ptrs(w);
  else w.line("(void)s, (void)e, (void)i;");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string out = "out" + std::to_string(g.output_ids[j]);
    if (g.outputs[j].node().index == 0) w.line(out + "[run] = key_at(" + p.staged("e", "i") + ");");
    else w.line("if (run > 0) " + out + "[run - 1] = previous;");
  }
  w.close("};");
  w.comment("Element n - 1: the last run's value and the number of runs.");
  w.open("const auto last_run = [&](const long long runs, const " + t + "& value)");
  bool values = false;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) values = values || g.outputs[j].node().index == 1;
  if (!values) w.line("(void)value;");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string id = std::to_string(g.output_ids[j]);
    if (g.outputs[j].node().index == 1) w.line("out" + id + "[runs - 1] = value;");
    w.line("*count" + id + " = runs;");
  }
  w.close("};");
  w.line("ff::segmented::run_piece_tiles<kTile>(pipeline, warp - 3, n, lift, combine, identity, run_head, last_run);");
}

}  // namespace fuseflow::codegen
