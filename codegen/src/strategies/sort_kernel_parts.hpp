#pragma once
// The pieces the sort kernels' emitters share (defined in sort_kernels.cpp): the fused key and value
// functors, the arguments a pass reads and writes, the stores, the source and the fields
// of a tile kernel. Used by sort_pass_kernels.cpp (the three kernels of a counting-sort
// pass) and onesweep_kernels.cpp (the Onesweep histogram and pass).
#include <string>
#include <vector>

#include "sort_kernels.hpp"

namespace fuseflow::codegen::sort_parts {

// `const auto fn = [&](const long long i) -> T { ... };`: expression e of element i (input x
// as in_x[i]), or, reading scratch, element i of `array`.
void emit_element_function(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                           const std::vector<std::string>& names, const std::string& fn, const Expr& e,
                           const std::string& array = "");
// The kernel's source: "strategy: " + summary (and the note), the pass's device header.
std::string source(const std::string& name, const KernelContext& g, const std::string& summary, const std::string& note,
                   const CudaTypes& types, const SourceWriter& body, const SortPass& pass);
// The fields the kernels share: one block per tile of `tile` items, the grid growing with
// n (no grid cap), the reason the sort was chosen; the Scratch arguments numbered in
// order, as the launches bind them.
KernelSpec tile_kernel(const std::string& name, int block, int tile, int items, std::vector<Arg> args,
                       const SortPass& pass);
// The kernel's arguments before its own scratch: the fused inputs, or n and the scratch
// arrays of the keys (and values) a later pass reads.
std::vector<Arg> read_args(const OpNode& op, const KernelContext& g, const SortPass& pass, bool values,
                           std::vector<std::string>& names);
// A scattering kernel's arguments (read_args, with the values if any), then the program
// outputs or the next pass's scratch keys_out, values_out.
std::vector<Arg> scatter_args(const OpNode& op, const KernelContext& g, const std::vector<SortOutput>& outputs,
                              const SortPass& pass, std::vector<std::string>& names);
// The constants kBlock and kItems (elements per thread per tile) and the pass's bins.
std::vector<std::string> tile_constants(int block, int items, const SortPass& pass);
// A scattering kernel's functors: key_at, value_at (with values) and the stores of each
// result into every program output that is it, or the next pass's scratch. Returns them
// as the device call's arguments: "key_at, value_at, store_key, store_value", with
// ff::sort::NoValues{} without values and ff::sort::Discard{} for a result nobody keeps.
std::string emit_scatter_functors(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                                  const std::vector<std::string>& names, const OpNode& op,
                                  const std::vector<SortOutput>& outputs, const SortPass& pass);

}  // namespace fuseflow::codegen::sort_parts
