// base/subprocess: real child processes (sh, cat, function children), no privileges needed.
#include "libsarena/base/subprocess.h"

#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sarena {
namespace {

using ::testing::HasSubstr;

TEST(Subprocess, CapturesStdoutStderrAndExitCode) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sh", "-c", "echo out; echo err >&2; exit 3"}), {}});
  ASSERT_TRUE(out.ok()) << out.status();
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
  ASSERT_TRUE(out.ok()) << out.status();
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
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(out->out, "5");
}

TEST(Subprocess, ChildThatIgnoresStdinDoesNotKillTheCaller) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"true"}), std::string(1 << 20, 'y')});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 0);
}

TEST(Subprocess, ExecFailureIsExitCode127) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sarena-no-such-program"}), {}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, kChildExecFailed);
  EXPECT_THAT(out->err, HasSubstr("run 'sarena-no-such-program'"));
}

TEST(Subprocess, NetnsFailureIsExitCode125AndNamesThePath) {
  auto out = RunChild(ChildSpec{"/nonexistent/netns/sarena", ExecArgv({"true"}), {}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, kChildNetnsFailed);
  EXPECT_THAT(out->err, HasSubstr("enter network namespace '/nonexistent/netns/sarena'"));
}

TEST(Subprocess, KilledChildIs128PlusSignal) {
  auto out = RunChild(ChildSpec{{}, ExecArgv({"sh", "-c", "kill -TERM $$"}), {}});
  ASSERT_TRUE(out.ok()) << out.status();
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
  ASSERT_TRUE(out.ok()) << out.status();
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
  ASSERT_TRUE(out.ok()) << out.status();
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
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), specs.size());
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ((*out)[i].out, std::to_string(i) + "\n") << i;
    EXPECT_EQ((*out)[i].exit_code, i % 7) << i;
  }
}

}  // namespace
}  // namespace sarena
