// Reduce, any monoid, order preserved: "staged" (chunked coalesced staging). Each block
// owns a contiguous range of tiles (quotient/remainder split, as in the persistent-blocks
// paper). A tile of kBlock x kItems elements is loaded coalesced (consecutive threads,
// consecutive elements) into shared memory with the fused map applied; each thread then
// folds its kItems consecutive elements from shared memory (indices padded by one slot
// per 32 against bank conflicts); the block combines the thread values in thread order
// and folds the tile into its running value. Block partials are combined in block order
// by the last block. Left operands always cover lower indices, so non-commutative
// monoids (maximum segment sum, matrix products) are exact.
#include <algorithm>

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

namespace {
constexpr int kBlock = 256;
constexpr std::size_t kTileBytes = 16 * 1024;  // staged tile per block, before padding
}  // namespace

Kernel emit_reduce_staged(const ReduceGroup& g, const Target& t) {
  ReduceKernelWriter k(g, reduce_kernel_name(g, "staged"));
  const std::size_t acc_size = k.acc_type().size();
  const int items = static_cast<int>(std::clamp<std::size_t>(kTileBytes / (kBlock * acc_size), 1, 16));
  const int tile = kBlock * items;
  const std::size_t smem = (static_cast<std::size_t>(tile) + tile / 32) * acc_size;
  const int by_threads = t.max_threads_per_sm / kBlock;
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, (t.shared_per_block_optin) / (smem + 1024)));
  const int blocks_per_sm = std::max(1, std::min(by_threads, by_smem));
  const int max_grid = t.sm_count * blocks_per_sm;

  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(kBlock) + ";");
  w.line("constexpr int kItems = " + std::to_string(items) + ";  // consecutive elements per thread per tile");
  w.line("constexpr int kTile = kBlock * kItems;");
  w.line("// Shared-memory slot of tile element s: one slot of padding per 32 elements.");
  w.line("__device__ __forceinline__ int slot(int s) { return s + s / 32; }");
  w.line("}  // namespace");
  w.line();
  k.open_kernel(w, kBlock);
  k.emit_functions(w);
  w.line();
  w.line("__shared__ " + k.acc() + " tile[kTile + kTile / 32];");
  w.line("const long long tiles = (n + kTile - 1) / kTile;");
  w.comment("This block's contiguous range of tiles: the first tiles % gridDim.x blocks take one more.");
  w.line("const long long share = tiles / gridDim.x;");
  w.line("const long long extra = tiles % gridDim.x;");
  w.line("const long long begin = blockIdx.x * share + min((long long)blockIdx.x, extra);");
  w.line("const long long end = begin + share + (blockIdx.x < extra ? 1 : 0);");
  w.line(k.acc() + " running = identity;  // meaningful in thread 0");
  w.line("__shared__ " + k.acc() + " warp_values[kBlock / 32];");
  w.open("for (long long t = begin; t < end; ++t)");
  w.line("const long long base = t * kTile;");
  w.comment("Coalesced: in step k, thread x loads element base + k * kBlock + x.");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = k * kBlock + threadIdx.x;");
  w.line("const long long i = base + s;");
  {
    std::vector<std::string> vals;
    for (std::size_t j = 0; j < g.inputs.size(); ++j) vals.push_back("in_" + k.input_name(j) + "[i]");
    w.line("tile[slot(s)] = i < n ? " + k.element_call(vals, "i") + " : identity;");
  }
  w.close();
  w.line("__syncthreads();");
  w.comment("Thread x folds elements x * kItems ... x * kItems + kItems - 1, in order.");
  w.line(k.acc() + " value = tile[slot(threadIdx.x * kItems)];");
  w.line("#pragma unroll");
  w.line("for (int k = 1; k < kItems; ++k) value = combine(value, tile[slot(threadIdx.x * kItems + k)]);");
  w.comment("block_reduce ends with a barrier, so the tile may be overwritten next iteration.");
  w.line("value = ff::block_reduce<kBlock>(value, combine, identity, warp_values);");
  w.line("if (threadIdx.x == 0) running = combine(running, value);");
  w.close();
  k.emit_finish(w, "running", true);
  w.close();

  Kernel out;
  out.name = k.name();
  out.strategy = Strategy::Staged;
  out.block = kBlock;
  out.max_grid = max_grid;
  out.items_per_block_step = tile;
  out.args = k.args();
  out.summary = "staged (order-preserving): block " + std::to_string(kBlock) + ", " + std::to_string(items) +
                " items per thread, tile " + std::to_string(tile) + " elements (" + std::to_string(smem) +
                " bytes of shared memory, padded), grid <= " + std::to_string(max_grid) + " (" +
                std::to_string(blocks_per_sm) + " x " + std::to_string(t.sm_count) + " SMs)";
  bool all_commutative = true;
  for (const auto& r : g.reduces) all_commutative = all_commutative && r.op->monoid.is_commutative();
  out.why = all_commutative ? "strategy staged was asked for"
                            : "a monoid is non-commutative: elements must be combined in index order";
  out.source = k.assemble("strategy: " + out.summary, w.str());
  return out;
}

}  // namespace fuseflow::codegen
