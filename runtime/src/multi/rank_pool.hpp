#pragma once
// The threads of a ShardedRuntime that drives several local ranks: fn(i) on every local
// rank i, rank 0 on the calling thread and the others on threads kept for the runtime's
// life (a sharded run's latency matters). A run costs one wake-up of the workers and no
// allocation: the job is a pointer to the caller's callable, the error slots are kept.
// A rank that throws calls on_error(i) (which aborts an in-process world, so the others'
// collectives do not wait forever); the first exception is rethrown.
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
      stop_ = true;
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
    {
      std::lock_guard lock(mutex_);
      job_ = &fn;
      call_ = [](void* f, std::size_t i) { (*static_cast<F*>(f))(i); };
      for (auto& e : errors_) e = nullptr;
      pending_ = ranks_ - 1;
      ++generation_;
    }
    wake_.notify_all();
    run_one(0);
    {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return pending_ == 0; });
      job_ = nullptr;
    }
    for (auto& e : errors_)
      if (e) std::rethrow_exception(e);
  }

 private:
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
          {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
          }
          run_one(i);
          std::lock_guard lock(mutex_);
          if (--pending_ == 0) done_.notify_one();
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
  void* job_ = nullptr;
  void (*call_)(void*, std::size_t) = nullptr;
  std::size_t pending_ = 0;
  unsigned long long generation_ = 0;
  bool stop_ = false;
};

}  // namespace fuseflow::detail
