// The records: every row printed as it is measured and kept for bench.csv (and the
// compile figures for bench_compile.csv).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ffbench {

std::vector<Row> g_rows;
int g_mismatches = 0;

void report_mismatch(const std::string& what) {
  ++g_mismatches;
  std::printf("\n!!!!!!!! MISMATCH: %s !!!!!!!!\n\n", what.c_str());
  std::fflush(stdout);
}

void add_row(Row r) {
  r.mode = g_device_mode ? "device" : "sync";
  std::printf("  %-15s 2^%-3d %10.2f %10.2f %7.2fx %9.1f %7.1f%%  %s\n", r.op.c_str(),
              (int)std::lround(std::log2((double)r.n)), r.ff_us, r.cub_us, r.cub_us / r.ff_us,
              r.bytes / (r.ff_us * 1e3), 100.0 * r.ceil_us / r.ff_us, r.check.c_str());
  std::fflush(stdout);
  g_rows.push_back(std::move(r));
}

std::string out_dir() {
  const char* d = std::getenv("FUSEFLOW_BENCH_OUT");
  return d && *d ? std::string(d) : std::string(".");
}

void write_csv(const std::string& path, const std::vector<CompileRow>& compile) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "fuseflow-bench: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "mode,op,n,log2n,bytes,fuseflow_us,cub_us,speedup_cub_over_fuseflow,fuseflow_gbps,cub_gbps,"
                  "ceiling_us,ceiling_gbps,pct_of_ceiling,cub_variant,check,buffers,reps\n");
  for (const Row& r : g_rows) {
    std::fprintf(f, "%s,%s,%zu,%d,%.0f,%.3f,%.3f,%.4f,%.2f,%.2f,%.3f,%.2f,%.2f,\"%s\",\"%s\",%zu,%d\n", r.mode.c_str(), r.op.c_str(), r.n,
                 (int)std::lround(std::log2((double)r.n)), r.bytes, r.ff_us, r.cub_us, r.cub_us / r.ff_us,
                 r.bytes / (r.ff_us * 1e3), r.bytes / (r.cub_us * 1e3), r.ceil_us, r.bytes / (r.ceil_us * 1e3),
                 100.0 * r.ceil_us / r.ff_us, r.cub_variant.c_str(), r.check.c_str(), r.nbuf, r.reps);
  }
  std::fclose(f);
  const std::string cpath = path.substr(0, path.size() - 4) + "_compile.csv";
  if (FILE* g = std::fopen(cpath.c_str(), "w")) {
    std::fprintf(g, "program,cold_first_run_ms,default_cache_first_run_ms,default_cache_outcome,warm_run_us\n");
    for (const CompileRow& r : compile)
      std::fprintf(g, "%s,%.3f,%.3f,%s,%.2f\n", r.program.c_str(), r.cold_ms, r.default_ms,
                   r.default_outcome.c_str(), r.warm_us);
    std::fclose(g);
  }
}

}  // namespace ffbench
