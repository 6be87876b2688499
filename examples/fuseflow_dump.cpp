// fuseflow-dump: prints what fuseflow makes of an example program, without a GPU.
//
//   fuseflow-dump --list
//   fuseflow-dump --example dot [--emit program|plan|cuda|ptx] [--arch sm_90|sm_80]
//
// --emit ptx compiles every kernel with NVRTC (no GPU needed) and prints the PTX.
#include <cstring>
#include <iostream>

#include "catalog/catalog.hpp"
#include <fuseflow/codegen/plan.hpp>
#include <fuseflow/runtime/compiler.hpp>

namespace ff = fuseflow;

namespace {
int usage(const char* why) {
  std::cerr << "fuseflow-dump: " << why << "\n"
            << "usage: fuseflow-dump --list\n"
            << "       fuseflow-dump --example NAME [--emit program|plan|cuda|ptx] [--arch sm_90|sm_80]\n";
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  std::string example, emit = "cuda", arch = "sm_90";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--list") {
      for (const auto& e : ff::catalog::entries()) std::cout << e.name << "  " << e.description << "\n";
      return 0;
    }
    if (a == "--example") example = value();
    else if (a == "--emit") emit = value();
    else if (a == "--arch") arch = value();
    else return usage(("unknown argument " + a).c_str());
  }
  if (example.empty()) return usage("--example NAME is required");
  try {
    ff::Program p = ff::catalog::find(example).build();
    ff::codegen::Target target = ff::codegen::Target::preset(arch);
    if (emit == "program") {
      std::cout << ff::to_string(p);
    } else if (emit == "plan") {
      std::cout << ff::codegen::explain(p, target);
    } else if (emit == "cuda") {
      std::cout << ff::codegen::cuda_source(p, target);
    } else if (emit == "ptx") {
      ff::CompileOptions options;
      options.arch = arch;
      std::vector<ff::Header> headers;
      for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
      for (const auto& k : ff::codegen::plan(p, target).kernels)
        std::cout << ff::Compiler::ptx(k.source, options, headers, k.name);
    } else {
      return usage(("unknown --emit " + emit).c_str());
    }
  } catch (const ff::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
