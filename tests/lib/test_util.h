// Shared test helpers: unique names per run, running commands, temporary directories, scoped
// network namespaces.
#ifndef SARENA_TESTS_LIB_TEST_UTIL_H_
#define SARENA_TESTS_LIB_TEST_UTIL_H_

#include <string>
#include "absl/strings/string_view.h"

namespace sarena::testing {

/// "<prefix><pid-hex><counter>" truncated to `max_len` (15 fits IFNAMSIZ): unique per process
/// run and per call, so concurrent runs never collide.
std::string UniqueName(absl::string_view prefix, size_t max_len = 15);

struct CommandResult {
  int exit_code = -1;  // WEXITSTATUS, or 128+signal
  std::string out;     // stdout
  std::string err;     // stderr
};

/// Runs `argv` via /bin/sh -c `cmd` with optional stdin text and extra environment
/// ("K=V" lines joined by '\n'); captures stdout and stderr.
CommandResult Run(const std::string& cmd, absl::string_view stdin_text = {});

/// Runs and returns stdout; fails the current test (ADD_FAILURE) when the exit code is not 0.
std::string RunOk(const std::string& cmd);

/// The source tree's root, an absolute path (CMake's CMAKE_SOURCE_DIR), e.g. for tests/data.
/// Only tests/lib/build_dirs.cc sees the configured paths, so every other test object compiles
/// to the same bytes in every checkout and ccache can share it between worktrees.
const std::string& SourceDir();

/// The build tree's root, an absolute path (CMake's CMAKE_BINARY_DIR), e.g. for tools/sarena-cni.
const std::string& BinaryDir();

/// True when running as root (CI always is; privileged tests must FAIL, not skip, otherwise).
bool IsRoot();

/// A fresh directory "<system temp dir>/<prefix>XXXXXX" (mkdtemp, mode 0700), removed with all it
/// holds on destruction. A failed mkdtemp fails the current test (ADD_FAILURE) and leaves path()
/// empty.
class TempDir {
 public:
  explicit TempDir(absl::string_view prefix = "sarena-test-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// "<path()>/<rel>": a file or directory inside (not created).
  std::string Path(absl::string_view rel) const;
  /// Writes `contents` to Path(rel), creating the directories on the way, and returns Path(rel).
  /// A failure to write fails the current test (ADD_FAILURE naming the file).
  std::string Write(absl::string_view rel, absl::string_view contents) const;

 private:
  std::string path_;
};

/// A network namespace created with `ip netns add` and deleted (with every process inside it
/// killed) on destruction.
class ScopedNetns {
 public:
  explicit ScopedNetns(absl::string_view prefix = "st");
  ~ScopedNetns();
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;

  const std::string& name() const { return name_; }
  /// "/var/run/netns/<name>"
  std::string path() const { return "/var/run/netns/" + name_; }
  /// "ip netns exec <name> <cmd>"
  std::string Exec(absl::string_view cmd) const;

 private:
  std::string name_;
};

}  // namespace sarena::testing

#endif  // SARENA_TESTS_LIB_TEST_UTIL_H_
