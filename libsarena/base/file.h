// File and directory primitives, written once for every layer: whole-file reads (the snapshot
// loader, the Kubernetes object files, the daemon's state), plain writes (sarena-diag collect) and
// the durable ones the daemon's state under --state-dir needs (Ipam, EndpointStore). Every function names the path in its error (ErrnoStatus, "<verb> <object>
// '<path>': <cause>"). Durability follows the usual POSIX recipe: fsync the file, then fsync the
// directory that holds the new name (fsync(2): "Calling fsync() does not necessarily ensure that
// the entry in the directory containing the file has also reached disk").
#ifndef LIBSARENA_BASE_FILE_H_
#define LIBSARENA_BASE_FILE_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/base/unique_fd.h"

namespace sarena {

/// Prefix of temporary files written by this module. Such files are never committed state: a
/// crash can leave them behind, and RemoveTemporaries deletes them.
inline constexpr absl::string_view kTempPrefix = ".tmp-";

/// mkdir -p `path` with `mode` for the directories it creates (existing ones are left alone).
/// Errors: ErrnoStatus, kFailedPrecondition when a component exists and is not a directory.
absl::Status MakeDirs(const std::string& path, mode_t mode);

/// fsync(2) on the directory itself (makes created/renamed/unlinked names durable).
absl::Status FsyncDir(const std::string& dir);

/// Whole content of a file (read(2) to EOF; works on /proc and /sys files whose size is 0).
/// Errors: kNotFound "read file '<path>': no such file" when it or a parent is missing (ENOENT,
/// ENOTDIR); kInvalidArgument when `path` is a directory; ErrnoStatus otherwise.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

/// Writes `content` to `path` atomically but not durably: a kTempPrefix file in the same directory
/// (created with `mode`), then rename(2) over `path`, no fsync. A reader sees the old file or the
/// whole new one; a crash may lose both. For outputs such as a snapshot directory.
/// Errors: ErrnoStatus naming the path ("create file" / "write file" / "rename file"); the
/// temporary file is removed.
absl::Status WriteFile(const std::string& path, absl::string_view content, mode_t mode = 0644);

/// Writes `content` to <dir>/<name> atomically: temporary file, fsync, rename(2), fsync(dir).
/// Replaces an existing file. mode 0600.
absl::Status WriteFileAtomic(const std::string& dir, absl::string_view name,
                             absl::string_view content);

/// Creates <dir>/<name> with `content` only if the name does not exist yet, atomically and
/// durably: temporary file, fsync, link(2) to the final name (EEXIST = someone has it), unlink
/// temporary, fsync(dir). Errors: kAlreadyExists when the name exists; ErrnoStatus otherwise.
absl::Status CreateFileExclusive(const std::string& dir, absl::string_view name,
                                 absl::string_view content);

/// unlink(2) <dir>/<name> and fsync(dir). Returns false when it did not exist.
absl::StatusOr<bool> RemoveFileDurable(const std::string& dir, absl::string_view name);

/// Names in `dir` (no "." / ".."), sorted.
absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir);

/// Deletes every kTempPrefix file in `dir`; returns their names (for a log line).
absl::StatusOr<std::vector<std::string>> RemoveTemporaries(const std::string& dir);

/// Opens (creating, mode 0600) <dir>/lock and takes an exclusive flock(2) on it without waiting:
/// one owner per state directory (the lock dies with the process, so a crash never leaves it held).
/// Errors: kUnavailable "state directory '<dir>' is in use by another process (lock '<path>' is
/// held)"; ErrnoStatus otherwise.
absl::StatusOr<UniqueFd> LockDir(const std::string& dir);

/// Name of the lock file LockDir creates in a state directory.
inline constexpr absl::string_view kLockName = "lock";

/// `content` quoted for an error message: C-escaped, cut to `max_len` bytes with "...".
std::string QuoteContent(absl::string_view content, size_t max_len = 200);

}  // namespace sarena

#endif  // LIBSARENA_BASE_FILE_H_
