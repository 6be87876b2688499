// The tuning tables. Every value was measured on the H100 (bench/RESULTS.md, the run
// named beside it in policy.hpp's users); the A100 (sm_80) takes the same values, not
// measured there, without the pipelined kernels (they need sm_90's bulk copies); any
// other target takes the sm_90 table, with the pipelined kernels from sm_90 on.
#include "policy.hpp"

namespace fuseflow::codegen {

namespace {

Policies sm90() {
  Policies p;
  p.target = "sm_90";
  return p;  // the defaults in policy.hpp are the H100's
}

Policies sm80() {
  Policies p = sm90();
  p.target = "sm_80";
  p.scan.pipeline = false;
  p.compact.pipeline = false;
  return p;
}

Policies fallback(const Target& t) {
  Policies p = sm90();
  p.target = "default";
  p.scan.pipeline = p.compact.pipeline = t.cc_major >= 9;
  return p;
}

}  // namespace

Policies policies_for(const Target& target, const PlanOptions& options) {
  const int cc = target.cc_major * 10 + target.cc_minor;
  Policies p = cc == 90 ? sm90() : cc == 80 ? sm80() : fallback(target);
  p.scan.tile = options.scan_tile;
  p.compact.tile = options.filter_tile;
  p.segmented.tile = options.segmented_tile;
  if (options.scan_staged_from) p.scan.staged_from = p.compact.staged_from = *options.scan_staged_from;
  if (!options.scan_pipeline) p.scan.pipeline = p.compact.pipeline = false;
  p.segmented.short_pass = options.segmented_short;
  p.scan.segmented_pipeline = options.segmented_pipeline;
  return p;
}

}  // namespace fuseflow::codegen
