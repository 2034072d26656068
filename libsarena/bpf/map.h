// Typed wrappers over BPF map file descriptors (libbpf's low-level bpf_map_* syscall wrappers).
//
// A map is opened from an fd (e.g. one loaded by Objects) or from a bpffs pin, and its key and
// value sizes are checked against what the kernel reports (bpf_obj_get_info_by_fd) before any
// typed access: a mismatch between the C++ type and the loaded map is kFailedPrecondition, never
// a silent memory corruption.
//
// Map<K, V> is for maps with one value per key (HASH, ARRAY, LRU_HASH, ...); PerCpuMap<K, V> for
// PERCPU_HASH / PERCPU_ARRAY / LRU_PERCPU_HASH, whose values are one V per *possible* CPU
// (libbpf_num_possible_cpus()), each slot padded to 8 bytes by the kernel.
//
// Errors carry the errno: sarena::ErrnoStatus, so ENOENT -> kNotFound, EEXIST -> kAlreadyExists,
// E2BIG/ENOSPC (map full) -> kInvalidArgument/kResourceExhausted, EPERM -> kPermissionDenied.
// Messages read "<verb> <object> 'map <name>': <cause>". Source: Documentation/bpf/maps.rst and
// include/uapi/linux/bpf.h (BPF_MAP_* commands) of the Linux kernel.
#ifndef LIBSARENA_BPF_MAP_H_
#define LIBSARENA_BPF_MAP_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"

namespace sarena::bpf {

/// What the kernel says about a map (struct bpf_map_info).
struct MapInfo {
  uint32_t id = 0;
  uint32_t type = 0;  // enum bpf_map_type (BPF_MAP_TYPE_HASH = 1, ...)
  uint32_t key_size = 0;    // bytes
  uint32_t value_size = 0;  // bytes, per CPU for per-CPU maps (unpadded)
  uint32_t max_entries = 0;
  uint32_t map_flags = 0;  // BPF_F_*
  std::string name;        // kernel name (at most 15 characters)
};

/// Reads bpf_map_info of `map_fd`. Errors: ErrnoStatus ("get info of map fd N").
absl::StatusOr<MapInfo> GetMapInfo(int map_fd);

/// "hash", "array", "percpu_array", "lru_hash", ... ("type N" for unknown types).
std::string MapTypeName(uint32_t type);

/// True for PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH, PERCPU_CGROUP_STORAGE.
bool IsPerCpuMapType(uint32_t type);

/// Number of possible CPUs (libbpf_num_possible_cpus(), from /sys/devices/system/cpu/possible):
/// the number of value slots of a per-CPU map. Errors: kInternal when it cannot be read.
absl::StatusOr<int> NumPossibleCpus();

/// Flags of BPF_MAP_UPDATE_ELEM (uapi BPF_ANY / BPF_NOEXIST / BPF_EXIST).
enum class UpdateFlags : uint64_t {
  kAny = 0,      // create or replace
  kNoExist = 1,  // create only: kAlreadyExists when the key exists
  kExist = 2,    // replace only: kNotFound when the key is absent
};

/// "any" / "noexist" / "exist".
absl::string_view ToString(UpdateFlags flags);

/// How a pinned map is opened (bpf_obj_get_opts.file_flags).
enum class PinAccess {
  kReadWrite,  // 0: lookups and updates
  kReadOnly,   // BPF_F_RDONLY (Linux >= 4.15): lookups and iteration; every update or delete
               // fails with EPERM (kPermissionDenied), enforced by the kernel on the fd
};

/// An untyped map: raw byte access with the sizes the kernel reported. Map and PerCpuMap are
/// thin typed layers over it; use it directly only for tools that handle arbitrary maps.
/// Buffers passed in must hold key_size() / value_bytes() bytes per element. Move-only.
class RawMap {
 public:
  /// Takes ownership of `fd` (must be a BPF map fd). Errors: kInvalidArgument for an invalid fd,
  /// ErrnoStatus when the info query fails (e.g. the fd is not a map: kInvalidArgument).
  static absl::StatusOr<RawMap> FromFd(UniqueFd fd);
  /// Opens the map pinned at `path` on a bpffs (bpf_obj_get_opts with `access`'s file flags).
  /// Errors: kNotFound when nothing is pinned there, kInvalidArgument when the pin is not a map,
  /// ErrnoStatus otherwise.
  static absl::StatusOr<RawMap> FromPin(absl::string_view path,
                                        PinAccess access = PinAccess::kReadWrite);

  RawMap(RawMap&&) = default;
  RawMap& operator=(RawMap&&) = default;

  int fd() const { return fd_.get(); }
  const MapInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  uint32_t key_size() const { return info_.key_size; }
  /// True for per-CPU map types.
  bool per_cpu() const { return per_cpu_; }
  /// Number of value slots per key: 1, or the possible-CPU count for per-CPU maps.
  int value_slots() const { return slots_; }
  /// Bytes between two per-CPU slots: value_size rounded up to 8 (value_size for other maps).
  size_t slot_stride() const { return stride_; }
  /// Bytes one lookup/update transfers: slot_stride() * value_slots() (value_size if not per-CPU).
  size_t value_bytes() const { return stride_ * slots_; }

  /// kFailedPrecondition "map '<name>': key size N != expected M" (or value size, or per-CPU vs
  /// not per-CPU) when the map does not match the C++ layout. Used by the typed wrappers.
  absl::Status CheckLayout(size_t key_size, size_t value_size, bool per_cpu) const;

  /// BPF_MAP_UPDATE_ELEM. kAlreadyExists (kNoExist), kNotFound (kExist), map full: ErrnoStatus
  /// of E2BIG (kInvalidArgument) for preallocated maps or ENOMEM (kResourceExhausted).
  absl::Status Update(const void* key, const void* value, UpdateFlags flags) const;
  /// BPF_MAP_LOOKUP_ELEM into `value` (value_bytes()). kNotFound when absent.
  absl::Status Lookup(const void* key, void* value) const;
  /// BPF_MAP_DELETE_ELEM. kNotFound when absent; kInvalidArgument for array maps.
  absl::Status Delete(const void* key) const;
  /// BPF_MAP_GET_NEXT_KEY: the key after `key` (nullptr = the first key) into `next`. Returns
  /// false at the end of the map.
  absl::StatusOr<bool> NextKey(const void* key, void* next) const;

  /// BPF_MAP_UPDATE_BATCH of `count` packed keys/values. Falls back to one Update per element
  /// when the kernel has no batch op for this map type (ENOTSUPP/EOPNOTSUPP), and for kNoExist /
  /// kExist (the kernel's batch update only creates-or-replaces). On failure the message says
  /// how many elements were written before the error.
  absl::Status UpdateBatch(const void* keys, const void* values, uint32_t count,
                           UpdateFlags flags) const;
  /// BPF_MAP_DELETE_BATCH of `count` packed keys, with the same fallback. Stops at the first
  /// missing key (kNotFound, the message names how many were deleted).
  absl::Status DeleteBatch(const void* keys, uint32_t count) const;
  /// Reads every entry with BPF_MAP_LOOKUP_BATCH (chunks of `chunk` entries, grown when a hash
  /// bucket does not fit), or with GET_NEXT_KEY + LOOKUP when the map type has no batch op.
  /// Appends packed keys to `keys` and values (value_bytes() each) to `values`; returns the count.
  absl::StatusOr<size_t> LookupAll(std::vector<uint8_t>* keys, std::vector<uint8_t>* values,
                                   uint32_t chunk = 256) const;

  /// Pins the map at `path` on a bpffs (bpf_obj_pin). kAlreadyExists when the path exists.
  absl::Status Pin(absl::string_view path) const;

  /// `status` with "open pinned map '<path>': " prepended (same code).
  static absl::Status PinError(absl::string_view path, const absl::Status& status);

 private:
  RawMap(UniqueFd fd, MapInfo info, int slots, size_t stride);
  std::string Describe() const;  // "map '<name>'"

  UniqueFd fd_;
  MapInfo info_;
  bool per_cpu_ = false;
  int slots_ = 1;
  size_t stride_ = 0;
};

/// A map with one V per key K. K and V must be trivially copyable and exactly key_size /
/// value_size bytes (typically the structs of sarena/abi.h). Move-only.
template <typename K, typename V>
class Map {
  static_assert(std::is_trivially_copyable_v<K>, "map key must be trivially copyable");
  static_assert(std::is_trivially_copyable_v<V>, "map value must be trivially copyable");

 public:
  using Key = K;
  using Value = V;

  /// Wraps an owned map fd. kFailedPrecondition (naming the map and both sizes) when the kernel's
  /// key/value size differs from sizeof(K)/sizeof(V) or the map is per-CPU (use PerCpuMap).
  static absl::StatusOr<Map> FromFd(UniqueFd fd) {
    SARENA_ASSIGN_OR_RETURN(RawMap raw, RawMap::FromFd(std::move(fd)));
    return FromRaw(std::move(raw));
  }
  /// Opens a pinned map (RawMap::FromPin with `access`) and checks it like FromFd. kNotFound when
  /// not pinned.
  static absl::StatusOr<Map> FromPin(absl::string_view path,
                                     PinAccess access = PinAccess::kReadWrite) {
    SARENA_ASSIGN_OR_RETURN(RawMap raw, RawMap::FromPin(path, access));
    absl::Status layout = raw.CheckLayout(sizeof(K), sizeof(V), /*per_cpu=*/false);
    if (!layout.ok()) return RawMap::PinError(path, layout);
    return Map(std::move(raw));
  }
  /// Checks and adopts an already opened RawMap.
  static absl::StatusOr<Map> FromRaw(RawMap raw) {
    SARENA_RETURN_IF_ERROR(raw.CheckLayout(sizeof(K), sizeof(V), /*per_cpu=*/false));
    return Map(std::move(raw));
  }

  Map(Map&&) = default;
  Map& operator=(Map&&) = default;

  int fd() const { return raw_.fd(); }
  const MapInfo& info() const { return raw_.info(); }
  const std::string& name() const { return raw_.name(); }
  const RawMap& raw() const { return raw_; }

  /// Creates or replaces (see UpdateFlags for the codes of kNoExist / kExist).
  absl::Status Update(const K& key, const V& value, UpdateFlags flags = UpdateFlags::kAny) const {
    return raw_.Update(&key, &value, flags);
  }
  /// The value of `key`; kNotFound when absent.
  absl::StatusOr<V> Lookup(const K& key) const {
    V value;
    SARENA_RETURN_IF_ERROR(raw_.Lookup(&key, &value));
    return value;
  }
  /// Removes `key`; kNotFound when absent (kInvalidArgument on array maps).
  absl::Status Delete(const K& key) const { return raw_.Delete(&key); }

  /// Every key, in the kernel's iteration order (GET_NEXT_KEY). Under concurrent deletion the
  /// kernel restarts from the first key, so a key may appear twice; never misses a stable key.
  absl::StatusOr<std::vector<K>> Keys() const {
    std::vector<K> keys;
    K cur, next;
    const void* prev = nullptr;
    while (true) {
      SARENA_ASSIGN_OR_RETURN(bool more, raw_.NextKey(prev, &next));
      if (!more) break;
      keys.push_back(next);
      cur = next;
      prev = &cur;
    }
    return keys;
  }
  /// Calls `fn(key, value)` for every entry (Keys() then Lookup; entries deleted in between are
  /// skipped). Stops early when `fn` returns false.
  absl::Status ForEach(absl::FunctionRef<bool(const K&, const V&)> fn) const {
    SARENA_ASSIGN_OR_RETURN(std::vector<K> keys, Keys());
    for (const K& key : keys) {
      V value;
      absl::Status s = raw_.Lookup(&key, &value);
      if (absl::IsNotFound(s)) continue;
      SARENA_RETURN_IF_ERROR(s);
      if (!fn(key, value)) break;
    }
    return absl::OkStatus();
  }

  /// Writes keys[i] -> values[i] with BPF_MAP_UPDATE_BATCH (loop fallback, see RawMap).
  /// kInvalidArgument when the spans differ in length.
  absl::Status UpdateBatch(absl::Span<const K> keys, absl::Span<const V> values,
                           UpdateFlags flags = UpdateFlags::kAny) const {
    if (keys.size() != values.size())
      return absl::InvalidArgumentError("update batch: keys and values differ in length");
    return raw_.UpdateBatch(keys.data(), values.data(), static_cast<uint32_t>(keys.size()), flags);
  }
  /// Every entry, read with BPF_MAP_LOOKUP_BATCH (loop fallback, see RawMap::LookupAll).
  absl::StatusOr<std::vector<std::pair<K, V>>> LookupBatch() const {
    std::vector<uint8_t> kbuf, vbuf;
    SARENA_ASSIGN_OR_RETURN(size_t n, raw_.LookupAll(&kbuf, &vbuf));
    std::vector<std::pair<K, V>> out(n);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&out[i].first, kbuf.data() + i * sizeof(K), sizeof(K));
      std::memcpy(&out[i].second, vbuf.data() + i * sizeof(V), sizeof(V));
    }
    return out;
  }
  /// Deletes `keys` with BPF_MAP_DELETE_BATCH (loop fallback). kNotFound at the first absent key.
  absl::Status DeleteBatch(absl::Span<const K> keys) const {
    return raw_.DeleteBatch(keys.data(), static_cast<uint32_t>(keys.size()));
  }

 private:
  explicit Map(RawMap raw) : raw_(std::move(raw)) {}
  RawMap raw_;
};

/// A per-CPU map: each key holds one V per possible CPU (index = CPU number). Values are
/// std::vector<V> of exactly NumPossibleCpus() elements. Move-only.
template <typename K, typename V>
class PerCpuMap {
  static_assert(std::is_trivially_copyable_v<K>, "map key must be trivially copyable");
  static_assert(std::is_trivially_copyable_v<V>, "map value must be trivially copyable");

 public:
  using Key = K;
  using Value = V;

  /// Like Map::FromFd, but requires a per-CPU map type (kFailedPrecondition otherwise).
  static absl::StatusOr<PerCpuMap> FromFd(UniqueFd fd) {
    SARENA_ASSIGN_OR_RETURN(RawMap raw, RawMap::FromFd(std::move(fd)));
    return FromRaw(std::move(raw));
  }
  /// Like Map::FromPin, but requires a per-CPU map type.
  static absl::StatusOr<PerCpuMap> FromPin(absl::string_view path,
                                           PinAccess access = PinAccess::kReadWrite) {
    SARENA_ASSIGN_OR_RETURN(RawMap raw, RawMap::FromPin(path, access));
    absl::Status layout = raw.CheckLayout(sizeof(K), sizeof(V), /*per_cpu=*/true);
    if (!layout.ok()) return RawMap::PinError(path, layout);
    return PerCpuMap(std::move(raw));
  }
  static absl::StatusOr<PerCpuMap> FromRaw(RawMap raw) {
    SARENA_RETURN_IF_ERROR(raw.CheckLayout(sizeof(K), sizeof(V), /*per_cpu=*/true));
    return PerCpuMap(std::move(raw));
  }

  PerCpuMap(PerCpuMap&&) = default;
  PerCpuMap& operator=(PerCpuMap&&) = default;

  int fd() const { return raw_.fd(); }
  const MapInfo& info() const { return raw_.info(); }
  const std::string& name() const { return raw_.name(); }
  const RawMap& raw() const { return raw_; }
  /// Number of per-CPU slots (possible CPUs).
  int num_cpus() const { return raw_.value_slots(); }

  /// Writes one value per CPU; kInvalidArgument unless values.size() == num_cpus().
  absl::Status Update(const K& key, absl::Span<const V> values,
                      UpdateFlags flags = UpdateFlags::kAny) const {
    if (values.size() != static_cast<size_t>(num_cpus()))
      return absl::InvalidArgumentError("per-CPU update: need one value per possible CPU");
    std::vector<uint8_t> buf(raw_.value_bytes());
    for (size_t i = 0; i < values.size(); ++i)
      std::memcpy(buf.data() + i * raw_.slot_stride(), &values[i], sizeof(V));
    return raw_.Update(&key, buf.data(), flags);
  }
  /// Writes `value` into every CPU's slot (e.g. zero to reset a counter).
  absl::Status UpdateAll(const K& key, const V& value,
                         UpdateFlags flags = UpdateFlags::kAny) const {
    return Update(key, std::vector<V>(num_cpus(), value), flags);
  }
  /// One value per possible CPU; kNotFound when absent.
  absl::StatusOr<std::vector<V>> Lookup(const K& key) const {
    std::vector<uint8_t> buf(raw_.value_bytes());
    SARENA_RETURN_IF_ERROR(raw_.Lookup(&key, buf.data()));
    return Unpack(buf.data());
  }
  absl::Status Delete(const K& key) const { return raw_.Delete(&key); }

  /// Every key (GET_NEXT_KEY order; see Map::Keys).
  absl::StatusOr<std::vector<K>> Keys() const {
    std::vector<K> keys;
    K cur, next;
    const void* prev = nullptr;
    while (true) {
      SARENA_ASSIGN_OR_RETURN(bool more, raw_.NextKey(prev, &next));
      if (!more) break;
      keys.push_back(next);
      cur = next;
      prev = &cur;
    }
    return keys;
  }
  /// Every entry with its per-CPU values (BPF_MAP_LOOKUP_BATCH, loop fallback).
  absl::StatusOr<std::vector<std::pair<K, std::vector<V>>>> LookupBatch() const {
    std::vector<uint8_t> kbuf, vbuf;
    SARENA_ASSIGN_OR_RETURN(size_t n, raw_.LookupAll(&kbuf, &vbuf));
    std::vector<std::pair<K, std::vector<V>>> out(n);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&out[i].first, kbuf.data() + i * sizeof(K), sizeof(K));
      out[i].second = Unpack(vbuf.data() + i * raw_.value_bytes());
    }
    return out;
  }

 private:
  explicit PerCpuMap(RawMap raw) : raw_(std::move(raw)) {}
  std::vector<V> Unpack(const uint8_t* buf) const {
    std::vector<V> values(num_cpus());
    for (int i = 0; i < num_cpus(); ++i)
      std::memcpy(&values[i], buf + i * raw_.slot_stride(), sizeof(V));
    return values;
  }
  RawMap raw_;
};

}  // namespace sarena::bpf

#endif  // LIBSARENA_BPF_MAP_H_
