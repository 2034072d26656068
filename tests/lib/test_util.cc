#include "tests/lib/test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace sarena::testing {

std::string UniqueName(absl::string_view prefix, size_t max_len) {
  static std::atomic<unsigned> counter{0};
  std::string s = absl::StrCat(prefix, absl::StrFormat("%x", getpid() & 0xfffff),
                               absl::StrFormat("%x", counter.fetch_add(1)));
  if (s.size() > max_len) s = s.substr(s.size() - max_len);
  return s;
}

CommandResult Run(const std::string& cmd, absl::string_view stdin_text) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  CommandResult r;
  size_t written = 0;
  if (stdin_text.empty()) {
    close(in[1]);
    in[1] = -1;
  }
  signal(SIGPIPE, SIG_IGN);
  bool out_open = true, err_open = true;
  while (out_open || err_open || in[1] >= 0) {
    pollfd fds[3] = {{out_open ? out[0] : -1, POLLIN, 0},
                     {err_open ? err[0] : -1, POLLIN, 0},
                     {in[1], POLLOUT, 0}};
    if (poll(fds, 3, -1) < 0) break;
    char buf[65536];
    if (fds[0].revents) {
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) out_open = false; else r.out.append(buf, n);
    }
    if (fds[1].revents) {
      ssize_t n = read(err[0], buf, sizeof buf);
      if (n <= 0) err_open = false; else r.err.append(buf, n);
    }
    if (in[1] >= 0 && fds[2].revents) {
      ssize_t n = write(in[1], stdin_text.data() + written, stdin_text.size() - written);
      if (n <= 0 || (written += n) == stdin_text.size()) {
        close(in[1]);
        in[1] = -1;
      }
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string RunOk(const std::string& cmd) {
  CommandResult r = Run(cmd);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "command failed (" << r.exit_code << "): " << cmd << "\n" << r.err;
  }
  return r.out;
}

bool IsRoot() { return geteuid() == 0; }

TempDir::TempDir(absl::string_view prefix) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / absl::StrCat(prefix, "XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) != nullptr) {
    path_ = tmpl;
  } else {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
  }
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Path(absl::string_view rel) const { return absl::StrCat(path_, "/", rel); }

std::string TempDir::Write(absl::string_view rel, absl::string_view contents) const {
  std::string file = Path(rel);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (ec || !out) {
    ADD_FAILURE() << "cannot write " << file << ": " << (ec ? ec.message() : std::strerror(errno));
  }
  return file;
}

ScopedNetns::ScopedNetns(absl::string_view prefix) : name_(UniqueName(prefix, 31)) {
  RunOk("ip netns add " + name_);
  RunOk(Exec("ip link set lo up"));
}

ScopedNetns::~ScopedNetns() {
  Run("ip netns pids " + name_ + " | xargs -r kill -9");
  Run("ip netns del " + name_);
}

std::string ScopedNetns::Exec(absl::string_view cmd) const {
  return absl::StrCat("ip netns exec ", name_, " ", cmd);
}

}  // namespace sarena::testing
