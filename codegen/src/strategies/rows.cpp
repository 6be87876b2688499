// The per-row kernel (rows.hpp, planned by rows_plan.cpp): a program of segmented
// reductions over ff::rows(x, c) and element-wise outputs that broadcast their results, as
// one kernel. A block takes a row at a time (grid-strided over the rows) and holds it in
// registers, each thread kItems consecutive elements (<fuseflow/rows.cuh>); each reduction,
// in program order, folds the thread's elements and all-reduces the block, so every thread
// has the row's result in a register for the reductions and outputs after it; then the
// outputs are computed from the registers and stored. x is read once and y written once:
// per-row softmax moves 8 bytes per f32 element, as a copy does.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "../kernel_context.hpp"
#include "../rows.hpp"

namespace fuseflow::codegen {

namespace {

// Whether `e` reads index() (a broadcast's own expression is not the element's).
bool reads_index(const Expr& e, std::set<const ExprNode*>& seen) {
  if (!seen.insert(e.get()).second || e.kind() == ExprKind::Broadcast) return false;
  if (e.kind() == ExprKind::Index) return true;
  for (const auto& a : e.args())
    if (reads_index(a, seen)) return true;
  return false;
}

bool reads_index(const std::vector<Expr>& es) {
  std::set<const ExprNode*> seen;
  for (const auto& e : es)
    if (reads_index(e, seen)) return true;
  return false;
}

}  // namespace

KernelSpec emit_rows(const KernelContext& g) {
  const auto& ops = g.plan->program.ops();
  const std::int64_t columns = ops.front()->offsets.node().length;
  const RowsTuning t = *rows_tuning(columns, g.policies().rows);
  const Target& target = g.target();
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    args.push_back({Arg::Kind::Output, g.output_ids[j], "out" + std::to_string(g.output_ids[j]), g.outputs[j].type()});
  std::string name = "ff_rows";
  for (const auto& o : g.outputs) name += "_" + short_type_name(o.type());

  // What the expressions read: input j's element k as x_<name>[k], a broadcast as its
  // reduction's row result, index() as i (declared where it is read).
  std::map<const OpNode*, std::string> row_of;
  const auto leaf = [&](const Expr& l) -> std::string {
    if (l.kind() == ExprKind::Input)
      for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j)
        if (same_node(g.leaves.inputs[j], l)) return "x_" + names[j] + "[k]";
    if (l.kind() == ExprKind::Index) return "i";
    if (l.kind() == ExprKind::Broadcast) return row_of.at(l.args()[0].node().op.get());
    return elementwise_leaf(g, names, l, "a per-row kernel");
  };

  SourceWriter w;
  emit_constants(w, {"constexpr long long kColumns = " + std::to_string(columns) + ";  // elements per row (ff::rows)",
                     "constexpr int kBlock = " + std::to_string(t.block) + ";  // threads per row",
                     "constexpr int kItems = " + std::to_string(t.items) +
                         ";  // consecutive elements of the row per thread, in registers"});
  const RowsPolicy& rp = g.policies().rows;
  const int budget = columns > rp.long_row && t.items == rp.long_items ? rp.long_registers : rp.registers;
  const int min_blocks = 65536 / (std::max(1, budget) * t.block);  // by the register budget
  open_elementwise_kernel(w, types, name, t.block, args, g, min_blocks);
  for (std::size_t r = 0; r < ops.size(); ++r) {
    const std::string k = std::to_string(r), acc = types.name(ops[r]->monoid.type());
    emit_fused_monoid(w, types, {FusedReduce{ops[r], ops[r]->values, Expr(), 0}}, acc, "identity" + k, "combine" + k);
    w.line("__shared__ " + acc + " scratch" + k + "[2 * (kBlock / 32)];  // even and odd rows in turn");
  }
  w.line("const long long rows = (n + kColumns - 1) / kColumns;");
  w.line("const auto count_of = [&](long long r) {  // elements of row r: the last may be shorter");
  w.line("  return (int)(n - r * kColumns < kColumns ? n - r * kColumns : kColumns);");
  w.line("};");
  w.line("const int first = threadIdx.x * kItems;");
  // The block's next row is loaded while this one is reduced (x_ holds this row, nx_ the
  // next): twice the bytes in flight per block. No other block writes it (in place too).
  for (std::size_t j = 0; j < names.size(); ++j) {
    w.line(types.name(g.leaves.inputs[j].type()) + " x_" + names[j] + "[kItems], nx_" + names[j] + "[kItems];");
    w.line("if (blockIdx.x < rows) ff::rows::load(x_" + names[j] + ", in_" + names[j] +
           " + blockIdx.x * kColumns, count_of(blockIdx.x));");
  }
  w.line("unsigned parity = 0u;  // rows done by the block: all_reduce's scratch alternates halves");
  w.open("for (long long row = blockIdx.x; row < rows; row += gridDim.x, ++parity)");
  w.line("const long long begin = row * kColumns;");
  w.line("const int count = count_of(row);");
  w.line("const long long next = row + gridDim.x;");
  w.open("if (next < rows)");
  for (const auto& nm : names) w.line("ff::rows::load(nx_" + nm + ", in_" + nm + " + next * kColumns, count_of(next));");
  w.close();
  // The row's reductions, outputs and stores, compiled twice: for a full row (every row
  // but a short last one) the element checks compare with a constant, none at all when
  // the block's elements are exactly a row, so the loops carry no compare or branch per
  // element (the division's slow path was branched around).
  w.line("// full: a whole row of kColumns elements (no element checks), or the short last row");
  w.open("const auto row_program = [&](auto full)");
  w.line("constexpr bool kWhole = decltype(full)::value && kBlock * kItems == kColumns;  // no thread past the row");
  w.line("const int count_in = decltype(full)::value ? (int)kColumns : count;  // the row's elements");
  // Reduction values kept in registers for the reductions and outputs after them.
  std::vector<std::size_t> kept;
  const auto bind_kept = [&](ExprEmitter& e) {
    for (std::size_t q : kept) e.bind(ops[q]->values, "vals" + std::to_string(q) + "[k]");
  };
  // An f32 exp(a - broadcast(row r)) after reduction r (softmax's e = exp(x - max)) is
  // ff::rows::exp_approx(a - row r): one multiply by log2(e) and the SFU's 2^t (expf's range
  // reduction took about ten instructions an element in an issue-bound kernel). Within
  // a few ulps of expf where a - row r <= 0 (rows_gpu_test's bound); the walk stops at
  // values kept in registers (already computed) and at broadcasts.
  int exps = 0;
  const auto bind_exps = [&](ExprEmitter& e, const std::vector<Expr>& es) {
    std::set<const ExprNode*> seen;
    for (std::size_t q : kept) seen.insert(ops[q]->values.get());
    std::vector<Expr> found;
    const std::function<void(const Expr&)> walk = [&](const Expr& x) {
      if (!x.valid() || !seen.insert(x.get()).second || x.kind() == ExprKind::Broadcast) return;
      for (const auto& a : x.args()) walk(a);  // inner ones first: emitted in order
      if (x.kind() != ExprKind::Call || x.node().fn != MathFn::Exp || x.type() != Type(ScalarType::F32)) return;
      const Expr& d = x.args()[0];
      if (d.kind() == ExprKind::Binary && d.node().binary == BinaryOp::Sub && d.args()[1].kind() == ExprKind::Broadcast &&
          row_of.count(d.args()[1].args()[0].node().op.get()))
        found.push_back(x);
    };
    for (const auto& x : es) walk(x);
    for (const auto& x : found) {
      const std::string ex = "ex" + std::to_string(exps++);
      w.line("const float " + ex + " = ff::rows::exp_approx(" + e.emit(x.args()[0]) + ");");
      e.bind(x, ex);
    }
  };
  // A division by row result r reads inv_row<r> (declared after the reduction): its
  // dividend is emitted first, then the division is bound to the product.
  std::set<const OpNode*> inverted;
  const auto bind_divisions = [&](ExprEmitter& e, const std::vector<Expr>& es) {
    std::vector<Expr> found;
    std::set<const ExprNode*> seen;
    for (const auto& x : es) division_by_row(x, found, seen);
    for (const auto& d : found) {
      const OpNode* op = d.args()[1].args()[0].node().op.get();
      if (!inverted.count(op)) continue;
      e.bind(d, e.emit(d.args()[0]) + " * inv_" + row_of.at(op));
    }
  };
  for (std::size_t r = 0; r < ops.size(); ++r) {
    const std::string k = std::to_string(r), acc = types.name(ops[r]->monoid.type());
    const bool keep = keep_values(ops, r, g.outputs);
    w.line("// the row's segmented_reduce " + k + " (" + ops[r]->monoid.name() + "): every thread gets it as row" + k);
    if (keep) w.line(types.name(ops[r]->values.type()) + " vals" + k + "[kItems];  // its values, read again below");
    w.line(acc + " acc" + k + " = identity" + k + ";");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < kItems; ++k)");
    w.open("if (kWhole || first + k < count_in)");
    if (reads_index({ops[r]->values})) w.line("const long long i = begin + first + k;");
    ExprEmitter e(w, types, leaf, "v" + k + "_");
    bind_kept(e);
    bind_exps(e, {ops[r]->values});
    bind_divisions(e, {ops[r]->values});
    const std::string v = e.emit(ops[r]->values);
    if (keep) w.line("vals" + k + "[k] = " + v + ";");
    w.line("acc" + k + " = combine" + k + "(acc" + k + ", " + v + ");");
    w.close();
    w.close();
    w.line("const " + acc + " row" + k + " = ff::rows::all_reduce<kBlock>(acc" + k + ", combine" + k + ", identity" + k +
           ", scratch" + k + ", parity);");
    row_of[ops[r].get()] = "row" + k;
    std::vector<Expr> later = g.outputs, found;
    for (std::size_t q = r + 1; q < ops.size(); ++q) later.push_back(ops[q]->values);
    std::set<const ExprNode*> seen;
    for (const auto& x : later) division_by_row(x, found, seen);
    if (std::any_of(found.begin(), found.end(), [&](const Expr& d) { return d.args()[1].args()[0].node().op == ops[r]; })) {
      const bool f32 = ops[r]->monoid.type().scalar() == ScalarType::F32;
      w.line("const " + acc + " inv_row" + k + " = " + (f32 ? "1.0f" : "1.0") + " / row" + k +
             ";  // divisions by the row result multiply by it");
      inverted.insert(ops[r].get());
    }
    if (keep) kept.push_back(r);
  }
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line(types.name(g.outputs[j].type()) + " y" + std::to_string(g.output_ids[j]) + "[kItems];");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.open("if (kWhole || first + k < count_in)");
  if (reads_index(g.outputs)) w.line("const long long i = begin + first + k;");
  ExprEmitter e(w, types, leaf, "o");
  bind_kept(e);
  bind_exps(e, g.outputs);
  bind_divisions(e, g.outputs);
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line("y" + std::to_string(g.output_ids[j]) + "[k] = " + e.emit(g.outputs[j]) + ";");
  w.close();
  w.close();
  for (int id : g.output_ids)
    w.line("ff::rows::store(out" + std::to_string(id) + " + begin, y" + std::to_string(id) +
           ", count_in);");
  w.close("};");
  w.line("if (count == kColumns) row_program(ff::rows::Full<true>{});");
  w.line("else row_program(ff::rows::Full<false>{});");
  w.open("if (next < rows)");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  for (const auto& nm : names) w.line("x_" + nm + "[k] = nx_" + nm + "[k];");
  w.close();
  w.close();
  w.close();
  w.close();

  KernelSpec k;
  k.name = name;
  k.strategy = Strategy::Automatic;
  k.block = t.block;
  k.max_grid = target.sm_count * std::max(1, target.max_threads_per_sm / t.block);
  k.items_per_block_step = static_cast<int>(columns);
  k.in_place = true;  // a block loads its row before the barriers of its reductions, then stores it
  k.tuning = {{"block", t.block}, {"items", t.items}, {"columns", columns}, {"min_blocks", min_blocks}};
  k.args = args;
  k.summary = "per-row program: a block per row of " + std::to_string(columns) + " elements (" + std::to_string(t.block) +
              " threads x " + std::to_string(t.items) + " in registers), " + std::to_string(ops.size()) +
              " row reduction(s) all-reduced in element order, the next row loaded meanwhile, grid-strided over rows, grid <= " +
              std::to_string(k.max_grid);
  k.why = "every segment is a row of ff::rows(x, " + std::to_string(columns) +
          ") that fits a block: the row reductions and the outputs in one pass over the inputs";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {"rows.cuh"}, types, w.str());
  return k;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class Rows final : public OnePassStrategy {
 public:
  Rows() : OnePassStrategy("rows", "rows") {}
  Applies applies(const KernelContext& g) const override {
    const std::int64_t columns = g.plan->program.ops().front()->offsets.node().length;
    if (!rows_tuning(columns, g.policies().rows))
      return {false, "needs rows that fit a block; rows of " + std::to_string(columns) + " elements do not"};
    return {true, "every row of ff::rows(x, " + std::to_string(columns) + ") fits a block: one kernel reads each row once"};
  }
  TuningValues tuning(const Policies& p) const override {
    return {{"items", p.rows.items},
            {"max_block", p.rows.max_block},
            {"max_items", p.rows.max_items},
            {"registers", p.rows.registers},
            {"long_row", p.rows.long_row},
            {"long_items", p.rows.long_items},
            {"long_registers", p.rows.long_registers}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_rows(g)}; }
};
}  // namespace

const RegisteredStrategy& rows_strategy() {
  static const Rows s;
  return s;
}

}  // namespace fuseflow::codegen
