#include "libsarena/bpf/map.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"

namespace sarena::bpf {
namespace {

// The kernel-internal "operation not supported" errno that BPF_MAP_*_BATCH returns when a map
// type has no batch op (include/linux/errno.h; not in the uapi).
constexpr int kENOTSUPP = 524;

bool BatchUnsupported(int err) { return err == kENOTSUPP || err == EOPNOTSUPP || err == ENOSYS; }

size_t RoundUp8(size_t n) { return (n + 7) & ~size_t{7}; }

uint64_t Flags(UpdateFlags f) { return static_cast<uint64_t>(f); }

}  // namespace

absl::StatusOr<MapInfo> GetMapInfo(int map_fd) {
  bpf_map_info info = {};
  uint32_t len = sizeof(info);
  int ret = bpf_obj_get_info_by_fd(map_fd, &info, &len);
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("get info of map fd ", map_fd));
  MapInfo out;
  out.id = info.id;
  out.type = info.type;
  out.key_size = info.key_size;
  out.value_size = info.value_size;
  out.max_entries = info.max_entries;
  out.map_flags = info.map_flags;
  out.name = info.name;
  return out;
}

std::string MapTypeName(uint32_t type) {
  const char* name = libbpf_bpf_map_type_str(static_cast<bpf_map_type>(type));
  if (name == nullptr) return absl::StrCat("type ", type);
  return name;
}

bool IsPerCpuMapType(uint32_t type) {
  switch (type) {
    case BPF_MAP_TYPE_PERCPU_HASH:
    case BPF_MAP_TYPE_PERCPU_ARRAY:
    case BPF_MAP_TYPE_LRU_PERCPU_HASH:
    case BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<int> NumPossibleCpus() {
  int n = libbpf_num_possible_cpus();
  if (n <= 0) return ErrnoStatus(-n, "read possible CPUs '/sys/devices/system/cpu/possible'");
  return n;
}

absl::string_view ToString(UpdateFlags flags) {
  switch (flags) {
    case UpdateFlags::kAny:
      return "any";
    case UpdateFlags::kNoExist:
      return "noexist";
    case UpdateFlags::kExist:
      return "exist";
  }
  return "unknown";
}

RawMap::RawMap(UniqueFd fd, MapInfo info, int slots, size_t stride)
    : fd_(std::move(fd)),
      info_(std::move(info)),
      per_cpu_(IsPerCpuMapType(info_.type)),
      slots_(slots),
      stride_(stride) {}

absl::StatusOr<RawMap> RawMap::FromFd(UniqueFd fd) {
  if (!fd.valid()) return absl::InvalidArgumentError("open map: invalid file descriptor");
  auto info = GetMapInfo(fd.get());
  if (!info.ok()) return info.status();
  int slots = 1;
  size_t stride = info->value_size;
  if (IsPerCpuMapType(info->type)) {
    auto cpus = NumPossibleCpus();
    if (!cpus.ok()) return cpus.status();
    slots = *cpus;
    stride = RoundUp8(info->value_size);
  }
  return RawMap(std::move(fd), *std::move(info), slots, stride);
}

absl::StatusOr<RawMap> RawMap::FromPin(absl::string_view path, PinAccess access) {
  std::string p(path);
  LIBBPF_OPTS(bpf_obj_get_opts, opts,
              .file_flags = access == PinAccess::kReadOnly ? uint32_t{BPF_F_RDONLY} : 0u);
  int fd = bpf_obj_get_opts(p.c_str(), &opts);
  if (fd < 0) return ErrnoStatus(-fd, absl::StrCat("open pinned map '", path, "'"));
  auto map = FromFd(UniqueFd(fd));
  if (!map.ok()) return PinError(path, map.status());
  return map;
}

absl::Status RawMap::PinError(absl::string_view path, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("open pinned map '", path, "': ", status.message()));
}

std::string RawMap::Describe() const { return absl::StrCat("map '", info_.name, "'"); }

absl::Status RawMap::CheckLayout(size_t key_size, size_t value_size, bool per_cpu) const {
  if (per_cpu != per_cpu_) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": map type ", MapTypeName(info_.type), " is ",
        per_cpu_ ? "per-CPU" : "not per-CPU", ", expected ", per_cpu ? "per-CPU" : "not per-CPU"));
  }
  if (info_.key_size != key_size) {
    return absl::FailedPreconditionError(absl::StrCat(Describe(), ": key size ", info_.key_size,
                                                      " != expected ", key_size));
  }
  if (info_.value_size != value_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": value size ", info_.value_size, " != expected ", value_size));
  }
  return absl::OkStatus();
}

absl::Status RawMap::Update(const void* key, const void* value, UpdateFlags flags) const {
  int ret = bpf_map_update_elem(fd_.get(), key, value, Flags(flags));
  if (ret < 0) {
    return ErrnoStatus(-ret,
                       absl::StrCat("update (", ToString(flags), ") element of ", Describe()));
  }
  return absl::OkStatus();
}

absl::Status RawMap::Lookup(const void* key, void* value) const {
  int ret = bpf_map_lookup_elem(fd_.get(), key, value);
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("look up element of ", Describe()));
  return absl::OkStatus();
}

absl::Status RawMap::Delete(const void* key) const {
  int ret = bpf_map_delete_elem(fd_.get(), key);
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("delete element of ", Describe()));
  return absl::OkStatus();
}

absl::StatusOr<bool> RawMap::NextKey(const void* key, void* next) const {
  int ret = bpf_map_get_next_key(fd_.get(), key, next);
  if (ret == -ENOENT) return false;
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("get next key of ", Describe()));
  return true;
}

absl::Status RawMap::UpdateBatch(const void* keys, const void* values, uint32_t count,
                                 UpdateFlags flags) const {
  if (count == 0) return absl::OkStatus();
  // BPF_MAP_UPDATE_BATCH accepts no BPF_NOEXIST/BPF_EXIST in elem_flags (only BPF_F_LOCK; it
  // always creates or replaces), so those flags take the per-element path.
  int ret = -kENOTSUPP;
  uint32_t n = 0;
  if (flags == UpdateFlags::kAny) {
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    n = count;
    ret = bpf_map_update_batch(fd_.get(), keys, values, &n, &opts);
  }
  if (ret == 0) return absl::OkStatus();
  if (!BatchUnsupported(-ret)) {
    return ErrnoStatus(-ret, absl::StrCat("update batch of ", count, " elements of ", Describe()),
                       absl::StrCat(n, " written before the error"));
  }
  const auto* k = static_cast<const uint8_t*>(keys);
  const auto* v = static_cast<const uint8_t*>(values);
  for (uint32_t i = 0; i < count; ++i) {
    absl::Status s = Update(k + size_t{i} * info_.key_size, v + i * value_bytes(), flags);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), ": ", i, " of ", count,
                                                 " written before the error"));
    }
  }
  return absl::OkStatus();
}

absl::Status RawMap::DeleteBatch(const void* keys, uint32_t count) const {
  if (count == 0) return absl::OkStatus();
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  uint32_t n = count;
  int ret = bpf_map_delete_batch(fd_.get(), keys, &n, &opts);
  if (ret == 0) return absl::OkStatus();
  if (!BatchUnsupported(-ret)) {
    return ErrnoStatus(-ret, absl::StrCat("delete batch of ", count, " elements of ", Describe()),
                       absl::StrCat(n, " deleted before the error"));
  }
  const auto* k = static_cast<const uint8_t*>(keys);
  for (uint32_t i = 0; i < count; ++i) {
    absl::Status s = Delete(k + size_t{i} * info_.key_size);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), ": ", i, " of ", count,
                                                 " deleted before the error"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RawMap::LookupAll(std::vector<uint8_t>* keys, std::vector<uint8_t>* values,
                                         uint32_t chunk) const {
  const size_t ksz = info_.key_size;
  const size_t vsz = value_bytes();
  size_t total = 0;
  chunk = std::max<uint32_t>(chunk, 1);
  // The batch cursor is opaque to user space: a bucket index (hash) or an array index; 8 bytes
  // is what the kernel copies for every current map type (at least sizeof(u32)).
  std::vector<uint8_t> cursor(std::max<size_t>(ksz, 8));
  bool first = true;
  while (true) {
    size_t base_k = keys->size(), base_v = values->size();
    keys->resize(base_k + size_t{chunk} * ksz);
    values->resize(base_v + size_t{chunk} * vsz);
    uint32_t n = chunk;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    int ret = bpf_map_lookup_batch(fd_.get(), first ? nullptr : cursor.data(), cursor.data(),
                                   keys->data() + base_k, values->data() + base_v, &n, &opts);
    int err = ret < 0 ? -ret : 0;
    if (err != 0 && err != ENOENT) {
      keys->resize(base_k);
      values->resize(base_v);
      if (err == ENOSPC && n == 0 && chunk < (1u << 20)) {  // a hash bucket larger than `chunk`
        chunk *= 2;
        continue;
      }
      if (first && BatchUnsupported(err)) break;  // fall back to GET_NEXT_KEY below
      return ErrnoStatus(err, absl::StrCat("look up batch of ", Describe()));
    }
    keys->resize(base_k + size_t{n} * ksz);
    values->resize(base_v + size_t{n} * vsz);
    total += n;
    first = false;
    if (err == ENOENT) return total;  // end of map
  }

  // Fallback: iterate keys, look each up (entries deleted meanwhile are skipped).
  std::vector<uint8_t> cur(ksz), next(ksz);
  const void* prev = nullptr;
  while (true) {
    auto more = NextKey(prev, next.data());
    if (!more.ok()) return more.status();
    if (!*more) break;
    size_t base_v = values->size();
    values->resize(base_v + vsz);
    absl::Status s = Lookup(next.data(), values->data() + base_v);
    if (absl::IsNotFound(s)) {
      values->resize(base_v);
    } else if (!s.ok()) {
      return s;
    } else {
      keys->insert(keys->end(), next.begin(), next.end());
      ++total;
    }
    cur = next;
    prev = cur.data();
  }
  return total;
}

absl::Status RawMap::Pin(absl::string_view path) const {
  std::string p(path);
  int ret = bpf_obj_pin(fd_.get(), p.c_str());
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("pin ", Describe(), " at '", path, "'"));
  return absl::OkStatus();
}

}  // namespace sarena::bpf
