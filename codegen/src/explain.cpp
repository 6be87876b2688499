// What a plan is, in words and source: explain() (the KernelSpec list: each kernel's
// strategy, why, registered strategy and why the registry chose it, policy values, launch
// shape, buffers with roles, scratch with sizes and what it waits on; the schedule's steps
// and the launches of two sample sizes, the fusion notes) and cuda_source(); and the
// target presets.
#include <sstream>

#include "fuseflow/codegen/plan.hpp"
#include "policy.hpp"

namespace fuseflow::codegen {

namespace {

const char* role(Arg::Kind kind) {
  switch (kind) {
    case Arg::Kind::Input: return "input";
    case Arg::Kind::Length: return "length";
    case Arg::Kind::Param: return "param";
    case Arg::Kind::Scalar: return "scalar";
    case Arg::Kind::Output: return "output";
    case Arg::Kind::OutputCount: return "output count";
    case Arg::Kind::ScalarOutput: return "scalar output";
    case Arg::Kind::Scratch: return "scratch";
    case Arg::Kind::Ticket: return "ticket";
    case Arg::Kind::TileStatus: return "look-back status";
    case Arg::Kind::Epoch: return "epoch";
    case Arg::Kind::InvalidFlag: return "invalid flag";
    case Arg::Kind::Table: return "table";
    case Arg::Kind::TableLength: return "table length";
    case Arg::Kind::Intermediate: return "intermediate";
    case Arg::Kind::IntermediateCount: return "intermediate count";
    case Arg::Kind::IntermediateLength: return "intermediate length";
  }
  return "?";
}

void explain_values(std::ostream& os, const char* what, const std::vector<std::pair<std::string, std::int64_t>>& values) {
  if (values.empty()) return;
  os << "     " << what << ":";
  for (const auto& [name, value] : values) os << " " << name << " " << value;
  os << "\n";
}

// The spec of one kernel after its strategy line and why: the registered strategy and why
// the registry chose it, the policy and tuning values, launch shape, buffers with their
// roles, scratch with sizes, and what its launches wait on.
void explain_kernel(std::ostream& os, const KernelSpec& k) {
  if (!k.registered.empty()) os << "     registered: " << k.registered << " (" << k.chosen << ")\n";
  explain_values(os, "policy", k.policy);
  if (!k.tuning.empty()) {
    os << "     tuning:";
    for (const auto& [name, value] : k.tuning) os << " " << name << " " << value;
    os << "\n";
  }
  os << "     launch: block " << k.block << ", ";
  if (k.max_grid > 0) os << "at most " << k.max_grid << " blocks";
  else os << "one block per " << k.items_per_block_step << " elements";
  if (k.max_grid > 0 && k.items_per_block_step > 1) os << " of " << k.items_per_block_step << " elements each";
  if (k.shared_bytes) os << ", " << k.shared_bytes << " bytes of dynamic shared memory";
  if (k.any_grid) os << ", any grid";
  if (k.in_place) os << ", may run in place";
  os << "\n     buffers:";
  for (std::size_t i = 0; i < k.args.size(); ++i) {
    const Arg& a = k.args[i];
    os << (i ? ", " : " ") << a.name << " (" << role(a.kind);
    if (a.kind != Arg::Kind::Length || a.index != 0) os << " " << a.index;
    os << ")";
  }
  os << "\n";
  for (const ScratchBuffer& b : k.scratch) os << "     scratch " << to_string(b) << "\n";
  os << "     waits on: " << k.order.reason << "\n";
}

void explain_schedule(std::ostream& os, const Plan& p, std::int64_t n) {
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(p.domains), n / 16 + 1);  // offsets: segments of 16
  lengths[0] = n;
  os << "  n = " << n;
  for (std::size_t d = 1; d < lengths.size(); ++d) os << ", domain " << d << " = " << lengths[d];
  os << ":";
  const Schedule s = p.schedule(lengths);
  if (s.launches.empty()) os << " no launch";
  os << "\n";
  for (const Launch& l : s.launches) {
    os << "    " << p.kernels[static_cast<std::size_t>(l.kernel)].name << ": n " << l.n << ", grid " << l.grid;
    if (l.waits_on >= 0)
      os << ", after " << p.kernels[static_cast<std::size_t>(s.launches[static_cast<std::size_t>(l.waits_on)].kernel)].name;
    if (!l.scratch.empty()) {
      os << ", scratch at";
      for (std::size_t at : l.scratch) os << " " << at;
    }
    if (l.status_bytes) os << ", " << l.status_bytes << " bytes of look-back status";
    os << "\n";
  }
  if (s.scratch_bytes) os << "    scratch: " << s.scratch_bytes << " bytes\n";
}

}  // namespace

std::string cuda_source(const Program& program, const Target& target, const PlanOptions& options) {
  Plan p = plan(program, target, options);
  std::string s;
  for (std::size_t i = 0; i < p.kernels.size(); ++i) s += (i ? "\n" : "") + p.kernels[i].source;
  return s;
}

std::string explain(const Program& program, const Target& target, const PlanOptions& options) {
  Plan p = plan(program, target, options);
  std::ostringstream os;
  os << "program:\n";
  std::istringstream in(to_string(program));
  for (std::string l; std::getline(in, l);) os << "  " << l << "\n";
  os << "target: " << target.arch() << ", " << target.sm_count << " SMs (tuning policies: "
     << policies_for(target, options).target << ")\n";
  if (!options.key().empty()) os << "options: " << options.key() << "\n";
  os << p.kernels.size() << (p.kernels.size() == 1 ? " kernel" : " kernels") << ":\n";
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelSpec& k = p.kernels[i];
    os << "  " << i + 1 << ". " << k.name << "\n";
    os << "     strategy: " << k.summary << "\n";
    if (!k.why.empty()) os << "     why: " << k.why << "\n";
    explain_kernel(os, k);
  }
  for (const auto& n : p.notes) os << "note: " << n << "\n";
  for (std::size_t i = 0; i < p.intermediates.size(); ++i) {
    const Intermediate& im = p.intermediates[i];
    os << "intermediate " << i << ": " << to_string(im.type) << " x "
       << (im.counted      ? "at most n, counted"
           : im.fixed >= 0 ? std::to_string(im.fixed)
           : im.less       ? "the length of domain " + std::to_string(im.domain) + " - " + std::to_string(im.less)
           : im.own_length ? "the length of domain " + std::to_string(im.domain)
           : im.domain     ? "one per offset of domain " + std::to_string(im.domain)
                           : "n")
       << ", " << im.role << (im.zeroed ? ", zeroed" : "") << ", in " << (im.output >= 0 ? "output " + std::to_string(im.output) : std::string("scratch"))
       << "\n";
  }
  os << "schedule:\n";
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const StepSpec& s = p.steps[i];
    os << "  step " << i + 1 << ": " << step_kind_name(s.kind) << " of kernel" << (s.kernels > 1 ? "s " : " ")
       << s.kernel + 1;
    if (s.kernels > 1) os << ".." << s.kernel + s.kernels;
    if (s.from != INT64_MAX) os << " (kernel " << s.kernel + 2 << " from " << s.from << " elements)";
    if (s.over != 0) os << ", over domain " << s.over;
    os << "\n";
  }
  for (std::int64_t n : {std::int64_t{1} << 16, std::int64_t{1} << 26}) explain_schedule(os, p, n);
  return os.str();
}

Target Target::preset(const std::string& arch) {
  Target t;
  if (arch == "sm_90") return t;
  if (arch == "sm_80") {
    t.cc_major = 8;
    t.sm_count = 108;
    t.shared_per_block_optin = 163 * 1024;
    return t;
  }
  throw GraphError("codegen: unknown target preset '" + arch + "' (known: sm_80, sm_90)");
}

}  // namespace fuseflow::codegen
