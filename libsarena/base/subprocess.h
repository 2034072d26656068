// Child processes: run a function or a program in a child (optionally inside another network
// namespace), feed it stdin, capture its stdout and stderr; several children at once.
#ifndef LIBSARENA_BASE_SUBPROCESS_H_
#define LIBSARENA_BASE_SUBPROCESS_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sarena {

/// Exit code a child returns when it cannot enter its network namespace (RunChildren writes
/// "enter network namespace '<path>': <strerror>" to its stderr). 125 as in `nsenter`/`env`.
inline constexpr int kChildNetnsFailed = 125;

/// Exit code of a child whose program could not be executed (as the shell's 127: not found).
inline constexpr int kChildExecFailed = 127;

/// What to run in one child.
struct ChildSpec {
  /// Path of a network namespace file (e.g. "/var/run/netns/x" or "/proc/<pid>/ns/net") the
  /// child enters with setns(2) before `fn`; empty = stay in the caller's.
  std::string netns;
  /// Runs in the forked child; its return value is the exit code (0–255). Called after fork(2)
  /// in a process that may have threads: only exec, plain syscalls and glibc's malloc are safe.
  std::function<int()> fn;
  /// Written to the child's stdin, which is then closed (empty: stdin is closed at once).
  std::string stdin_text;
  /// Names the child in errors, e.g. its argv[0] ("ip"); empty: "child <index in specs>".
  std::string name;
};

/// What one child did.
struct ChildOutput {
  int exit_code = -1;  ///< WEXITSTATUS, or 128 + signal number when it was killed
  std::string out;     ///< everything it wrote to fd 1
  std::string err;     ///< everything it wrote to fd 2
};

/// A ChildSpec::fn that execs `argv` (argv[0] looked up in PATH, as execvp(3)); when the exec
/// fails it writes "run '<argv[0]>': <strerror>" to stderr and returns kChildExecFailed.
/// `argv` must not be empty.
std::function<int()> ExecArgv(std::vector<std::string> argv);

/// How RunChildren runs its children.
struct RunOptions {
  /// At most this many children run at once (0 counts as 1). The bound keeps the parent's
  /// descriptors (3 per running child) well under RLIMIT_NOFILE's usual 1024 when a node has
  /// hundreds of pods.
  size_t max_running = 32;
  /// Wall-clock budget of the whole call, from its start (CLOCK_MONOTONIC); infinite: none.
  /// When it runs out every child still running is sent SIGKILL (its pid only: a grandchild it
  /// started is not killed, and its pipes are not waited for) and reaped, no further child is
  /// started, and the call fails with kDeadlineExceeded. Zero or negative: expires at once.
  absl::Duration timeout = absl::InfiniteDuration();
};

/// Runs every child, at most `options.max_running` at a time (fork(2), each joins its `netns`,
/// runs `fn`; a slot frees when the child has closed its stdout and stderr and been reaped),
/// feeding stdin and draining stdout/stderr of all running children concurrently with poll(2).
/// Signals: the child starts with every signal at its default disposition (SIG_DFL — also those
/// the caller ignores, e.g. the tools' SIGPIPE, or catches) and an empty signal mask, whatever
/// the calling thread's; the caller's dispositions are never touched (other threads are not
/// affected). A write to the stdin of a child that stopped reading it fails with EPIPE with
/// SIGPIPE blocked in the calling thread only (the signal is consumed), so it neither kills the
/// caller nor reaches its handler.
/// The result has one ChildOutput per spec, in the same order. A child's own failure is its exit
/// code, not an error.
/// Errors (children already started are killed only on a deadline, otherwise run to their end,
/// and are reaped either way before the call returns):
///  - kInternal when pipe(2) or fork(2) fails; when poll(2) fails (other than EINTR); when
///    waitpid(2) fails for a child (e.g. ECHILD when the caller ignores SIGCHLD, so the kernel
///    reaped it and no exit code exists) — naming the child (ChildSpec::name), its pid and the
///    errno ("(errno N)").
///  - kDeadlineExceeded when `options.timeout` ran out, naming every child that was still
///    running ("'<name>' (pid N)") and the timeout.
absl::StatusOr<std::vector<ChildOutput>> RunChildren(const std::vector<ChildSpec>& specs,
                                                     const RunOptions& options);

/// RunChildren with `max_running` and no timeout.
absl::StatusOr<std::vector<ChildOutput>> RunChildren(const std::vector<ChildSpec>& specs,
                                                     size_t max_running = 32);

/// RunChildren for one child; the same errors.
absl::StatusOr<ChildOutput> RunChild(ChildSpec spec, const RunOptions& options = {});

}  // namespace sarena

#endif  // LIBSARENA_BASE_SUBPROCESS_H_
