// The staging pass. An array op's result (a sort's keys or values, reduce_by_key's keys or
// totals) that a later op or map of the program reads cuts the program there:
//
//   stage 1: the program whose outputs are those results; its kernels write each into an
//            intermediate (Plan::intermediates): the program output it is as well, or
//            scratch of the run, room for n elements;
//   stage 2: the program with each such result replaced by an input that reads its
//            intermediate.
//
// Each stage is planned as a program of its own (a chain of sorts is cut again inside stage
// 1), and the two plans are joined into one: the kernels of stage 1, then those of stage 2,
// on one stream, with their arguments named in the program's terms (Arg::Kind::Intermediate
// where a stage read or wrote one), so the run, explain and the dump show the cut. Nothing
// goes through the host.
//
// reduce_by_key has as many runs as the device counted (at most n). Stage 2 reads its
// results as filter(runs, index() < count), the count a table of one element that each
// kernel reads on the device (its intermediate's count word): a reduction over them is a
// masked reduction over the capacity n, an array of them a compaction (with its own count),
// so every consumer stage 2 can plan for a filter works on runs the host never counted.
// Those runs are the intermediate's first slots: an element-wise expression of them (with
// index(), parameters, scalars) is read as one filter of the expression, index() the slot.
//
// scan_by_key, reduce_by_key, a sort or a segmented op by offsets of a filter's result is
// cut before the op instead (stage_feeds.cpp): stage 1 compacts its operands, stage 2 runs
// it over them (and is cut again where the program reads its results).
//
// A per-segment broadcast beside ops other than segmented reductions (a reduction, scan,
// histogram or filter of centred values): the segmented reductions it broadcasts are stage 1
// (planned on the broadcast path, strategies/broadcast.cpp, whose map checks the offsets
// cover every element), their per-segment results intermediates of one element per offset
// (Intermediate::domain); stage 2 reads broadcast(ff_stage_<k>, offsets), which any of its
// kernels spells as a binary search over the offsets and a read of the element's segment
// (ExprEmitter::segment_value), fused into that kernel. broadcast_by_key(r, keys): stage 1
// also numbers each element's run of keys (key_runs.cpp, a scan), stage 2 reads
// gather_unchecked(ff_stage_<r>, run - 1), the runs a table of n.
//
// Segment offsets the program computes (a scan of row lengths, a sort's keys; a broadcast's
// offsets that are an expression): stage 1 computes each alone into an intermediate of its
// own length, over the domain of the inputs it reads (stage_domains.cpp); stage 2 reads it
// as an offsets input of that domain.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

// Stage 2's expressions: every result of a read op replaced by the input of its intermediate
// (a filter of it for reduce_by_key), the ops above copied with their expressions rewritten.
class Cut {
 public:
  // `avoid`: a program whose input names the cut's own inputs must not take (null: none);
  // `tables`: computed gather tables and shifted arrays (computed_tables.cpp).
  // `offsets`: segment offsets the program computes, of their own length (stage_domains.cpp).
  Cut(std::set<const OpNode*> read, std::set<const OpNode*> feeds, const Program* avoid,
      std::set<const ExprNode*> tables = {}, std::set<const ExprNode*> offsets = {})
      : read_(std::move(read)), feeds_(std::move(feeds)), tables_(std::move(tables)), offsets_(std::move(offsets)) {
    if (avoid)
      for (const Expr& in : avoid->inputs()) taken_.insert(in.node().name);
  }

  std::vector<Expr> results;  // per intermediate: the result it holds (stage 1's outputs)
  std::vector<std::string> labels;  // per intermediate: what it holds, for explain
  std::vector<Expr> inputs;   // per intermediate: the input stage 2 reads it by
  std::map<const ExprNode*, int> count_inputs;  // an input of a run count: the intermediate whose count it is
  std::map<const OpNode*, std::shared_ptr<const OpNode>> originals;  // a rewritten op: the program's
  // Per intermediate: the program input of the offsets whose segments it has one result for
  // (a segmented reduction's, read through broadcasts), or an empty Expr (n elements).
  std::vector<Expr> segments;
  std::set<int> run_tables;  // reduce_by_key's results read by broadcast_by_key: tables of n (the capacity)
  std::set<int> computed_tables;  // gather tables and shifted arrays computed by stage 1: n elements
  std::set<int> own_tables;  // of them, gather tables of a length of their own (bins, segments)
  std::set<int> own_lengths;  // computed segment offsets: arrays of their own length, over a domain of their own

  Expr expr(const Expr& e) {
    if (!e.valid()) return e;
    if (auto it = exprs_.find(e.get()); it != exprs_.end()) return it->second;
    Expr r = e;
    if (tables_.count(e.get()) || offsets_.count(e.get())) {
      r = computed_table(e, offsets_.count(e.get()) > 0);
    } else if (e.kind() == ExprKind::Result) {
      const OpNode* op = e.node().op.get();
      r = feeds_.count(op) ? feed(e) : read_.count(op) ? intermediate(e) : result(e);
    } else if (e.kind() == ExprKind::Broadcast && e.node().index == 1 && read_.count(e.args()[0].node().op.get())) {
      r = by_key(e.args()[0]);
    } else if (!e.args().empty()) {
      std::vector<Expr> args;
      bool changed = false;
      for (std::size_t i = 0; i < e.args().size(); ++i) {
        const Expr& a = e.args()[i];
        const bool spread = e.kind() == ExprKind::Broadcast && i == 0 && read_.count(a.node().op.get());
        args.push_back(e.kind() == ExprKind::Broadcast && i == 0 && !spread ? result(a) : expr(a));
        changed = changed || !same_node(args.back(), a);
      }
      if (changed) r = lift_prefix(e.with_args(std::move(args)));
    }
    return exprs_.emplace(e.get(), r).first->second;
  }

 private:
  std::set<const OpNode*> read_;
  std::set<const OpNode*> feeds_;  // ops over a filter's result (stage_feeds.cpp)
  std::set<std::string> taken_;     // names not to give (a stage cut again has ff_stage_k)

  // ff_stage_<k> (or ff_stage_count_<k>), with _1, _2 ... after it where that is taken: a
  // stage 2 cut again whose own stage 2 reads the outer cut's inputs and its own.
  Expr stage_input(const std::string& stem, int k, const Type& t) {
    std::string name = stem + std::to_string(k);
    for (int j = 1; taken_.count(name); ++j) name = stem + std::to_string(k) + "_" + std::to_string(j);
    taken_.insert(name);
    return Expr::input(name, t);
  }
  std::set<const ExprNode*> tables_;  // computed gather tables and shifted arrays (computed_tables.cpp)
  std::set<const ExprNode*> offsets_;  // computed segment offsets (stage_domains.cpp)
  std::map<const OpNode*, std::vector<Expr>> feed_views_;  // per op: what stage 2 reads each result by
  std::map<const ExprNode*, Expr> exprs_;
  std::map<const OpNode*, std::shared_ptr<const OpNode>> ops_;
  std::map<const OpNode*, Expr> run_masks_;  // reduce_by_key: index() < its count
  // Stage 2's reads of a counted result: filter(values, index() < count), its first count
  // slots (per such filter, its values and mask).
  std::map<const ExprNode*, std::pair<Expr, Expr>> prefix_;

  Expr prefix(const Expr& values, const Expr& mask) {
    Expr f = fuseflow::filter(values, mask);
    prefix_[f.get()] = {values, mask};
    return f;
  }

  // An element-wise node over such filters of one count (and scalars, index() among them):
  // the filter of the node over their values. The survivors being the first count slots,
  // index() beside them (the position among them) is the slot's index.
  Expr lift_prefix(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::Unary: case ExprKind::Binary: case ExprKind::Select: case ExprKind::Call:
      case ExprKind::Cast: case ExprKind::MakeTuple: case ExprKind::Get: case ExprKind::RawCuda: break;
      default: return e;
    }
    Expr mask;
    std::vector<Expr> args;
    for (const Expr& a : e.args()) {
      auto it = prefix_.find(a.get());
      if (it == prefix_.end()) {
        if (!array_leaves(a).empty()) return e;
        args.push_back(a);
        continue;
      }
      if (mask.valid() && !same_node(mask, it->second.second)) return e;
      mask = it->second.second;
      args.push_back(it->second.first);
    }
    return mask.valid() ? prefix(e.with_args(std::move(args)), mask) : e;
  }

  std::map<const OpNode*, Expr> run_index_;  // reduce_by_key read by broadcast_by_key: each element's run

  // broadcast_by_key(r, keys): r's intermediate read at the element's run, numbered by stage 1.
  Expr by_key(const Expr& r) {
    (void)expr(r);
    int k = 0;
    while (!same_node(results.at(static_cast<std::size_t>(k)), r)) ++k;
    run_tables.insert(k);
    const OpNode* op = r.node().op.get();
    auto [run, fresh] = run_index_.try_emplace(op);
    if (fresh) {
      results.push_back(key_run_numbers(*op));
      labels.push_back("each element's run of keys (broadcast_by_key)");
      inputs.push_back(stage_input("ff_stage_", static_cast<int>(results.size()) - 1, ScalarType::I64));
      segments.push_back(Expr());
      run->second = Expr::binary(BinaryOp::Sub, inputs.back(), Expr(1LL));
    }
    return Expr::gather(inputs.at(static_cast<std::size_t>(k)), run->second, false);
  }

  Expr result(const Expr& e) {
    const auto& n = e.node().op;
    auto it = ops_.find(n.get());
    if (it == ops_.end()) {
      auto copy = std::make_shared<OpNode>(*n);
      bool changed = false;
      for (Expr* x : {&copy->values, &copy->predicate, &copy->keys, &copy->offsets}) {
        const Expr r = expr(*x);
        changed = changed || !same_node(r, *x);
        *x = r;
      }
      std::shared_ptr<const OpNode> op = changed ? std::shared_ptr<const OpNode>(std::move(copy)) : n;
      if (changed) originals[op.get()] = n;
      it = ops_.emplace(n.get(), op).first;
    }
    return it->second == n ? e : Expr::result(it->second, e.node().index, e.type());
  }

  // An op over a filter's result: stage 1 compacts its operands (intermediate k, counted),
  // stage 2 runs the op over them and reads its results as the survivors' part.
  Expr feed(const Expr& e) {
    const auto& n = e.node().op;
    auto it = feed_views_.find(n.get());
    if (it == feed_views_.end()) {
      const int k = static_cast<int>(results.size());
      results.push_back(feed_operands(*n));
      labels.push_back(std::string("the survivors ") + op_name(n->kind) + " reads");
      segments.push_back(Expr());
      inputs.push_back(stage_input("ff_stage_", k, results.back().type()));
      Expr count = stage_input("ff_stage_count_", k, ScalarType::U64);
      count_inputs[count.get()] = k;
      const FeedCut fc = feed_cut(n, inputs.back(), count);
      originals[fc.op.get()] = n;  // a segmented op's offsets flag names the program's op
      std::vector<Expr> views;
      for (const Expr& r : fc.results) views.push_back(fc.mask.valid() ? prefix(r, fc.mask) : r);
      it = feed_views_.emplace(n.get(), std::move(views)).first;
    }
    return it->second.at(static_cast<std::size_t>(e.node().index));
  }

  // A computed gather table or shifted array, a broadcast over rows, computed segment offsets
  // (`own`: of their own length): stage 1 computes it into intermediate k.
  Expr computed_table(const Expr& e, bool own) {
    const int k = static_cast<int>(results.size());
    results.push_back(e);
    labels.push_back((own ? "the segment offsets " : "the array ") + to_string(e) +
                     (own ? ", of their own length"
                      : e.kind() == ExprKind::Broadcast ? " over rows" : " read at computed positions"));
    inputs.push_back(stage_input("ff_stage_", k, e.type()));
    segments.push_back(Expr());
    (own ? own_lengths : computed_tables).insert(k);
    if (!own && e.kind() != ExprKind::Broadcast && own_length_table(e)) own_tables.insert(k);
    return inputs.back();
  }

  Expr intermediate(const Expr& e) {
    const int k = static_cast<int>(results.size());
    results.push_back(e);
    labels.push_back("result " + std::to_string(e.node().index) + " of " + op_name(e.node().op->kind));
    inputs.push_back(stage_input("ff_stage_", k, e.type()));
    const OpNode* op = e.node().op.get();
    segments.push_back(op->kind == OpKind::SegmentedReduce ? op->offsets : Expr());
    if (op->kind != OpKind::ReduceByKey) return inputs.back();
    auto [mask, fresh] = run_masks_.try_emplace(op);
    if (fresh) {  // one count for both results, so a map of keys and totals reads one filter
      Expr count = stage_input("ff_stage_count_", k, ScalarType::U64);
      count_inputs[count.get()] = k;
      mask->second = Expr::binary(BinaryOp::Lt, Expr::index(),
                                  Expr::cast(ScalarType::I64, Expr::gather(count, Expr(0LL), false)));
    }
    return prefix(inputs.back(), mask->second);
  }
};

// Where a stage's output goes: an Output or an Intermediate, by index.
Arg to(Arg::Kind kind, int index) { return {kind, index, "", Type()}; }

int index_of(const std::vector<Expr>& leaves, const Expr& e) {
  for (std::size_t i = 0; i < leaves.size(); ++i)
    if (same_node(leaves[i], e)) return static_cast<int>(i);
  return -1;
}

// Joins the plan `p` of `stage` into `joined`, its kernels after those there, every argument
// in the program's terms: the program's inputs and parameters, the intermediates for the
// cut's inputs, and `as_output[j]` (an Output or an Intermediate) for the stage's output j.
class Joiner {
 public:
  Joiner(const Program& program, const Cut& cut, Plan& joined) : program_(program), cut_(cut), joined_(joined) {}

  // `own`: a part of stage 1 computing segment offsets of their own length, over their domain.
  void join(const Program& stage, Plan p, const std::vector<Arg>& as_output, bool own = false) {
    const int base = static_cast<int>(joined_.kernels.size());
    const int slots = static_cast<int>(joined_.scalars.size());
    const int flags = static_cast<int>(joined_.checked_offsets.size());
    const std::vector<int> domain = domains(stage, p, own);
    // Intermediates of the stage's own cut: the one of ours it is written as, or a new one.
    std::vector<int> intermediate;
    for (const Intermediate& im : p.intermediates) {
      const Arg home = im.output >= 0 ? as_output.at(static_cast<std::size_t>(im.output)) : to(Arg::Kind::Scratch, 0);
      if (home.kind == Arg::Kind::Intermediate) {
        intermediate.push_back(home.index);
        continue;
      }
      intermediate.push_back(static_cast<int>(joined_.intermediates.size()));
      joined_.intermediates.push_back(im);
      joined_.intermediates.back().output = home.kind == Arg::Kind::Output ? home.index : -1;
      joined_.intermediates.back().domain = mapped(domain, im.domain);  // a part over its own domain: that one
      if (im.counted && joined_.intermediates.back().domain != 0)
        throw GraphError("codegen: segment offsets computed from " + im.role + " (as many as the device counts); "
                         "offsets computed in the program need a length their inputs give");
    }
    for (KernelSpec& k : p.kernels) {
      for (Arg& a : k.args) a = arg(stage, a, as_output, domain, intermediate, slots, flags);
      if (k.order.after_kernel >= 0) {
        k.order.after_kernel += base;
      } else if (base > 0) {
        k.order = {base - 1, "the stage before it, whose results it reads (stream order)"};
      }
      joined_.kernels.push_back(std::move(k));
    }
    for (StepSpec s : p.steps) {
      s.kernel += base;
      if (s.domain > 0) s.domain = mapped(domain, s.domain);
      s.over = mapped(domain, s.over);
      joined_.steps.push_back(s);
    }
    const std::size_t at = (joined_.scalar_bytes + 15) / 16 * 16;
    for (ScalarSlot s : p.scalars) {
      s.offset += at;
      joined_.scalars.push_back(s);
    }
    if (!p.scalars.empty()) joined_.scalar_bytes = at + p.scalar_bytes;
    for (const auto& op : p.checked_offsets) {
      auto it = op ? cut_.originals.find(op.get()) : cut_.originals.end();
      joined_.checked_offsets.push_back(it == cut_.originals.end() ? op : it->second);
    }
    if (p.fill_length >= 0) joined_.fill_length = p.fill_length;
    for (std::size_t j = 0; j < stage.outputs().size(); ++j) {
      const Arg& to = as_output[j];
      OutputShape shape = p.output_shapes.empty() ? OutputShape{} : p.output_shapes[j];
      if (shape.fixed < 0) shape.domain = mapped(domain, shape.domain);
      if (to.kind == Arg::Kind::Intermediate) {  // n elements (a sort's), at most n (reduce_by_key's, counted)
        Intermediate& im = joined_.intermediates[static_cast<std::size_t>(to.index)];
        im.counted = shape.counted;
        const bool per_segment = cut_.segments.at(static_cast<std::size_t>(to.index)).valid();
        const std::string what = to_string(cut_.results.at(static_cast<std::size_t>(to.index)));
        if (cut_.own_lengths.count(to.index)) check_own_length(p, shape, what);
        if (cut_.own_tables.count(to.index))
          size_own_table(im, p, shape, what);  // a table of its own length: bins, segments
        else if (per_segment && shape.domain > 0 && shape.less == 1 && shape.fixed < 0 && !shape.counted)
          im.domain = shape.domain;  // one per segment: room for one per offset
        else if (cut_.own_lengths.count(to.index))
          im.domain = shape.domain, im.own_length = true;  // its elements: the length of its part's domain
        else if (shape.domain != 0 || shape.less != 0 || shape.fixed >= 0)
          throw InternalError("stages: intermediate " + std::to_string(to.index) + " is not of n elements");
        if (im.output >= 0 && (shape.counted || im.domain > 0 || im.fixed >= 0)) {
          joined_.output_shapes.resize(program_.outputs().size());
          joined_.output_shapes[static_cast<std::size_t>(im.output)] = shape;
        }
        continue;
      }
      const auto i = static_cast<std::size_t>(to.index);
      const int slot = p.output_scalar[j];
      joined_.output_scalar[i] = slot < 0 ? -1 : slot + slots;
      if (!p.output_shapes.empty()) {
        joined_.output_shapes.resize(program_.outputs().size());
        joined_.output_shapes[i] = shape;
      }
    }
    for (auto& n : p.notes) joined_.notes.push_back(std::move(n));
  }

 private:
  const Program& program_;
  const Cut& cut_;
  Plan& joined_;
  OwnInputs own_inputs_;  // the program inputs own-length parts read as their elements

  static int mapped(const std::vector<int>& domain, int d) {
    const int to = domain.at(static_cast<std::size_t>(d));
    if (to < 0) throw InternalError("stages: domain " + std::to_string(d) + " of a stage holds no input of the program");
    return to;
  }

  // The program's domain of each of the stage's: that of its inputs (a new one if no stage
  // before had them), -1 for a domain of none (a run count's table). The cut's inputs first,
  // whose domains are those of their intermediates, then the program's.
  std::vector<int> domains(const Program& stage, const Plan& p, bool own) {
    std::vector<int> to(static_cast<std::size_t>(p.domains), -1);
    const auto domain_of = [&](std::size_t s) { return p.input_domain.empty() ? 0 : p.input_domain[s]; };
    to[0] = 0;
    if (own) {  // over the domain of the inputs it reads as elements
      std::vector<int> of(stage.inputs().size());
      for (std::size_t s = 0; s < of.size(); ++s) of[s] = domain_of(s);
      to[0] = own_domain(program_, stage, of, joined_, own_inputs_);
    }
    for (std::size_t s = 0; s < stage.inputs().size(); ++s) {
      const int d = domain_of(s);
      const int k = index_of(program_.inputs(), stage.inputs()[s]) < 0 ? index_of(cut_.inputs, stage.inputs()[s]) : -1;
      if (k < 0) continue;
      const Intermediate& im = joined_.intermediates.at(static_cast<std::size_t>(k));
      if (cut_.own_lengths.count(k) && d == 0)
        throw GraphError("codegen: the segment offsets " + to_string(cut_.results.at(static_cast<std::size_t>(k))) +
                         " are read as elements too (of the program's elements' length, not theirs); read them as "
                         "offsets only, or output them and bind them as an input of a second program");
      if (d == 0) continue;
      if (cut_.segments.at(static_cast<std::size_t>(k)).valid() || cut_.own_lengths.count(k)) {
        to[static_cast<std::size_t>(d)] = im.domain;  // read by broadcasts, or as offsets of their own length
      } else if (cut_.run_tables.count(k) || cut_.computed_tables.count(k)) {
        to[static_cast<std::size_t>(d)] = 0;  // runs read by broadcast_by_key (room for n), a computed table of n
      } else {
        unsupported("reading a sort's or reduce_by_key's result in a program as a gather table");
      }
    }
    for (std::size_t s = 0; s < stage.inputs().size(); ++s) {
      const int d = domain_of(s);
      const int i = index_of(program_.inputs(), stage.inputs()[s]);
      if (i < 0) continue;
      if (auto it = own_inputs_.find(i); it != own_inputs_.end()) {  // an own-length part reads it as its elements
        if (to[static_cast<std::size_t>(d)] >= 0 && to[static_cast<std::size_t>(d)] != it->second.first)
          throw GraphError(mixed_lengths(program_.inputs()[static_cast<std::size_t>(i)], it->second.second));
        to[static_cast<std::size_t>(d)] = it->second.first;
        continue;
      }
      if (d == 0) continue;
      if (joined_.input_domain.empty()) joined_.input_domain.assign(program_.inputs().size(), 0);
      int& mine = joined_.input_domain[static_cast<std::size_t>(i)];
      if (mine == 0) mine = to[static_cast<std::size_t>(d)] >= 0 ? to[static_cast<std::size_t>(d)] : joined_.domains++;
      to[static_cast<std::size_t>(d)] = mine;
    }
    return to;
  }

  Arg arg(const Program& stage, Arg a, const std::vector<Arg>& as_output, const std::vector<int>& domain,
          const std::vector<int>& intermediate, int slots, int flags) const {
    switch (a.kind) {
      case Arg::Kind::Input:
      case Arg::Kind::Table:
      case Arg::Kind::TableLength: {
        const Expr& in = stage.inputs().at(static_cast<std::size_t>(a.index));
        const int k = index_of(cut_.inputs, in);
        if (const int i = index_of(program_.inputs(), in); i >= 0) {
          a.index = i;
        } else if (k >= 0 && cut_.segments.at(static_cast<std::size_t>(k)).valid()) {
          // A segmented reduction's results: read through broadcasts only (a table of one per offset).
          if (a.kind == Arg::Kind::Input)
            unsupported("reading the per-segment results of a segmented_reduce over " +
                        to_string(cut_.segments.at(static_cast<std::size_t>(k))) +
                        " as an array beside a broadcast of them (one element per segment, not per element; "
                        "meanwhile output them and bind them as an input of a second program)");
          const int d = joined_.intermediates.at(static_cast<std::size_t>(k)).domain;
          a = a.kind == Arg::Kind::Table ? Arg{Arg::Kind::Intermediate, k, a.name, a.type}
                                         : Arg{Arg::Kind::Length, d, a.name, a.type};
        } else if (k >= 0 && a.kind == Arg::Kind::Input) {
          a = {Arg::Kind::Intermediate, k, a.name, a.type};
        } else if (k >= 0 && (cut_.computed_tables.count(k) || cut_.run_tables.count(k) || cut_.own_lengths.count(k))) {
          // A computed table (n), the runs gathered at each element's run (broadcast_by_key: n),
          // computed offsets (their own domain's length), a table of its own length (its intermediate's).
          const int d = joined_.intermediates.at(static_cast<std::size_t>(k)).domain;
          a = a.kind == Arg::Kind::Table      ? Arg{Arg::Kind::Intermediate, k, a.name, a.type}
              : cut_.own_tables.count(k) ? Arg{Arg::Kind::IntermediateLength, k, a.name, a.type}
                                         : Arg{Arg::Kind::Length, d, a.name, a.type};
        } else if (auto c = cut_.count_inputs.find(in.get()); c != cut_.count_inputs.end()) {
          // An unchecked table of one element: its pointer the count, its length unused (n).
          a = a.kind == Arg::Kind::Table ? Arg{Arg::Kind::IntermediateCount, c->second, a.name, a.type}
                                         : Arg{Arg::Kind::Length, 0, a.name, a.type};
        } else {
          throw InternalError("stages: kernel argument " + a.name + " reads an input the program does not have");
        }
        return a;
      }
      case Arg::Kind::Param:
        a.index = index_of(program_.params(), stage.params().at(static_cast<std::size_t>(a.index)));
        return a;
      case Arg::Kind::Length:
        if (a.index > 0) a.index = mapped(domain, a.index);
        return a;
      case Arg::Kind::Scalar:
      case Arg::Kind::ScalarOutput: a.index += slots; return a;
      case Arg::Kind::Output:
      case Arg::Kind::OutputCount: {
        const Arg& to = as_output.at(static_cast<std::size_t>(a.index));
        const bool count = a.kind == Arg::Kind::OutputCount;
        a.index = to.index;
        if (to.kind == Arg::Kind::Intermediate) a.kind = count ? Arg::Kind::IntermediateCount : Arg::Kind::Intermediate;
        return a;
      }
      case Arg::Kind::InvalidFlag: a.index += flags; return a;
      case Arg::Kind::Intermediate:
      case Arg::Kind::IntermediateCount:
      case Arg::Kind::IntermediateLength: a.index = intermediate.at(static_cast<std::size_t>(a.index)); return a;
      case Arg::Kind::Scratch:
      case Arg::Kind::Ticket:
      case Arg::Kind::TileStatus:
      case Arg::Kind::Epoch: return a;
    }
    return a;
  }
};

}  // namespace

std::optional<Plan> plan_in_stages(const Program& program, const Target& target, const PlanOptions& options) {
  if (auto fused = fuse_table_maps(program)) return plan_fused_tables(program, *fused, target, options);
  // A filter's result read by scan_by_key, reduce_by_key or a sort: that cut first (its
  // stage 2 is cut again where it reads the op's results).
  std::set<const OpNode*> feeds;
  for (const auto& op : program.ops())
    if (feeds_on_filter(*op)) feeds.insert(op.get());
  for (const OpNode* op : position_reductions_read(program)) feeds.insert(op);
  std::set<const void*> seen;
  std::set<const OpNode*> read;
  std::set<const OpNode*> spread;
  std::set<const ExprNode*> tables;  // computed gather tables and shifted arrays (computed_tables.cpp)
  std::set<const ExprNode*> offsets;  // computed segment offsets (stage_domains.cpp)
  if (feeds.empty()) {
    tables = computed_tables(program);
    offsets = staged_offsets(program);
    for (const Expr& o : program.outputs()) find_reads(o, true, false, seen, read);
    spread = spread_ops(program);
    read.insert(spread.begin(), spread.end());
  }
  if (read.empty() && feeds.empty() && tables.empty() && offsets.empty()) return std::nullopt;
  std::set<const void*> checked;
  for (const Expr& o : program.outputs()) {
    if (o.kind() != ExprKind::Result) check_runs_alone({o}, read);
    check_runs(o, checked, read);
  }

  // Stage 2: the outputs over the intermediates; an output that is one of them is written
  // by stage 1 straight into its memory (its first occurrence), not copied.
  auto cutting = std::make_unique<Cut>(read, feeds, nullptr, tables, offsets);
  std::vector<Expr> later;
  std::vector<Arg> later_as;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    later.push_back(cutting->expr(program.outputs()[i]));
    later_as.push_back(to(Arg::Kind::Output, static_cast<int>(i)));
  }
  if (names_clash(later)) {  // inside a stage 2 cut again: the outer cut's names taken
    cutting = std::make_unique<Cut>(read, feeds, &program, tables, offsets);
    for (std::size_t i = 0; i < program.outputs().size(); ++i) later[i] = cutting->expr(program.outputs()[i]);
  }
  Cut& cut = *cutting;
  Plan joined;
  joined.output_scalar.assign(program.outputs().size(), -1);
  std::vector<Arg> first_as;
  for (std::size_t k = 0; k < cut.results.size(); ++k) {
    const Expr& r = cut.results[k];
    first_as.push_back(to(Arg::Kind::Intermediate, static_cast<int>(k)));
    Intermediate im{r.type(), cut.labels[k]};
    for (std::size_t i = 0; i < program.outputs().size() && im.output < 0; ++i)
      if (same_node(program.outputs()[i], r) && later_as[i].kind == Arg::Kind::Output) {
        im.output = static_cast<int>(i);
        later_as[i].kind = Arg::Kind::Scratch;  // not in stage 2
      }
    joined.intermediates.push_back(std::move(im));
  }
  std::vector<Expr> second;
  std::vector<Arg> second_as;
  for (std::size_t i = 0; i < later.size(); ++i)
    if (later_as[i].kind == Arg::Kind::Output) {
      second.push_back(later[i]);
      second_as.push_back(later_as[i]);
    }
  if (second.empty()) throw InternalError("stages: no output is left to the stage after the cut");
  const Program second_stage(second);
  // Stage 1's parts: each computed offsets array alone (over its own domain), the broadcast
  // segmented reductions on the broadcast path (which checks the offsets), then the other
  // results (broadcast_by_key's, a sort's; the feeds' compactions are filters).
  const std::vector<StagePart> parts = stage_parts(cut.results.size(), [&](std::size_t k) {
    const Expr& r = cut.results[k];
    return r.kind() == ExprKind::Result && r.node().op->kind == OpKind::SegmentedReduce && spread.count(r.node().op.get()) > 0;
  }, cut.own_lengths);
  std::vector<Program> firsts;
  std::vector<Plan> plans;
  std::vector<std::vector<Arg>> firsts_as;
  std::size_t kernels = 0;
  std::string written;
  for (const StagePart& part : parts) {
    std::vector<Expr> results;
    firsts_as.emplace_back();
    for (const std::size_t k : part.members) {
      results.push_back(cut.results[k]);
      firsts_as.back().push_back(first_as[k]);
    }
    firsts.emplace_back(results);
    plans.push_back(part.spread ? plan_segment_results(firsts.back(), target, options) : plan(firsts.back(), target, options));
    kernels += plans.back().kernels.size();
    written += (written.empty() ? "" : ", then ") + one_line(firsts.back());
  }
  joined.notes.push_back("stages: " + std::to_string(cut.results.size()) +
                         (cut.results.size() == 1 ? " array result" : " array results") +
                         " read later in the program cut it in two; stage 1 (kernels 1.." + std::to_string(kernels) +
                         ") writes the intermediates: " + written + "; stage 2 reads them: " + one_line(second_stage));
  Joiner joiner(program, cut, joined);
  for (std::size_t i = 0; i < firsts.size(); ++i) joiner.join(firsts[i], std::move(plans[i]), firsts_as[i], parts[i].own);
  joiner.join(second_stage, plan(second_stage, target, options), second_as);
  return joined;
}

}  // namespace fuseflow::codegen
