#include "libsarena/base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/errno_status.h"

namespace sarena {
namespace {

using Clock = std::chrono::steady_clock;

// The parent's ends of one child's pipes, and what is left to write to its stdin.
struct Running {
  pid_t pid = -1;
  int in = -1;   // write end of the child's stdin
  int out = -1;  // read end of the child's stdout
  int err = -1;  // read end of the child's stderr
  size_t written = 0;
};

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// "'ip' (pid 42)", or "child 3 (pid 42)" for a spec without a name.
std::string Label(const std::vector<ChildSpec>& specs, size_t i, pid_t pid) {
  const std::string& name = specs[i].name;
  return absl::StrCat(name.empty() ? absl::StrCat("child ", i) : absl::StrCat("'", name, "'"),
                      " (pid ", pid, ")");
}

// kInternal whatever the errno (the library's convention is ErrnoStatus's text).
absl::Status InternalErrno(int err, absl::string_view what) {
  return absl::InternalError(ErrnoStatus(err, what).message());
}

// Collects child `i`'s exit status into `*output` and marks it reaped (pid -1). With WNOHANG in
// `flags` a child still running is left alone (`*exited` false). A failed waitpid(2) is an
// error (the child is marked reaped: there is nothing left to wait for).
absl::Status Wait(const std::vector<ChildSpec>& specs, size_t i, int flags, Running* r,
                  ChildOutput* output, bool* exited) {
  *exited = false;
  int status = 0;
  pid_t got;
  do {
    got = waitpid(r->pid, &status, flags);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    int e = errno;
    absl::Status st = InternalErrno(e, absl::StrCat("wait for ", Label(specs, i, r->pid)));
    r->pid = -1;
    *exited = true;
    return st;
  }
  if (got == 0) return absl::OkStatus();
  output->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r->pid = -1;
  *exited = true;
  return absl::OkStatus();
}

// Closes every parent-side pipe and waits for every child not reaped yet; the first error.
absl::Status Reap(const std::vector<ChildSpec>& specs, std::vector<Running>* children,
                  std::vector<ChildOutput>* outputs) {
  absl::Status first;
  for (size_t i = 0; i < children->size(); ++i) {
    Running& r = (*children)[i];
    CloseFd(&r.in);
    CloseFd(&r.out);
    CloseFd(&r.err);
    if (r.pid <= 0) continue;
    bool exited = false;
    absl::Status st = Wait(specs, i, 0, &r, &(*outputs)[i], &exited);
    if (first.ok()) first = st;
  }
  return first;
}

// Reads what is there into `sink`; closes `*fd` at EOF or on an error other than EINTR/EAGAIN.
void ReadSome(int* fd, std::string* sink) {
  char buf[65536];
  ssize_t n = read(*fd, buf, sizeof(buf));
  if (n > 0) {
    sink->append(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    CloseFd(fd);
  }
}

// write(2) that cannot raise SIGPIPE: the signal is blocked in this thread only while writing
// (a pipe's SIGPIPE goes to the writing thread) and, when the write raised it, consumed with
// sigtimedwait. The process-wide disposition is not touched. errno is write's.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old_mask, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigemptyset(&pending);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;  // not ours to consume
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
  ssize_t n = write(fd, data, size);
  int e = errno;
  if (n < 0 && e == EPIPE && !was_pending) {
    const timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = e;
  return n;
}

// In a just-forked child (every signal blocked by the parent around fork): every signal back to
// SIG_DFL, then an empty mask. Only async-signal-safe calls.
void ResetSignalsInChild() {
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // EINVAL for the C library's reserved signals: fine
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace

std::function<int()> ExecArgv(std::vector<std::string> argv) {
  return [argv = std::move(argv)]() {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    dprintf(STDERR_FILENO, "run '%s': %s\n", args[0], strerror(errno));
    return kChildExecFailed;
  };
}

absl::StatusOr<std::vector<ChildOutput>> RunChildren(const std::vector<ChildSpec>& specs,
                                                     const RunOptions& options) {
  const size_t max_running = std::max<size_t>(options.max_running, 1);
  // A timeout of more than a century is none (and keeps the time arithmetic from overflowing).
  const bool has_deadline = options.timeout < absl::Hours(24 * 365 * 100);
  const Clock::time_point deadline =
      has_deadline ? Clock::now() + std::chrono::nanoseconds(absl::ToInt64Nanoseconds(
                                        std::max(options.timeout, absl::ZeroDuration())))
                   : Clock::time_point::max();
  std::vector<Running> children(specs.size());
  std::vector<ChildOutput> outputs(specs.size());
  size_t next = 0;     // the next spec to start
  size_t running = 0;  // started and not yet reaped

  // Forks specs[i]; on failure, every child started so far is reaped and the error returned.
  auto start = [&](size_t i) -> absl::Status {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      int e = errno;
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
        if (fd >= 0) close(fd);
      }
      return InternalErrno(e, absl::StrCat("create pipes for child ", Label(specs, i, 0)));
    }
    // No handler of ours may run in the child before its dispositions are reset: block
    // everything in this thread around fork (the child inherits the mask, then clears it).
    sigset_t all, old_mask;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old_mask);
    pid_t pid = fork();
    if (pid < 0) {
      int e = errno;
      pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
      std::string name = specs[i].name.empty() ? absl::StrCat("child ", i)
                                               : absl::StrCat("'", specs[i].name, "'");
      return InternalErrno(e, absl::StrCat("fork ", name));
    }
    if (pid == 0) {
      ResetSignalsInChild();
      // The other children's parent-side ends must not stay open here: a child that reads its
      // stdin to EOF would otherwise wait for this one to exit.
      for (size_t j = 0; j < i; ++j) {
        for (int fd : {children[j].in, children[j].out, children[j].err}) {
          if (fd >= 0) close(fd);
        }
      }
      dup2(in[0], STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      // Its own pipes' other ends too (a function child never execs, so O_CLOEXEC does not help):
      // holding the write end of its stdin, it would never see EOF.
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
        if (fd > STDERR_FILENO) close(fd);
      }
      const std::string& netns = specs[i].netns;
      if (!netns.empty()) {
        int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
          dprintf(STDERR_FILENO, "enter network namespace '%s': %s\n", netns.c_str(),
                  strerror(errno));
          _exit(kChildNetnsFailed);
        }
      }
      _exit(specs[i].fn());
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    children[i] = Running{pid, in[1], out[0], err[0], 0};
    if (specs[i].stdin_text.empty()) {
      CloseFd(&children[i].in);
    } else {
      fcntl(children[i].in, F_SETFL, fcntl(children[i].in, F_GETFL) | O_NONBLOCK);
    }
    return absl::OkStatus();
  };

  absl::Status failed;
  bool timed_out = false;
  for (;;) {
    if (has_deadline && Clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    while (failed.ok() && running < max_running && next < specs.size()) {
      failed = start(next);
      if (!failed.ok()) break;
      ++next;
      ++running;
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owner;  // (child, 0 = in / 1 = out / 2 = err)
    bool exiting = false;  // a child closed every pipe but has not exited yet
    for (size_t i = 0; i < next; ++i) {
      Running& r = children[i];
      if (r.pid > 0 && r.in < 0 && r.out < 0 && r.err < 0) {
        // Every pipe is closed: the child has exited or is about to; reap it to free its slot.
        // Without blocking, so the other children's pipes and the deadline are still served.
        bool exited = false;
        absl::Status st = Wait(specs, i, WNOHANG, &r, &outputs[i], &exited);
        if (failed.ok()) failed = st;
        if (exited) {
          --running;
        } else {
          exiting = true;
        }
        continue;
      }
      if (r.in >= 0) {
        fds.push_back({r.in, POLLOUT, 0});
        owner.emplace_back(i, 0);
      }
      if (r.out >= 0) {
        fds.push_back({r.out, POLLIN, 0});
        owner.emplace_back(i, 1);
      }
      if (r.err >= 0) {
        fds.push_back({r.err, POLLIN, 0});
        owner.emplace_back(i, 2);
      }
    }
    if (fds.empty() && !exiting) {
      if (failed.ok() && next < specs.size()) continue;  // slots were freed: start more
      break;
    }
    // Wait for a pipe; re-check an exiting child every 10 ms; never past the deadline.
    int wait_ms = exiting ? 10 : -1;
    if (has_deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      left = std::clamp<decltype(left)>(left, 0, 1000 * 1000);
      wait_ms = wait_ms < 0 ? static_cast<int>(left) : std::min(wait_ms, static_cast<int>(left));
    }
    if (poll(fds.data(), fds.size(), wait_ms) < 0) {
      int e = errno;
      if (e == EINTR) continue;
      std::vector<std::string> polled;
      for (size_t i = 0; i < next; ++i) {
        if (children[i].pid > 0) polled.push_back(Label(specs, i, children[i].pid));
      }
      absl::Status st = InternalErrno(
          e, absl::StrCat("poll the pipes of ", absl::StrJoin(polled, ", ")));
      if (failed.ok()) failed = st;
      break;  // Reap below still collects the exit codes
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Running& r = children[owner[k].first];
      ChildOutput& o = outputs[owner[k].first];
      switch (owner[k].second) {
        case 0: {
          const std::string& text = specs[owner[k].first].stdin_text;
          ssize_t n = WriteNoSigpipe(r.in, text.data() + r.written, text.size() - r.written);
          if (n > 0) r.written += static_cast<size_t>(n);
          if ((n < 0 && errno != EINTR && errno != EAGAIN) || r.written == text.size()) {
            CloseFd(&r.in);
          }
          break;
        }
        case 1:
          ReadSome(&r.out, &o.out);
          break;
        default:
          ReadSome(&r.err, &o.err);
          break;
      }
    }
  }
  children.resize(next);
  std::vector<std::string> killed;
  if (timed_out) {
    for (size_t i = 0; i < next; ++i) {
      if (children[i].pid <= 0) continue;
      kill(children[i].pid, SIGKILL);
      killed.push_back(Label(specs, i, children[i].pid));
    }
  }
  absl::Status reaped = Reap(specs, &children, &outputs);
  if (!failed.ok()) return failed;
  // Every child had exited by the deadline (only its pipes' EOF was still unread): done.
  if (timed_out && killed.empty() && next == specs.size()) timed_out = false;
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(
        "run ", specs.size(), specs.size() == 1 ? " child" : " children", ": timeout of ",
        absl::FormatDuration(options.timeout), " exceeded; killed (SIGKILL) ",
        killed.empty() ? "none (all had exited)" : absl::StrJoin(killed, ", "),
        next < specs.size() ? absl::StrCat("; ", specs.size() - next, " not started") : ""));
  }
  if (!reaped.ok()) return reaped;
  return outputs;
}

absl::StatusOr<std::vector<ChildOutput>> RunChildren(const std::vector<ChildSpec>& specs,
                                                     size_t max_running) {
  RunOptions options;
  options.max_running = max_running;
  return RunChildren(specs, options);
}

absl::StatusOr<ChildOutput> RunChild(ChildSpec spec, const RunOptions& options) {
  std::vector<ChildSpec> specs;
  specs.push_back(std::move(spec));
  absl::StatusOr<std::vector<ChildOutput>> outputs = RunChildren(specs, options);
  if (!outputs.ok()) return outputs.status();
  return std::move(outputs->front());
}

}  // namespace sarena
