#include "libsarena/base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sarena {
namespace {

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

void Reap(std::vector<Running>* children, std::vector<ChildOutput>* outputs) {
  for (size_t i = 0; i < children->size(); ++i) {
    Running& r = (*children)[i];
    CloseFd(&r.in);
    CloseFd(&r.out);
    CloseFd(&r.err);
    if (r.pid <= 0) continue;
    int status = 0;
    while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (outputs != nullptr) {
      (*outputs)[i].exit_code =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
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
                                                     size_t max_running) {
  if (max_running == 0) max_running = 1;
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
      return absl::InternalError(absl::StrCat("create pipes for a child process: ", strerror(e)));
    }
    pid_t pid = fork();
    if (pid < 0) {
      int e = errno;
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
      return absl::InternalError(absl::StrCat("fork a child process: ", strerror(e)));
    }
    if (pid == 0) {
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

  // A child that exits without reading its stdin must surface as its exit code, not kill us.
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  absl::Status failed;
  for (;;) {
    while (failed.ok() && running < max_running && next < specs.size()) {
      failed = start(next);
      if (!failed.ok()) break;
      ++next;
      ++running;
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owner;  // (child, 0 = in / 1 = out / 2 = err)
    for (size_t i = 0; i < next; ++i) {
      Running& r = children[i];
      if (r.pid > 0 && r.in < 0 && r.out < 0 && r.err < 0) {
        // Every pipe is closed: the child has exited or is about to; reap it to free its slot.
        int status = 0;
        while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
        }
        outputs[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        r.pid = -1;
        --running;
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
    if (fds.empty()) {
      if (failed.ok() && next < specs.size()) continue;  // slots were freed: start more
      break;
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;  // cannot happen with valid fds; Reap below still collects the exit codes
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Running& r = children[owner[k].first];
      ChildOutput& o = outputs[owner[k].first];
      switch (owner[k].second) {
        case 0: {
          const std::string& text = specs[owner[k].first].stdin_text;
          ssize_t n = write(r.in, text.data() + r.written, text.size() - r.written);
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
  sigaction(SIGPIPE, &old, nullptr);
  children.resize(next);
  Reap(&children, &outputs);
  if (!failed.ok()) return failed;
  return outputs;
}

absl::StatusOr<ChildOutput> RunChild(ChildSpec spec) {
  std::vector<ChildSpec> specs;
  specs.push_back(std::move(spec));
  absl::StatusOr<std::vector<ChildOutput>> outputs = RunChildren(specs);
  if (!outputs.ok()) return outputs.status();
  return std::move(outputs->front());
}

}  // namespace sarena
