#include "libsarena/base/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"

namespace sarena {
namespace {

std::string Join(const std::string& dir, absl::string_view name) {
  return absl::StrCat(dir, "/", name);
}

// A temporary name unique within this process and across processes.
std::string TempName(absl::string_view name) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(kTempPrefix, name, ".", ::getpid(), ".", counter.fetch_add(1));
}

absl::Status WriteAll(int fd, absl::string_view content, const std::string& path) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("write file '", path, "'"));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Writes `content` to a new temporary file in `dir` and fsyncs it. Returns its full path.
absl::StatusOr<std::string> WriteTemp(const std::string& dir, absl::string_view name,
                                      absl::string_view content) {
  std::string tmp = Join(dir, TempName(name));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("create file '", tmp, "'"));
  absl::Status st = WriteAll(fd.get(), content, tmp);
  if (st.ok() && ::fsync(fd.get()) != 0) {
    st = ErrnoStatus(errno, absl::StrCat("fsync file '", tmp, "'"));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return tmp;
}

}  // namespace

absl::Status MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return absl::InvalidArgumentError("create directory '': empty path");
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string part = path.substr(0, pos);
    if (part.empty()) continue;
    if (::mkdir(part.c_str(), mode) == 0 || errno == EEXIST) {
      struct stat st;
      if (::stat(part.c_str(), &st) != 0) {
        return ErrnoStatus(errno, absl::StrCat("stat directory '", part, "'"));
      }
      if (!S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat("create directory '", path, "': '", part, "' is not a directory"));
      }
      continue;
    }
    return ErrnoStatus(errno, absl::StrCat("create directory '", part, "'"));
  }
  return absl::OkStatus();
}

absl::Status FsyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("open directory '", dir, "'"));
  if (::fsync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fsync directory '", dir, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat("read file '", path, "': no such file"));
    }
    return ErrnoStatus(e, absl::StrCat("read file '", path, "'"));
  }
  std::string out;
  struct stat st = {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("read file '", path, "': is a directory"));
  }
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("read file '", path, "'"));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

absl::Status WriteFile(const std::string& path, absl::string_view content, mode_t mode) {
  size_t slash = path.rfind('/');
  std::string tmp = slash == std::string::npos
                        ? TempName(path)
                        : Join(path.substr(0, slash), TempName(path.substr(slash + 1)));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("create file '", tmp, "'"));
  absl::Status st = WriteAll(fd.get(), content, tmp);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoStatus(errno, absl::StrCat("rename file '", tmp, "' to '", path, "'"));
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

absl::Status WriteFileAtomic(const std::string& dir, absl::string_view name,
                             absl::string_view content) {
  SARENA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(dir, name, content));
  std::string final_path = Join(dir, name);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(err, absl::StrCat("rename file '", tmp, "' to '", final_path, "'"));
  }
  return FsyncDir(dir);
}

absl::Status CreateFileExclusive(const std::string& dir, absl::string_view name,
                                 absl::string_view content) {
  SARENA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(dir, name, content));
  std::string final_path = Join(dir, name);
  int rc = ::link(tmp.c_str(), final_path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc != 0) {
    if (err == EEXIST) {
      return absl::AlreadyExistsError(
          absl::StrCat("create file '", final_path, "': already exists"));
    }
    return ErrnoStatus(err, absl::StrCat("link file '", tmp, "' to '", final_path, "'"));
  }
  return FsyncDir(dir);
}

absl::StatusOr<bool> RemoveFileDurable(const std::string& dir, absl::string_view name) {
  std::string path = Join(dir, name);
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return false;
    return ErrnoStatus(errno, absl::StrCat("remove file '", path, "'"));
  }
  SARENA_RETURN_IF_ERROR(FsyncDir(dir));
  return true;
}

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, absl::StrCat("open directory '", dir, "'"));
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    absl::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoStatus(err, absl::StrCat("read directory '", dir, "'"));
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::vector<std::string>> RemoveTemporaries(const std::string& dir) {
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<std::string> removed;
  for (const std::string& n : names) {
    if (!absl::StartsWith(n, kTempPrefix)) continue;
    std::string path = Join(dir, n);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("remove temporary file '", path, "'"));
    }
    removed.push_back(n);
  }
  if (!removed.empty()) SARENA_RETURN_IF_ERROR(FsyncDir(dir));
  return removed;
}

absl::StatusOr<UniqueFd> LockDir(const std::string& dir) {
  std::string path = Join(dir, kLockName);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("open lock file '", path, "'"));
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat(
          "state directory '", dir, "' is in use by another process (lock '", path, "' is held)"));
    }
    return ErrnoStatus(errno, absl::StrCat("lock file '", path, "'"));
  }
  return fd;
}

std::string QuoteContent(absl::string_view content, size_t max_len) {
  if (content.size() <= max_len) return absl::StrCat("\"", absl::CEscape(content), "\"");
  return absl::StrCat("\"", absl::CEscape(content.substr(0, max_len)), "\"...");
}

}  // namespace sarena
