// ShardedRuntime: runs a program over sharded inputs on every local rank (a thread each
// when this process drives several), exchanging what the combine needs through the
// communicator: scan totals before the main pass, reduce partials and filter counts after
// it, histogram counts all-reduced in place. See sharded.hpp for what each op does. The
// rewrite of a program for shards is made once per program and cached.
#include "fuseflow/runtime/sharded.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "gather.hpp"
#include "rank_pool.hpp"
#include "shard_plan.hpp"

namespace fuseflow {

using detail::GatherItem;
using detail::Gathered;
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

std::string describe(const Expr& leaf) {
  return (leaf.kind() == ExprKind::Input ? "input '" : "parameter '") + leaf.node().name + "'";
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

struct Checked {
  ShardLayout layout;                       // the inputs' common layout
  std::map<const ExprNode*, const ShardedBinding*> bound;
};

// Every check before anything runs, the same on every rank: all inputs bound to sharded
// arrays of their type and of one layout over this world, parameters to scalars.
Checked check_sharded_bindings(const Program& program, const ShardedBindings& bindings, int world,
                               const std::vector<std::pair<int, Runtime*>>& local) {
  Checked c;
  for (const auto& [expr, b] : bindings) {
    if (expr.kind() != ExprKind::Input && expr.kind() != ExprKind::Param)
      throw GraphError("sharded run: only inputs and parameters can be bound, not " + to_string(expr));
    if (!c.bound.emplace(expr.get(), &b).second) throw GraphError("sharded run: " + describe(expr) + " is bound twice");
  }
  if (program.inputs().empty())
    throw GraphError("sharded run: the program has no input array, so there is nothing to shard");
  const Expr* first = nullptr;
  for (const Expr& in : program.inputs()) {
    auto it = c.bound.find(in.get());
    if (it == c.bound.end()) throw GraphError("sharded run: " + describe(in) + " is not bound");
    const ShardedBinding& b = *it->second;
    if (!b.is_array())
      throw GraphError("sharded run: " + describe(in) + " is bound to the scalar " + b.scalar().to_string() +
                       "; an input of a sharded run must be a ShardedArray");
    if (b.type() != in.type())
      throw GraphError("sharded run: " + describe(in) + " holds " + in.type().name() +
                       " but was bound to a sharded array of " + b.type().name());
    if (b.layout().world() != world)
      throw GraphError("sharded run: " + describe(in) + " is sharded over " + std::to_string(b.layout().world()) +
                       " ranks, but this runtime's world has " + std::to_string(world));
    if (!first) {
      first = &in;
      c.layout = b.layout();
    } else if (b.layout() != c.layout) {
      throw GraphError("sharded run: " + describe(in) + " (" + std::to_string(b.layout().global_size()) +
                       " elements) is not sharded like " + describe(*first) + " (" +
                       std::to_string(c.layout.global_size()) +
                       " elements); the inputs of a sharded run need the same length and the same shards");
    }
    for (const auto& [rank, rt] : local) {
      bool found = false;
      for (const ShardPiece& p : b.pieces())
        if (p.rank == rank) {
          if (p.runtime != rt)
            throw GraphError("sharded run: " + describe(in) + "'s shard of rank " + std::to_string(rank) +
                             " lives on another Runtime than this ShardedRuntime's");
          found = true;
        }
      if (!found)
        throw GraphError("sharded run: " + describe(in) + " has no shard of rank " + std::to_string(rank) +
                         " in this process");
    }
  }
  for (const Expr& p : program.params()) {
    auto it = c.bound.find(p.get());
    if (it == c.bound.end()) throw GraphError("sharded run: " + describe(p) + " is not bound");
    if (it->second->is_array()) throw GraphError("sharded run: " + describe(p) + " is a scalar but was bound to an array");
  }
  for (const auto& [expr, b] : bindings) {
    bool used = false;
    for (const Expr& e : program.inputs()) used = used || same_node(e, expr);
    for (const Expr& e : program.params()) used = used || same_node(e, expr);
    if (!used) throw GraphError("sharded run: " + describe(expr) + " is bound but not used by this program");
  }
  return c;
}

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
  const Checked checked = check_sharded_bindings(program, bindings, world_size(), local);
  const std::size_t outputs = program.outputs().size();
  const int world = world_size();

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

    // Scans: every shard's totals, gathered from the device, then this rank's carry (the
    // ranks before it, folded in order on the host: the carry is a parameter of the scan).
    Bindings main = base;
    if (cached->totals) {
      const Program& totals = *cached->totals;
      Bindings tb;
      for (const auto& [e, b] : base)
        if (uses_leaf(totals, e)) tb.emplace_back(e, b);
      std::vector<Result> mine = rt.run_async(totals, tb);
      std::vector<GatherItem> items;
      for (const Result& r : mine) items.push_back(scalar_item(r));
      Gathered all = detail::gather(rt, comm, items, {}, 0, state_->send[li], state_->recv[li]);
      all.finish(rt, state_->recv[li]);
      for (std::size_t s = 0; s < plan.scans.size(); ++s) {
        std::vector<Value> before;
        for (int q = 0; q < rank; ++q) before.push_back(all.value(mine[s].type(), s, items[s].bytes, q));
        std::vector<Value> fields;
        detail::flatten_value(fold(plan.scans[s].monoid, before), fields);
        for (std::size_t f = 0; f < fields.size(); ++f)
          if (cached->carry_used[s][f]) main.emplace_back(plan.scans[s].carry_params[f], Binding(fields[f]));
      }
    }

    // Arrays as long as the shard, and histograms, go into memory of ours.
    RankOutput& out = per_local[li];
    out.scalars.resize(outputs);
    out.pieces.resize(outputs);
    for (std::size_t o = 0; o < outputs; ++o) {
      const auto kind = plan.kinds[o];
      if (kind != detail::ShardedOutput::Map && kind != detail::ShardedOutput::Histogram) continue;
      const Expr& e = plan.main.outputs()[o];
      const std::size_t n = kind == detail::ShardedOutput::Map ? checked.layout.size(rank)
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
      } else if (plan.kinds[o] == detail::ShardedOutput::Filter) {
        item_of[o] = items.size();
        items.push_back(count_item(results[o]));
      } else if (plan.kinds[o] == detail::ShardedOutput::Histogram) {
        histos.push_back({out.pieces[o].bytes, plan.main.outputs()[o].type().scalar()});
      }
    }
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
    all.finish(rt, state_->recv[li]);
    out.filter_sizes.assign(outputs * static_cast<std::size_t>(world), 0);
    for (std::size_t o = 0; o < outputs; ++o) {
      const std::size_t k = item_of[o];
      if (plan.kinds[o] == detail::ShardedOutput::Reduce && cached->folds[o]) {
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
