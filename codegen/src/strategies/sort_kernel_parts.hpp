#pragma once
// The pieces the sort kernels' emitters share (defined in sort_kernels.cpp): the fused key and value
// functors, the arguments a pass reads and writes, the stores, the source and the fields
// of a tile kernel. Used by sort_pass_kernels.cpp (the three kernels of a counting-sort
// pass) and onesweep_kernels.cpp (the Onesweep histogram and pass).
#include <string>
#include <utility>
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
// The scatter's arguments after what it reads: the program outputs, or the next pass's
// scratch keys_out, values_out.
void add_write_args(const OpNode& op, const std::vector<SortOutput>& outputs, const SortPass& pass,
                    std::vector<Arg>& args);
// The stores of result r (0 keys, 1 values): into every program output that is r, or the
// next pass's scratch. Returns the names of the key and value store functors.
std::pair<std::string, std::string> emit_stores(SourceWriter& w, CudaTypes& types, const OpNode& op,
                                                const std::vector<SortOutput>& outputs, const SortPass& pass);

}  // namespace fuseflow::codegen::sort_parts
