// The structural signature of a program (structure.hpp): one depth-first walk, every field
// of every node written as 64-bit tokens (strings as length + bytes in a side buffer), a
// node seen before written as a reference to its first visit.
#include "structure.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace fuseflow::detail {
namespace {

// Tags keep the token stream self-delimiting: each record starts with what it is.
enum Tag : std::uint64_t { kExpr = 1, kEmptyExpr, kSeenExpr, kOp, kNoOp, kSeenOp, kMonoid, kNoMonoid, kValue, kType, kOutputs };

class Walker {
 public:
  explicit Walker(ProgramKey& key) : key_(key) {
    key_.tokens.clear();
    key_.text.clear();
  }

  void program(const Program& p) {
    put(kOutputs);
    put(p.outputs().size());
    for (const Expr& e : p.outputs()) expr(e);
    // FNV-1a over the tokens and the text: the hash only picks a bucket; equality compares all.
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
    for (std::uint64_t t : key_.tokens) mix(t);
    for (unsigned char c : key_.text) mix(c);
    key_.hash = h;
  }

 private:
  void put(std::uint64_t t) { key_.tokens.push_back(t); }
  void str(const std::string& s) {
    put(s.size());
    key_.text += s;
  }

  void type(const Type& t) {
    put(kType);
    if (t.is_scalar()) {
      put(static_cast<std::uint64_t>(t.scalar()));
      return;
    }
    put(1000 + t.arity());
    for (const Type& f : t.fields()) type(f);
  }

  void value(const Value& v) {
    put(kValue);
    type(v.type());
    // The value's bytes exactly (-0.0 and 0.0, NaN payloads differ: stricter than ==).
    const std::size_t n = v.type().size();
    bytes_.assign(n, 0);
    v.to_bytes(bytes_.data());
    put(n);
    for (std::size_t i = 0; i < n; i += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, bytes_.data() + i, std::min<std::size_t>(8, n - i));
      put(word);
    }
  }

  // The id of a node seen before, or -1 (and it is recorded as seen now).
  template <class Node>
  long seen(const Node* n, std::vector<const void*>& ids, std::unordered_map<const void*, long>& big) {
    // Small graphs (the common case) search a flat list; large ones switch to a map.
    if (ids.size() < 64) {
      const auto it = std::find(ids.begin(), ids.end(), static_cast<const void*>(n));
      if (it != ids.end()) return it - ids.begin();
      ids.push_back(n);
      if (ids.size() == 64)
        for (std::size_t i = 0; i < ids.size(); ++i) big.emplace(ids[i], static_cast<long>(i));
      return -1;
    }
    const auto [it, inserted] = big.emplace(n, static_cast<long>(ids.size()));
    if (!inserted) return it->second;
    ids.push_back(n);
    return -1;
  }

  void expr(const Expr& e) {
    if (!e.valid()) {
      put(kEmptyExpr);
      return;
    }
    const ExprNode& n = e.node();
    if (const long id = seen(&n, expr_ids_, expr_map_); id >= 0) {
      put(kSeenExpr);
      put(static_cast<std::uint64_t>(id));
      return;
    }
    put(kExpr);
    put(static_cast<std::uint64_t>(n.kind));
    type(n.type);
    str(n.name);
    value(n.constant);
    put(static_cast<std::uint64_t>(static_cast<std::int64_t>(n.index)));
    put(static_cast<std::uint64_t>(n.unary));
    put(static_cast<std::uint64_t>(n.binary));
    put(static_cast<std::uint64_t>(n.fn));
    put(static_cast<std::uint64_t>(n.length));
    op(n.op.get());
    put(n.args.size());
    for (const Expr& a : n.args) expr(a);
  }

  void op(const OpNode* o) {
    if (!o) {
      put(kNoOp);
      return;
    }
    if (const long id = seen(o, op_ids_, op_map_); id >= 0) {
      put(kSeenOp);
      put(static_cast<std::uint64_t>(id));
      return;
    }
    put(kOp);
    put(static_cast<std::uint64_t>(o->kind));
    put(static_cast<std::uint64_t>(o->scan_kind));
    put(static_cast<std::uint64_t>(o->strategy));
    put(static_cast<std::uint64_t>(o->bins));
    put(static_cast<std::uint64_t>(o->begin_bit) << 8 | static_cast<std::uint64_t>(o->end_bit));  // a radix sort's key bits
    put(o->scalar_output ? 1 : 0);
    put(o->output_types.size());
    for (const Type& t : o->output_types) type(t);
    monoid(o->monoid);
    expr(o->values);
    expr(o->predicate);
    expr(o->offsets);
    expr(o->keys);
  }

  void monoid(const Monoid& m) {
    if (!m.valid()) {
      put(kNoMonoid);
      return;
    }
    const MonoidNode& n = m.node();
    put(kMonoid);
    put(static_cast<std::uint64_t>(n.kind));
    str(n.name);
    put(n.typed ? 1 : 0);
    type(n.type);
    value(n.identity);
    put(n.commutative ? 1 : 0);
    expr(n.combine);
  }

  ProgramKey& key_;
  std::vector<unsigned char> bytes_;
  std::vector<const void*> expr_ids_, op_ids_;
  std::unordered_map<const void*, long> expr_map_, op_map_;
};

}  // namespace

void structural_key(const Program& program, ProgramKey& key) { Walker(key).program(program); }

}  // namespace fuseflow::detail
