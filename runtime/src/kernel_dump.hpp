#pragma once
// FUSEFLOW_DUMP: every kernel compiled or loaded from disk is written as
// <name>-<hash>.cu, .ptx and .log, so users can read (and diff) what fuseflow ran.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "fuseflow/runtime/compiler.hpp"

namespace fuseflow::detail {

// Never throws: a dump that cannot be written is reported on stderr and skipped.
void dump_kernel(const std::filesystem::path& dir, std::string_view kernel_name,
                 std::uint64_t hash, std::string_view source, const CompileOptions& options,
                 std::span<const Header> headers, const CompiledKernel& kernel) noexcept;

}  // namespace fuseflow::detail
