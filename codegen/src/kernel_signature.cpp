#include "kernel_context.hpp"

namespace fuseflow::codegen {

void open_elementwise_kernel(SourceWriter& w, CudaTypes& types, const std::string& name, int block,
                             const std::vector<Arg>& args, const ReduceGroup& g, int min_blocks) {
  const std::string bounds = std::to_string(block) + (min_blocks > 0 ? ", " + std::to_string(min_blocks) : "");
  w.line("extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + name + "(");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    std::string decl;
    switch (a.kind) {
      case Arg::Kind::Input:
      case Arg::Kind::Scalar: decl = "const " + types.name(a.type) + "* __restrict__ " + a.name; break;
      case Arg::Kind::Length: decl = "const long long n"; break;
      case Arg::Kind::Param: decl = "const " + types.name(a.type) + " " + a.name; break;
      default: decl = types.name(a.type) + "* __restrict__ " + a.name; break;
    }
    w.line("    " + decl + (i + 1 < args.size() ? "," : ") {"));
  }
  w.indent();
  for (int s : g.scalars_read)
    w.line("const " + types.name(g.slot_types[static_cast<std::size_t>(s)]) + " r" + std::to_string(s) + " = *s" +
           std::to_string(s) + ";");
}

}  // namespace fuseflow::codegen
