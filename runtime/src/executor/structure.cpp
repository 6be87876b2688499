// The structural signature of a program (structure.hpp): one depth-first walk, every field
// of every node written as 64-bit tokens (strings as length + bytes in a side buffer), a
// node seen before written as a reference to its first visit.
#include "structure.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace fuseflow::detail {
namespace {

// Tags keep the token stream self-delimiting: each record starts with what it is.
enum Tag : std::uint64_t { kExpr = 1, kEmptyExpr, kSeenExpr, kOp, kNoOp, kSeenOp, kMonoid, kNoMonoid, kValue, kType, kOutputs };

// The nodes a walk has met, by address, with the order of their first visit: open
// addressing over a power-of-two table whose slots are stamped with the walk that filled
// them, so a new walk starts empty without clearing it. Kept per thread and reused, so a
// walk allocates nothing once the table has grown to the graphs it sees.
class SeenNodes {
 public:
  void start() {
    if (++stamp_ == 0) {  // the stamps wrapped: clear for real
      for (Slot& s : slots_) s.stamp = 0;
      stamp_ = 1;
    }
    count_ = 0;
    if (slots_.empty()) slots_.resize(256);
  }
  // The id of `node` if it was seen in this walk, else -1 (and it is recorded now).
  long visit(const void* node) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(node) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.stamp != stamp_) {
        s = {node, static_cast<long>(count_++), stamp_};
        return -1;
      }
      if (s.node == node) return s.id;
    }
  }

 private:
  struct Slot {
    const void* node = nullptr;
    long id = 0;
    unsigned stamp = 0;
  };
  static std::size_t hash(const void* p) {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(p) >> 4) * 0x9e3779b97f4a7c15ULL >> 32);
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.stamp != stamp_) continue;
      std::size_t i = hash(s.node) & mask;
      while (slots_[i].stamp == stamp_) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  std::size_t count_ = 0;
  unsigned stamp_ = 0;
};

// A monoid's signature, walked on its own (its nodes numbered from 0, apart from the
// program's), so that it can be kept: a custom monoid traced once (monoid.hpp) is one
// MonoidNode shared by every program rebuilt from it, and its graph is walked once per
// thread instead of once per program. The slot holds the Monoid, so the node (and its
// address) stays taken while the slot lives.
struct MonoidSignature {
  Monoid monoid;
  ProgramKey key;
};

class Walker {
 public:
  Walker(ProgramKey& key, SeenNodes& exprs, SeenNodes& ops, int depth = 0)
      : key_(key), exprs_(exprs), ops_(ops), depth_(depth) {
    key_.tokens.clear();
    key_.text.clear();
    exprs_.start();
    ops_.start();
  }

  // The hash is FNV-1a over the tokens and the text's bytes, folded in as they are
  // written (one pass): it only picks a bucket; equality compares everything.
  void program(const Program& p) {
    put(kOutputs);
    put(p.outputs().size());
    for (const Expr& e : p.outputs()) expr(e);
    key_.hash = hash_;
  }

 private:
  void put(std::uint64_t t) {
    key_.tokens.push_back(t);
    hash_ = (hash_ ^ t) * 1099511628211ULL;
  }
  void str(const std::string& s) {
    put(s.size());
    key_.text += s;
    for (unsigned char c : s) hash_ = (hash_ ^ c) * 1099511628211ULL;
  }

  // A type: kType, then a scalar's ScalarType; or 2000 + arity and one word of the fields'
  // ScalarTypes, a byte each, for a tuple of at most 8 scalars (the common tuple, in one
  // token instead of two per field); or 1000 + arity and each field's type.
  void type(const Type& t) {
    put(kType);
    if (t.is_scalar()) {
      put(static_cast<std::uint64_t>(t.scalar()));
      return;
    }
    const std::vector<Type>& fields = t.fields();
    if (fields.size() <= 8 &&
        std::all_of(fields.begin(), fields.end(), [](const Type& f) { return f.is_scalar(); })) {
      std::uint64_t packed = 0;
      for (std::size_t i = 0; i < fields.size(); ++i)
        packed |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(fields[i].scalar())) << (8 * i);
      put(2000 + fields.size());
      put(packed);
      return;
    }
    put(1000 + fields.size());
    for (const Type& f : fields) type(f);
  }

  void value(const Value& v) {
    put(kValue);
    type(v.type());
    // The value's bytes exactly (-0.0 and 0.0, NaN payloads differ: stricter than ==).
    const std::size_t n = v.type().size();
    unsigned char bytes[64];
    std::vector<unsigned char> big;
    unsigned char* out = bytes;
    if (n > sizeof bytes) {
      big.resize(n);
      out = big.data();
    }
    std::memset(out, 0, n);
    v.to_bytes(out);
    put(n);
    for (std::size_t i = 0; i < n; i += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, out + i, std::min<std::size_t>(8, n - i));
      put(word);
    }
  }

  void expr(const Expr& e) {
    if (!e.valid()) {
      put(kEmptyExpr);
      return;
    }
    const ExprNode& n = e.node();
    if (const long id = exprs_.visit(&n); id >= 0) {
      put(kSeenExpr);
      put(static_cast<std::uint64_t>(id));
      return;
    }
    put(kExpr);
    // The node's four one-byte enums in one token.
    put(static_cast<std::uint64_t>(n.kind) | static_cast<std::uint64_t>(n.unary) << 8 |
        static_cast<std::uint64_t>(n.binary) << 16 | static_cast<std::uint64_t>(n.fn) << 24);
    type(n.type);
    str(n.name);
    // Only a constant carries a value (ExprNode: payload by kind; Expr::constant is the one
    // constructor that sets it); the other kinds' is the default one, so leaving it out
    // keeps the signature exact.
    if (n.kind == ExprKind::Constant) value(n.constant);
    put(static_cast<std::uint64_t>(static_cast<std::int64_t>(n.index)));
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
    if (const long id = ops_.visit(o); id >= 0) {
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

  // A monoid: kMonoid, its own signature's hash and token count, its tokens (its strings
  // in `text` where they fall), so that equal signatures still mean equal monoids. Kept
  // per thread by node (MonoidSignature); one inside a monoid (none today) is walked
  // in place.
  void monoid(const Monoid& m) {
    if (!m.valid()) {
      put(kNoMonoid);
      return;
    }
    if (depth_ > 0) {
      monoid_fields(m);
      return;
    }
    static constexpr std::size_t kSlots = 16;
    thread_local std::array<MonoidSignature, kSlots> kept;
    const MonoidNode* node = &m.node();
    MonoidSignature& slot = kept[(reinterpret_cast<std::uintptr_t>(node) >> 4) % kSlots];
    if (!slot.monoid.valid() || &slot.monoid.node() != node) {
      thread_local SeenNodes exprs, ops;
      Walker inner(slot.key, exprs, ops, depth_ + 1);
      inner.monoid_fields(m);
      slot.key.hash = inner.hash_;
      slot.monoid = m;
    }
    put(kMonoid);
    put(slot.key.hash);
    put(slot.key.tokens.size());
    key_.tokens.insert(key_.tokens.end(), slot.key.tokens.begin(), slot.key.tokens.end());
    key_.text += slot.key.text;
  }

  void monoid_fields(const Monoid& m) {
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
  std::uint64_t hash_ = 1469598103934665603ULL;
  SeenNodes& exprs_;
  SeenNodes& ops_;
  int depth_;
};

}  // namespace

void structural_key(const Program& program, ProgramKey& key) {
  // Per thread: walks on several threads (several Runtimes) do not share them.
  thread_local SeenNodes exprs, ops;
  Walker(key, exprs, ops).program(program);
}

}  // namespace fuseflow::detail
