#include "fuseflow/runtime/disk_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <system_error>
#include <thread>

#include "fuseflow/runtime/hash.hpp"

namespace fuseflow {
namespace {

constexpr std::uint64_t checksum_seed = 0x66666b6300000001ULL;

std::uint64_t checksum(std::string_view key, std::string_view payload) {
  return hash64(payload, hash64(key, checksum_seed));
}

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <class T>
T get(const std::string& in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

std::string read_file(const std::filesystem::path& path, bool& found) {
  std::ifstream in(path, std::ios::binary);
  found = static_cast<bool>(in);
  if (!found) return {};
  std::ostringstream contents;
  contents << in.rdbuf();
  return std::move(contents).str();
}

// Unique among threads and processes sharing the directory, so writers never collide.
std::string temporary_suffix() {
  static std::atomic<unsigned> counter{0};
  return ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000) +
         "-" + std::to_string(counter++);
}

}  // namespace

DiskCache::DiskCache(std::filesystem::path dir, bool read_only) : dir_(std::move(dir)), read_only_(read_only) {
  std::error_code error;
  if (read_only_) {
    enabled_ = false;  // nothing is written; a missing directory simply has no entries
    return;
  }
  std::filesystem::create_directories(dir_, error);
  if (error || !std::filesystem::is_directory(dir_, error)) {
    readable_ = false;
    disable("cannot create the directory (" + (error ? error.message() : "not a directory") + ")");
  }
}

std::filesystem::path DiskCache::entry_path(std::uint64_t hash) const {
  return dir_ / (hex64(hash) + ".ffk");
}

std::string DiskCache::encode(std::string_view key, std::string_view payload) {
  std::string out;
  out.reserve(header_size + key.size() + payload.size());
  out.append(magic, sizeof magic);
  put<std::uint32_t>(out, format_version);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(key.size()));
  put<std::uint64_t>(out, payload.size());
  put<std::uint64_t>(out, checksum(key, payload));
  out.append(key);
  out.append(payload);
  return out;
}

DiskCache::Loaded DiskCache::load(std::uint64_t hash, std::string_view key) const {
  Loaded loaded;
  if (!readable_) return loaded;
  bool found = false;
  std::string bytes = read_file(entry_path(hash), found);
  if (!found) return loaded;
  auto reject = [&](std::string reason) {
    loaded.status = LoadStatus::rejected;
    loaded.reason = std::move(reason);
    return loaded;
  };
  if (bytes.size() < header_size) return reject("truncated header");
  if (std::memcmp(bytes.data(), magic, sizeof magic) != 0) return reject("bad magic");
  if (get<std::uint32_t>(bytes, version_offset) != format_version)
    return reject("format version " + std::to_string(get<std::uint32_t>(bytes, version_offset)) +
                  ", expected " + std::to_string(format_version));
  const std::uint64_t key_size = get<std::uint32_t>(bytes, 12);
  const std::uint64_t payload_size = get<std::uint64_t>(bytes, 16);
  if (key_size != key.size()) return reject("different key");
  if (bytes.size() != header_size + key_size + payload_size)
    return reject("length " + std::to_string(bytes.size()) + " does not match its header");
  const std::string_view stored_key(bytes.data() + header_size, key_size);
  if (stored_key != key) return reject("different key (hash collision)");
  const std::string_view payload(bytes.data() + header_size + key_size, payload_size);
  if (checksum(stored_key, payload) != get<std::uint64_t>(bytes, 24)) return reject("bad checksum");
  loaded.status = LoadStatus::hit;
  loaded.payload = std::string(payload);
  return loaded;
}

bool DiskCache::store(std::uint64_t hash, std::string_view key, std::string_view payload) {
  if (!enabled()) return false;
  const std::filesystem::path target = entry_path(hash);
  std::filesystem::path temporary = target;
  temporary += temporary_suffix();
  const std::string bytes = encode(key, payload);
  bool written = false;
  // The directory may have been deleted since the cache opened it (a user clearing the
  // cache while a program runs): make it again rather than give up on the disk.
  std::error_code ignored;
  std::filesystem::create_directories(dir_, ignored);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (out) {
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.close();
      written = static_cast<bool>(out);
    }
  }
  std::error_code error;
  // rename() replaces the target atomically: a reader sees the old entry or the new one,
  // and two writers of the same key simply leave one of two identical entries.
  if (written) std::filesystem::rename(temporary, target, error);
  if (!written || error) {
    std::filesystem::remove(temporary, error);
    disable("cannot write " + temporary.string());
    return false;
  }
  return true;
}

void DiskCache::refuse_store() {
  if (!refused_.exchange(true))
    std::cerr << "fuseflow: warning: kernel cache directory " << dir_
              << " is read-only: kernels not in it are compiled and kept in memory only\n";
}

void DiskCache::disable(const std::string& why) {
  if (enabled_.exchange(false))
    std::cerr << "fuseflow: warning: kernel cache directory " << dir_ << " is not usable: " << why
              << "; caching compiled kernels in memory only\n";
}

}  // namespace fuseflow
