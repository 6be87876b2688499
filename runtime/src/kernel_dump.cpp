#include "kernel_dump.hpp"

#include <fstream>
#include <iostream>
#include <string>

#include "fuseflow/runtime/hash.hpp"

namespace fuseflow::detail {
namespace {

void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

void dump_kernel(const std::filesystem::path& dir, std::string_view kernel_name,
                 std::uint64_t hash, std::string_view source, const CompileOptions& options,
                 std::span<const Header> headers, const CompiledKernel& kernel) noexcept {
  try {
    std::filesystem::create_directories(dir);
    const std::string stem = std::string(kernel_name) + "-" + hex64(hash);
    write_text(dir / (stem + ".cu"), source);
    write_text(dir / (stem + ".log"), kernel.log);
    // A cubin carries no PTX, so the PTX is compiled again; only when dumping.
    std::string ptx = kernel.format == BinaryFormat::ptx
                          ? kernel.image
                          : Compiler::ptx(source, options, headers, kernel_name);
    while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    write_text(dir / (stem + ".ptx"), ptx);
  } catch (const std::exception& e) {
    std::cerr << "fuseflow: warning: FUSEFLOW_DUMP could not write " << kernel_name << ": "
              << e.what() << "\n";
  }
}

}  // namespace fuseflow::detail
