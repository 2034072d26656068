// base/subprocess: real child processes (sh, cat, function children), no privileges needed.
#include "libsarena/base/subprocess.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/status_matchers.h"

namespace sarena {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Subprocess, CapturesStdoutStderrAndExitCode) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sh", "-c", "echo out; echo err >&2; exit 3"}), {}});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->out, "out\n");
  EXPECT_EQ(out->err, "err\n");
}

TEST(Subprocess, FeedsStdinWhileDrainingStdout) {
  // 4 MiB through cat: far more than a pipe buffer each way, so writing stdin and reading
  // stdout must interleave or both sides block.
  std::string text(4 << 20, 'x');
  for (size_t i = 0; i < text.size(); i += 4096) text[i] = static_cast<char>('a' + (i / 4096) % 26);
  auto out = RunChild(ChildSpec{{}, ExecArgv({"cat"}), text});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(out->out, text);
}

TEST(Subprocess, FunctionChildSeesEofOnStdin) {
  // A function child never execs: it must not hold its own stdin's write end.
  auto out = RunChild(ChildSpec{{},
                                []() {
                                  char buf[256];
                                  size_t total = 0;
                                  ssize_t n;
                                  while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0) total += n;
                                  dprintf(STDOUT_FILENO, "%zu", total);
                                  return 0;
                                },
                                "hello"});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(out->out, "5");
}

TEST(Subprocess, ChildThatIgnoresStdinDoesNotKillTheCaller) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"true"}), std::string(1 << 20, 'y')});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, 0);
}

TEST(Subprocess, ExecFailureIsExitCode127) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sarena-no-such-program"}), {}});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, kChildExecFailed);
  EXPECT_THAT(out->err, HasSubstr("run 'sarena-no-such-program'"));
}

TEST(Subprocess, NetnsFailureIsExitCode125AndNamesThePath) {
  auto out = RunChild(ChildSpec{"/nonexistent/netns/sarena", ExecArgv({"true"}), {}});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, kChildNetnsFailed);
  EXPECT_THAT(out->err, HasSubstr("enter network namespace '/nonexistent/netns/sarena'"));
}

TEST(Subprocess, KilledChildIs128PlusSignal) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sh", "-c", "kill -TERM $$"}), {}});
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, 128 + SIGTERM);
}

// Two children that can only both finish when they run at the same time: the first writes to
// pipe a and waits for pipe b; the second reads a, then writes b. Each gives up after `alarm`
// seconds (killed by SIGALRM), so a run that is not concurrent ends instead of hanging.
std::vector<ChildSpec> Rendezvous(int a[2], int b[2]) {
  std::vector<ChildSpec> specs;
  specs.push_back(ChildSpec{{}, [a, b]() {
                              alarm(1);
                              char c = 'x';
                              if (write(a[1], &c, 1) != 1) return 1;
                              return read(b[0], &c, 1) == 1 ? 0 : 2;
                            },
                            {}});
  specs.push_back(ChildSpec{{}, [a, b]() {
                              alarm(1);
                              char c;
                              if (read(a[0], &c, 1) != 1) return 1;
                              return write(b[1], &c, 1) == 1 ? 0 : 2;
                            },
                            {}});
  return specs;
}

TEST(Subprocess, ChildrenRunConcurrently) {
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  auto out = RunChildren(Rendezvous(a, b));
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
  ASSERT_OK(out);
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].exit_code, 0);
  EXPECT_EQ((*out)[1].exit_code, 0);
}

TEST(Subprocess, MaxRunningBoundsConcurrency) {
  // With one slot the first child waits alone until its alarm; the second then runs and finishes.
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  auto out = RunChildren(Rendezvous(a, b), 1);
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
  ASSERT_OK(out);
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].exit_code, 128 + SIGALRM);
  EXPECT_EQ((*out)[1].exit_code, 0);
}

TEST(Subprocess, ManyChildrenKeepTheirOrder) {
  // More children than slots: each output lands at its spec's index.
  std::vector<ChildSpec> specs;
  for (int i = 0; i < 40; ++i) {
    specs.push_back(ChildSpec{{}, ExecArgv({"sh", "-c", "echo $0; exit $1", std::to_string(i),
                                            std::to_string(i % 7)}),
                              {}});
  }
  auto out = RunChildren(specs, 4);
  ASSERT_OK(out);
  ASSERT_EQ(out->size(), specs.size());
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ((*out)[i].out, std::to_string(i) + "\n") << i;
    EXPECT_EQ((*out)[i].exit_code, i % 7) << i;
  }
}

// The hex mask of a "Name:\t<hex>" line of /proc/<pid>/status text.
uint64_t StatusMask(const std::string& status, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, name) || !absl::ConsumePrefix(&line, ":")) continue;
    uint64_t mask = 0;
    EXPECT_TRUE(absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &mask)) << line;
    return mask;
  }
  ADD_FAILURE() << "no " << name << " in " << status;
  return ~0ull;
}

uint64_t SignalBit(int sig) { return 1ull << (sig - 1); }

TEST(Subprocess, ChildStartsWithDefaultSignalsAndAnEmptyMask) {
  // The tools ignore SIGPIPE process-wide and a caller may block signals in its thread; neither
  // may leak into a child: `cat`, `ip -j ... | head` and friends must die of SIGPIPE as usual.
  struct sigaction ignore = {}, old_pipe = {}, old_hup = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  ASSERT_EQ(sigaction(SIGHUP, &ignore, &old_hup), 0);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);

  auto exec = RunChild(ChildSpec{{}, ExecArgv({"cat", "/proc/self/status"}), {}});
  auto fn = RunChild(ChildSpec{{}, [] {
                                 return execlp("cat", "cat", "/proc/self/status", nullptr) == 0
                                            ? 0
                                            : kChildExecFailed;
                               },
                               {}});
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  for (auto* out : {&exec, &fn}) {
    ASSERT_TRUE(out->ok()) << out->status();
    ASSERT_EQ((*out)->exit_code, 0) << (*out)->err;
    EXPECT_EQ(StatusMask((*out)->out, "SigIgn") & SignalBit(SIGPIPE), 0u) << (*out)->out;
    EXPECT_EQ(StatusMask((*out)->out, "SigIgn") & SignalBit(SIGHUP), 0u) << (*out)->out;
    EXPECT_EQ(StatusMask((*out)->out, "SigBlk"), 0u) << (*out)->out;
  }
}

TEST(Subprocess, CallerSigpipeDispositionIsNeverChanged) {
  // SIGPIPE's disposition is process-wide: another thread must never see it switched to
  // SIG_IGN (and two concurrent calls must not restore each other's saved copy).
  ASSERT_EQ(signal(SIGPIPE, SIG_DFL), SIG_DFL);
  std::atomic<bool> done{false};
  std::atomic<int> seen_changed{0};
  std::thread watcher([&] {
    while (!done.load()) {
      struct sigaction cur = {};
      sigaction(SIGPIPE, nullptr, &cur);
      if (cur.sa_handler != SIG_DFL) seen_changed.fetch_add(1);
    }
  });
  auto run = [] {
    for (int i = 0; i < 20; ++i) {
      // A child that never reads its stdin: the write gets EPIPE, and must not kill us.
      auto out = RunChild(ChildSpec{{}, ExecArgv({"true"}), std::string(1 << 16, 'z')});
      EXPECT_OK(out);
    }
  };
  std::thread other(run);
  run();
  other.join();
  done = true;
  watcher.join();
  EXPECT_EQ(seen_changed.load(), 0);
  struct sigaction after = {};
  sigaction(SIGPIPE, nullptr, &after);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
  // No SIGPIPE of ours is left pending either (it would kill us once unblocked).
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
}

TEST(Subprocess, FailedWaitIsAnErrorNotExitZero) {
  // With SIGCHLD ignored the kernel reaps the child itself and waitpid(2) fails with ECHILD:
  // the caller must learn that no exit code was collected.
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &old), 0);
  auto out = RunChild(ChildSpec{{}, ExecArgv({"true"}), {}, "true"});
  sigaction(SIGCHLD, &old, nullptr);
  ASSERT_FALSE(out.ok()) << "exit " << out->exit_code;
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInternal));
  EXPECT_THAT(out.status().message(), HasSubstr("'true'"));
  EXPECT_THAT(out.status().message(), HasSubstr("pid"));
  EXPECT_THAT(out.status().message(), HasSubstr("errno 10"));  // ECHILD
}

TEST(Subprocess, TimeoutKillsAndReapsTheChild) {
  const auto begin = std::chrono::steady_clock::now();
  RunOptions options;
  options.timeout = absl::Milliseconds(200);
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sleep", "30"}), {}, "sleep"}, options);
  const auto took = std::chrono::steady_clock::now() - begin;
  ASSERT_THAT(out, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(out.status().message(), HasSubstr("'sleep'"));
  EXPECT_THAT(out.status().message(), HasSubstr("200ms"));
  EXPECT_GE(took, std::chrono::milliseconds(190));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(Subprocess, TimeoutCoversAChildThatClosedItsPipes) {
  // The child closes stdout/stderr and lives on: the wait for its exit is bounded too.
  const auto begin = std::chrono::steady_clock::now();
  RunOptions options;
  options.timeout = absl::Milliseconds(200);
  auto out = RunChild(
      ChildSpec{{}, ExecArgv({"sh", "-c", "exec >&- 2>&- <&-; exec sleep 30"}), {}, "sh"},
      options);
  const auto took = std::chrono::steady_clock::now() - begin;
  ASSERT_THAT(out, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("'sh'")));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(Subprocess, TimeoutNamesEveryChildStillRunningAndStartsNoMore) {
  std::vector<ChildSpec> specs;
  specs.push_back(ChildSpec{{}, ExecArgv({"true"}), {}, "quick"});
  specs.push_back(ChildSpec{{}, ExecArgv({"sleep", "30"}), {}, "slow"});
  specs.push_back(ChildSpec{{}, ExecArgv({"sleep", "30"}), {}});  // unnamed: "child 2"
  RunOptions options;
  options.timeout = absl::Milliseconds(200);
  options.max_running = 3;
  auto out = RunChildren(specs, options);
  ASSERT_THAT(out, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(out.status().message(), HasSubstr("'slow'"));
  EXPECT_THAT(out.status().message(), HasSubstr("child 2"));
  EXPECT_THAT(out.status().message(), ::testing::Not(HasSubstr("quick")));
}

TEST(Subprocess, ChildWithinItsTimeoutIsUnaffected) {
  RunOptions options;
  options.timeout = absl::Seconds(20);
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sh", "-c", "echo hi; exit 4"}), {}}, options);
  ASSERT_OK(out);
  EXPECT_EQ(out->exit_code, 4);
  EXPECT_EQ(out->out, "hi\n");
}

}  // namespace
}  // namespace sarena
