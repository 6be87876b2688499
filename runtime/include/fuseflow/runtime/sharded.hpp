#pragma once
// Sharded execution: arrays split into contiguous shards over the ranks of a communicator
// (one GPU each), and a runtime that runs a program over them. The plan runs on every
// shard (one ff::Runtime per GPU); the partial results are combined across ranks:
//   reduce (any monoid, also non-commutative and tuple ones): the per-rank partials stay
//     in device memory (run_async), are all-gathered from there on the rank's stream
//     (one NCCL group for all outputs) and folded in rank order: on the device for scalar
//     monoids (an inclusive scan over the world's partials, queued on the same stream),
//     on the host for tuple ones (or all, with FUSEFLOW_SHARDED_FOLD=host); one copy to
//     the host per run brings every gathered and folded value back. The same bits every
//     run and on every rank. Built-in plus, times, min and max over 8-, 32- and 64-bit
//     integers, exact in any order, are all-reduced instead (one collective, no fold);
//   scan (inclusive, exclusive): a first pass reduces each shard to its total, the totals
//     are all-gathered from the device into device memory and scanned there (exclusive,
//     in rank order: entry r is the fold of the ranks before r), and the scan reads its
//     rank's entry at its start: no host round trip and no wait between the passes. Tuple
//     monoids fold the carry on the host (a parameter of the scan: one copy and a wait;
//     also every carry with FUSEFLOW_SHARDED_FOLD=host). The carry is combined into every
//     element the scan stores (a map of the scan's result, which the planner fuses into
//     the scan's store);
//   histogram: per-GPU counts, all-reduced (the result is replicated on every rank);
//   filter: survivors compacted per shard, the counts all-gathered from the device (in the
//     reduce partials' group and copy): the result stays
//     sharded, with its global length and every shard's offset known;
//   map (element-wise arrays): sharded like the inputs;
//   ff::index() means the global index (the shard's offset is added).
//   segmented_reduce, segmented_scan: the offsets are global, an input bound to a host
//     array (ff::HostArray) that every rank reads whole; each rank runs the op on its
//     shard with the offsets cut to it (multi/segments.hpp). A segment cut by shard
//     boundaries is folded in rank order: its owner (the rank where it starts) combines its
//     piece with the heads of the ranks after it, all-gathered (reduce); for a scan each
//     rank's tail piece is reduced first, all-gathered, and the pieces of the ranks before
//     it are folded into a carry for the shard's first, cut segment. The result of a
//     segmented_reduce is sharded by segment: rank r holds the segments that start in its
//     shard (the last rank also those starting at the end), in order, so the concatenated
//     shards are the m results; a segmented_scan's is sharded like the inputs. The cut
//     offsets are cached with the program, compared byte for byte with the bound ones each
//     run, and cut and uploaded again only when they differ.
//   reduce_by_key: each rank reduces the runs of its shard; a run cut by shard boundaries
//     is held by the rank where it starts (a rank whose first key equals the last key of
//     the nearest non-empty rank before it drops its first run, and that rank folds it into
//     its last, in rank order). The ends' keys and values, and the run counts, are
//     all-gathered; both results are sharded by run start (global length: the run count).
//     The keys are compared as the reference does (==, field by field).
//   scan_by_key: a first pass reduces the shard's runs (reduce_by_key, and each run's last
//     index); the run counts, end keys and last runs' values are all-gathered; the carry
//     into the shard's first run is the fold, in rank order, of the last runs of the ranks
//     before that it continues (through one-run shards), folded into that run's elements
//     only. The result is sharded like the inputs.
//   a reduction read inside an expression (a scalar epilogue such as log-sum-exp, a map or
//     scan of its value, another reduction's values): stages (multi/stages.hpp), each a
//     sharded run whose combined values are parameters of the next; scalar epilogues are
//     computed on the host from the combined bits (the same on every rank).
//   shift(x, k, fill) of element-wise expressions of inputs: each rank's |k| end elements
//     all-gathered before the main pass into a halo table per rank (multi/halo.hpp).
//   gather(table, idx): the table (an input) bound to a host array, uploaded to every rank,
//     or to a sharded array of any layout, all-gathered; a checked gather is checked by a
//     pass of its own first (the first bad global position).
// Counting sort is not sharded (GraphError): README "Multi-GPU" says what it would take.
//
// Two ways to start: one process driving all GPUs of a host (ShardedRuntime::nccl_all) and
// one process per GPU (ShardedRuntime::nccl_rank, given an NcclId); in process over threads
// (ShardedRuntime::in_process) for the CPU emulator. A ShardedRuntime drives its local
// ranks (all of them, or just one): every call on it is collective over the world. Over
// NCCL a thread per local rank issues that rank's work (the default), or, with
// set_rank_threads(false), the calling thread issues every local rank's work (the
// collectives of all ranks in one group) and waits once, for the first local rank's copy,
// returning with the other ranks' array results still queued on their streams (ready when
// read, like run_async).
#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fuseflow/frontend/program.hpp"
#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/runtime/execute.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "fuseflow/runtime/sharded_comm.hpp"

namespace fuseflow {

// Where each rank's shard lies in the global array: shard r is [offsets[r], offsets[r+1]).
struct ShardLayout {
  std::vector<std::size_t> offsets;  // world + 1 entries, offsets[0] = 0
  // n elements over `world` ranks, as even as can be: the first n % world shards get one more.
  static ShardLayout even(std::size_t n, int world);
  // Shards of the given sizes, in rank order.
  static ShardLayout from_sizes(const std::vector<std::size_t>& sizes);
  int world() const { return static_cast<int>(offsets.size()) - 1; }
  std::size_t global_size() const { return offsets.empty() ? 0 : offsets.back(); }
  std::size_t offset(int rank) const { return offsets.at(static_cast<std::size_t>(rank)); }
  std::size_t size(int rank) const { return offset(rank + 1) - offset(rank); }
  friend bool operator==(const ShardLayout&, const ShardLayout&) = default;
};

// One local shard, type-erased: rank, its Runtime, device memory, and what keeps it alive.
struct ShardPiece {
  int rank = 0;
  Runtime* runtime = nullptr;
  DeviceBytes bytes;
  std::shared_ptr<const void> owner;  // null: memory the caller owns (device_span)
};

// The shards of an array that this process holds (one per local rank) and the layout of
// the whole array over the world.
template <class T>
class ShardedArray {
  static_assert(std::is_trivially_copyable_v<T>, "ShardedArray<T> needs a trivially copyable T");

 public:
  ShardedArray() = default;
  ShardedArray(ShardLayout layout, std::vector<ShardPiece> pieces)
      : layout_(std::move(layout)), pieces_(std::move(pieces)) {}

  std::size_t size() const { return layout_.global_size(); }  // the global length
  const ShardLayout& layout() const { return layout_; }
  const std::vector<ShardPiece>& pieces() const { return pieces_; }
  // This process's shard of `rank` (Error if it holds none).
  device_span<T> shard(int rank) const {
    for (const ShardPiece& p : pieces_)
      if (p.rank == rank) return device_span<T>(p.bytes.ptr, p.bytes.count);
    throw GraphError("ShardedArray::shard: this process holds no shard of rank " + std::to_string(rank));
  }
  // The local shards copied to the host, concatenated in rank order: the whole array when
  // this process drives every rank, its own shard when it drives one.
  std::vector<T> download() const {
    std::vector<T> out;
    for (const ShardPiece& p : pieces_) {
      std::vector<T> part = p.runtime->download(device_span<T>(p.bytes.ptr, p.bytes.count));
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }

 private:
  ShardLayout layout_;
  std::vector<ShardPiece> pieces_;
};

// What a program's inputs are bound to in a sharded run: a ShardedArray (inputs), a host
// scalar (parameters, the same on every rank), or a host array every rank reads whole
// (the global offsets of a segmented op, a gather's table).
class ShardedBinding {
 public:
  ShardedBinding(HostArray replicated)  // NOLINT: implicit by design
      : is_array_(false), replicated_(true), type_(replicated.type()), host_(std::move(replicated)) {}
  template <class T>
  ShardedBinding(const ShardedArray<T>& array)  // NOLINT: implicit by design
      : is_array_(true), layout_(array.layout()), pieces_(array.pieces()), type_(type_of<T>()) {}
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  ShardedBinding(T scalar) : is_array_(false), scalar_(Value(scalar)) {}  // NOLINT
  ShardedBinding(const Value& scalar) : is_array_(false), scalar_(scalar) {}  // NOLINT

  bool is_array() const { return is_array_; }
  bool is_replicated() const { return replicated_; }  // a host array (HostArray)
  const HostArray& host() const { return host_; }
  const ShardLayout& layout() const { return layout_; }
  const std::vector<ShardPiece>& pieces() const { return pieces_; }
  const Type& type() const { return is_array_ || replicated_ ? type_ : scalar_.type(); }
  const Value& scalar() const { return scalar_; }

 private:
  bool is_array_;
  bool replicated_ = false;
  ShardLayout layout_;
  std::vector<ShardPiece> pieces_;
  Type type_;
  Value scalar_;
  HostArray host_;
};
using ShardedBindings = std::vector<std::pair<Expr, ShardedBinding>>;

// One result of a sharded run.
class ShardedResult {
 public:
  enum class Kind : std::uint8_t {
    Scalar,      // a reduction: the combined value, the same on every rank
    Sharded,     // an array split like the inputs (map, scan) or by survivors (filter)
    Replicated,  // an array every rank holds whole (histogram)
  };
  struct Piece {
    int rank = 0;
    Runtime* runtime = nullptr;
    DeviceBytes bytes;                    // when the memory is ours
    std::shared_ptr<const void> owner;
    std::shared_ptr<Result> result;       // a filter's result, still in its Result
  };

  ShardedResult(Value v) : kind_(Kind::Scalar), type_(v.type()), value_(std::move(v)) {}  // NOLINT
  ShardedResult(Kind kind, Type type, ShardLayout layout, std::vector<Piece> pieces)
      : kind_(kind), type_(std::move(type)), layout_(std::move(layout)), pieces_(std::move(pieces)) {}

  Kind kind() const { return kind_; }
  bool is_scalar() const { return kind_ == Kind::Scalar; }
  const Type& type() const { return type_; }
  const Value& value() const {
    if (kind_ != Kind::Scalar) throw GraphError("ShardedResult::value: the result is an array, not a scalar");
    return value_;
  }
  template <class T>
  T as() const {
    return value().template as<T>();
  }
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T> || detail::IsTuple<T>::value>>
  operator T() const {  // NOLINT: float s = srt.run(...)
    return as<T>();
  }
  // Sharded: the global length and each rank's shard (for a filter, the survivors');
  // Replicated: one shard per rank, each the whole array.
  const ShardLayout& layout() const {
    check_array("layout");
    return layout_;
  }
  std::size_t size() const { return kind_ == Kind::Replicated ? layout().size(0) : layout().global_size(); }

  // The local shards, concatenated in rank order (Replicated: the first local rank's copy).
  template <class T>
  std::vector<T> download() const {
    check_array("download");
    check_type(type_of<T>(), "download");
    std::vector<T> out;
    for (const Piece& p : pieces_) {
      std::vector<T> part = p.result ? p.result->download<T>()
                                     : p.runtime->download(device_span<T>(p.bytes.ptr, p.bytes.count));
      out.insert(out.end(), part.begin(), part.end());
      if (kind_ == Kind::Replicated) break;
    }
    return out;
  }
  // The local shards as a ShardedArray (to bind to another sharded run). Sharded only.
  template <class T>
  ShardedArray<T> array() {
    if (kind_ != Kind::Sharded) throw GraphError("ShardedResult::array: the result is not a sharded array");
    check_type(type_of<T>(), "array");
    std::vector<ShardPiece> out;
    for (Piece& p : pieces_) {
      if (p.result) {
        auto moved = std::make_shared<DeviceArray<T>>(p.result->array<T>());
        p.bytes = moved->bytes();
        p.owner = moved;
        p.result.reset();
      }
      out.push_back({p.rank, p.runtime, p.bytes, p.owner});
    }
    return ShardedArray<T>(layout_, std::move(out));
  }

 private:
  void check_array(const char* what) const {
    if (kind_ == Kind::Scalar)
      throw GraphError(std::string("ShardedResult::") + what + ": the result is a scalar, not an array");
  }
  void check_type(const Type& want, const char* what) const {
    if (want != type_)
      throw GraphError(std::string("ShardedResult::") + what + ": the result holds " + type_.name() +
                       ", asked for " + want.name());
  }
  Kind kind_;
  Type type_;
  Value value_;
  ShardLayout layout_;
  std::vector<Piece> pieces_;
};

class ShardedRuntime {
 public:
  // The ranks this process drives: runtimes[i] with comms[i] (any order of ranks). The
  // communicators' sizes must agree.
  ShardedRuntime(std::vector<std::unique_ptr<Runtime>> runtimes, std::vector<std::unique_ptr<Communicator>> comms);
  ~ShardedRuntime();
  ShardedRuntime(ShardedRuntime&&) noexcept;
  ShardedRuntime& operator=(ShardedRuntime&&) noexcept;

  // `world` ranks in this process, talking through host memory: rank r on device
  // devices[r] (default: device r modulo the device count). For the CPU emulator. Each rank
  // runs on a thread of its own; `grouped`: one thread issues every rank's work, as over
  // NCCL with set_rank_threads(false) (thread_communicators' grouped mode), so that the
  // emulator tests that path.
  static ShardedRuntime in_process(int world, std::vector<int> devices = {}, RuntimeOptions options = {},
                                   bool grouped = false);
  // Every GPU of `devices` (default: all of them) in this process, through NCCL
  // (ncclCommInitAll).
  static ShardedRuntime nccl_all(std::vector<int> devices = {}, RuntimeOptions options = {});
  // This process is `rank` of `world` processes, on `device`; `id` from nccl_unique_id()
  // on one rank, handed to all (ncclCommInitRank).
  static ShardedRuntime nccl_rank(const NcclId& id, int rank, int world, int device, RuntimeOptions options = {});

  // How a runtime driving several local ranks over NCCL issues their work: from a thread
  // per rank (a pool kept for the runtime's life; `true`, the default), or from the calling
  // thread, every rank's in turn with the collectives in one NCCL group (`false`). On 4
  // H200s the threads were faster for small runs (the combine of a scalar 47.6 us against
  // 91.1) and the same for large ones. In-process communicators keep their own way (a
  // thread per rank, or one thread when grouped).
  void set_rank_threads(bool on);

  int world_size() const;
  std::size_t local_count() const;
  int local_rank(std::size_t i) const;  // the world rank of local rank i
  Runtime& runtime(std::size_t i);
  Communicator& communicator(std::size_t i);

  // The shards of `global` (every process passes the whole array; each uploads its ranks'
  // shards), split evenly.
  template <class T>
  ShardedArray<T> scatter(std::span<const T> global) {
    ShardLayout layout = ShardLayout::even(global.size(), world_size());
    std::vector<ShardPiece> pieces;
    for (std::size_t i = 0; i < local_count(); ++i) {
      const int r = local_rank(i);
      auto shard = std::make_shared<DeviceArray<T>>(
          runtime(i).upload(global.subspan(layout.offset(r), layout.size(r))));
      pieces.push_back({r, &runtime(i), shard->bytes(), shard});
    }
    return ShardedArray<T>(std::move(layout), std::move(pieces));
  }
  template <class T>
  ShardedArray<T> scatter(const std::vector<T>& global) {
    return scatter(std::span<const T>(global));
  }
  // An array of `n` elements, split evenly, uninitialised.
  template <class T>
  ShardedArray<T> alloc(std::size_t n) {
    ShardLayout layout = ShardLayout::even(n, world_size());
    std::vector<ShardPiece> pieces;
    for (std::size_t i = 0; i < local_count(); ++i) {
      const int r = local_rank(i);
      auto shard = std::make_shared<DeviceArray<T>>(runtime(i).alloc<T>(layout.size(r)));
      pieces.push_back({r, &runtime(i), shard->bytes(), shard});
    }
    return ShardedArray<T>(std::move(layout), std::move(pieces));
  }
  // The caller's device memory, one span per local rank (local rank order), of any sizes:
  // the layout is agreed over the world (collective). The memory must outlive the array.
  template <class T>
  ShardedArray<T> adopt(const std::vector<device_span<T>>& shards) {
    std::vector<DeviceBytes> bytes;
    for (const auto& s : shards) bytes.push_back(s.bytes());
    ShardLayout layout = agree_layout(bytes, "adopt");
    std::vector<ShardPiece> pieces;
    for (std::size_t i = 0; i < local_count(); ++i) pieces.push_back({local_rank(i), &runtime(i), bytes[i], nullptr});
    return ShardedArray<T>(std::move(layout), std::move(pieces));
  }

  // Runs `program` over sharded inputs (collective: every process of the world calls it
  // with the same program and layouts). Throws GraphError for what cannot be sharded or
  // bindings that do not fit, before anything runs.
  std::vector<ShardedResult> run(const Program& program, const ShardedBindings& bindings);
  ShardedResult run(const Expr& result, const ShardedBindings& bindings) {
    return std::move(run(Program(result), bindings).front());
  }
  template <std::size_t N>
  std::array<ShardedResult, N> run(const Outputs<N>& program, const ShardedBindings& bindings) {
    std::vector<ShardedResult> all = run(static_cast<const Program&>(program), bindings);
    return to_array(all, std::make_index_sequence<N>{});
  }

 private:
  template <std::size_t... I>
  static std::array<ShardedResult, sizeof...(I)> to_array(std::vector<ShardedResult>& all, std::index_sequence<I...>) {
    return {std::move(all[I])...};
  }
  ShardLayout agree_layout(const std::vector<DeviceBytes>& local, const char* who);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace fuseflow
