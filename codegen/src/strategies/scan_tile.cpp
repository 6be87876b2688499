// The fused functors of a tiled scan kernel (scan_tile.cuh's templates take them): the
// tile constants and input-stage layout, load / staged_element / store over the stages,
// and the one call of the template.
#include "../scan_context.hpp"

namespace fuseflow::codegen {

void ScanKernelWriter::emit_tile_constants(SourceWriter& w) {
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(tiling_.block) + ";");
  if (tiling_.min_blocks > 0)
    w.line("constexpr int kMinBlocks = " + std::to_string(tiling_.min_blocks) + ";  // resident blocks per SM to fit");
  w.line("constexpr int kItems = " + std::to_string(tiling_.items) + ";  // consecutive elements per thread");
  w.line("constexpr int kTile = kBlock * kItems;");
  w.line(std::string("constexpr bool kInclusive = ") + (inclusive() ? "true" : "false") + ";");
  w.comment("The input stages in shared memory, one after another, each on a 16-byte boundary:\n"
            "byte offsets into the tile's input-stage memory (tile element s at slot ff::tile_slot(s)).");
  std::string offset = "0";
  for (std::size_t j = 0; j < input_names_.size(); ++j) {
    const std::string stage = "kStage_" + input_names_[j];
    w.line("constexpr int " + stage + " = " + offset + ";");
    offset = stage + " + ff::stage_bytes<" + types_.name(g_.leaves.inputs[j].type()) + ">(kTile)";
  }
  w.line("constexpr int kInputStageBytes = " + offset + ";");
  w.line("}  // namespace");
  w.line();
}

std::string ScanKernelWriter::staged_call(const std::string& slot, const std::string& index) {
  std::string s;
  for (std::size_t j = 0; j < input_names_.size(); ++j)
    s += "ff::stage<" + types_.name(g_.leaves.inputs[j].type()) + ">(stages, kStage_" + input_names_[j] + ")[" + slot +
         "], ";
  return s + index;
}

void ScanKernelWriter::emit_tile_functors(SourceWriter& w, bool stores) {
  w.comment("The tile's functors over its input stages (`stages`, laid out by the kStage_ offsets).");
  w.open("const auto load = [&](unsigned char* stages, const int slot, const long long i)");
  for (std::size_t j = 0; j < input_names_.size(); ++j)
    w.line("ff::stage<" + types_.name(g_.leaves.inputs[j].type()) + ">(stages, kStage_" + input_names_[j] +
           ")[slot] = in_" + input_names_[j] + "[i];");
  w.close("};");
  w.open("const auto staged_element = [&](unsigned char* stages, const int slot, const long long i) -> " + acc());
  w.line("return element(" + staged_call("slot", "i") + ");");
  w.close("};");
  if (!stores) return;
  if (compacts_survivors(g_)) {
    emit_survivor_store(w);
    return;
  }
  w.comment(g_.outputs.empty() ? "No array outputs: the scan feeds the reductions folded after it."
                                : "Each output's element i: the scan itself, or its epilogue.");
  w.open("const auto store = [&](unsigned char* stages, const " + acc() +
         "* scanned, const int slot, const long long i)");
  for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
    const std::string out = "out" + std::to_string(g_.output_ids[j]) + "[i] = ";
    if (g_.outputs[j].kind() == ExprKind::Result) w.line(out + "scanned[slot];");
    else w.line(out + "epilogue" + std::to_string(j) + "(scanned[slot], " + staged_call("slot", "i") + ");");
  }
  w.close("};");
}

// A scan of a filter's result: element i's scan is (the survivors' scan, the survivors up
// to i), inclusive or exclusive as asked. A survivor's goes to its position among the
// survivors, the count before it; element n - 1 writes the count (the outputs' lengths).
void ScanKernelWriter::emit_survivor_store(SourceWriter& w) {
  w.comment("A survivor's scan is stored at its position among the survivors (those before it);\n"
            "element n - 1 writes the number of survivors, each output's length.");
  w.open("const auto store = [&](unsigned char* stages, const " + acc() +
         "* scanned, const int slot, const long long i)");
  w.line("const " + acc() + " pair = scanned[slot];");
  w.line("const bool kept = keep(" + staged_call("slot", "i") + ");");
  w.line("const unsigned long long before = pair.f1 - (kInclusive && kept ? 1 : 0);");
  w.open("if (kept)");
  for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
    const std::string out = "out" + std::to_string(g_.output_ids[j]) + "[before] = ";
    if (stores_scan_itself(g_, g_.outputs[j])) w.line(out + "pair.f0;");
    else w.line(out + "epilogue" + std::to_string(j) + "(pair, " + staged_call("slot", "i") + ");");
  }
  w.close();
  w.open("if (i == n - 1)");
  for (std::size_t j = 0; j < g_.outputs.size(); ++j)
    w.line("*out" + std::to_string(g_.output_ids[j]) + "_count = before + (kept ? 1 : 0);");
  w.close();
  w.close("};");
}

}  // namespace fuseflow::codegen
