#pragma once
// The umbrella header: the DSL, the code generator's inspection functions, and the
// runtime that compiles and runs programs.
//
//   #include <fuseflow/fuseflow.hpp>
//   namespace ff = fuseflow;
#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/frontend.hpp"
#include "fuseflow/runtime/runtime.hpp"

namespace fuseflow {
// ff::explain(program) and ff::cuda_source(program) for the H100 preset, or a target.
using codegen::cuda_source;
using codegen::explain;
}  // namespace fuseflow
