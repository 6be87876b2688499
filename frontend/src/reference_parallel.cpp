#include "reference_parallel.hpp"

#include <algorithm>
#include <exception>
#include <thread>

namespace fuseflow::cpu_reference {

Split split(std::size_t n) {
  constexpr std::size_t min_chunk = std::size_t{1} << 14;
  std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
  return Split{n, std::clamp<std::size_t>((n + min_chunk - 1) / min_chunk, 1, workers)};
}

void parallel_for(const Split& s, const std::function<void(std::size_t chunk)>& body) {
  if (s.chunks == 1) {
    body(0);
    return;
  }
  std::vector<std::exception_ptr> errors(s.chunks);
  auto guarded = [&](std::size_t c) {
    try {
      body(c);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(s.chunks - 1);
  for (std::size_t c = 1; c < s.chunks; ++c) threads.emplace_back(guarded, c);
  guarded(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void evaluate_into(const Code& code, std::size_t base, std::size_t count, std::byte* out) {
  std::size_t size = code.type().size();
  Split s = split(count);
  parallel_for(s, [&](std::size_t c) {
    std::vector<Slot> slots = code.initial();
    for (std::size_t i = s.begin(c); i < s.end(c); ++i) {
      code.run(slots.data(), base + i);
      code.store(slots.data(), code.result(), out + i * size);
    }
  });
}

}  // namespace fuseflow::cpu_reference
