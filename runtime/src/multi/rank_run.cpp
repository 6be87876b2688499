// One local rank's part of a sharded run, step by step (rank_run.hpp).
#include "rank_run.hpp"

#include <algorithm>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow::detail {
namespace {

bool uses_param(const Program& p, const Expr& param) {
  for (const Expr& e : p.params())
    if (same_node(e, param)) return true;
  return false;
}

bool uses_leaf(const Program& p, const Expr& leaf) {
  for (const Expr& e : p.inputs())
    if (same_node(e, leaf)) return true;
  return uses_param(p, leaf);
}

Value fold_host(const Monoid& m, const std::vector<Value>& in_rank_order) {
  Value acc = m.identity();
  for (const Value& v : in_rank_order) acc = evaluate_combine(m, acc, v);
  return acc;
}

// The carry's fields as parameters of the main program (a field it never reads is none).
void bind_carry(Bindings& main, const Program& p, const std::vector<Expr>& params, const Value& carry) {
  std::vector<Value> fields;
  flatten_value(carry, fields);
  for (std::size_t f = 0; f < fields.size(); ++f)
    if (uses_param(p, params[f])) main.emplace_back(params[f], Binding(fields[f]));
}

}  // namespace

void RankRun::start() {
  const CachedPlan& c = s_->cached;
  const ShardPlan& plan = c.plan;
  base_.clear();
  for (const Expr& in : s_->program.inputs()) {
    bool table = false;
    for (const Expr& t : plan.tables) table = table || same_node(t, in);
    const ShardedBinding& b = *s_->checked.bound.at(in.get());
    for (const ShardPiece& p : b.pieces())
      if (p.rank == rank_ && !table) base_.emplace_back(in, Binding(p.bytes, in.type()));
  }
  // Gathers' tables bound to host arrays: whole on every rank, uploaded when their bytes
  // changed since the last run (TableCache).
  tables_.resize(plan.tables.size());
  table_item_.assign(plan.tables.size(), SIZE_MAX);
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const Expr& in = plan.tables[t];
    if (!s_->checked.bound.at(in.get())->is_replicated()) continue;
    TableCache& cache = c.tables[t];
    DeviceArray<std::byte>& d = cache.device[local_];
    if (cache.uploaded[local_] != cache.version) {
      if (d.size() != cache.bytes.size()) d = rt_.alloc<std::byte>(cache.bytes.size());
      if (!cache.bytes.empty()) d.upload(std::span<const std::byte>(cache.bytes));
      cache.uploaded[local_] = cache.version;
    }
    base_.emplace_back(in, Binding(DeviceBytes{d.data(), cache.bytes.size() / in.type().size(), in.type().size()}, in.type()));
  }
  for (const Expr& p : s_->program.params()) base_.emplace_back(p, Binding(s_->checked.bound.at(p.get())->scalar()));
  if (c.main_uses_offset)
    base_.emplace_back(plan.offset_param, Binding(Value(static_cast<long long>(s_->checked.layout.offset(rank_)))));
  if (c.main_uses_rank) base_.emplace_back(plan.rank_param, Binding(Value(static_cast<long long>(rank_))));
  if (c.main_uses_size)
    base_.emplace_back(plan.size_param, Binding(Value(static_cast<long long>(s_->checked.layout.size(rank_)))));
  if (c.main_uses_global_size)
    base_.emplace_back(plan.global_size_param,
                       Binding(Value(static_cast<long long>(s_->checked.layout.global_size()))));

  // Segmented ops: the offsets cut to this shard (and a scan's tail piece, for the
  // totals), uploaded when they changed since the last run (SegmentCache).
  main_ = base_;
  tails_.clear();
  seg_totals_.clear();
  for (std::size_t k = 0; k < plan.segs.size(); ++k) {
    const ShardSegmented& sg = plan.segs[k];
    SegmentCache& cache = c.segments[k];
    if (cache.uploaded[local_] != cache.version) {
      const std::vector<long long> local = split(k).local_offsets(rank_, sg.scan);
      DeviceArray<long long>& o = cache.offsets[local_];
      if (o.size() == local.size()) o.upload(std::span<const long long>(local));
      else o = rt_.upload(local);
      const std::array<long long, 2> tail = split(k).tail(rank_);
      if (cache.tails[local_].size() != 2) cache.tails[local_] = rt_.alloc<long long>(2);
      cache.tails[local_].upload(std::span<const long long>(tail));
      cache.uploaded[local_] = cache.version;
    }
    main_.emplace_back(sg.local_offsets, Binding(cache.offsets[local_]));
    if (!sg.scan) continue;
    tails_.emplace_back(sg.tail_offsets, Binding(cache.tails[local_]));
    seg_totals_.push_back(rt_.alloc<std::byte>(sg.monoid.type().size()));
    tails_.emplace_back(sg.total, Binding(DeviceBytes{seg_totals_.back().data(), 1, sg.monoid.type().size()},
                                          sg.monoid.type()));
    main_.emplace_back(sg.head_end, Binding(Value(split(k).head_end(rank_))));
  }
  // Scans: every shard's totals first (queued; gathered in the next step).
  titems_.clear();
  runs_.clear();
  mine_.clear();
  if (c.totals) {
    Bindings tb = tails_;
    for (const auto& [e, b] : base_)
      if (uses_leaf(*c.totals, e)) tb.emplace_back(e, b);
    mine_ = rt_.run_async(*c.totals, tb);
    for (std::size_t sc = 0; sc < plan.scans.size(); ++sc) titems_.push_back(scalar_item(mine_[sc]));
    for (const DeviceArray<std::byte>& t : seg_totals_) titems_.push_back(device_item(t.data(), t.size()));
    for (const ShardKeyScan& ks : plan.keyscans)
      runs_.push_back(keyscan_items(mine_[ks.totals_at], mine_[ks.totals_at + 1], mine_[ks.totals_at + 2], titems_));
  }
  // Shifts: the shard's end elements of each shifted input, gathered with the totals.
  halo_at_ = titems_.size();
  for (const ShardHalo& h : plan.halos) {
    const ShardedBinding& b = *s_->checked.bound.at(h.input.get());
    for (const ShardPiece& p : b.pieces())
      if (p.rank == rank_) titems_.push_back(halo_item(rt_, h, p.bytes));
  }
  // Gathers' tables bound to sharded arrays: every shard, padded to the largest.
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const ShardedBinding& b = *s_->checked.bound.at(plan.tables[t].get());
    if (!b.is_array()) continue;
    for (const ShardPiece& p : b.pieces())
      if (p.rank == rank_) {
        table_item_[t] = titems_.size();
        titems_.push_back(table_item(rt_, b.layout(), plan.tables[t].type().size(), p.bytes));
      }
  }
}

void RankRun::gather_totals() {
  if (s_->cached.exchange_first)
    totals_all_ = gather(rt_, comm_, titems_, {}, s_->cached.carry_bytes, buf_.send, buf_.totals);
}

void RankRun::main_pass() {
  const CachedPlan& c = s_->cached;
  const ShardPlan& plan = c.plan;
  const std::size_t outputs = s_->program.outputs().size();
  if (c.exchange_first) {
    // Carries folded on the host (tuple scans, segmented and by-key scans): the totals
    // come back first (a wait on this rank's stream).
    bool sharded_tables = false;
    for (std::size_t item : table_item_) sharded_tables = sharded_tables || item != SIZE_MAX;
    // Shifts whose every shard holds |k| elements read the neighbour's part of the gathered
    // block where it lies in device memory; shorter shards need a table made on the host.
    const bool halo_on_device = halos_on_device(plan.halos, s_->checked.layout);
    if (c.host_carry || sharded_tables || (!plan.halos.empty() && !halo_on_device))
      totals_all_.finish(rt_, buf_.totals, buf_.pinned_totals);
    const Gathered& all = totals_all_;
    for (std::size_t k = 0, sc = plan.scans.size(); k < plan.segs.size(); ++k) {
      const ShardSegmented& sg = plan.segs[k];
      if (!sg.scan) continue;
      std::vector<Value> before;
      for (int q : split(k).tails_before(rank_)) before.push_back(all.value(sg.monoid.type(), sc, titems_[sc].bytes, q));
      bind_carry(main_, plan.main, sg.carry_params, fold_host(sg.monoid, before));
      ++sc;
    }
    for (std::size_t j = 0; j < plan.keyscans.size(); ++j) {
      const ShardKeyScan& ks = plan.keyscans[j];
      const KeyScanCarry kc = keyscan_carry(rank_, ks.monoid, runs_[j], all, titems_, mine_[ks.totals_at].type());
      bind_carry(main_, plan.main, ks.carry_params, kc.carry);
      main_.emplace_back(ks.head_end, Binding(Value(kc.head_end)));
    }
    for (std::size_t sc = 0, at = all.extra_at; sc < plan.scans.size(); ++sc) {
      const ShardScan& scan = plan.scans[sc];
      if (const std::optional<DeviceFold>& f = c.carry_folds[sc]) {
        // On the device, queued behind the gather (whose group has ended): the totals
        // scanned into every rank's carry; the main program reads entry `rank`.
        const Type& t = scan.monoid.type();
        const auto w = static_cast<std::size_t>(s_->world);
        const CUdeviceptr base = buf_.totals.data();
        const DeviceBytes carries{base + at, w, t.size()};
        (void)rt_.run_async(f->program, {{f->partials, Binding(DeviceBytes{base + all.block[sc], w, t.size()}, t)},
                                         {f->folded, Binding(carries, t)}});
        main_.emplace_back(scan.carries, Binding(carries, t));
        at += aligned(t.size() * w);
        continue;
      }
      std::vector<Value> before;
      for (int q = 0; q < rank_; ++q) before.push_back(all.value(mine_[sc].type(), sc, titems_[sc].bytes, q));
      std::vector<Value> fields;
      flatten_value(fold_host(scan.monoid, before), fields);
      for (std::size_t f = 0; f < fields.size(); ++f)
        if (c.carry_used[sc][f]) main_.emplace_back(scan.carry_params[f], Binding(fields[f]));
    }
    // Shifts: the halo tables, made from the gathered end elements and uploaded. The wait
    // above (host_carry) has finished this rank's earlier kernels, so the tables they
    // read can be written over.
    halo_tables_.resize(plan.halos.size());
    for (std::size_t h = 0; h < plan.halos.size(); ++h) {
      const ShardHalo& hl = plan.halos[h];
      if (halo_on_device) {  // rank r - 1's last |k| (k < 0) or rank r + 1's first k, queued behind the gather
        const std::size_t elem = hl.input.type().size();
        const auto count = static_cast<std::size_t>(hl.k < 0 ? -static_cast<long long>(hl.k) : hl.k);
        const int q = std::clamp(hl.k < 0 ? rank_ - 1 : rank_ + 1, 0, s_->world - 1);  // none: never selected
        const CUdeviceptr at = buf_.totals.data() + all.block[halo_at_ + h] + static_cast<std::size_t>(q) * count * elem;
        main_.emplace_back(hl.table, Binding(DeviceBytes{at, count, elem}, hl.input.type()));
        continue;
      }
      const std::vector<std::byte> table = halo_table(hl, s_->checked.layout, rank_, all, halo_at_ + h);
      DeviceArray<std::byte>& d = halo_tables_[h];
      if (d.size() != table.size()) d = rt_.alloc<std::byte>(table.size());
      d.upload(std::span<const std::byte>(table));
      const std::size_t elem = hl.input.type().size();
      main_.emplace_back(hl.table, Binding(DeviceBytes{d.data(), table.size() / elem, elem}, hl.input.type()));
    }
    // Gathers' tables bound to sharded arrays: the gathered shards, concatenated.
    for (std::size_t t = 0; t < plan.tables.size(); ++t) {
      if (table_item_[t] == SIZE_MAX) continue;
      const Expr& in = plan.tables[t];
      const ShardLayout& layout = s_->checked.bound.at(in.get())->layout();
      const std::vector<std::byte> whole = table_whole(layout, in.type().size(), all, table_item_[t]);
      if (tables_[t].size() != whole.size()) tables_[t] = rt_.alloc<std::byte>(whole.size());
      if (!whole.empty()) tables_[t].upload(std::span<const std::byte>(whole));
      main_.emplace_back(in, Binding(DeviceBytes{tables_[t].data(), layout.global_size(), in.type().size()}, in.type()));
    }
  }

  // Arrays as long as the shard, histograms and segmented reductions go into memory of ours.
  out_.scalars.assign(outputs, Value());
  out_.pieces.assign(outputs, ShardedResult::Piece{});
  out_.keyed.clear();
  for (std::size_t o = 0; o < outputs; ++o) {
    const auto kind = plan.kinds[o];
    if (kind == ShardedOutput::Reduce || kind == ShardedOutput::Filter || kind == ShardedOutput::Keyed) continue;
    const Expr& e = plan.main.outputs()[o];
    const bool segs = kind == ShardedOutput::Segments;  // the head's slot, then the owned segments
    const std::size_t n = kind == ShardedOutput::Map ? s_->checked.layout.size(rank_)
                          : segs ? split(static_cast<std::size_t>(plan.seg_of[o])).owned(rank_) + 1
                                 : static_cast<std::size_t>(plan.bins[o]);
    auto memory = std::make_shared<DeviceArray<std::byte>>(rt_.alloc<std::byte>(n * e.type().size()));
    // Poisoned like the Runtime's own outputs (RuntimeOptions::poison), so that an
    // element no kernel wrote shows up.
    if (rt_.options().poison.value_or(false) && memory->size())
      memory->upload(std::vector<std::byte>(memory->size(), std::byte{0xff}));
    ShardedResult::Piece& piece = out_.pieces[o];
    piece.rank = rank_;
    piece.runtime = &rt_;
    piece.bytes = DeviceBytes{memory->data(), n, e.type().size()};
    piece.owner = memory;
    main_.emplace_back(e, Binding(piece.bytes, e.type()));
    if (segs) piece.bytes = DeviceBytes{memory->data() + e.type().size(), n - 1, e.type().size()};
  }
  // Queued, not waited for: the partials and counts stay on the device, and the
  // collectives of the next step follow the kernels on the same stream.
  results_ = rt_.run_async(plan.main, main_);

  // The combine's items: reduce partials, filter counts, segment heads, run ends.
  items_.clear();
  histos_.clear();
  item_of_.assign(outputs, 0);
  for (std::size_t o = 0; o < outputs; ++o) {
    if (plan.kinds[o] == ShardedOutput::Reduce) {
      item_of_[o] = items_.size();
      items_.push_back(scalar_item(results_[o]));
      items_.back().reduce = all_reduce_op(plan.monoids[o], results_[o].type());
      if (items_.back().reduce) items_.back().type = results_[o].type().scalar();
    } else if (plan.kinds[o] == ShardedOutput::Filter) {
      item_of_[o] = items_.size();
      items_.push_back(count_item(results_[o]));
    } else if (plan.kinds[o] == ShardedOutput::Segments) {  // the head's value
      item_of_[o] = items_.size();
      const std::size_t t = results_[o].type().size();
      items_.push_back(device_item(out_.pieces[o].bytes.ptr - t, t));
    } else if (plan.kinds[o] == ShardedOutput::Histogram) {
      histos_.push_back({out_.pieces[o].bytes, plan.main.outputs()[o].type().scalar()});
    }
  }
  keyed_.clear();  // reduce_by_key: the run counts (a wait), and the ends' keys and values
  for (const ShardKeyed& kd : plan.keyed) keyed_.push_back(keyed_items(results_[kd.keys], results_[kd.values], items_));
  extra_ = 0;
  for (std::size_t o = 0; o < outputs; ++o)
    if (c.folds[o]) extra_ += aligned(results_[o].type().size() * static_cast<std::size_t>(s_->world));
}

void RankRun::gather_main() { all_ = gather(rt_, comm_, items_, histos_, extra_, buf_.send, buf_.recv); }

// Scalar monoids fold on the device, in rank order (an inclusive scan over the world's
// partials, its last element the fold), queued behind the gather on the same stream and
// written next to the gathered values, so that one copy brings everything back.
void RankRun::fold() {
  const std::size_t outputs = s_->program.outputs().size();
  for (std::size_t o = 0, at = all_.extra_at; o < outputs; ++o) {
    const std::optional<DeviceFold>& f = s_->cached.folds[o];
    if (!f) continue;
    const Type& t = results_[o].type();
    const auto w = static_cast<std::size_t>(s_->world);
    const CUdeviceptr recv = buf_.recv.data();
    (void)rt_.run_async(f->program, {{f->partials, Binding(DeviceBytes{recv + all_.block[item_of_[o]], w, t.size()}, t)},
                                     {f->folded, Binding(DeviceBytes{recv + at, w, t.size()}, t)}});
    at += aligned(t.size() * w);
  }
}

void RankRun::combine(const Gathered& all) {
  const ShardPlan& plan = s_->cached.plan;
  const std::size_t outputs = s_->program.outputs().size();
  const int world = s_->world;
  out_.filter_sizes.assign(outputs * static_cast<std::size_t>(world), 0);
  for (std::size_t j = 0; j < plan.keyed.size(); ++j)
    out_.keyed.push_back(keyed_combine(rt_, rank_, world, plan.keyed[j].monoid, keyed_[j], all, items_,
                                       results_[plan.keyed[j].keys], results_[plan.keyed[j].values]));
  // The folded values: where the copied rank folded them (every rank folds at the same place).
  std::size_t at = all.extra_at;
  for (std::size_t o = 0; o < outputs; ++o) {
    const std::size_t k = item_of_[o];
    const auto kind = plan.kinds[o];
    if (kind == ShardedOutput::Reduce && (items_[k].reduce || world == 1)) {  // all-reduced, or one
      out_.scalars[o] = all.value(results_[o].type(), k, items_[k].bytes, 0);
    } else if (kind == ShardedOutput::Reduce && s_->cached.folds[o]) {
      const std::size_t t = results_[o].type().size();
      out_.scalars[o] = Value::from_bytes(results_[o].type(), all.host + at + (static_cast<std::size_t>(world) - 1) * t);
      at += aligned(t * static_cast<std::size_t>(world));
    } else if (kind == ShardedOutput::Reduce) {  // tuples: folded on the host
      std::vector<Value> partials;
      for (int q = 0; q < world; ++q) partials.push_back(all.value(results_[o].type(), k, items_[k].bytes, q));
      out_.scalars[o] = fold_host(plan.monoids[o], partials);
    } else if (kind == ShardedOutput::Filter) {
      for (int q = 0; q < world; ++q)
        out_.filter_sizes[o * static_cast<std::size_t>(world) + static_cast<std::size_t>(q)] =
            all.value(Type(ScalarType::U64), k, items_[k].bytes, q).as_uint();
      ShardedResult::Piece& piece = out_.pieces[o];
      piece.rank = rank_;
      piece.runtime = &rt_;
      piece.result = std::make_shared<Result>(std::move(results_[o]));
    } else if (kind == ShardedOutput::Keyed) {  // less a first run held before
      const std::size_t drop = out_.keyed[static_cast<std::size_t>(plan.keyed_of[o])].drop ? 1 : 0;
      const std::size_t t = results_[o].type().size();
      ShardedResult::Piece& piece = out_.pieces[o];
      piece.rank = rank_;
      piece.runtime = &rt_;
      const std::size_t n = keyed_[static_cast<std::size_t>(plan.keyed_of[o])].count;
      piece.bytes = DeviceBytes{n ? results_[o].device_array() + drop * t : 0, n - (n ? drop : 0), t};
      piece.owner = std::make_shared<Result>(std::move(results_[o]));
    } else if (kind == ShardedOutput::Segments) {
      // The last owned segment, cut by the shard's end: folded with the heads of the
      // ranks after it, in rank order.
      const SegmentSplit& sp = split(static_cast<std::size_t>(plan.seg_of[o]));
      const Type& t = results_[o].type();
      std::vector<Value> parts;
      for (int q : sp.heads_after(rank_))
        if (sp.head_end(q) > 0) parts.push_back(all.value(t, k, items_[k].bytes, q));
      if (!parts.empty())
        fold_on_device(rt_, out_.pieces[o].bytes.ptr + (out_.pieces[o].bytes.count - 1) * t.size(),
                       plan.segs[static_cast<std::size_t>(plan.seg_of[o])].monoid, parts);
    }
  }
  results_.clear();
  mine_.clear();
}

}  // namespace fuseflow::detail
