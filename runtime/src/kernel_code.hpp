#pragma once
// A generated kernel's code: its source less the leading `//` comment lines. Generated
// kernels open with their program's text there, which cannot change what NVRTC makes, so
// the kernel cache keys on the code (kernel_cache.cpp, unless line_info puts line numbers
// into the binary) and one kernel shared by several programs compiles once. Internal: the
// fuzz compile test dedupes its kernels by it too.
#include <string_view>

namespace fuseflow::detail {

std::string_view code_of(std::string_view source);

}  // namespace fuseflow::detail
