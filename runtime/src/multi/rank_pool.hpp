#pragma once
// The threads of a ShardedRuntime that drives several local ranks: fn(i) on every local
// rank i, rank 0 on the calling thread and the others on threads kept for the runtime's
// life (a sharded run's latency matters). A run costs one wake-up of the workers (none
// while they still spin after the last run) and no allocation: the job is a pointer to
// the caller's callable, the error slots are kept.
// A rank that throws calls on_error(i) (which aborts an in-process world, so the others'
// collectives do not wait forever); the first exception is rethrown.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fuseflow::detail {

class RankPool {
 public:
  using OnError = void (*)(void* ctx, std::size_t rank);
  RankPool(std::size_t ranks, OnError on_error, void* error_ctx)
      : ranks_(ranks), on_error_(on_error), error_ctx_(error_ctx), errors_(ranks) {}
  ~RankPool() {
    {
      std::lock_guard lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  RankPool(const RankPool&) = delete;
  RankPool& operator=(const RankPool&) = delete;

  template <class F>
  void run(F& fn) {
    if (ranks_ == 1) {
      fn(std::size_t{0});
      return;
    }
    start();
    job_ = &fn;
    call_ = [](void* f, std::size_t i) { (*static_cast<F*>(f))(i); };
    for (auto& e : errors_) e = nullptr;
    pending_.store(ranks_ - 1);
    {
      std::lock_guard lock(mutex_);  // a worker about to sleep sees the new generation
      generation_.fetch_add(1);
    }
    wake_.notify_all();  // no system call when every worker is still spinning
    run_one(0);
    spin_until([&] { return pending_.load() == 0; });
    if (pending_.load() != 0) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return pending_.load() == 0; });
    }
    job_ = nullptr;
    for (auto& e : errors_)
      if (e) std::rethrow_exception(e);
  }

 private:
  // Back-to-back runs (a benchmark, a loop of sharded calls) find the workers awake: they
  // spin (yielding the core) this long after a job before they sleep on the condition.
  static constexpr std::chrono::microseconds kSpin{100};
  template <class P>
  static void spin_until(P done) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  void run_one(std::size_t i) {
    try {
      call_(job_, i);
    } catch (...) {
      errors_[i] = std::current_exception();
      on_error_(error_ctx_, i);
    }
  }
  void start() {
    if (!threads_.empty()) return;
    for (std::size_t i = 1; i < ranks_; ++i)
      threads_.emplace_back([this, i] {
        unsigned long long seen = 0;
        for (;;) {
          auto ready = [&] { return stop_.load() || generation_.load() != seen; };
          spin_until(ready);
          if (!ready()) {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, ready);
          }
          if (stop_.load()) return;
          seen = generation_.load();
          run_one(i);
          if (pending_.fetch_sub(1) == 1) {
            std::lock_guard lock(mutex_);  // the caller checks pending_ under it before it sleeps
            done_.notify_one();
          }
        }
      });
  }
  std::size_t ranks_;
  OnError on_error_;
  void* error_ctx_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  void* job_ = nullptr;  // set before generation_ moves on (seq_cst), read after it did
  void (*call_)(void*, std::size_t) = nullptr;
  std::atomic<std::size_t> pending_{0};
  std::atomic<unsigned long long> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace fuseflow::detail
