// Element-wise arrays with neighbours (ff::shift): the stencil map. `x - shift(x, -1, 0)`
// at copy speed, and stencils of several shifts reading x once per warp step. Each warp
// step is kUnroll chunks of 32 * kVec consecutive elements, lane l holding the kVec
// elements of vector l of each chunk: kUnroll 16-byte loads per input per thread, all
// issued before any is used (enough bytes in flight to cover the memory's latency), and
// the few lanes of the chunks before and after the step that the shifts reach (the halo).
// A shift's neighbour x[i + k] is then in this thread's registers, or in another lane's
// (a warp shuffle of this chunk's vector, or of the chunk before or after): no memory read
// at the warp's edges. Shifts of 32 vectors or more read memory (the cache); the fill
// outside [0, n). Outputs are 16-byte streaming stores. Pointers not aligned to 16 bytes
// take the element-wise loop of the plain map instead.
//
// Applies when an array output reads a shift, and every input and output is a scalar of
// one size, 4 or 8 bytes (one vector width fits all of them, and shuffles move words). Other maps keep the plain map kernel.
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
  return static_cast<int>(16 / size);
}

long long floor_div(long long a, long long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

std::string offset_text(long long k) {
  return k == 0 ? "" : k < 0 ? " - " + std::to_string(-k) : " + " + std::to_string(k);
}

// The vector path's reads of element e's shifts (ExprEmitter::on_shift), in chunk u of a
// step: x[i + k] is element (e + k) mod kVec of the vector d = floor((e + k) / kVec) lanes
// away, in this chunk's registers (x_<in>[u + 1]) for lanes inside the warp, else in the
// chunk before or after (x_<in>[u] / x_<in>[u + 2]: the step's halo vectors at the ends):
// two shuffles and a select, no memory read. |d| >= 32 reads memory (the cache).
struct NeighbourReader {
  SourceWriter& w;
  CudaTypes& types;
  const KernelContext& g;
  const std::vector<std::string>& vectors;  // input j's registers: vectors[j][u + 1].v[e]
  int vec;
  int element;
  int count = 0;

  std::string operator()(const ExprNode& n, const std::string& fill) {
    std::size_t in = 0;
    while (in < g.leaves.inputs.size() && !same_node(g.leaves.inputs[in], n.args[0])) ++in;
    if (in == g.leaves.inputs.size())  // a shifted array is read element by element too (table_free_args)
      throw InternalError("codegen: the stencil map's shifted array is not among its inputs");
    const long long k = n.index, p = element + k, d = floor_div(p, vec), e = p - d * vec;
    const std::string table = table_name(n.args[0]);
    const std::string id = std::to_string(count++);
    const std::string at = "at" + id;
    w.line("const long long " + at + " = i" + offset_text(k) + ";  // shift by " + std::to_string(k));
    const std::string inside = "(" + at + " >= 0 && " + at + " < " + table + "_n)";
    const std::string slot = ".v[" + std::to_string(e) + "]";
    const std::string mine = vectors[in] + "[u + 1]" + slot;
    if (d == 0) return inside + " ? " + mine + " : " + fill;
    if (d <= -32 || d >= 32) return inside + " ? " + table + "[" + at + "] : " + fill;
    // Every lane shuffles (the loop is warp-uniform): the lanes whose neighbour is in the
    // chunk before (after) take it from that chunk's vector, lane (lane + d) mod 32.
    const std::string nb = "nb" + id, edge = "edge" + id;
    const std::string t = types.name(n.type);
    const std::string lanes = std::to_string(d < 0 ? -d : d);
    if (d < 0) {
      w.line("const " + t + " " + nb + " = __shfl_up_sync(0xffffffffu, " + mine + ", " + lanes + ");");
      w.line("const " + t + " " + edge + " = __shfl_sync(0xffffffffu, " + vectors[in] + "[u]" + slot + ", (lane - " +
             lanes + ") & 31);");
      return inside + " ? (lane < " + lanes + " ? " + edge + " : " + nb + ") : " + fill;
    }
    w.line("const " + t + " " + nb + " = __shfl_down_sync(0xffffffffu, " + mine + ", " + lanes + ");");
    w.line("const " + t + " " + edge + " = __shfl_sync(0xffffffffu, " + vectors[in] + "[u + 2]" + slot + ", (lane + " +
           lanes + ") & 31);");
    return inside + " ? (lane >= " + std::to_string(32 - d) + " ? " + edge + " : " + nb + ") : " + fill;
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
        const long long d = floor_div(element + e.node().index, vec);
        if (d < 0 && d > -32) before = std::max(before, static_cast<int>(-d));
        if (d > 0 && d < 32) after = std::max(after, static_cast<int>(d));
      }
    for (const Expr& a : e.args()) walk(a);
  };
  for (const Expr& o : g.outputs) walk(o);
  return {before, after};
}

KernelSpec emit_map_stencil(const KernelContext& g, int vec) {
  const Target& t = g.target();
  const int kBlock = g.policies().map.block;
  const int blocks_per_sm = t.max_threads_per_sm / kBlock;
  // Vectors in flight per input per thread: 4 (64 bytes) for one input, 2 for more.
  const int unroll = g.leaves.inputs.size() <= 1 ? 4 : 2;
  CudaTypes types;
  std::vector<std::string> in_names;
  std::vector<Arg> args = elementwise_args(g, in_names);
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    args.push_back({Arg::Kind::Output, g.output_ids[j], "out" + std::to_string(g.output_ids[j]), g.outputs[j].type()});
  std::string name = "ff_map_stencil";
  for (const auto& o : g.outputs) name += "_" + short_type_name(o.type());

  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kBlock) + ";",
                     "constexpr int kVec = " + std::to_string(vec) + ";  // elements per vector",
                     "constexpr int kUnroll = " + std::to_string(unroll) +
                         ";  // vectors per input a thread loads per step, all before any use",
                     "// kVec elements: one 16-byte load or store.",
                     "template <typename T>",
                     "struct alignas(16) Vec {",
                     "  T v[kVec];",
                     "};",
                     "// Vector v of p (elements v * kVec ..), those outside [0, n) zero.",
                     "template <typename T>",
                     "__device__ __forceinline__ Vec<T> load_vector(const T* __restrict__ p, long long v, long long n) {",
                     "  const long long i = v * kVec;",
                     "  if (i >= 0 && i + kVec <= n) return *reinterpret_cast<const Vec<T>*>(p + i);",
                     "  Vec<T> x;",
                     "  for (int k = 0; k < kVec; ++k) x.v[k] = i + k >= 0 && i + k < n ? p[i + k] : T(0);",
                     "  return x;",
                     "}",
                     "// Stores vector v of p, its elements inside [0, n): one 16-byte streaming store (written",
                     "// once, not kept in the caches) when whole.",
                     "template <typename T>",
                     "__device__ __forceinline__ void store_vector(T* __restrict__ p, const Vec<T>& y, long long v, long long n) {",
                     "  const long long i = v * kVec;",
                     "  if (i + kVec <= n) {",
                     "    float4 bits;",
                     "    memcpy(&bits, &y, sizeof bits);",
                     "    __stcs(reinterpret_cast<float4*>(p + i), bits);",
                     "  } else {",
                     "    for (int k = 0; k < kVec && i + k < n; ++k) p[i + k] = y.v[k];",
                     "  }",
                     "}"});
  open_elementwise_kernel(w, types, name, kBlock, args, g);
  std::string pointers;
  for (const auto& n : in_names) pointers += (pointers.empty() ? "" : " | ") + std::string("(unsigned long long)in_") + n;
  for (const auto& o : g.output_ids) pointers += " | (unsigned long long)out" + std::to_string(o);
  w.line("const int lane = threadIdx.x % 32;");
  w.open("if ((" + pointers + ") % 16 == 0)");
  w.line("// Warp-uniform steps of kUnroll chunks: chunk u holds the warp's vectors w + 32u .. w + 32u + 31,");
  w.line("// lane l's vector w + 32u + l (32 * kVec consecutive elements per chunk).");
  w.line("const long long vectors = (n + kVec - 1) / kVec;");
  w.open("for (long long w = ((long long)blockIdx.x * kBlock + threadIdx.x - lane) * kUnroll; w < vectors; "
         "w += (long long)gridDim.x * kBlock * kUnroll)");
  std::vector<std::string> vectors;
  for (std::size_t j = 0; j < in_names.size(); ++j) {
    const std::string tn = types.name(g.leaves.inputs[j].type()), v = "x_" + in_names[j], in = "in_" + in_names[j];
    vectors.push_back(v);
    const auto [before, after] = halo_lanes(g, g.leaves.inputs[j], vec);
    w.line("Vec<" + tn + "> " + v + "[kUnroll + 2];  // [u + 1]: chunk u; [0] and [kUnroll + 1]: the halo before and after");
    w.line("#pragma unroll");
    w.line("for (int u = 0; u < kUnroll; ++u) " + v + "[u + 1] = load_vector(" + in + ", w + 32 * u + lane, n);");
    if (before > 0)
      w.line("if (lane >= " + std::to_string(32 - before) + ") " + v + "[0] = load_vector(" + in +
             ", w - 32 + lane, n);  // the lanes of the chunk before that shifts reach");
    if (after > 0)
      w.line("if (lane < " + std::to_string(after) + ") " + v + "[kUnroll + 1] = load_vector(" + in +
             ", w + 32 * kUnroll + lane, n);  // the lanes of the chunk after that shifts reach");
  }
  w.line("#pragma unroll");
  w.open("for (int u = 0; u < kUnroll; ++u)");
  w.line("const long long i0 = (w + 32 * u + lane) * kVec;");
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line("Vec<" + types.name(g.outputs[j].type()) + "> y" + std::to_string(g.output_ids[j]) + ";");
  for (int e = 0; e < vec; ++e) {
    w.line("{  // element i0 + " + std::to_string(e) + ": a scope each, the same names in each");
    w.indent();
    w.line("const long long i = i0 + " + std::to_string(e) + ";");
    std::vector<std::string> loads;
    for (const auto& v : vectors) loads.push_back(v + "[u + 1].v[" + std::to_string(e) + "]");
    ExprEmitter em(w, types, [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a map"); });
    em.on_shift(NeighbourReader{w, types, g, vectors, vec, e});
    for (std::size_t j = 0; j < g.outputs.size(); ++j)
      w.line("y" + std::to_string(g.output_ids[j]) + ".v[" + std::to_string(e) + "] = " + em.emit(g.outputs[j]) + ";");
    w.close();
  }
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string o = std::to_string(g.output_ids[j]);
    w.line("store_vector(out" + o + ", y" + o + ", w + 32 * u + lane, n);");
  }
  w.close();
  w.close();
  w.dedent();
  w.open("} else");  // misaligned: element by element, the shifts read through the cache
  std::vector<std::string> loads;
  for (const auto& n : in_names) loads.push_back("in_" + n + "[i]");
  w.open("for (long long i = (long long)blockIdx.x * kBlock + threadIdx.x; i < n; i += (long long)gridDim.x * kBlock)");
  ExprEmitter e(w, types, [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a map"); });
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line("out" + std::to_string(g.output_ids[j]) + "[i] = " + e.emit(g.outputs[j]) + ";");
  w.close();
  w.close();
  w.close();

  KernelSpec k;
  k.name = name;
  k.strategy = Strategy::Automatic;
  k.block = kBlock;
  k.max_grid = t.sm_count * blocks_per_sm;
  k.items_per_block_step = kBlock * vec * unroll;
  k.tuning = {{"block", kBlock}, {"vec", vec}, {"unroll", unroll}};
  k.args = args;
  k.summary = "stencil map: block " + std::to_string(kBlock) + ", " + std::to_string(unroll) + " x " +
              std::to_string(vec) + " elements per thread per step (16-byte vectors, all loaded before any use, "
              "streaming stores), warp-uniform grid-strided steps, grid <= " + std::to_string(k.max_grid);
  k.why = "an output reads a neighbour (shift): each warp holds chunks of 32 vectors of consecutive elements and the "
          "few halo lanes around them, so neighbours come from registers and shuffles, and x is read once";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {}, types, w.str());
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
