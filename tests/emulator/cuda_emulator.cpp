// A CPU stand-in for the CUDA driver and NVRTC, for running fuseflow's generated kernels
// without a GPU: the kernel-logic layer of the tests (DESIGN.md "Testing" adds it beside
// the GPU tests; it never replaces them). fuseflow loads this library instead of
// libcuda.so.1 and libnvrtc when FUSEFLOW_CUDA_LIBRARY and FUSEFLOW_NVRTC_LIBRARY name it.
//
//  - "NVRTC" compiles the kernel's CUDA source as C++ with g++ (emulator_prelude.hpp
//    first, the device headers written next to it) into a shared library, whose bytes
//    are the "cubin". Each kernel gets an entry ff_emu_entry_<name>(void** args) that
//    unpacks cuLaunchKernel's arguments by the kernel's own parameter types.
//  - The "driver" keeps device memory in host memory (a CUdeviceptr is a host address),
//    copies and sets synchronously, loads a module with dlopen, and runs a launch block
//    after block, in launch order, on the calling thread; the threads of a block are
//    fibers (a small x86-64 stack switch) switched at every barrier, warp shuffle and vote, so
//    __syncthreads and warp-synchronous code mean what they mean on a GPU. Launches from
//    all threads of the process are serialised (the kernels' __shared__ are statics).
//  - The device reports itself as compute capability 9.0 with 8 SMs and 2 resident
//    blocks per SM, so grid-strided kernels run small grids.
// A block whose fibers all wait with no barrier complete is a deadlock: the launch fails
// with CUDA_ERROR_LAUNCH_FAILED and a message on stderr, instead of hanging.
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#ifndef FUSEFLOW_EMU_PRELUDE
#error "FUSEFLOW_EMU_PRELUDE must name emulator_prelude.hpp"
#endif
#ifndef FUSEFLOW_EMU_CXX
#define FUSEFLOW_EMU_CXX "c++"
#endif

// Saves the callee-saved registers, the SSE and x87 control words and the stack pointer
// of the running context in *save, and resumes the one whose stack pointer is `next`.
// (ucontext's swapcontext also saves the signal mask, a system call per switch.)
extern "C" void ff_emu_switch(void** save, void* next);
asm(R"(
  .text
  .globl ff_emu_switch
  .hidden ff_emu_switch
  .type ff_emu_switch, @function
ff_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ff_emu_switch, .-ff_emu_switch
)");

namespace {

// ---- the fiber scheduler -------------------------------------------------------------

struct Dim3 {
  unsigned x, y, z;
};

struct Hooks {  // must match emulator_prelude.hpp's ff_emu::Hooks
  Dim3 const* const* thread_idx;
  const Dim3* block_idx;
  const Dim3* block_dim;
  const Dim3* grid_dim;
  void (*sync_block)();
  void (*sync_warp)();
  unsigned (*shuffle)(unsigned, int);
  unsigned (*ballot)(int);
  void (*spin)();
  unsigned (*match)(unsigned);
};

// What a switched-out fiber waits for: a barrier, a warp step, its next turn (spin: an
// mbarrier's phase that other threads complete), or nothing more (done).
enum class Wait { none, block, warp, spin, done };

struct Fiber {
  void* sp = nullptr;  // saved stack pointer while switched out
  Dim3 index{};
  Wait wait = Wait::none;
};

constexpr std::size_t kStackBytes = 256 * 1024;
constexpr int kMaxThreads = 1024;
// Must equal ff_emu::kMaxDynamicSharedBytes (emulator_prelude.hpp): the size of a kernel's
// extern __shared__ array.
constexpr unsigned kMaxDynamicSharedBytes = 227 * 1024;

struct Scheduler {
  std::vector<Fiber> fibers;
  char* stacks = nullptr;  // kMaxThreads stacks, mapped once
  void* home = nullptr;
  int current = -1;
  const Dim3* current_index = nullptr;
  Dim3 block_idx{}, block_dim{}, grid_dim{};
  std::vector<unsigned> exchange;  // one word per thread: shuffles and ballots
  void (*entry)(void**) = nullptr;
  void** args = nullptr;
  Hooks hooks{};
};

Scheduler& scheduler() {
  static Scheduler s;
  return s;
}

void yield(Wait why) {
  Scheduler& s = scheduler();
  s.fibers[static_cast<std::size_t>(s.current)].wait = why;
  ff_emu_switch(&s.fibers[static_cast<std::size_t>(s.current)].sp, s.home);
}

void sync_block() { yield(Wait::block); }
void sync_warp() { yield(Wait::warp); }
void spin() { yield(Wait::spin); }

unsigned shuffle(unsigned value, int source) {
  Scheduler& s = scheduler();
  const int me = s.current, warp_base = me / 32 * 32;
  s.exchange[static_cast<std::size_t>(me)] = value;
  yield(Wait::warp);  // every lane has offered its word
  const unsigned got = source >= 0 && source < 32 && warp_base + source < static_cast<int>(s.fibers.size())
                           ? s.exchange[static_cast<std::size_t>(warp_base + source)]
                           : value;
  yield(Wait::warp);  // every lane has read before any lane offers again
  return got;
}

unsigned ballot(int predicate) {
  Scheduler& s = scheduler();
  const int me = s.current, warp_base = me / 32 * 32;
  s.exchange[static_cast<std::size_t>(me)] = predicate ? 1u : 0u;
  yield(Wait::warp);
  unsigned mask = 0;
  for (int l = 0; l < 32 && warp_base + l < static_cast<int>(s.fibers.size()); ++l)
    if (s.exchange[static_cast<std::size_t>(warp_base + l)]) mask |= 1u << l;
  yield(Wait::warp);
  return mask;
}

// __match_any_sync on one 32-bit word: the mask of the warp's lanes that offered `value`.
unsigned match(unsigned value) {
  Scheduler& s = scheduler();
  const int me = s.current, warp_base = me / 32 * 32;
  s.exchange[static_cast<std::size_t>(me)] = value;
  yield(Wait::warp);
  unsigned mask = 0;
  for (int l = 0; l < 32 && warp_base + l < static_cast<int>(s.fibers.size()); ++l)
    if (s.exchange[static_cast<std::size_t>(warp_base + l)] == value) mask |= 1u << l;
  yield(Wait::warp);
  return mask;
}

[[noreturn]] void fiber_main() {
  Scheduler& s = scheduler();
  s.entry(s.args);
  s.fibers[static_cast<std::size_t>(s.current)].wait = Wait::done;
  ff_emu_switch(&s.fibers[static_cast<std::size_t>(s.current)].sp, s.home);
  __builtin_unreachable();  // a finished fiber is never resumed
}

// A fresh fiber's stack, laid out as ff_emu_switch leaves a switched-out one: its first
// resumption "returns" into fiber_main with the stack aligned as after a call.
void* fresh_stack(char* base, std::size_t bytes) {
  auto* top = reinterpret_cast<std::uint64_t*>(reinterpret_cast<std::uintptr_t>(base + bytes) & ~std::uintptr_t{15});
  *--top = 0;                                                   // fiber_main's return address: none
  *--top = reinterpret_cast<std::uint64_t>(&fiber_main);        // where ff_emu_switch returns to
  for (int r = 0; r < 6; ++r) *--top = 0;                       // rbp rbx r12 r13 r14 r15
  *--top = 0x1F80ull | (0x037Full << 32);                       // mxcsr, x87 control word
  return top;
}

// Runs one block to completion; false on a deadlock.
bool run_block(std::string& error) {
  Scheduler& s = scheduler();
  const int threads = static_cast<int>(s.block_dim.x * s.block_dim.y * s.block_dim.z);
  s.fibers.assign(static_cast<std::size_t>(threads), Fiber{});
  s.exchange.assign(static_cast<std::size_t>(threads), 0u);
  for (int t = 0; t < threads; ++t) {
    Fiber& f = s.fibers[static_cast<std::size_t>(t)];
    f.index = {static_cast<unsigned>(t) % s.block_dim.x, static_cast<unsigned>(t) / s.block_dim.x % s.block_dim.y,
               static_cast<unsigned>(t) / (s.block_dim.x * s.block_dim.y)};
    f.sp = fresh_stack(s.stacks + static_cast<std::size_t>(t) * kStackBytes, kStackBytes);
  }
  // Rounds in a row in which only spinning threads ran: a block whose threads spin that
  // long waits for a phase no thread will complete.
  long long spin_rounds = 0;
  constexpr long long kMaxSpinRounds = 1ll << 24;
  // Each round runs the ready threads up to their next wait, in thread order or in reverse
  // order, picked by a fixed pseudo-random sequence (the same every run): between two warp
  // steps a lane's stores come before a lower lane's accesses about as often as after, as
  // on the GPU, where the lanes run together, whatever the number of steps in a loop. (In
  // thread order only, a kernel that re-read shared memory a higher lane had just written
  // over passed here and failed on the H100.)
  std::uint32_t order = 0x9e3779b9u;
  for (;;) {
    order = order * 1664525u + 1013904223u;
    const bool reverse = (order >> 31) != 0;
    for (int i = 0; i < threads; ++i) {
      const int t = reverse ? threads - 1 - i : i;
      Fiber& f = s.fibers[static_cast<std::size_t>(t)];
      if (f.wait != Wait::none) continue;
      s.current = t;
      s.current_index = &f.index;
      ff_emu_switch(&s.home, f.sp);
    }
    // Every fiber now waits or is done. Release whole warps at a warp step, then the
    // block at a barrier once every live thread has reached it.
    bool released = false, all_done = true, all_at_block = true;
    for (int w = 0; w < threads; w += 32) {
      bool warp_ready = true, any_warp_wait = false;
      for (int t = w; t < w + 32 && t < threads; ++t) {
        const Wait why = s.fibers[static_cast<std::size_t>(t)].wait;
        any_warp_wait = any_warp_wait || why == Wait::warp;
        warp_ready = warp_ready && (why == Wait::warp || why == Wait::done);
      }
      if (any_warp_wait && warp_ready) {
        for (int t = w; t < w + 32 && t < threads; ++t)
          if (s.fibers[static_cast<std::size_t>(t)].wait == Wait::warp) s.fibers[static_cast<std::size_t>(t)].wait = Wait::none;
        released = true;
      }
    }
    for (const Fiber& f : s.fibers) {
      all_done = all_done && f.wait == Wait::done;
      all_at_block = all_at_block && (f.wait == Wait::block || f.wait == Wait::done);
    }
    if (all_done) return true;
    if (!released && all_at_block) {
      for (Fiber& f : s.fibers)
        if (f.wait == Wait::block) f.wait = Wait::none;
      released = true;
    }
    // Spinning threads take their next turn; the others wait where they are.
    bool spinning = false;
    for (Fiber& f : s.fibers)
      if (f.wait == Wait::spin) {
        f.wait = Wait::none;
        spinning = true;
      }
    spin_rounds = released ? 0 : spin_rounds + (spinning ? 1 : 0);
    if (spinning && spin_rounds > kMaxSpinRounds) {
      error = "deadlock: the threads of block (" + std::to_string(s.block_idx.x) + ", " + std::to_string(s.block_idx.y) +
              ") spin on barrier phases that never complete";
      return false;
    }
    if (spinning) continue;
    if (!released) {
      error = "deadlock: the threads of block (" + std::to_string(s.block_idx.x) + ", " + std::to_string(s.block_idx.y) +
              ") wait at barriers no group of them completes (a __syncthreads or warp step some threads skip)";
      return false;
    }
  }
}

std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}

// ---- modules ---------------------------------------------------------------------------

struct Module {
  void* library = nullptr;
  std::string path;
};
struct Function {
  void (*entry)(void**) = nullptr;
  std::string name;
};

std::string temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/fuseflow-emu-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const char* made = mkdtemp(buf.data());
    return std::string(made ? made : "/tmp");
  }();
  return dir;
}

int next_id() {
  static int id = 0;
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  return ++id;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// ---- NVRTC -----------------------------------------------------------------------------

struct Program {
  std::string source, name;
  std::vector<std::pair<std::string, std::string>> headers;  // include name, text
  std::string log, image;
};

// ---- fault injection (tests) -------------------------------------------------------------
// A test makes the k-th driver or NVRTC call from now fail (ff_emu_fail_driver_call(k)),
// then checks that fuseflow reports it (CudaError / CompileError naming the call) and
// leaks nothing: the counts of live allocations, modules and context retains are back
// where they were. Release calls (free, unload, destroy, release, pop) never fail: fuseflow
// ignores their results in destructors, as it must. A failed allocation reports
// CUDA_ERROR_OUT_OF_MEMORY, any other call CUDA_ERROR_UNKNOWN (not sticky: the context
// stays usable), an NVRTC call NVRTC_ERROR_INTERNAL_ERROR.

struct Faults {
  std::mutex mutex;
  long driver_calls = 0, nvrtc_calls = 0;      // counted since the last arm
  long driver_fail_at = 0, nvrtc_fail_at = 0;  // 0: none armed
  std::string last;                            // the call made to fail last
  std::string log;                             // the calls counted since the last arm, by name
  bool capturing = false;                      // cuStreamIsCapturing's answer (ff_emu_set_capturing)
  bool skip_launches = false;                  // cuLaunchKernel runs nothing (ff_emu_set_skip_launches)
  long allocations = 0, modules = 0, contexts = 0, programs = 0;  // live now
};
Faults& faults() {
  static Faults f;
  return f;
}

bool fail(const char* call, long Faults::*calls, long Faults::*fail_at) {
  Faults& f = faults();
  std::lock_guard<std::mutex> lock(f.mutex);
  ++(f.*calls);
  // Bounded: a test reads the log of a few calls; a long test never arms it again.
  if (calls == &Faults::driver_calls && f.log.size() < 4096) (f.log += call) += ' ';
  if (f.*fail_at == 0 || f.*calls != f.*fail_at) return false;
  f.*fail_at = 0;
  f.last = call;
  return true;
}
void count(long Faults::*what, long delta) {
  std::lock_guard<std::mutex> lock(faults().mutex);
  faults().*what += delta;
}

#define FF_EMU_DRIVER_FAULT(call, code) \
  if (fail(#call, &Faults::driver_calls, &Faults::driver_fail_at)) return code
#define FF_EMU_NVRTC_FAULT(call) \
  if (fail(#call, &Faults::nvrtc_calls, &Faults::nvrtc_fail_at)) return NVRTC_ERROR_INTERNAL_ERROR

}  // namespace

extern "C" {
// k >= 1: the k-th call from now fails (once); 0: none. Either way the count restarts.
void ff_emu_fail_driver_call(long k) {
  std::lock_guard<std::mutex> lock(faults().mutex);
  faults().driver_calls = 0;
  faults().log.clear();
  faults().driver_fail_at = k;
  faults().last.clear();
}
void ff_emu_fail_nvrtc_call(long k) {
  std::lock_guard<std::mutex> lock(faults().mutex);
  faults().nvrtc_calls = 0;
  faults().nvrtc_fail_at = k;
  faults().last.clear();
}
long ff_emu_driver_calls() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().driver_calls;
}
long ff_emu_nvrtc_calls() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().nvrtc_calls;
}
// The driver calls counted since the last ff_emu_fail_driver_call, by name, each followed by
// a space; valid until the next call.
const char* ff_emu_driver_call_log() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  static thread_local std::string copy;
  copy = faults().log;
  return copy.c_str();
}
// Makes cuStreamIsCapturing report every stream as capturing (1) or not (0), so a test can
// reach the executor's stream-capture paths without a GPU.
void ff_emu_set_capturing(int on) {
  std::lock_guard<std::mutex> lock(faults().mutex);
  faults().capturing = on != 0;
}
// Makes cuLaunchKernel check its arguments and return without running the kernel (1), so
// a measurement of the host's work per run (tests/runtime/host_cost_probe.cpp) is not
// buried under the emulated kernel's.
void ff_emu_set_skip_launches(int on) {
  std::lock_guard<std::mutex> lock(faults().mutex);
  faults().skip_launches = on != 0;
}
// The name of the call made to fail last ("" when none); valid until the next fault.
const char* ff_emu_last_fault() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().last.c_str();
}
long ff_emu_live_allocations() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().allocations;
}
long ff_emu_live_modules() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().modules;
}
long ff_emu_live_programs() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().programs;
}
long ff_emu_live_contexts() {
  std::lock_guard<std::mutex> lock(faults().mutex);
  return faults().contexts;
}
}  // extern "C"

// ---- the NVRTC API ---------------------------------------------------------------------

extern "C" {

const char* nvrtcGetErrorString(nvrtcResult result) {
  switch (result) {
    case NVRTC_SUCCESS: return "NVRTC_SUCCESS (emulated)";
    case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION (emulated: g++ rejected the kernel)";
    default: return "NVRTC error (emulated)";
  }
}

// Not a real NVRTC version: cache entries of the emulator never match real ones.
nvrtcResult nvrtcVersion(int* major, int* minor) {
  FF_EMU_NVRTC_FAULT(nvrtcVersion);
  *major = 0;
  *minor = 1;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name, int num_headers,
                               const char* const* headers, const char* const* include_names) {
  FF_EMU_NVRTC_FAULT(nvrtcCreateProgram);
  auto* p = new Program;
  p->source = src ? src : "";
  p->name = name ? name : "kernel.cu";
  for (int i = 0; i < num_headers; ++i) p->headers.emplace_back(include_names[i], headers[i]);
  count(&Faults::programs, 1);
  *prog = reinterpret_cast<nvrtcProgram>(p);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (*prog) count(&Faults::programs, -1);
  delete reinterpret_cast<Program*>(*prog);
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int, const char* const*) {
  FF_EMU_NVRTC_FAULT(nvrtcCompileProgram);
  Program& p = *reinterpret_cast<Program*>(prog);
  const std::string dir = temp_dir() + "/k" + std::to_string(next_id());
  if (std::system(("mkdir -p '" + dir + "/include/fuseflow'").c_str()) != 0) return NVRTC_ERROR_INTERNAL_ERROR;
  for (const auto& [include, text] : p.headers) std::ofstream(dir + "/include/" + include) << text;
  // One entry per extern "C" __global__ kernel, unpacking the argument array.
  std::string entries;
  static const std::regex kernel(R"(extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\()");
  for (auto it = std::sregex_iterator(p.source.begin(), p.source.end(), kernel); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    entries += "extern \"C\" void ff_emu_entry_" + name + "(void** args) { ff_emu_invoke(&" + name + ", args); }\n";
  }
  // Dynamic shared memory (extern __shared__ T name[];) becomes a static array of the
  // largest size a launch may ask for (cuLaunchKernel checks it).
  static const std::regex dynamic_shared(R"(extern\s+__shared__\s+([^;\[]*?)(\w+)\s*\[\s*\]\s*;)");
  const std::string source =
      std::regex_replace(p.source, dynamic_shared, "__shared__ $1$2[ff_emu::kMaxDynamicSharedBytes];");
  std::ofstream(dir + "/kernel.cpp") << source << "\n// ---- emulator entries\n" << entries;
  const std::string out = dir + "/kernel.so";
  // FUSEFLOW_EMU_CXXFLAGS (e.g. "-O0 -g" to debug a kernel in gdb) replaces the default flags.
  const char* flags = std::getenv("FUSEFLOW_EMU_CXXFLAGS");
  const std::string command = std::string(FUSEFLOW_EMU_CXX) + " -std=c++17 " + (flags && *flags ? flags : "-O1 -g0") +
                              " -fPIC -shared -fno-gnu-unique -w -include '" FUSEFLOW_EMU_PRELUDE "' -I '" + dir +
                              "/include' -o '" + out + "' '" + dir + "/kernel.cpp' > '" + dir + "/log.txt' 2>&1";
  const int rc = std::system(command.c_str());
  p.log = read_file(dir + "/log.txt");
  if (rc != 0) return NVRTC_ERROR_COMPILATION;
  p.image = read_file(out);
  // The image is in memory now; the directory (source, headers, library) is not needed
  // again, and a test that compiles thousands of kernels would otherwise fill /tmp. Kept
  // when FUSEFLOW_EMU_CXXFLAGS is set: a debugger reads the kernel's source there.
  if (!(flags && *flags) && std::system(("rm -rf '" + dir + "'").c_str()) != 0) return NVRTC_ERROR_INTERNAL_ERROR;
  return p.image.empty() ? NVRTC_ERROR_INTERNAL_ERROR : NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) {
  FF_EMU_NVRTC_FAULT(nvrtcGetProgramLogSize);
  *size = reinterpret_cast<Program*>(prog)->log.size() + 1;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  FF_EMU_NVRTC_FAULT(nvrtcGetProgramLog);
  const std::string& l = reinterpret_cast<Program*>(prog)->log;
  std::memcpy(log, l.c_str(), l.size() + 1);
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) {
  FF_EMU_NVRTC_FAULT(nvrtcGetCUBINSize);
  *size = reinterpret_cast<Program*>(prog)->image.size();
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  FF_EMU_NVRTC_FAULT(nvrtcGetCUBIN);
  const std::string& i = reinterpret_cast<Program*>(prog)->image;
  std::memcpy(cubin, i.data(), i.size());
  return NVRTC_SUCCESS;
}
// Counted as the CUBIN calls they are.
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* size) { return nvrtcGetCUBINSize(prog, size); }
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) { return nvrtcGetCUBIN(prog, ptx); }

// ---- the driver API --------------------------------------------------------------------

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  FF_EMU_DRIVER_FAULT(cuDriverGetVersion, CUDA_ERROR_UNKNOWN);
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_UNKNOWN: *name = "CUDA_ERROR_UNKNOWN"; break;
    default: *name = "CUDA_ERROR (emulated)"; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) { return cuGetErrorName(error, text); }
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  FF_EMU_DRIVER_FAULT(cuDeviceGetCount, CUDA_ERROR_UNKNOWN);
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  FF_EMU_DRIVER_FAULT(cuDeviceGet, CUDA_ERROR_UNKNOWN);
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice) {
  FF_EMU_DRIVER_FAULT(cuDeviceGetName, CUDA_ERROR_UNKNOWN);
  std::snprintf(name, static_cast<std::size_t>(len), "%s", "fuseflow CPU emulator (not a GPU)");
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  FF_EMU_DRIVER_FAULT(cuDeviceGetAttribute, CUDA_ERROR_UNKNOWN);
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 8; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = kMaxThreads; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = static_cast<int>(kMaxDynamicSharedBytes); break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 228 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 * 1024 * 1024; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  FF_EMU_DRIVER_FAULT(cuDeviceTotalMem, CUDA_ERROR_UNKNOWN);
  *bytes = std::size_t{16} << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total) {
  FF_EMU_DRIVER_FAULT(cuMemGetInfo, CUDA_ERROR_UNKNOWN);
  *free_bytes = *total = std::size_t{16} << 30;
  return CUDA_SUCCESS;
}

namespace {
int g_context_object, g_stream_object, g_pool_object;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  FF_EMU_DRIVER_FAULT(cuDevicePrimaryCtxRetain, CUDA_ERROR_UNKNOWN);
  *context = reinterpret_cast<CUcontext>(&g_context_object);
  count(&Faults::contexts, 1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  count(&Faults::contexts, -1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  FF_EMU_DRIVER_FAULT(cuCtxGetCurrent, CUDA_ERROR_UNKNOWN);
  *context = reinterpret_cast<CUcontext>(&g_context_object);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext) {
  FF_EMU_DRIVER_FAULT(cuCtxPushCurrent, CUDA_ERROR_UNKNOWN);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* context) {
  if (context) *context = reinterpret_cast<CUcontext>(&g_context_object);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  FF_EMU_DRIVER_FAULT(cuStreamCreate, CUDA_ERROR_UNKNOWN);
  *stream = reinterpret_cast<CUstream>(&g_stream_object);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  FF_EMU_DRIVER_FAULT(cuStreamSynchronize, CUDA_ERROR_UNKNOWN);
  return CUDA_SUCCESS;
}

namespace {
CUresult allocate(CUdeviceptr* pointer, size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  count(&Faults::allocations, 1);
  return CUDA_SUCCESS;
}
}  // namespace
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  FF_EMU_DRIVER_FAULT(cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  return allocate(pointer, bytes);
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  if (pointer) count(&Faults::allocations, -1);
  std::free(reinterpret_cast<void*>(pointer));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* pointer, size_t bytes, CUstream) {
  FF_EMU_DRIVER_FAULT(cuMemAllocAsync, CUDA_ERROR_OUT_OF_MEMORY);
  return allocate(pointer, bytes);
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr pointer, CUstream) { return cuMemFree(pointer); }
CUresult CUDAAPI cuMemHostAlloc(void** pointer, size_t bytes, unsigned int) {
  FF_EMU_DRIVER_FAULT(cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr p = 0;
  const CUresult result = allocate(&p, bytes);  // counted with the device allocations
  *pointer = reinterpret_cast<void*>(p);
  return result;
}
CUresult CUDAAPI cuMemFreeHost(void* pointer) { return cuMemFree(reinterpret_cast<CUdeviceptr>(pointer)); }
CUresult CUDAAPI cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  FF_EMU_DRIVER_FAULT(cuStreamIsCapturing, CUDA_ERROR_UNKNOWN);
  std::lock_guard<std::mutex> lock(faults().mutex);
  *status = faults().capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice) {
  FF_EMU_DRIVER_FAULT(cuDeviceGetDefaultMemPool, CUDA_ERROR_UNKNOWN);
  *pool = reinterpret_cast<CUmemoryPool>(&g_pool_object);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) {
  FF_EMU_DRIVER_FAULT(cuMemPoolSetAttribute, CUDA_ERROR_UNKNOWN);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool, size_t) {
  FF_EMU_DRIVER_FAULT(cuMemPoolTrimTo, CUDA_ERROR_UNKNOWN);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr destination, const void* source, size_t bytes, CUstream) {
  FF_EMU_DRIVER_FAULT(cuMemcpyHtoDAsync, CUDA_ERROR_UNKNOWN);
  if (bytes) std::memcpy(reinterpret_cast<void*>(destination), source, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* destination, CUdeviceptr source, size_t bytes, CUstream) {
  FF_EMU_DRIVER_FAULT(cuMemcpyDtoHAsync, CUDA_ERROR_UNKNOWN);
  if (bytes) std::memcpy(destination, reinterpret_cast<const void*>(source), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr destination, unsigned char value, size_t count, CUstream) {
  FF_EMU_DRIVER_FAULT(cuMemsetD8Async, CUDA_ERROR_UNKNOWN);
  if (count) std::memset(reinterpret_cast<void*>(destination), value, count);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  FF_EMU_DRIVER_FAULT(cuModuleLoadData, CUDA_ERROR_UNKNOWN);
  // The image is a shared library; its size is not passed, but it is an ELF file whose
  // section headers end it: e_shoff + e_shnum * e_shentsize.
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (std::memcmp(bytes, "\x7f" "ELF", 4) != 0) return CUDA_ERROR_INVALID_IMAGE;
  unsigned long long shoff = 0;
  unsigned short shentsize = 0, shnum = 0;
  std::memcpy(&shoff, bytes + 0x28, 8);
  std::memcpy(&shentsize, bytes + 0x3A, 2);
  std::memcpy(&shnum, bytes + 0x3C, 2);
  const std::size_t size = static_cast<std::size_t>(shoff + static_cast<unsigned long long>(shentsize) * shnum);
  auto m = std::make_unique<Module>();
  m->path = temp_dir() + "/module" + std::to_string(next_id()) + ".so";
  std::ofstream(m->path, std::ios::binary).write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(size));
  m->library = dlopen(m->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->library) {
    const char* why = dlerror();
    std::fprintf(stderr, "fuseflow emulator: dlopen(%s) failed: %s\n", m->path.c_str(), why ? why : "?");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  using Bind = void (*)(const Hooks*);
  auto bind = reinterpret_cast<Bind>(dlsym(m->library, "ff_emu_bind"));
  if (!bind) return CUDA_ERROR_INVALID_IMAGE;
  bind(&scheduler().hooks);
  count(&Faults::modules, 1);
  *module = reinterpret_cast<CUmodule>(m.release());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  auto* m = reinterpret_cast<Module*>(module);
  count(&Faults::modules, -1);
  if (m->library) dlclose(m->library);
  // Kernels are built with -fno-gnu-unique, so that the prelude's inline variables do not
  // pin the library: dlclose unloads it and its memory goes. The file stays all the same:
  // glibc's dlopen matches a loaded library by device and inode, and should anything keep
  // this one loaded, a removed file's inode reused by the next module's would make its
  // dlopen return the old library (and run the previous kernel of the same name).
  delete m;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  FF_EMU_DRIVER_FAULT(cuModuleGetFunction, CUDA_ERROR_UNKNOWN);
  auto* m = reinterpret_cast<Module*>(module);
  void* entry = dlsym(m->library, ("ff_emu_entry_" + std::string(name)).c_str());
  if (!entry) return CUDA_ERROR_NOT_FOUND;
  auto* f = new Function{reinterpret_cast<void (*)(void**)>(entry), name};  // lives as long as the process
  *function = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute, CUfunction) {
  FF_EMU_DRIVER_FAULT(cuFuncGetAttribute, CUDA_ERROR_UNKNOWN);
  *value = 0;  // no attribute is modelled: static shared memory reads as none
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  FF_EMU_DRIVER_FAULT(cuFuncSetAttribute, CUDA_ERROR_UNKNOWN);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int, size_t) {
  FF_EMU_DRIVER_FAULT(cuOccupancyMaxActiveBlocksPerMultiprocessor, CUDA_ERROR_UNKNOWN);
  *blocks = 2;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                unsigned int dynamic_shared_bytes, CUstream, void** args, void**) {
  FF_EMU_DRIVER_FAULT(cuLaunchKernel, CUDA_ERROR_UNKNOWN);
  if (block_x * block_y * block_z == 0 || block_x * block_y * block_z > static_cast<unsigned>(kMaxThreads) ||
      grid_x * grid_y * grid_z == 0 || dynamic_shared_bytes > kMaxDynamicSharedBytes)
    return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(faults().mutex);
    if (faults().skip_launches) return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(launch_mutex());
  Scheduler& s = scheduler();
  if (!s.stacks) {
    void* m = mmap(nullptr, kStackBytes * kMaxThreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    s.stacks = static_cast<char*>(m);
    s.hooks = Hooks{&s.current_index, &s.block_idx, &s.block_dim, &s.grid_dim, sync_block, sync_warp, shuffle, ballot, spin, match};
  }
  const auto* f = reinterpret_cast<const Function*>(function);
  s.entry = f->entry;
  s.args = args;
  s.block_dim = {block_x, block_y, block_z};
  s.grid_dim = {grid_x, grid_y, grid_z};
  for (unsigned z = 0; z < grid_z; ++z)
    for (unsigned y = 0; y < grid_y; ++y)
      for (unsigned x = 0; x < grid_x; ++x) {
        s.block_idx = {x, y, z};
        std::string error;
        if (!run_block(error)) {
          std::fprintf(stderr, "fuseflow emulator: kernel %s: %s\n", f->name.c_str(), error.c_str());
          return CUDA_ERROR_LAUNCH_FAILED;
        }
      }
  return CUDA_SUCCESS;
}

}  // extern "C"
