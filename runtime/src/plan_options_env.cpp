// TRANSITIONAL (issue 19): the plan options from the FUSEFLOW_* tuning variables, read when
// a program is prepared, as the code generator read them itself before it took
// PlanOptions. The runtime's configuration (runtime/src/config.cpp) replaces this file:
// it reads every variable once and documents them in one table.
#include <cstdlib>
#include <string>

#include "fuseflow/codegen/plan_options.hpp"

namespace fuseflow::detail {

codegen::PlanOptions plan_options_from_environment() {
  static const struct {
    const char* option;
    const char* variable;
  } kVariables[] = {{"scan_tile", "FUSEFLOW_SCAN_TILE"},
                    {"filter_tile", "FUSEFLOW_FILTER_TILE"},
                    {"segmented_tile", "FUSEFLOW_SEGMENTED_TILE"},
                    {"scan_staged_from", "FUSEFLOW_SCAN_STAGED_FROM"},
                    {"scan_pipeline", "FUSEFLOW_SCAN_PIPELINE"},
                    {"segmented_short", "FUSEFLOW_SEGMENTED_SHORT"}};
  codegen::PlanOptions o;
  for (const auto& v : kVariables)
    if (const char* text = std::getenv(v.variable); text && *text) codegen::set_option(o, v.option, text, v.variable);
  codegen::validate(o);
  return o;
}

}  // namespace fuseflow::detail
