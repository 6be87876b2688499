#pragma once
// Emits an expression as a sequence of CUDA statements, one named value per node
// (v0, v1, ... in order of first use), so a subexpression the DSL shares is computed once
// and the output is deterministic.
#include <functional>
#include <map>
#include <string>

#include "cuda_names.hpp"
#include "fuseflow/frontend/expr.hpp"
#include "source_writer.hpp"

namespace fuseflow::codegen {

// The kernel parameter of an input read at computed positions (gather, shift): tab_<name>,
// with its length as tab_<name>_n (append_table_args).
std::string table_name(const Expr& input);

class ExprEmitter {
 public:
  // `leaf` spells the leaves this context provides (inputs, index, parameters, results,
  // operands); constants are spelled here.
  using LeafFn = std::function<std::string(const Expr&)>;
  // `prefix` keeps names of several emitters in one scope apart: "v" gives v0, v1 ...
  ExprEmitter(SourceWriter& out, CudaTypes& types, LeafFn leaf, std::string prefix = "v")
      : out_(out), types_(types), leaf_(std::move(leaf)), prefix_(std::move(prefix)) {}

  // Emits statements computing `e` and returns the CUDA expression naming its value.
  std::string emit(const Expr& e);
  // `e` is already at hand as `value` (computed earlier, e.g. kept in a register array):
  // emit(e) and every expression reading it use `value` instead of recomputing it.
  void bind(const Expr& e, std::string value) { done_[e.get()] = std::move(value); }

  // How a shift's neighbour is read where the kernel has it at hand (the stencil map's
  // registers and warp shuffles): given the shift and its fill's spelling, it may write
  // statements of its own and returns the value's expression. Unset: the shift reads the
  // input through the cache (shift()).
  using ShiftFn = std::function<std::string(const ExprNode& shift, const std::string& fill)>;
  void on_shift(ShiftFn f) { shift_ = std::move(f); }

 private:
  std::string compute(const Expr& e);
  std::string gather(const ExprNode& n);
  std::string shift(const ExprNode& n);
  std::string segment_value(const ExprNode& n);
  std::string fresh(const Type& t, const std::string& value);

  SourceWriter& out_;
  CudaTypes& types_;
  LeafFn leaf_;
  ShiftFn shift_;
  std::string prefix_;
  std::map<const ExprNode*, std::string> done_;
  int counter_ = 0;
};

}  // namespace fuseflow::codegen
