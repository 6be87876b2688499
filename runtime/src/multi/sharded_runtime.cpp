// ShardedRuntime: runs a program over sharded inputs on every local rank, exchanging what
// the combine needs through the communicator: scan totals (and the segmented and by-key
// scans' tail pieces and run ends) before the main pass; reduce partials (integer
// sums/min/max all-reduced), filter counts, segment heads and reduce_by_key's run ends
// after it; histogram counts all-reduced in place. Each rank's part is a RankRun
// (rank_run.hpp), in steps that stop at the collectives. By default (NCCL and the
// blocking in-process communicator) a thread per local rank runs its steps in a row
// (rank_pool.hpp). With set_rank_threads(false) over NCCL, and with the grouped in-process
// communicator, the calling thread issues every local rank's steps in turn, each
// collective step of all ranks in one group, and waits once at the end, for the first
// rank's copy only (every rank gathered the same bytes); the other ranks' streams stay
// ordered for later calls. Segments are split over the shards in
// segments.cpp, runs in keyed.cpp. See sharded.hpp for what each op does. The rewrite of a
// program for shards is made once per program and cached, with its segment offsets.
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
#include "rank_pool.hpp"
#include "rank_run.hpp"
#include "segments.hpp"
#include "shard_plan.hpp"
#include "stages.hpp"

namespace fuseflow {

using detail::CachedPlan;
using detail::Checked;
using detail::DeviceFold;

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

struct ShardedRuntime::State {
  std::vector<std::unique_ptr<Runtime>> runtimes;
  std::vector<std::unique_ptr<Communicator>> comms;
  int world = 0;
  // Per local rank: the device buffers of the exchanges, kept from run to run.
  std::vector<detail::RankBuffers> buffers;
  // Several local ranks whose collectives block: a thread each (else one thread issues all).
  bool threaded = false;
  std::unique_ptr<detail::RankPool> pool;
  std::mutex plans_mutex;
  std::map<std::vector<const ExprNode*>, std::shared_ptr<const CachedPlan>> plans;
  std::shared_ptr<const CachedPlan> last;  // the last run's: found without the map
  // Programs that read a reduction's result inside an expression: their stages (stages.hpp).
  std::map<std::vector<const ExprNode*>, std::shared_ptr<const detail::Staging>> staged;
  std::vector<detail::RankOutput> outputs;  // per local rank, reused
  std::vector<detail::RankRun> ranks;       // per local rank, reused
  // FUSEFLOW_SHARDED_FOLD=host folds every reduction's partials on the host (after the
  // same one copy) instead of on the device: for comparing the two.
  bool device_fold = true;

  // fn(i) for every local rank i: on a thread each (threaded), or in turn on this one.
  template <class F>
  void for_each_local(F&& fn) {
    if (!threaded) {
      for (std::size_t i = 0; i < runtimes.size(); ++i) fn(i);
      return;
    }
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

// A group over every local rank's collectives (NCCL: one thread driving several
// communicators must issue them in one group); ended on the way out, also by an exception.
class WorldGroup {
 public:
  explicit WorldGroup(Communicator& any) : comm_(any) { comm_.group_start(); }
  ~WorldGroup() noexcept(false) {
    if (std::uncaught_exceptions() > exceptions_) {
      try {
        comm_.group_end();
      } catch (...) {  // the first error is the one to report
      }
      return;
    }
    comm_.group_end();
  }
  WorldGroup(const WorldGroup&) = delete;
  WorldGroup& operator=(const WorldGroup&) = delete;

 private:
  Communicator& comm_;
  int exceptions_ = std::uncaught_exceptions();
};

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
  if (const std::optional<bool> fold = read_sharded_environment().device_fold) state_->device_fold = *fold;
  state_->buffers = std::vector<detail::RankBuffers>(state_->runtimes.size());
  state_->outputs.resize(state_->runtimes.size());
  state_->ranks.reserve(state_->runtimes.size());
  for (std::size_t i = 0; i < state_->runtimes.size(); ++i)
    state_->ranks.emplace_back(i, *state_->runtimes[i], *state_->comms[i], state_->buffers[i], state_->outputs[i]);
  set_rank_threads(true);  // measured faster on 4 H200s (bench/RESULTS.md, multi group)
}
ShardedRuntime::~ShardedRuntime() = default;
ShardedRuntime::ShardedRuntime(ShardedRuntime&&) noexcept = default;
ShardedRuntime& ShardedRuntime::operator=(ShardedRuntime&&) noexcept = default;

ShardedRuntime ShardedRuntime::in_process(int world, std::vector<int> devices, RuntimeOptions options, bool grouped) {
  auto comms = thread_communicators(world, grouped);
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

void ShardedRuntime::set_rank_threads(bool on) {
  bool threaded = false;
  for (const auto& c : state_->comms)
    threaded = threaded || c->blocking() || (on && c->backend() == "nccl");
  state_->threaded = threaded && state_->comms.size() > 1;
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
  // Every rank's shard size, gathered in rank order through device memory: uploaded,
  // gathered (one group over the local ranks), read back by the first local rank (the
  // same bytes on every rank of this process).
  const std::size_t bytes = sizeof(unsigned long long);
  const std::size_t ranks = static_cast<std::size_t>(world_size());
  std::vector<unsigned long long> sizes(ranks);
  auto upload = [&](std::size_t i) {
    detail::RankBuffers& b = state_->buffers[i];
    ContextScope scope(runtime(i).context());
    if (b.send.size() < bytes) b.send = runtime(i).alloc<std::byte>(bytes);
    if (b.recv.size() < bytes * ranks) b.recv = runtime(i).alloc<std::byte>(bytes * ranks);
    const auto n = static_cast<unsigned long long>(local[i].count);
    std::vector<std::byte> mine(b.send.size());
    std::memcpy(mine.data(), &n, bytes);
    b.send.upload(std::span<const std::byte>(mine));
  };
  auto gather = [&](std::size_t i) {
    detail::RankBuffers& b = state_->buffers[i];
    ContextScope scope(runtime(i).context());
    communicator(i).all_gather(b.send.data(), b.recv.data(), bytes, runtime(i).stream());
  };
  auto read = [&](std::size_t i) {
    ContextScope scope(runtime(i).context());
    const CUdeviceptr at = state_->buffers[i].recv.data();
    std::vector<std::byte> all = runtime(i).download(device_span<std::byte>(at, bytes * ranks));
    std::memcpy(sizes.data(), all.data(), all.size());
  };
  if (state_->threaded) {
    state_->for_each_local([&](std::size_t i) {
      upload(i);
      gather(i);
      if (i == 0) read(i);
    });
  } else {
    for (std::size_t i = 0; i < local_count(); ++i) upload(i);
    {
      WorldGroup group(communicator(0));
      for (std::size_t i = 0; i < local_count(); ++i) gather(i);
    }
    read(0);
  }
  return ShardLayout::from_sizes(std::vector<std::size_t>(sizes.begin(), sizes.end()));
}

namespace {

bool uses_param(const Program& p, const Expr& param) {
  for (const Expr& e : p.params())
    if (same_node(e, param)) return true;
  return false;
}

bool same_outputs(const Program& a, const Program& b) {
  if (a.outputs().size() != b.outputs().size()) return false;
  for (std::size_t i = 0; i < a.outputs().size(); ++i)
    if (a.outputs()[i].get() != b.outputs()[i].get()) return false;
  return true;
}

std::shared_ptr<CachedPlan> make_plan(const Program& program, bool device_fold, int world, std::size_t locals) {
  auto made = std::make_shared<CachedPlan>(CachedPlan{program, detail::plan_sharded(program, device_fold), std::nullopt,
                                                      false, false, false, false, false, false, {}, {}, {}, 0, {}, {}});
  const detail::ShardPlan& p = made->plan;
  if (!p.totals.empty()) made->totals.emplace(p.totals);
  made->main_uses_offset = uses_param(p.main, p.offset_param);
  made->main_uses_rank = uses_param(p.main, p.rank_param);
  made->main_uses_size = uses_param(p.main, p.size_param);
  made->main_uses_global_size = uses_param(p.main, p.global_size_param);
  made->exchange_first = made->totals.has_value() || !p.halos.empty() || !p.tables.empty();
  // Halo tables of short shards and gather tables bound to sharded arrays are made on the
  // host (RankRun::main_pass waits for them).
  made->host_carry = false;
  for (const detail::ShardScan& sc : p.scans) {
    std::vector<bool> used;
    for (const Expr& c : sc.carry_params) used.push_back(uses_param(p.main, c));
    made->carry_used.push_back(std::move(used));
    made->host_carry = made->host_carry || !sc.carries.valid();
    std::optional<DeviceFold>& f = made->carry_folds.emplace_back();
    if (!sc.carries.valid()) continue;
    const Type& t = sc.monoid.type();
    Expr totals = Expr::input("ff_rank_totals", t);
    Expr carries = scan(totals, sc.monoid, ScanKind::Exclusive);
    f.emplace(DeviceFold{totals, carries, Program(carries)});
    made->carry_bytes += detail::aligned(t.size() * static_cast<std::size_t>(world));
  }
  for (const detail::ShardSegmented& sg : p.segs) made->host_carry = made->host_carry || sg.scan;
  made->host_carry = made->host_carry || !p.keyscans.empty();
  made->folds.resize(p.kinds.size());
  for (std::size_t o = 0; o < p.kinds.size(); ++o) {
    const Type& t = p.main.outputs()[o].type();
    if (p.kinds[o] != detail::ShardedOutput::Reduce || !t.is_scalar() || !device_fold) continue;
    if (detail::all_reduce_op(p.monoids[o], t)) continue;  // all-reduced: nothing to fold
    if (world == 1) continue;                              // one partial: it is the result
    Expr partials = Expr::input("ff_rank_partials", t);
    Expr folded = scan(partials, p.monoids[o], ScanKind::Inclusive);
    made->folds[o].emplace(DeviceFold{partials, folded, Program(folded)});
  }
  made->tables.resize(p.tables.size());
  for (detail::TableCache& t : made->tables) {
    t.device.resize(locals);
    t.uploaded.assign(locals, 0);
  }
  made->segments.resize(p.segs.size());
  for (detail::SegmentCache& c : made->segments) {
    c.offsets.resize(locals);
    c.tails.resize(locals);
    c.uploaded.assign(locals, 0);
  }
  return made;
}

// The segmented ops' global offsets: compared with what the plan's cache holds (memcmp);
// when they changed (or the layout did), checked and split over the shards anew, and
// marked for upload (RankRun::start uploads each rank's cut).
void refresh_segments(const CachedPlan& cached, const Checked& checked) {
  for (std::size_t k = 0; k < cached.plan.segs.size(); ++k) {
    const detail::ShardSegmented& sg = cached.plan.segs[k];
    const HostArray& o = checked.bound.at(sg.offsets.get())->host();
    detail::SegmentCache& c = cached.segments[k];
    const std::size_t bytes = o.size() * o.type().size();
    if (c.version != 0 && c.type == o.type().scalar() && c.layout == checked.layout && c.bytes.size() == bytes &&
        (bytes == 0 || std::memcmp(c.bytes.data(), o.data(), bytes) == 0))
      continue;
    c.split.emplace(segment_bounds(sg.scan ? "segmented_scan" : "segmented_reduce", o.type().scalar(), o.data(),
                                   o.size(), checked.layout.global_size()),
                    checked.layout);
    c.bytes.assign(o.data(), o.data() + bytes);
    c.type = o.type().scalar();
    c.layout = checked.layout;
    ++c.version;
  }
}

// Gathers' tables bound to host arrays: compared with the cached copy (memcmp); changed
// (or first seen), kept and marked for upload (RankRun::start uploads to each rank).
void refresh_tables(const CachedPlan& cached, const Checked& checked) {
  for (std::size_t t = 0; t < cached.plan.tables.size(); ++t) {
    const ShardedBinding& b = *checked.bound.at(cached.plan.tables[t].get());
    if (!b.is_replicated()) continue;
    detail::TableCache& c = cached.tables[t];
    const std::size_t bytes = b.host().size() * b.type().size();
    if (c.version != 0 && c.bytes.size() == bytes && (bytes == 0 || std::memcmp(c.bytes.data(), b.host().data(), bytes) == 0))
      continue;
    c.bytes.assign(b.host().data(), b.host().data() + bytes);
    ++c.version;
  }
}

}  // namespace

std::vector<ShardedResult> ShardedRuntime::run(const Program& program, const ShardedBindings& bindings) {
  std::shared_ptr<const CachedPlan> cached;
  std::shared_ptr<const detail::Staging> staging;
  {
    std::lock_guard lock(state_->plans_mutex);
    if (state_->last && same_outputs(state_->last->program, program)) {
      cached = state_->last;
    } else {
      std::vector<const ExprNode*> key;
      for (const Expr& o : program.outputs()) key.push_back(o.get());
      auto it = state_->plans.find(key);
      if (it != state_->plans.end()) {
        cached = it->second;
      } else if (auto st = state_->staged.find(key); st != state_->staged.end()) {
        staging = st->second;
      } else if ((staging = detail::plan_stages(program))) {
        if (state_->staged.size() >= 64) state_->staged.clear();
        state_->staged.emplace(std::move(key), staging);
      } else {
        cached = make_plan(program, state_->device_fold, state_->world, local_count());
        if (state_->plans.size() >= 64) state_->plans.clear();  // a bound, not an LRU: programs are few
        state_->plans.emplace(std::move(key), cached);
      }
      if (cached) state_->last = cached;
    }
  }
  // A reduction read inside an expression: its stages, each a sharded run of its own.
  if (staging)
    return detail::run_stages(*staging, bindings,
                              [this](const Program& p, const ShardedBindings& b) { return run(p, b); });
  const detail::ShardPlan& plan = cached->plan;
  std::vector<std::pair<int, Runtime*>> local;
  for (std::size_t i = 0; i < local_count(); ++i) local.emplace_back(local_rank(i), &runtime(i));
  const Checked checked = detail::check_sharded_bindings(program, bindings, world_size(), local, plan.segs, plan.tables);
  // A table bound to a sharded array is all-gathered after the scans' totals pass.
  for (const Expr& t : plan.tables)
    if (cached->totals && checked.bound.at(t.get())->is_array())
      for (const Expr& in : cached->totals->inputs())
        if (same_node(in, t))
          throw GraphError("sharded run: a scan reads a gather from input '" + t.node().name +
                           "', bound to a sharded array; over shards bind the table to a host array "
                           "(ff::HostArray) for that");
  refresh_segments(*cached, checked);
  refresh_tables(*cached, checked);
  const std::size_t outputs = program.outputs().size();
  const int world = world_size();

  const detail::RunShared shared{program, *cached, checked, world};
  std::vector<detail::RankRun>& ranks = state_->ranks;
  for (detail::RankRun& r : ranks) r.begin(shared);
  if (state_->threaded) {
    state_->for_each_local([&](std::size_t i) {
      detail::RankRun& r = ranks[i];
      ContextScope scope(r.runtime().context());
      r.start();
      r.gather_totals();
      r.main_pass();
      r.gather_main();
      r.fold();
      r.finish();
      r.combine(r.gathered());
    });
  } else {
    // One thread issues every local rank's work: each step of all ranks in turn (the
    // launches queue), each collective step in one group, then one copy and one wait, on
    // the first rank (every rank gathered the same bytes).
    auto each = [&](void (detail::RankRun::*step)()) {
      for (detail::RankRun& r : ranks) {
        ContextScope scope(r.runtime().context());
        (r.*step)();
      }
    };
    try {
      each(&detail::RankRun::start);
      if (cached->exchange_first) {
        WorldGroup group(communicator(0));
        each(&detail::RankRun::gather_totals);
      }
      each(&detail::RankRun::main_pass);
      {
        WorldGroup group(communicator(0));
        each(&detail::RankRun::gather_main);
      }
      {
        ContextScope scope(ranks[0].runtime().context());
        ranks[0].fold();
        ranks[0].finish();
      }
      for (detail::RankRun& r : ranks) {
        ContextScope scope(r.runtime().context());
        r.combine(ranks[0].gathered());
      }
    } catch (...) {
      abort_world(communicator(0));  // a grouped in-process world drops what it queued
      throw;
    }
  }

  std::vector<detail::RankOutput>& per_local = state_->outputs;
  std::vector<ShardedResult> out;
  out.reserve(outputs);
  for (std::size_t o = 0; o < outputs; ++o) {
    const Type& type = plan.main.outputs()[o].type();
    std::vector<ShardedResult::Piece> pieces;
    if (plan.kinds[o] != detail::ShardedOutput::Reduce)
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
        const detail::SegmentSplit& split = *cached->segments[static_cast<std::size_t>(plan.seg_of[o])].split;
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
