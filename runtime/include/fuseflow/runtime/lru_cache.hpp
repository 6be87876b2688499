#pragma once
// A least-recently-used map with two limits, an entry count and a byte total (each entry
// says what it holds). Inserting past either limit evicts the least recently used entries
// (never the one just inserted); an evicted value is destroyed, and its destructor frees
// what it owned. Not synchronised: the owner locks.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>

namespace fuseflow {

// What one cache did so far and holds now (Runtime::stats()).
struct LruStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::size_t entries = 0;
  std::size_t bytes = 0;  // the entries' own accounting (device and host bytes they hold)
};

namespace detail {

template <class Key, class Value, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class LruCache {
 public:
  LruCache(std::size_t max_entries, std::size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // The value for `key` (now the most recently used), or nullptr; counts a hit or a miss.
  // `key` may be of another type where Hash and Equal are transparent (is_transparent).
  template <class K>
  Value* find(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }

  // Inserts (or replaces) `key`, then evicts from the cold end down to the limits.
  Value& insert(const Key& key, Value value, std::size_t bytes) {
    erase(key);
    order_.push_front(Entry{key, std::move(value), bytes});
    index_.emplace(key, order_.begin());
    stats_.bytes += bytes;
    while (order_.size() > 1 && (order_.size() > max_entries_ || stats_.bytes > max_bytes_)) {
      Entry& victim = order_.back();
      stats_.bytes -= victim.bytes;
      index_.erase(victim.key);
      order_.pop_back();  // the value's destructor frees what it held
      ++stats_.evictions;
    }
    return order_.front().value;
  }

  bool erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    stats_.bytes -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }

  void clear() {
    order_.clear();
    index_.clear();
    stats_.bytes = 0;
  }

  template <class F>
  void for_each(F&& f) {
    for (Entry& e : order_) f(e.key, e.value);
  }

  LruStats stats() const {
    LruStats s = stats_;
    s.entries = order_.size();
    return s;
  }
  std::size_t size() const { return order_.size(); }

 private:
  struct Entry {
    Key key;
    Value value;
    std::size_t bytes;
  };
  std::size_t max_entries_, max_bytes_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash, Equal> index_;
  LruStats stats_;
};

}  // namespace detail
}  // namespace fuseflow
