// Sorts beside CUB's DeviceRadixSort: sort_by_key over 256 bins and over key bits [0, 8)
// beside SortPairs bits [0, 8); sort_by_key over all 32 bits beside SortPairs; keys alone
// (f32) beside SortKeys.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

namespace ffbench {

namespace {

// Random 32-bit words (every bit varies): the keys of the full-width sorts.
__global__ void fill_words(unsigned* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    std::uint32_t h = (std::uint32_t)i * 0x9e3779b9u ^ seed * 0x85ebca6bu;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    x[i] = h ^ (h >> 16);
  }
}

enum class Keys { Bytes, Words, SignedFloats };

// One sort row: the catalog program, CUB's bits, and the traffic floor in bytes per
// element (what must move at least: Onesweep's one read of the keys for every digit's
// histogram, then per 8-bit pass the keys and values read once and written once).
struct SortCase {
  const char* op;           // the row's name
  const char* program;      // catalog entry (inputs k and v, or x for keys alone)
  Keys keys;
  bool values;              // SortPairs (else SortKeys, f32 keys)
  int end_bit;              // CUB sorts bits [0, end_bit)
  double floor_bytes;       // per element
};

void bench_sort_case(const Context& c, std::size_t n, const SortCase& sc) {
  const std::size_t word = sizeof(unsigned), per_element = sc.values ? 2 * word : word;
  const std::size_t nbuf = copies_for(n * per_element, c.l2_bytes);
  DeviceBuffer keys(nbuf * n * word), values(sc.values ? nbuf * n * word : word);
  DeviceBuffer cub_keys(n * word), cub_values(sc.values ? n * word : word);
  if (sc.keys == Keys::Bytes) fill_byte_values(c, keys.as<int>(), nbuf * n, 51);
  if (sc.keys == Keys::Words) {
    fill_words<<<c.sms * 8, 256, 0, c.stream>>>(keys.as<unsigned>(), nbuf * n, 51);
    CK(cudaGetLastError());
  }
  if (sc.keys == Keys::SignedFloats) fill_signed_floats(c, keys.as<float>(), nbuf * n, 51);
  if (sc.values) fill(c, values.as<int>(), nbuf * n, 52);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find(sc.program).build();
  ff::Expr k, v;
  for (const auto& in : program.inputs()) (in.node().name == "v" ? v : k) = in;
  ff::Runtime& rt = *c.rt;
  auto bindings = [&](std::size_t b) {
    if (!sc.values) return ff::Bindings{{k, span_of<float>(keys, b, n)}};
    return ff::Bindings{{k, span_of<unsigned>(keys, b, n)}, {v, span_of<unsigned>(values, b, n)}};
  };
  CubTemp temp;
  const auto cub_sort = [&](void* t, std::size_t& bytes, std::size_t b) {
    if (sc.values)
      return cub::DeviceRadixSort::SortPairs(t, bytes, keys.as<unsigned>() + b * n, cub_keys.as<unsigned>(),
                                             values.as<unsigned>() + b * n, cub_values.as<unsigned>(), (int)n, 0,
                                             sc.end_bit, c.stream);
    return cub::DeviceRadixSort::SortKeys(t, bytes, keys.as<float>() + b * n, cub_keys.as<float>(), (int)n, 0,
                                          sc.end_bit, c.stream);
  };
  std::size_t tb = 0;
  CK(cub_sort(nullptr, tb, 0));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t b) {
    std::size_t bytes = temp.bytes;
    CK(cub_sort(temp.ptr, bytes, b));
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  std::string check = sc.values ? "ok (keys and values = CUB)" : "ok (keys = CUB)";
  {
    std::vector<ff::Result> got = rt.run(program, bindings(0));
    cub_call(0);
    CK(cudaStreamSynchronize(c.stream));
    std::vector<unsigned> want_keys(n), want_values(sc.values ? n : 0);
    CK(cudaMemcpy(want_keys.data(), cub_keys.ptr, n * word, cudaMemcpyDeviceToHost));
    if (sc.values) CK(cudaMemcpy(want_values.data(), cub_values.ptr, n * word, cudaMemcpyDeviceToHost));
    std::vector<unsigned> mine_keys;
    if (sc.values) {
      mine_keys = got.at(0).download<unsigned>();
    } else {
      const std::vector<float> f = got.at(0).download<float>();
      mine_keys.resize(f.size());
      std::memcpy(mine_keys.data(), f.data(), f.size() * word);
    }
    const std::vector<unsigned> mine_values = sc.values ? got.at(1).download<unsigned>() : std::vector<unsigned>{};
    std::size_t bad = 0, first_bad = 0;  // keys compared by their bits
    for (std::size_t i = 0; i < n && mine_keys.size() == n; ++i)
      if ((mine_keys[i] != want_keys[i] || (sc.values && mine_values[i] != want_values[i])) && bad++ == 0) first_bad = i;
    if (mine_keys.size() != n || bad) {
      check = "MISMATCH";
      report_mismatch(std::string(sc.op) + " n=" + std::to_string(n) + ": " + std::to_string(bad) +
                      " elements differ from CUB, the first at " + std::to_string(first_bad));
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t b) {
        std::vector<ff::Result> r = ff_call(rt, program, bindings(b));
        if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
        for (auto& x : r) g_keep_alive.push_back(std::move(x));
      },
      cub_call,
      [&](std::size_t b) {
        launch_ceiling(c, keys.as<float>() + b * n, sc.values ? values.as<float>() + b * n : nullptr, n);
      },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = sc.op;
  r.n = n;
  r.bytes = (double)n * 2 * per_element;  // read once, written once
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = std::string("DeviceRadixSort::") + (sc.values ? "SortPairs" : "SortKeys") + " bits [0, " +
                  std::to_string(sc.end_bit) + ")";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  // The traffic floor at the read ceiling measured in the same run (it reads
  // per_element bytes of each element).
  const double read_gbps = (double)n * per_element / (r.ceil_us * 1e3);
  const double floor_us = sc.floor_bytes * (double)n / (read_gbps * 1e3);
  add_row(r);
  std::printf("  %-15s traffic floor %.0f B/elt: %.1f us at %.0f GB/s; fuseflow at %.0f%% of it, CUB at %.0f%%\n", sc.op,
              sc.floor_bytes, floor_us, read_gbps, 100.0 * floor_us / r.ff_us, 100.0 * floor_us / r.cub_us);
  std::fflush(stdout);
}

}  // namespace

// u32 keys and u32 values: 16 B per element per 8-bit pass, plus 4 B for the one read of
// the keys that the histograms take; keys alone: 8 B per pass plus 4.
void bench_sort(const Context& c, std::size_t n) {
  const SortCase cases[] = {
      // The counting sort over 256 bins (+1 for keys outside), byte keys.
      {"sort_by_key 256", "sort_by_key_256", Keys::Bytes, true, 8, 20},
      // The radix sort's one-digit case: random 32-bit keys sorted by their low byte.
      {"sort_by_key bits 0-8", "sort_pairs_u32_bits_0_8", Keys::Words, true, 8, 20},
      {"sort_by_key u32", "sort_pairs_u32", Keys::Words, true, 32, 4 + 4 * 16},
      {"sort keys f32", "sort_keys_f32", Keys::SignedFloats, false, 32, 4 + 4 * 8},
  };
  for (const SortCase& sc : cases) bench_sort_case(c, n, sc);
}

}  // namespace ffbench
