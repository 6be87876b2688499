// ShardedRuntime: runs a program over sharded inputs on every local rank (a thread each
// when this process drives several), exchanging what the combine needs through the
// communicator: scan totals (and the segmented and by-key scans' tail pieces and run
// ends) before the main pass; reduce partials (integer sums/min/max all-reduced), filter
// counts, segment heads and reduce_by_key's run ends after it; histogram counts all-reduced
// in place. Segments are split over the shards in segments.cpp, runs in keyed.cpp. See
// sharded.hpp for what each op does. The rewrite of a program for shards is made once per
// program and cached.
#include "fuseflow/runtime/sharded.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "check_bindings.hpp"
#include "gather.hpp"
#include "keyed.hpp"
#include "rank_pool.hpp"
#include "segments.hpp"
#include "shard_plan.hpp"

namespace fuseflow {

using detail::GatherItem;
using detail::Gathered;
using detail::Checked;
using detail::Histo;
using detail::aligned;
using detail::count_item;
using detail::scalar_item;

ShardLayout ShardLayout::even(std::size_t n, int world) {
  if (world < 1) throw GraphError("ShardLayout::even: a world needs at least one rank, not " + std::to_string(world));
  ShardLayout l;
  const auto w = static_cast<std::size_t>(world);
  l.offsets.push_back(0);
  for (std::size_t r = 0; r < w; ++r) l.offsets.push_back(l.offsets.back() + n / w + (r < n % w ? 1 : 0));
  return l;
}

ShardLayout ShardLayout::from_sizes(const std::vector<std::size_t>& sizes) {
  ShardLayout l;
  l.offsets.push_back(0);
  for (std::size_t s : sizes) l.offsets.push_back(l.offsets.back() + s);
  return l;
}

// A program's sharded rewrite and what a run needs to know of it, made once per program
// (the caller's Program is kept, so its nodes' addresses stay unique while cached).
// The device fold of a reduction's gathered partials (scalar monoids): partials bound to
// the gathered block, the inclusive scan bound to memory next to it.
struct DeviceFold {
  Expr partials;
  Expr folded;
  Program program;
};

struct CachedPlan {
  Program program;
  detail::ShardPlan plan;
  std::optional<Program> totals;            // the scans' per-shard totals (none: no scan)
  bool main_uses_offset = false;
  std::vector<std::vector<bool>> carry_used;  // per scan, per carry field: main uses it
  std::vector<std::optional<DeviceFold>> folds;  // per output: a Reduce folded on the device
};

struct ShardedRuntime::State {
  std::vector<std::unique_ptr<Runtime>> runtimes;
  std::vector<std::unique_ptr<Communicator>> comms;
  int world = 0;
  // Per local rank: the device buffers of the last exchange, kept for the next.
  std::vector<DeviceArray<std::byte>> send, recv;
  std::vector<detail::PinnedHost> pinned;  // per local rank: where the combine's copy lands
  std::unique_ptr<detail::RankPool> pool;
  std::mutex plans_mutex;
  std::map<std::vector<const ExprNode*>, std::shared_ptr<const CachedPlan>> plans;
  // FUSEFLOW_SHARDED_FOLD=host folds every reduction's partials on the host (after the
  // same one copy) instead of on the device: for comparing the two.
  bool device_fold = true;

  template <class F>
  void for_each_local(F&& fn) {
    if (!pool)
      pool = std::make_unique<detail::RankPool>(
          runtimes.size(), [](void* self, std::size_t i) { abort_world(*static_cast<State*>(self)->comms[i]); }, this);
    pool->run(fn);
  }
};

namespace {

// The context of a Runtime current on this thread for a scope (the in-process
// communicator's copies and NCCL need one).
class ContextScope {
 public:
  explicit ContextScope(CUcontext c) {
    CUresult r = detail::driver().cuCtxPushCurrent(c);
    if (r != CUDA_SUCCESS) throw CudaError("cuCtxPushCurrent", r, detail::cuda_error_name(r), "sharded run");
  }
  ~ContextScope() {
    CUcontext ignored = nullptr;
    detail::driver().cuCtxPopCurrent(&ignored);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

// Every rank's `mine` (the same size on all), gathered in rank order, through device memory.
// `send` and `recv` are this rank's buffers, kept from one exchange to the next.
std::vector<std::byte> exchange(Runtime& rt, Communicator& comm, const std::vector<std::byte>& mine,
                                DeviceArray<std::byte>& send, DeviceArray<std::byte>& recv) {
  const std::size_t bytes = mine.size();
  std::vector<std::byte> all(bytes * static_cast<std::size_t>(comm.size()));
  if (bytes == 0) return all;
  if (send.size() != bytes) send = rt.alloc<std::byte>(bytes);
  if (recv.size() != all.size()) recv = rt.alloc<std::byte>(all.size());
  send.upload(std::span<const std::byte>(mine));
  comm.all_gather(send.data(), recv.data(), bytes, rt.stream());
  recv.download(std::span<std::byte>(all));
  return all;
}

void append(std::vector<std::byte>& buf, const Value& v) {
  const std::size_t at = buf.size();
  buf.resize(at + v.type().size());
  v.to_bytes(buf.data() + at);
}

// Rank r's values of `types` in a gathered buffer laid out as `append` wrote them.
std::vector<Value> values_of(const std::vector<std::byte>& all, std::size_t per_rank, int rank,
                             const std::vector<Type>& types) {
  std::vector<Value> out;
  std::size_t at = per_rank * static_cast<std::size_t>(rank);
  for (const Type& t : types) {
    out.push_back(Value::from_bytes(t, all.data() + at));
    at += t.size();
  }
  return out;
}

}  // namespace

ShardedRuntime::ShardedRuntime(std::vector<std::unique_ptr<Runtime>> runtimes,
                               std::vector<std::unique_ptr<Communicator>> comms)
    : state_(std::make_unique<State>()) {
  if (runtimes.empty() || runtimes.size() != comms.size())
    throw GraphError("ShardedRuntime: needs one communicator per runtime, and at least one (got " +
                     std::to_string(runtimes.size()) + " runtimes, " + std::to_string(comms.size()) + " communicators)");
  state_->world = comms[0]->size();
  for (const auto& c : comms)
    if (c->size() != state_->world)
      throw GraphError("ShardedRuntime: the communicators belong to worlds of different sizes");
  state_->runtimes = std::move(runtimes);
  state_->comms = std::move(comms);
  state_->send.resize(state_->runtimes.size());
  if (const std::optional<bool> fold = read_sharded_environment().device_fold) state_->device_fold = *fold;
  state_->recv.resize(state_->runtimes.size());
  state_->pinned = std::vector<detail::PinnedHost>(state_->runtimes.size());
}
ShardedRuntime::~ShardedRuntime() = default;
ShardedRuntime::ShardedRuntime(ShardedRuntime&&) noexcept = default;
ShardedRuntime& ShardedRuntime::operator=(ShardedRuntime&&) noexcept = default;

ShardedRuntime ShardedRuntime::in_process(int world, std::vector<int> devices, RuntimeOptions options) {
  auto comms = thread_communicators(world);
  int count = 0;
  if (devices.empty()) {
    const CUresult r = detail::driver().cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count < 1) throw CudaError("cuDeviceGetCount", r, detail::cuda_error_name(r), "no device");
  }
  std::vector<std::unique_ptr<Runtime>> runtimes;
  for (int r = 0; r < world; ++r) {
    options.device = devices.empty() ? r % count : devices.at(static_cast<std::size_t>(r));
    runtimes.push_back(std::make_unique<Runtime>(options));
  }
  return ShardedRuntime(std::move(runtimes), std::move(comms));
}

ShardedRuntime ShardedRuntime::nccl_all(std::vector<int> devices, RuntimeOptions options) {
  disable_nvlink_multicast();
  if (!nccl_available()) throw Error("fuseflow: ShardedRuntime::nccl_all: " + nccl_load_error());
  if (devices.empty()) {
    int count = 0;
    const CUresult r = detail::driver().cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) throw CudaError("cuDeviceGetCount", r, detail::cuda_error_name(r), "no device");
    for (int d = 0; d < count; ++d) devices.push_back(d);
  }
  std::vector<std::unique_ptr<Runtime>> runtimes;
  std::vector<Runtime*> raw;
  for (int d : devices) {
    options.device = d;
    runtimes.push_back(std::make_unique<Runtime>(options));
    raw.push_back(runtimes.back().get());
  }
  auto comms = nccl_communicators(raw);
  return ShardedRuntime(std::move(runtimes), std::move(comms));
}

ShardedRuntime ShardedRuntime::nccl_rank(const NcclId& id, int rank, int world, int device, RuntimeOptions options) {
  disable_nvlink_multicast();
  if (!nccl_available()) throw Error("fuseflow: ShardedRuntime::nccl_rank: " + nccl_load_error());
  options.device = device;
  std::vector<std::unique_ptr<Runtime>> runtimes;
  runtimes.push_back(std::make_unique<Runtime>(options));
  std::vector<std::unique_ptr<Communicator>> comms;
  comms.push_back(nccl_communicator(id, rank, world, *runtimes[0]));
  return ShardedRuntime(std::move(runtimes), std::move(comms));
}

int ShardedRuntime::world_size() const { return state_->world; }
std::size_t ShardedRuntime::local_count() const { return state_->runtimes.size(); }
int ShardedRuntime::local_rank(std::size_t i) const { return state_->comms.at(i)->rank(); }
Runtime& ShardedRuntime::runtime(std::size_t i) { return *state_->runtimes.at(i); }
Communicator& ShardedRuntime::communicator(std::size_t i) { return *state_->comms.at(i); }

ShardLayout ShardedRuntime::agree_layout(const std::vector<DeviceBytes>& local, const char* who) {
  if (local.size() != local_count())
    throw GraphError(std::string("ShardedRuntime::") + who + ": needs one shard per local rank (" +
                     std::to_string(local_count()) + "), got " + std::to_string(local.size()));
  std::vector<ShardLayout> got(local_count());
  state_->for_each_local([&](std::size_t i) {
    ContextScope scope(runtime(i).context());
    std::vector<std::byte> mine;
    append(mine, Value(static_cast<unsigned long long>(local[i].count)));
    std::vector<std::byte> all = exchange(runtime(i), communicator(i), mine, state_->send[i], state_->recv[i]);
    std::vector<std::size_t> sizes;
    for (int r = 0; r < world_size(); ++r)
      sizes.push_back(values_of(all, mine.size(), r, {Type(ScalarType::U64)})[0].as_uint());
    got[i] = ShardLayout::from_sizes(sizes);
  });
  return got[0];
}

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

Value fold(const Monoid& m, const std::vector<Value>& in_rank_order) {
  Value acc = m.identity();
  for (const Value& v : in_rank_order) acc = evaluate_combine(m, acc, v);
  return acc;
}

// What one rank produced: scalars (combined), and per output its piece.
struct RankOutput {
  std::vector<Value> scalars;                 // per output (Reduce)
  std::vector<ShardedResult::Piece> pieces;   // per output (arrays)
  std::vector<std::size_t> filter_sizes;      // per output (Filter): every rank's survivors
  std::vector<detail::KeyedHeld> keyed;        // per reduce_by_key: the runs every rank holds
};

}  // namespace

std::vector<ShardedResult> ShardedRuntime::run(const Program& program, const ShardedBindings& bindings) {
  std::shared_ptr<const CachedPlan> cached;
  {
    std::vector<const ExprNode*> key;
    for (const Expr& o : program.outputs()) key.push_back(o.get());
    std::lock_guard lock(state_->plans_mutex);
    auto it = state_->plans.find(key);
    if (it != state_->plans.end()) {
      cached = it->second;
    } else {
      auto made = std::make_shared<CachedPlan>(CachedPlan{program, detail::plan_sharded(program), std::nullopt, false, {}, {}});
      const detail::ShardPlan& p = made->plan;
      if (!p.totals.empty()) made->totals.emplace(p.totals);
      made->main_uses_offset = uses_param(p.main, p.offset_param);
      for (const detail::ShardScan& sc : p.scans) {
        std::vector<bool> used;
        for (const Expr& c : sc.carry_params) used.push_back(uses_param(p.main, c));
        made->carry_used.push_back(std::move(used));
      }
      made->folds.resize(p.kinds.size());
      for (std::size_t o = 0; o < p.kinds.size(); ++o) {
        const Type& t = p.main.outputs()[o].type();
        if (p.kinds[o] != detail::ShardedOutput::Reduce || !t.is_scalar() || !state_->device_fold) continue;
        if (detail::all_reduce_op(p.monoids[o], t)) continue;  // all-reduced: nothing to fold
        if (state_->world == 1) continue;                      // one partial: it is the result
        Expr partials = Expr::input("ff_rank_partials", t);
        Expr folded = scan(partials, p.monoids[o], ScanKind::Inclusive);
        made->folds[o].emplace(DeviceFold{partials, folded, Program(folded)});
      }
      if (state_->plans.size() >= 64) state_->plans.clear();  // a bound, not an LRU: programs are few
      state_->plans.emplace(std::move(key), made);
      cached = std::move(made);
    }
  }
  const detail::ShardPlan& plan = cached->plan;
  std::vector<std::pair<int, Runtime*>> local;
  for (std::size_t i = 0; i < local_count(); ++i) local.emplace_back(local_rank(i), &runtime(i));
  const Checked checked = detail::check_sharded_bindings(program, bindings, world_size(), local, plan.segs);
  const std::size_t outputs = program.outputs().size();
  const int world = world_size();
  // The segmented ops' global offsets, checked, and how their segments lie over the shards.
  std::vector<detail::SegmentSplit> splits;
  for (const detail::ShardSegmented& sg : plan.segs) {
    const HostArray& o = checked.bound.at(sg.offsets.get())->host();
    splits.emplace_back(segment_bounds(sg.scan ? "segmented_scan" : "segmented_reduce", o.type().scalar(), o.data(),
                                       o.size(), checked.layout.global_size()),
                        checked.layout);
  }

  std::vector<RankOutput> per_local(local_count());
  state_->for_each_local([&](std::size_t li) {
    Runtime& rt = runtime(li);
    Communicator& comm = communicator(li);
    const int rank = comm.rank();
    ContextScope scope(rt.context());
    Bindings base;
    for (const Expr& in : program.inputs()) {
      const ShardedBinding& b = *checked.bound.at(in.get());
      for (const ShardPiece& p : b.pieces())
        if (p.rank == rank) base.emplace_back(in, Binding(p.bytes, in.type()));
    }
    for (const Expr& p : program.params()) base.emplace_back(p, Binding(checked.bound.at(p.get())->scalar()));
    const auto offset = static_cast<long long>(checked.layout.offset(rank));
    if (cached->main_uses_offset) base.emplace_back(plan.offset_param, Binding(Value(offset)));

    // Segmented ops: the offsets cut to this shard (and a scan's tail piece, for the totals).
    Bindings main = base;
    std::vector<DeviceArray<long long>> seg_memory;
    std::vector<DeviceArray<std::byte>> seg_totals;
    Bindings tails;
    for (std::size_t k = 0; k < plan.segs.size(); ++k) {
      const detail::ShardSegmented& sg = plan.segs[k];
      seg_memory.push_back(rt.upload(splits[k].local_offsets(rank, sg.scan)));
      main.emplace_back(sg.local_offsets, Binding(seg_memory.back()));
      if (!sg.scan) continue;
      const std::array<long long, 2> tail = splits[k].tail(rank);
      seg_memory.push_back(rt.upload(std::span<const long long>(tail)));
      tails.emplace_back(sg.tail_offsets, Binding(seg_memory.back()));
      seg_totals.push_back(rt.alloc<std::byte>(sg.monoid.type().size()));
      tails.emplace_back(sg.total, Binding(DeviceBytes{seg_totals.back().data(), 1, sg.monoid.type().size()},
                                          sg.monoid.type()));
      main.emplace_back(sg.head_end, Binding(Value(splits[k].head_end(rank))));
    }
    // Scans: every shard's totals, gathered from the device, then this rank's carry (the
    // ranks before it, folded in order on the host: the carry is a parameter of the scan).
    if (cached->totals) {
      const Program& totals = *cached->totals;
      Bindings tb = tails;
      for (const auto& [e, b] : base)
        if (uses_leaf(totals, e)) tb.emplace_back(e, b);
      std::vector<Result> mine = rt.run_async(totals, tb);
      std::vector<GatherItem> items;
      for (std::size_t s = 0; s < plan.scans.size(); ++s) items.push_back(scalar_item(mine[s]));
      for (const DeviceArray<std::byte>& t : seg_totals) items.push_back(detail::device_item(t.data(), t.size()));
      std::vector<detail::KeyedRank> runs;
      for (const detail::ShardKeyScan& ks : plan.keyscans)
        runs.push_back(detail::keyscan_items(mine[ks.totals_at], mine[ks.totals_at + 1], mine[ks.totals_at + 2], items));
      Gathered all = detail::gather(rt, comm, items, {}, 0, state_->send[li], state_->recv[li]);
      all.finish(rt, state_->recv[li], state_->pinned[li]);
      for (std::size_t k = 0, s = plan.scans.size(); k < plan.segs.size(); ++k) {
        const detail::ShardSegmented& sg = plan.segs[k];
        if (!sg.scan) continue;
        std::vector<Value> before;
        for (int q : splits[k].tails_before(rank)) before.push_back(all.value(sg.monoid.type(), s, items[s].bytes, q));
        std::vector<Value> fields;
        detail::flatten_value(fold(sg.monoid, before), fields);
        for (std::size_t f = 0; f < fields.size(); ++f)  // (a field the combine never reads is not a parameter)
          if (uses_param(plan.main, sg.carry_params[f])) main.emplace_back(sg.carry_params[f], Binding(fields[f]));
        ++s;
      }
      for (std::size_t j = 0; j < plan.keyscans.size(); ++j) {
        const detail::ShardKeyScan& ks = plan.keyscans[j];
        const detail::KeyScanCarry c =
            detail::keyscan_carry(rank, ks.monoid, runs[j], all, items, mine[ks.totals_at].type());
        std::vector<Value> fields;
        detail::flatten_value(c.carry, fields);
        for (std::size_t f = 0; f < fields.size(); ++f)  // (a field the combine never reads is not a parameter)
          if (uses_param(plan.main, ks.carry_params[f])) main.emplace_back(ks.carry_params[f], Binding(fields[f]));
        main.emplace_back(ks.head_end, Binding(Value(c.head_end)));
      }
      for (std::size_t s = 0; s < plan.scans.size(); ++s) {
        std::vector<Value> before;
        for (int q = 0; q < rank; ++q) before.push_back(all.value(mine[s].type(), s, items[s].bytes, q));
        std::vector<Value> fields;
        detail::flatten_value(fold(plan.scans[s].monoid, before), fields);
        for (std::size_t f = 0; f < fields.size(); ++f)
          if (cached->carry_used[s][f]) main.emplace_back(plan.scans[s].carry_params[f], Binding(fields[f]));
      }
    }

    // Arrays as long as the shard, histograms and segmented reductions go into memory of ours.
    RankOutput& out = per_local[li];
    out.scalars.resize(outputs);
    out.pieces.resize(outputs);
    for (std::size_t o = 0; o < outputs; ++o) {
      const auto kind = plan.kinds[o];
      if (kind == detail::ShardedOutput::Reduce || kind == detail::ShardedOutput::Filter ||
          kind == detail::ShardedOutput::Keyed)
        continue;
      const Expr& e = plan.main.outputs()[o];
      const bool segs = kind == detail::ShardedOutput::Segments;  // the head's slot, then the owned segments
      const std::size_t n = kind == detail::ShardedOutput::Map ? checked.layout.size(rank)
                            : segs ? splits[static_cast<std::size_t>(plan.seg_of[o])].owned(rank) + 1
                                   : static_cast<std::size_t>(plan.bins[o]);
      auto memory = std::make_shared<DeviceArray<std::byte>>(rt.alloc<std::byte>(n * e.type().size()));
      // Poisoned like the Runtime's own outputs (RuntimeOptions::poison), so that an
      // element no kernel wrote shows up.
      if (rt.options().poison.value_or(false) && memory->size())
        memory->upload(std::vector<std::byte>(memory->size(), std::byte{0xff}));
      ShardedResult::Piece& piece = out.pieces[o];
      piece.rank = rank;
      piece.runtime = &rt;
      piece.bytes = DeviceBytes{memory->data(), n, e.type().size()};
      piece.owner = memory;
      main.emplace_back(e, Binding(piece.bytes, e.type()));
      if (segs) piece.bytes = DeviceBytes{memory->data() + e.type().size(), n - 1, e.type().size()};
    }
    // Queued, not waited for: the partials and counts stay on the device, and the
    // collectives below follow the kernels on the same stream.
    std::vector<Result> results = rt.run_async(plan.main, main);

    // The combine: reduce partials and filter counts gathered from the device in one
    // group (histograms all-reduced in it), then one copy to the host.
    std::vector<GatherItem> items;
    std::vector<Histo> histos;
    std::vector<std::size_t> item_of(outputs, 0);
    for (std::size_t o = 0; o < outputs; ++o) {
      if (plan.kinds[o] == detail::ShardedOutput::Reduce) {
        item_of[o] = items.size();
        items.push_back(scalar_item(results[o]));
        items.back().reduce = detail::all_reduce_op(plan.monoids[o], results[o].type());
        if (items.back().reduce) items.back().type = results[o].type().scalar();
      } else if (plan.kinds[o] == detail::ShardedOutput::Filter) {
        item_of[o] = items.size();
        items.push_back(count_item(results[o]));
      } else if (plan.kinds[o] == detail::ShardedOutput::Segments) {  // the head's value
        item_of[o] = items.size();
        const std::size_t t = results[o].type().size();
        items.push_back(detail::device_item(out.pieces[o].bytes.ptr - t, t));
      } else if (plan.kinds[o] == detail::ShardedOutput::Histogram) {
        histos.push_back({out.pieces[o].bytes, plan.main.outputs()[o].type().scalar()});
      }
    }
    std::vector<detail::KeyedRank> keyed;  // reduce_by_key: the run counts, and the ends' keys and values
    for (const detail::ShardKeyed& kd : plan.keyed)
      keyed.push_back(detail::keyed_items(results[kd.keys], results[kd.values], items));
    // Scalar monoids fold on the device, in rank order (an inclusive scan over the world's
    // partials, its last element the fold), queued behind the gather on the same stream
    // and written next to the gathered values, so that one copy brings everything back.
    std::size_t extra = 0;
    for (std::size_t o = 0; o < outputs; ++o)
      if (cached->folds[o]) extra += aligned(results[o].type().size() * static_cast<std::size_t>(world));
    Gathered all = detail::gather(rt, comm, items, histos, extra, state_->send[li], state_->recv[li]);
    std::vector<std::size_t> folded_at(outputs, 0);
    for (std::size_t o = 0, at = all.extra_at; o < outputs; ++o) {
      const std::optional<DeviceFold>& f = cached->folds[o];
      if (!f) continue;
      const Type& t = results[o].type();
      const auto w = static_cast<std::size_t>(world);
      const CUdeviceptr recv = state_->recv[li].data();
      (void)rt.run_async(f->program, {{f->partials, Binding(DeviceBytes{recv + all.block[item_of[o]], w, t.size()}, t)},
                                      {f->folded, Binding(DeviceBytes{recv + at, w, t.size()}, t)}});
      folded_at[o] = at + (w - 1) * t.size();
      at += aligned(t.size() * w);
    }
    all.finish(rt, state_->recv[li], state_->pinned[li]);
    out.filter_sizes.assign(outputs * static_cast<std::size_t>(world), 0);
    for (std::size_t j = 0; j < plan.keyed.size(); ++j)
      out.keyed.push_back(detail::keyed_combine(rt, rank, world, plan.keyed[j].monoid, keyed[j], all, items,
                                                results[plan.keyed[j].keys], results[plan.keyed[j].values]));
    for (std::size_t o = 0; o < outputs; ++o) {
      const std::size_t k = item_of[o];
      if (plan.kinds[o] == detail::ShardedOutput::Reduce && (items[k].reduce || world == 1)) {  // all-reduced, or one
        out.scalars[o] = all.value(results[o].type(), k, items[k].bytes, 0);
      } else if (plan.kinds[o] == detail::ShardedOutput::Reduce && cached->folds[o]) {
        out.scalars[o] = Value::from_bytes(results[o].type(), all.host.data() + folded_at[o]);
      } else if (plan.kinds[o] == detail::ShardedOutput::Reduce) {  // tuples: folded on the host
        std::vector<Value> partials;
        for (int q = 0; q < world; ++q) partials.push_back(all.value(results[o].type(), k, items[k].bytes, q));
        out.scalars[o] = fold(plan.monoids[o], partials);
      } else if (plan.kinds[o] == detail::ShardedOutput::Filter) {
        for (int q = 0; q < world; ++q)
          out.filter_sizes[o * static_cast<std::size_t>(world) + static_cast<std::size_t>(q)] =
              all.value(Type(ScalarType::U64), k, items[k].bytes, q).as_uint();
        ShardedResult::Piece& piece = out.pieces[o];
        piece.rank = rank;
        piece.runtime = &rt;
        piece.result = std::make_shared<Result>(std::move(results[o]));
      } else if (plan.kinds[o] == detail::ShardedOutput::Keyed) {  // less a first run held before
        const std::size_t drop = out.keyed[static_cast<std::size_t>(plan.keyed_of[o])].drop ? 1 : 0;
        const std::size_t t = results[o].type().size();
        ShardedResult::Piece& piece = out.pieces[o];
        piece.rank = rank;
        piece.runtime = &rt;
        const std::size_t n = keyed[static_cast<std::size_t>(plan.keyed_of[o])].count;
        piece.bytes = DeviceBytes{n ? results[o].device_array() + drop * t : 0, n - (n ? drop : 0), t};
        piece.owner = std::make_shared<Result>(std::move(results[o]));
      } else if (plan.kinds[o] == detail::ShardedOutput::Segments) {
        // The last owned segment, cut by the shard's end: folded with the heads of the
        // ranks after it, in rank order.
        const detail::SegmentSplit& split = splits[static_cast<std::size_t>(plan.seg_of[o])];
        const Type& t = results[o].type();
        std::vector<Value> parts;
        for (int q : split.heads_after(rank))
          if (split.head_end(q) > 0) parts.push_back(all.value(t, k, items[k].bytes, q));
        if (!parts.empty())
          detail::fold_on_device(rt, out.pieces[o].bytes.ptr + (out.pieces[o].bytes.count - 1) * t.size(),
                                 plan.segs[static_cast<std::size_t>(plan.seg_of[o])].monoid, parts);
      }
    }
  });

  std::vector<ShardedResult> out;
  for (std::size_t o = 0; o < outputs; ++o) {
    const Type& type = plan.main.outputs()[o].type();
    std::vector<ShardedResult::Piece> pieces;
    for (auto& r : per_local) pieces.push_back(std::move(r.pieces[o]));
    switch (plan.kinds[o]) {
      case detail::ShardedOutput::Reduce: out.emplace_back(per_local[0].scalars[o]); break;
      case detail::ShardedOutput::Map:
        out.emplace_back(ShardedResult::Kind::Sharded, type, checked.layout, std::move(pieces));
        break;
      case detail::ShardedOutput::Keyed: {
        const detail::KeyedHeld& held = per_local[0].keyed[static_cast<std::size_t>(plan.keyed_of[o])];
        out.emplace_back(ShardedResult::Kind::Sharded, type, ShardLayout::from_sizes(held.held), std::move(pieces));
        break;
      }
      case detail::ShardedOutput::Segments: {
        const detail::SegmentSplit& split = splits[static_cast<std::size_t>(plan.seg_of[o])];
        std::vector<std::size_t> sizes;
        for (int r = 0; r < world; ++r) sizes.push_back(split.owned(r));
        out.emplace_back(ShardedResult::Kind::Sharded, type, ShardLayout::from_sizes(sizes), std::move(pieces));
        break;
      }
      case detail::ShardedOutput::Filter: {
        const auto* sizes = per_local[0].filter_sizes.data() + o * static_cast<std::size_t>(world);
        out.emplace_back(ShardedResult::Kind::Sharded, type,
                         ShardLayout::from_sizes(std::vector<std::size_t>(sizes, sizes + world)), std::move(pieces));
        break;
      }
      case detail::ShardedOutput::Histogram:
        out.emplace_back(ShardedResult::Kind::Replicated, type,
                         ShardLayout::from_sizes(std::vector<std::size_t>(static_cast<std::size_t>(world),
                                                                          static_cast<std::size_t>(plan.bins[o]))),
                         std::move(pieces));
        break;
    }
  }
  return out;
}

}  // namespace fuseflow
