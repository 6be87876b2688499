#pragma once
// The pipelined segmented scans' emitter (sm_90), in two files: segmented_scan_pipelined.cpp
// (the ring's shape, the kernel and its roles' calls, the registry) and
// segmented_scan_pipelined_roles.cpp (the functors the roles call: the heads' functors,
// the producer's call, lift, the scanners' stores, reduce_by_key's writers). The algorithm is
// <fuseflow/segmented_scan_pipeline.cuh>'s.
#include <string>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

// The kernel being written, as the role functors see it.
struct PieceKernel {
  const KernelContext& g;
  ScanKernelWriter& k;
  const SegmentOffsets* offsets;  // by offsets; null by key
  // The stage of each input of stage s, as its own type: "const T* const stage_x = ...".
  void stage_ptrs(SourceWriter& w) const;
  // "stage_x[e], stage_k[e], i": the staged inputs of tile element e and its index.
  std::string staged(const std::string& e, const std::string& i) const;
};

// By offsets offset_at, by key key_at and same_key.
void emit_piece_heads_functors(SourceWriter& w, const PieceKernel& p);
// The producer warp (warp 0): its call of produce_piece_tiles.
void emit_piece_producer(SourceWriter& w, const PieceKernel& p);
// lift(s, e, i, count, v, heads): the values and head bits of tile elements e .. e + 3 of
// stage s (ff::segmented::lift_by_key / lift_by_offsets); by offsets `first` and `last`
// before it.
void emit_piece_lift(SourceWriter& w, const PieceKernel& p);
// The scanners of a segmented scan: store4 and store1 (every output, its epilogue applied
// to the staged inputs) and their call.
void emit_piece_scanners(SourceWriter& w, const PieceKernel& p);
// reduce_by_key's writers in the scanners' places: run_head, last_run and their call.
void emit_piece_run_writers(SourceWriter& w, const PieceKernel& p);

}  // namespace fuseflow::codegen
