// Element-wise arrays with neighbours (ff::shift): the stencil map. `x - shift(x, -1, 0)`
// at copy speed, and stencils of several shifts reading x once per warp step: each warp
// step holds kUnroll chunks of 32 16-byte vectors per input (one per lane, all loaded
// before any use) and the few halo lanes before and after them that the shifts reach, so
// neighbours come from registers and warp shuffles; shifts of 32 vectors or more read the
// cache. The algorithm is ff::stencil::map (<fuseflow/stencil.cuh>); this file sizes the
// halo of each input and writes the fused expressions of one element, for the vector path
// and for the element-wise loop that misaligned pointers take.
//
// Applies when an array output reads a shift, and every input and output is a scalar of
// one size, 4 or 8 bytes (one vector width fits all of them, and shuffles move words).
// Other maps keep the plain map kernel.
#include <algorithm>
#include <functional>
#include <set>

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

namespace {

// Whether e has a node for which `is` holds.
template <typename Pred>
bool reads(const Expr& e, const Pred& is, std::set<const ExprNode*>& seen) {
  if (!seen.insert(e.get()).second) return false;
  if (is(e)) return true;
  for (const Expr& a : e.args())
    if (reads(a, is, seen)) return true;
  return false;
}

// Elements per thread (16 bytes of the one element size of every input and output), or 0
// with `why_not`.
int stencil_width(const KernelContext& g, std::string& why_not) {
  const auto is_shift = [](const Expr& e) { return e.kind() == ExprKind::Shift; };
  // The tail's vector evaluates its elements past n too (the warp's shuffles need every
  // lane), where a checked gather would flag an index that no element of [0, n) reads.
  const auto is_checked_gather = [](const Expr& e) { return e.kind() == ExprKind::Gather && e.node().index == 0; };
  std::set<const ExprNode*> seen_shift, seen_gather;
  bool shifts = false, checked_gathers = false;
  for (const Expr& o : g.outputs) {
    shifts = reads(o, is_shift, seen_shift) || shifts;
    checked_gathers = reads(o, is_checked_gather, seen_gather) || checked_gathers;
  }
  if (!shifts) {
    why_not = "no output reads a shift";
    return 0;
  }
  if (checked_gathers) {
    why_not = "an output reads a checked gather, which elements past the end would trip";
    return 0;
  }
  std::size_t size = 0;
  std::vector<Type> types;
  for (const Expr& in : g.leaves.inputs) types.push_back(in.type());
  for (const Expr& o : g.outputs) types.push_back(o.type());
  for (const Type& t : types) {
    if (!t.is_scalar() || (size != 0 && t.size() != size)) {
      why_not = "its inputs and outputs are not scalars of one size (" + to_string(t) + ")";
      return 0;
    }
    size = t.size();
  }
  if (size < 4) {  // warp shuffles move whole 32-bit words
    why_not = "its elements are narrower than the 4 bytes of a warp shuffle";
    return 0;
  }
  return static_cast<int>(shared::kStencilVectorBytes / size);
}

// The vector path's read of a shift's neighbour (ExprEmitter::on_shift): the device
// library's ff::stencil::shifted, from registers and warp shuffles (<fuseflow/stencil.cuh>).
struct NeighbourReader {
  const KernelContext& g;
  const std::vector<std::string>& windows;  // input j's ff::stencil::Input

  std::string operator()(const ExprNode& n, const std::string& fill) const {
    std::size_t in = 0;
    while (in < g.leaves.inputs.size() && !same_node(g.leaves.inputs[in], n.args[0])) ++in;
    if (in == g.leaves.inputs.size())  // a shifted array is read element by element too (table_free_args)
      throw InternalError("codegen: the stencil map's shifted array is not among its inputs");
    return "ff::stencil::shifted<" + std::to_string(n.index) + ">(" + windows[in] + ", e, u, i, " + fill + ")";
  }
};

// The lanes of the chunk before (first) and after (second) the step whose vectors input
// `in`'s shifts reach from inside the warp: the halo each step loads.
std::pair<int, int> halo_lanes(const KernelContext& g, const Expr& in, int vec) {
  int before = 0, after = 0;
  std::set<const ExprNode*> seen;
  const std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (!seen.insert(e.get()).second) return;
    if (e.kind() == ExprKind::Shift && same_node(e.args()[0], in))
      for (int element = 0; element < vec; ++element) {
        const long long d = shared::stencil_lanes_away(element, e.node().index, vec);
        if (d < 0 && d > -shared::kStencilShuffleLanes) before = std::max(before, static_cast<int>(-d));
        if (d > 0 && d < shared::kStencilShuffleLanes) after = std::max(after, static_cast<int>(d));
      }
    for (const Expr& a : e.args()) walk(a);
  };
  for (const Expr& o : g.outputs) walk(o);
  return {before, after};
}

// `const auto vector_element = [&](auto e, const int u, const long long i) { ... };`: the
// outputs' element e of chunk u (ff::stencil::map's Element<e>), and scalar_element(i),
// the same element by element for misaligned pointers (shifts read through the cache).
void emit_elements(SourceWriter& w, CudaTypes& types, const KernelContext& g, const std::vector<std::string>& in_names,
                   const std::vector<std::string>& windows) {
  w.comment("Element e of the thread's vectors of chunk u (index i): neighbours from registers and shuffles.");
  w.open("const auto vector_element = [&](auto e, const int u, const long long i)");
  std::vector<std::string> elements;
  for (const auto& v : windows) elements.push_back(v + ".at(e, u)");
  ExprEmitter em(w, types, [&](const Expr& leaf) { return elementwise_leaf(g, elements, leaf, "a map"); });
  em.on_shift(NeighbourReader{g, windows});
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line("y" + std::to_string(g.output_ids[j]) + ".set(e, " + em.emit(g.outputs[j]) + ");");
  w.close("};");
  w.comment("Misaligned pointers: element by element, the shifts read through the cache.");
  w.open("const auto scalar_element = [&](const long long i)");
  std::vector<std::string> loads;
  for (const auto& n : in_names) loads.push_back("in_" + n + "[i]");
  ExprEmitter e(w, types, [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a map"); });
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line("out" + std::to_string(g.output_ids[j]) + "[i] = " + e.emit(g.outputs[j]) + ";");
  w.close("};");
}

KernelSpec emit_map_stencil(const KernelContext& g, int vec) {
  const Target& t = g.target();
  const int kBlock = g.policies().map.block;
  const int blocks_per_sm = t.max_threads_per_sm / kBlock;
  // Vectors in flight per input per thread: 4 (64 bytes) for one input, 2 for more. One
  // input, one output and one shift by 1 of 4-byte elements (x - shift(x, -1, 0)): 8, at 4
  // blocks per SM (62 registers, no spill; 4 vectors took 45 registers, 5 blocks): 128 KB
  // in flight per SM instead of 80, where the H100 profile showed it latency-bound (0.29
  // eligible warps a cycle at 84% of DRAM). Other stencils spill at 64 registers (ptxas:
  // shifts by 2, 3, -5 or -200, a 3-point stencil).
  std::set<const ExprNode*> shifts;
  const std::function<void(const Expr&)> count_shifts = [&](const Expr& e) {
    if (e.kind() == ExprKind::Shift) shifts.insert(e.get());
    for (const Expr& a : e.args()) count_shifts(a);
  };
  for (const Expr& o : g.outputs) count_shifts(o);
  const bool one_shift = g.leaves.inputs.size() == 1 && g.outputs.size() == 1 && shifts.size() == 1 && vec == 4 &&
                         ((*shifts.begin())->index == 1 || (*shifts.begin())->index == -1);
  const int unroll = one_shift ? 8 : g.leaves.inputs.size() <= 1 ? 4 : 2;
  const int min_blocks = one_shift ? 4 : 0;
  CudaTypes types;
  std::vector<std::string> in_names;
  std::vector<Arg> args = elementwise_args(g, in_names);
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    args.push_back({Arg::Kind::Output, g.output_ids[j], "out" + std::to_string(g.output_ids[j]), g.outputs[j].type()});
  std::string name = "ff_map_stencil";
  for (const auto& o : g.outputs) name += "_" + short_type_name(o.type());

  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kBlock) + ";",
                     "constexpr int kVec = " + std::to_string(vec) + ";  // elements per 16-byte vector",
                     "constexpr int kUnroll = " + std::to_string(unroll) +
                         ";  // vectors per input a thread loads per step, all before any use"});
  open_elementwise_kernel(w, types, name, kBlock, args, g, min_blocks);
  std::vector<std::string> windows;
  std::string streams;
  for (std::size_t j = 0; j < in_names.size(); ++j) {
    const Expr& in = g.leaves.inputs[j];
    const auto [before, after] = halo_lanes(g, in, vec);
    const bool table = std::any_of(g.leaves.tables.begin(), g.leaves.tables.end(),
                                   [&](const Expr& table_of) { return same_node(table_of, in); });
    windows.push_back("x_" + in_names[j]);
    streams += ", " + windows.back();
    w.comment(in_names[j] + ": a thread's vectors of a step and the halo lanes its shifts reach (" +
              std::to_string(before) + " before, " + std::to_string(after) + " after)");
    w.line("ff::stencil::Input<" + types.name(in.type()) + ", kVec, kUnroll, " + std::to_string(before) + ", " +
           std::to_string(after) + "> " + windows.back() + "{in_" + in_names[j] +
           (table ? ", " + table_name(in) + ", " + table_name(in) + "_n" : "") + "};");
  }
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string o = std::to_string(g.output_ids[j]);
    w.line("ff::stencil::Output<" + types.name(g.outputs[j].type()) + ", kVec> y" + o + "{out" + o + "};");
    streams += ", y" + o;
  }
  emit_elements(w, types, g, in_names, windows);
  w.line("ff::stencil::map<kBlock, kVec, kUnroll>(n, vector_element, scalar_element" + streams + ");");
  w.close();

  KernelSpec k;
  k.name = name;
  k.strategy = Strategy::Automatic;
  k.block = kBlock;
  k.max_grid = t.sm_count * blocks_per_sm;
  k.items_per_block_step = kBlock * vec * unroll;
  k.tuning = {{"block", kBlock}, {"vec", vec}, {"unroll", unroll}, {"min_blocks", min_blocks}};
  k.args = args;
  k.summary = "stencil map: block " + std::to_string(kBlock) + ", " + std::to_string(unroll) + " x " +
              std::to_string(vec) + " elements per thread per step (16-byte vectors, all loaded before any use, "
              "streaming stores), warp-uniform grid-strided steps, grid <= " + std::to_string(k.max_grid);
  k.why = "an output reads a neighbour (shift): each warp holds chunks of 32 vectors of consecutive elements and the "
          "few halo lanes around them, so neighbours come from registers and shuffles, and x is read once";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {"stencil.cuh"}, types, w.str());
  return k;
}

}  // namespace

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class MapStencil final : public OnePassStrategy {
 public:
  MapStencil() : OnePassStrategy("map stencil", "map") {}
  Applies applies(const KernelContext& g) const override {
    std::string why_not;
    if (stencil_width(g, why_not) < 2) return {false, why_not};
    return {true, "an output reads a shift: neighbours from registers and warp shuffles, vector loads and stores"};
  }
  TuningValues tuning(const Policies& p) const override { return {{"block", p.map.block}}; }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    std::string why_not;
    return {emit_map_stencil(g, stencil_width(g, why_not))};
  }
};

}  // namespace

const RegisteredStrategy& map_stencil_strategy() {
  static const MapStencil s;
  return s;
}

}  // namespace fuseflow::codegen
