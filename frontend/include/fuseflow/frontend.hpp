#pragma once
// The DSL: types, expressions, monoids, graph ops, programs, the CPU reference evaluator,
// and the textual form of programs read back (parse_program).
#include "fuseflow/frontend/error.hpp"
#include "fuseflow/frontend/expr.hpp"
#include "fuseflow/frontend/monoid.hpp"
#include "fuseflow/frontend/parser.hpp"
#include "fuseflow/frontend/program.hpp"
#include "fuseflow/frontend/reference.hpp"
#include "fuseflow/frontend/tuple.hpp"
#include "fuseflow/frontend/type.hpp"
#include "fuseflow/frontend/value.hpp"
