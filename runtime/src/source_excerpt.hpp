#pragma once
// Turns NVRTC's "file(41): error: ..." lines into the numbered source lines around each
// reported line: what a user needs to fix a raw CUDA snippet without opening a dump.
#include <span>
#include <string>
#include <string_view>

#include "fuseflow/runtime/compiler.hpp"

namespace fuseflow::detail {

// `program_name` is the name the source was given in nvrtcCreateProgram; lines in the
// in-memory headers are shown from their content too.
std::string source_excerpt(std::string_view log, std::string_view program_name,
                           std::string_view source, std::span<const Header> headers);

}  // namespace fuseflow::detail
