#pragma once
// The plan: how a program becomes kernels. The planner groups ops into kernels (maps are
// inlined into their consumers; several reductions over the same inputs share one pass;
// filter -> reduce is a masked reduction; a reduction used by a later map splits the
// program there), picks a strategy per kernel, and asks that strategy's emitter for the
// CUDA source. The source depends only on the program and the target; the launch
// geometry also depends on the element count n, known when the program runs.
#include <cstdint>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan_options.hpp"
#include "fuseflow/shared_constants.cuh"
#include "fuseflow/codegen/target.hpp"
#include "fuseflow/frontend/program.hpp"

namespace fuseflow::codegen {

// Epochs of the look-back status (30 bits beside a 2-bit flag, scan.cuh's StatusEntries),
// how many counters Arg::Kind::Ticket indexes (the runtime allocates them once, zeroed) and
// what each is for: shared with the device library (codegen/device/fuseflow/shared_constants.cuh).
using shared::kMaxLookbackEpoch;
using shared::kTicketDeferred;
using shared::kTicketLastBlock;
using shared::kTickets;
using shared::kTicketTileCounter;

// The InvalidFlag index of every checked gather of a program (Plan::checked_offsets[0] null).
inline constexpr int kGatherFlag = 0;

// One kernel argument, resolved by the executor when it launches.
struct Arg {
  enum class Kind : std::uint8_t {
    Input,       // const T* of program input `index`
    Length,      // long long n: the element count of the kernel's domain (the launch's n) when
                 // `index` is 0, else of input domain `index` (see Plan::input_domain)
    Param,       // scalar parameter `index`, by value
    Scalar,      // const T* to the device scalar slot `index` (a reduction's result)
    Output,      // T* to the array output `index` (program output number)
    OutputCount, // unsigned long long* to the element count of array output `index`, which the
                 // kernel writes (an output whose length is known on the device only: OutputShape::counted)
    ScalarOutput,  // T* to the device scalar slot `index`, written by a reduction
    Scratch,     // T* to scratch buffer `index` (contents unspecified at the start of a run)
    Ticket,      // unsigned* to a zeroed counter that kernels leave zeroed: `index` 0 is the
                 // last-block ticket of reductions, 1 the tile counter of look-back scans
                 // (scan.cuh's draw_tile_id), 2 the flag the segmented reduce's short pass
                 // sets when it leaves segments to its second kernel (which zeroes it); a
                 // kernel may use several
    TileStatus,  // void* to the look-back status (scan.cuh's ScanTileStatus), at least
                 // Launch::status_bytes long; it is not cleared between launches (see Epoch)
    Epoch,       // unsigned by value: the launch's look-back epoch, 1 ... kMaxLookbackEpoch,
                 // different from that of every launch since the status was last zeroed, so
                 // entries other launches left read as not yet published
    InvalidFlag, // unsigned* to a word zeroed before the run, which the kernel sets when it
                 // finds input only the device sees invalid: segment offsets out of [0, n]
                 // or decreasing (Plan::checked_offsets[index] says whose), or a gather's
                 // index outside its table (index kGatherFlag, its checked_offsets entry null)
    Table,       // const T* of program input `index`, read at computed positions (gather, shift)
    TableLength, // long long: the element count of program input `index` (a Table's length)
    Intermediate,       // T* to intermediate `index` (Plan::intermediates): written by a kernel of an
                        // earlier stage, read by the kernels of a later one
    IntermediateCount,  // unsigned long long* to the element count of intermediate `index` (a counted
                        // one: reduce_by_key's runs), written with it; a later stage reads it as a table
    IntermediateLength, // long long: the element count of intermediate `index` (Intermediate::length),
                        // a table of a length of its own (a histogram's bins) read by a gather
  };
  Kind kind;
  int index = 0;
  std::string name;  // as in the kernel's parameter list
  Type type;         // element / parameter type
};

// What a launch's scratch is sized by (ScratchBuffer::Per): its grid, its tiles, the
// elements it covers, the segments, and bins x tiles.
struct LaunchExtents {
  std::int64_t grid = 0, tiles = 0, elements = 0, segments = 0, bin_tiles = 0;
};

// One scratch buffer a kernel uses, its size as an expression of the launch: `bytes` per
// `per` (per block of the grid, per tile, per element, per segment, or fixed), divided by
// `divisor` and rounded up (a bit mask of segments: 4 B x ceil(segments / 32)). Printed as
// "partials: 8 B x grid". The schedule allocates size(extents) for each launch: the
// description is the one source of the sizes.
struct ScratchBuffer {
  enum class Per : std::uint8_t { Fixed, Block, Tile, Element, Segment, BinTile };
  std::string name;   // the kernel argument it is bound to
  std::string role;   // what it holds, in words
  std::size_t bytes = 0;
  Per per = Per::Fixed;
  std::int64_t divisor = 1;
  bool zeroed = false;  // the kernels expect it zeroed before the launch
  std::size_t size(const LaunchExtents& e) const;
};
std::string to_string(const ScratchBuffer& b);

// What a kernel's launches wait for before they start. Every launch of a plan goes on one
// stream, so each waits for the launch before it: the kernel before it in its step, or the
// step before (a look-back step's second kernel launches instead of its first, for large
// n, so both wait on the step before); a tree's levels also wait on their own previous
// level. Launch::waits_on says it per launch.
struct LaunchOrder {
  int after_kernel = -1;  // Plan::kernels index whose launches come first, -1 for none
  std::string reason;     // in words, as explain prints it
};

// A kernel of the plan, as data: what it is (name, source), which registered strategy made
// it and why, the values it was tuned with, its launch shape, arguments and scratch, and
// what its launches wait on. explain() prints the list.
struct KernelSpec {
  std::string name;    // ff_reduce_chunked_f32_plus
  std::string source;  // complete CUDA translation unit
  Strategy strategy = Strategy::Automatic;
  int block = 256;     // threads per block
  int max_grid = 1;    // the fixed grid for this device
  int items_per_block_step = 1;  // elements one block covers per pass: grid = min(max_grid, ceil(n / this))
  std::size_t shared_bytes = 0;  // dynamic shared memory
  // The kernel strides over its domain, so any grid is correct: the runtime may lower
  // the grid to the blocks that are resident at once (registers permitting), so a
  // persistent kernel never runs a second, nearly empty wave.
  bool any_grid = true;
  // In place: every element's inputs are read (into the block) before any output of that
  // element is stored, and no block reads an element another block stores (a tile reads
  // and writes only its own range). So an array output of this kernel may be bound to
  // exactly the memory of one of its inputs (Runtime::run checks the rest of the program).
  // Its inputs stay `const __restrict__`: a tile's loads feed shared memory before the
  // barrier its stores come after, so no reordering can move a store first, and no element
  // is read after a block wrote it, so the read-only cache never returns a stale one.
  bool in_place = false;
  std::vector<Arg> args;
  // The tuning values it was emitted with (its strategy's policy for the target, the
  // caller's PlanOptions applied, shapes fitted to the element sizes), by name.
  std::vector<std::pair<std::string, std::int64_t>> tuning;
  std::string summary;  // strategy and constants, in words
  std::string why;      // why this kernel, in the emitter's words (why its variant, its role)
  // The registered strategy that made it (strategies/registry.cpp: "reduce chunked") and
  // why the registry chose it (asked for, or the first that applies, with its reason).
  std::string registered;
  std::string chosen;
  // The strategy's policy values for the target, the caller's options applied
  // (Strategy::tuning), by name; `tuning` above is what the kernel fitted from them.
  std::vector<std::pair<std::string, std::int64_t>> policy;
  std::vector<ScratchBuffer> scratch;  // per Scratch argument, in argument order
  LaunchOrder order;
};

// A device scalar slot: a reduction's result, written by one kernel and read by later
// kernels or copied back to the host. Slots live in one device buffer per program.
struct ScalarSlot {
  Type type;
  std::size_t offset = 0;  // bytes into the program's scalar buffer
};

// An array op's result that a later op or map of the program reads (passes/stages.cpp): the
// kernels of the stage that computes it write it (Arg::Kind::Intermediate), those of the
// later stage read it, in stream order, on the device. It has room for n elements (a sort's
// keys or values; reduce_by_key's runs, at most n, with the count after them when
// `counted`). It lives in the program output it is as well, or in the run's scratch
// (Schedule::intermediates).
struct Intermediate {
  Type type;
  std::string role;     // what it holds, in words ("result 1 of counting_sort(...)")
  int output = -1;      // the program output whose memory it is, or -1: scratch
  bool counted = false; // the device writes its element count (IntermediateCount)
  // The input domain whose length sizes it: 0, n elements; a segmented reduction's
  // per-segment results that a later stage reads through ff::broadcast, its offsets' domain
  // (room for one per offset).
  int domain = 0;
  // Segment offsets the program computes (passes/stage_domains.cpp): an array of domain
  // `domain`'s own length (its elements, not one per segment), which stage 1 writes over that
  // domain and stage 2 reads as offsets.
  bool own_length = false;
  // A gather's table of a length of its own (passes/computed_tables.cpp): `fixed` elements
  // when >= 0 (a histogram's bins), else the length of domain `domain` less `less` (a
  // segmented reduction's results: offsets - 1). length() is its element count.
  std::int64_t fixed = -1;
  std::int64_t less = 0;
  bool zeroed = false;  // in scratch, zeroed before the run (a histogram's counts: its kernels add into it)
  std::int64_t length(const std::vector<std::int64_t>& lengths) const {
    if (fixed >= 0) return fixed;
    const std::int64_t l = lengths.at(static_cast<std::size_t>(domain)) - less;
    return l < 0 ? 0 : l;
  }
  // Its bytes in scratch for n elements, and where its count is (from its start).
  std::size_t count_offset(std::int64_t n) const { return (static_cast<std::size_t>(n) * type.size() + 7) / 8 * 8; }
  std::size_t bytes(std::int64_t n) const { return count_offset(n) + (counted ? 8 : 0); }
};

// One kernel launch of a run: its domain, grid, and where each Scratch argument points.
struct Launch {
  int kernel = 0;           // index into Plan::kernels
  std::int64_t n = 0;       // the value of the kernel's `n` argument
  int grid = 1;
  std::vector<std::size_t> scratch;  // byte offset into the scratch region, per Scratch arg index
  std::size_t status_bytes = 0;      // look-back status the launch uses (TileStatus argument)
  int waits_on = -1;  // the launch (index into Schedule::launches) it waits for: stream order,
                      // the one before it; -1 for the first
};

// Everything a run does, for one element count: launches in order, the scratch region
// they share, and the byte ranges of it that must be zero before the first launch.
struct Schedule {
  std::vector<Launch> launches;
  std::size_t scratch_bytes = 0;
  std::vector<std::pair<std::size_t, std::size_t>> zeroed;  // (offset, bytes)
  std::vector<std::size_t> intermediates;  // per Plan::intermediates: its offset in scratch (0 in an output)
};

// One part of a run's launches, as data: which launch pattern (Kind), the kernels it
// launches (Plan::kernels[kernel], and the ones after it) and the few numbers the pattern
// needs beyond the kernels' own (block, max_grid, items_per_block_step, Scratch
// arguments). Plan::schedule turns the steps, in order, into launches for given lengths.
struct StepSpec {
  enum class Kind : std::uint8_t {
    OnePass,          // kernel once over n, grid min(max_grid, ceil(n / items_per_block_step)),
                      // each Scratch argument max_grid elements; no launch for n = 0 when !launch_empty
    Tree,             // kernel over n, then kernel + 1 over the partials until one block is left
    Lookback,         // one block per tile with look-back status of `value_bytes` values; with
                      // kernels == 2, kernel + 1 from `from` elements (at most its max_grid blocks)
    ReduceThenScan,   // kernel, kernel + 1, kernel + 2 sharing the block sums (`value_bytes` each)
    CountingSort,     // tile counts (`bins` per tile), their scan, the scatter
    SegmentedReduce,  // the short pass (kernels == 2) when segments average <= kShortSegment, then the merge path
    RadixSort,        // kernels / 3 counting-sort passes (tile counts, scan, scatter), keys ping-ponged in scratch
    Broadcast,        // `bins` segmented reductions over the offsets of `domain` (each its kernels, as SegmentedReduce),
                      // then the map reading their per-segment results (scratch the step's kernels share)
    HistogramSorted,  // a radix sort of (bin, weight) pairs (kernels - 3 Onesweep passes after its histogram, the
                      // last into scratch), then the run kernel over n and the bin kernel over `bins`; nothing for n = 0
  };
  Kind kind = Kind::OnePass;
  int kernel = 0;               // the first kernel it launches
  int kernels = 1;              // how many kernels it launches from, consecutive
  int domain = -1;              // the input domain of a segmented op's offsets (its segments), or -1
  std::size_t value_bytes = 0;  // Lookback: status values; ReduceThenScan: block sums
  std::int64_t from = INT64_MAX;  // Lookback with two kernels: the element count the second takes over at
  std::int64_t bins = 0;        // CountingSort: counts per tile (the op's bins + 1); OnePass: values per block of
                                // each Scratch argument (a weighted histogram's sums), 0 for one; Broadcast: reductions
  bool launch_empty = true;     // launches for n = 0 (a compaction writes its count 0; reductions
                                // write the identity); false: nothing to do
  // Last, after the fields the strategies set in aggregate order: the input domain whose length
  // is the step's n: 0, the elements; another, a stage over arrays of another length
  // (computed segment offsets, passes/stage_domains.cpp).
  int over = 0;
};
const char* step_kind_name(StepSpec::Kind kind);

// Builds a Schedule: strategies allocate scratch and append launches.
class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(std::size_t reserved, std::vector<std::int64_t> lengths = {})
      : lengths_(std::move(lengths)) {
    schedule_.scratch_bytes = reserved;
  }
  // The element count of input domain `d` (domain 0 is the `n` steps are called with).
  std::int64_t length(int d) const;
  // Scratch of `bytes` (256-byte aligned); `zeroed` when the kernels expect zeros.
  std::size_t allocate(std::size_t bytes, bool zeroed = false);
  // Appends a launch; it waits for the one before it (one stream).
  void launch(Launch l) {
    l.waits_on = static_cast<int>(schedule_.launches.size()) - 1;
    schedule_.launches.push_back(std::move(l));
  }
  // Scratch for an intermediate (Plan::intermediates), recorded in Schedule::intermediates.
  void intermediate(std::size_t bytes, bool zeroed = false) {
    schedule_.intermediates.push_back(bytes ? allocate(bytes, zeroed) : 0);
  }
  Schedule take() { return std::move(schedule_); }

 private:
  Schedule schedule_;
  std::vector<std::int64_t> lengths_;
};

// Blocks for n elements, each covering `per_block`, at least 1 and at most `max_grid`.
int grid_for(std::int64_t n, std::int64_t per_block, int max_grid);

// How many elements an array output has, given the lengths of the input domains, and
// whether the kernels expect it zeroed (they add into it: histogram counts).
// A counted output (a filter's survivors, reduce_by_key's runs) has a length only the device knows: length() is
// its capacity, the buffer is allocated for that many elements, and a kernel writes the
// actual count through an Arg::Kind::OutputCount argument; the host reads it only when
// asked (Result::size, DeviceArray::size).
struct OutputShape {
  int domain = 0;           // the length of this domain ...
  std::int64_t less = 0;    // ... less this many (a segmented op: offsets - 1 segments)
  std::int64_t fixed = -1;  // or, when >= 0, this many (a histogram's bins)
  bool zeroed = false;
  bool counted = false;     // length() is the capacity; the kernels write the count
  std::int64_t length(const std::vector<std::int64_t>& lengths) const;
};

struct Plan {
  std::vector<KernelSpec> kernels;
  std::vector<ScalarSlot> scalars;
  std::size_t scalar_bytes = 0;
  // Per program output: the scalar slot it reads (reductions) or -1 for arrays.
  std::vector<int> output_scalar;
  std::vector<std::string> notes;  // fusion decisions, in words
  // In order, each step appends the launches of one part of the program (schedule()).
  std::vector<StepSpec> steps;
  // Per program input, the domain it belongs to: inputs of one domain have one length.
  // Domain 0 holds the elements (its length is `n`); a segmented op's offsets are another
  // domain. Empty when every input is in domain 0.
  std::vector<int> input_domain;
  int domains = 1;
  // The length of domain 0 when the program fixes it (ff::fill, ff::iota: their n), else -1;
  // the inputs of domain 0 must then have that many elements.
  std::int64_t fill_length = -1;
  // The program parameter (an index into Program::params()) whose value is the length of
  // domain 0 when the program has a fill or iota of a parameter's length, else -1: the
  // runtime reads it when the program runs (a GraphError naming it when negative).
  int fill_length_param = -1;
  // Per program output (array outputs only are read); empty: every array has n elements.
  std::vector<OutputShape> output_shapes;
  // Per InvalidFlag argument index: the segmented op whose offsets the flag checks. The
  // runtime reads the flags after a run and explains a set one with the CPU reference.
  // A program with a checked gather has its flag first (kGatherFlag), with a null op.
  std::vector<std::shared_ptr<const OpNode>> checked_offsets;
  // Array ops' results a later stage of the program reads (Arg::Kind::Intermediate index).
  std::vector<Intermediate> intermediates;

  Schedule schedule(std::int64_t n) const;
  // lengths[d]: the element count of domain d (lengths[0] is n).
  Schedule schedule(const std::vector<std::int64_t>& lengths) const;
};

// Plans a program for a target, the caller's options over the target's tuning policies.
// Throws GraphError for programs this version cannot run yet, naming the op, and
// ConfigError for options out of range (see validate).
Plan plan(const Program& program, const Target& target, const PlanOptions& options = {});

// All kernels' CUDA source, concatenated in launch order (what FUSEFLOW_DUMP writes).
std::string cuda_source(const Program& program, const Target& target = Target::preset("sm_90"),
                        const PlanOptions& options = {});
// The plan in words: kernels, strategies, constants, and why.
std::string explain(const Program& program, const Target& target = Target::preset("sm_90"),
                    const PlanOptions& options = {});

// The device helper library, as {include name, text} pairs for NVRTC.
struct DeviceHeader {
  const char* name;
  const char* text;
};
const std::vector<DeviceHeader>& device_headers();

}  // namespace fuseflow::codegen
