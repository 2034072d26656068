// sarena-diag as two executables (docs/diagnoser.md "Two executables"): sarena-diag runs the
// offline commands and links no libbpf/libmnl; collect, drops and trace --live run in
// sarena-diag-live, which sarena-diag execs with the same arguments: found next to it (the build
// tree) or in ../libexec/sarena/ from it (installed); missing, a clear error (exit 1, one JSON
// object with -o json). Runs the real binaries of the build tree, and copies of sarena-diag in
// scratch directories (with a stand-in helper that prints its arguments, or with none).
#include <sys/stat.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "libsarena/rpc/cli_output.h"
#include "tests/lib/test_util.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using sarena::testing::CommandResult;
using sarena::testing::TempDir;

// A shell command's exit status and output (not `Run`: inside a TEST that is gtest's).
CommandResult Sh(const std::string& cmd) { return sarena::testing::Run(cmd); }

std::string Helper() { return absl::StrCat(sarena::testing::BinaryDir(), "/tools/sarena-diag-live"); }

CommandResult Diag(absl::string_view args) {
  return Sh(absl::StrCat(testing::DiagBinary(), " ", args));
}

// Copies the built sarena-diag to `dir`/sarena-diag; its path.
std::string CopyDiag(const std::string& dir) {
  const std::string to = absl::StrCat(dir, "/sarena-diag");
  Sh(absl::StrCat("mkdir -p '", dir, "' && cp '", testing::DiagBinary(), "' '", to, "'"));
  return to;
}

// A stand-in sarena-diag-live at `rel` in `dir` that prints "helper" and each argument on a line
// and exits 7.
void FakeHelper(const TempDir& dir, absl::string_view rel) {
  std::string path = dir.Write(rel, "#!/bin/sh\necho helper\nprintf '%s\\n' \"$@\"\nexit 7\n");
  chmod(path.c_str(), 0755);
}

std::string Needed(const std::string& exe) {
  return Sh(absl::StrCat("readelf -d '", exe, "' | grep NEEDED")).out;
}

// The point of the split: the offline executable maps neither libbpf nor libmnl; the helper
// does (so the check looks at the right thing).
TEST(DiagLiveHelper, OfflineExecutableNeedsNoLibbpfOrLibmnl) {
  const std::string diag = Needed(testing::DiagBinary());
  ASSERT_NE(diag.find("libc.so"), std::string::npos) << "readelf -d printed no NEEDED: " << diag;
  EXPECT_EQ(diag.find("libbpf"), std::string::npos) << diag;
  EXPECT_EQ(diag.find("libmnl"), std::string::npos) << diag;
  EXPECT_NE(Needed(Helper()).find("libbpf"), std::string::npos) << Needed(Helper());
}

// Each kernel command reaches the helper with its arguments unchanged (the flags before the
// command word included), and its exit status is the helper's; offline commands never do.
TEST(DiagLiveHelper, KernelCommandsExecTheHelperWithTheSameArguments) {
  TempDir dir{"sarena-diag-helper-"};
  const std::string diag = CopyDiag(dir.path());
  FakeHelper(dir, "sarena-diag-live");
  for (const char* args :
       {"collect --help", "collect --out /nonexistent/x", "drops --explained-by rp_filter_drop",
        "-o json drops --duration 1", "trace --live --src 10.0.0.1 --dst 10.0.0.2:80/tcp",
        "--live trace --src 10.0.0.1 --dst 10.0.0.2:80/udp", "collect --bogus"}) {
    CommandResult r = Sh(absl::StrCat(diag, " ", args));
    std::string want = "helper\n";
    for (absl::string_view a : absl::StrSplit(args, ' ')) absl::StrAppend(&want, a, "\n");
    EXPECT_EQ(r.exit_code, 7) << args << ": " << r.err;
    EXPECT_EQ(r.out, want) << args;
  }
  for (const char* args : {"codes", "--help", "trace --help", "trace --count 2",
                           "trace --live --bogus"}) {
    CommandResult r = Sh(absl::StrCat(diag, " ", args));
    EXPECT_FALSE(absl::StartsWith(r.out, "helper")) << args << ": " << r.out;
    EXPECT_NE(r.exit_code, 7) << args;
  }
}

// Installed: bin/sarena-diag finds libexec/sarena/sarena-diag-live (a DESTDIR or another prefix
// alike: the path is relative to the executable).
TEST(DiagLiveHelper, InstalledLayoutFindsLibexec) {
  TempDir dir{"sarena-diag-helper-"};
  const std::string diag = CopyDiag(dir.Path("usr/bin"));
  FakeHelper(dir, "usr/libexec/sarena/sarena-diag-live");
  CommandResult r = Sh(absl::StrCat(diag, " drops --duration 2s"));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(r.out, "helper\ndrops\n--duration\n2s\n");
}

// No helper anywhere: the kernel commands fail naming what is missing and where it was looked
// for (exit 1, the environment's failure; -o json: one NOT_FOUND object on stdout), and the
// offline commands still work.
TEST(DiagLiveHelper, MissingHelperIsAClearError) {
  TempDir dir{"sarena-diag-helper-"};
  const std::string bin = dir.Path("bin");
  const std::string diag = CopyDiag(bin);
  for (const char* args : {"collect --out /tmp/x", "drops", "trace --live --src 10.0.0.1 "
                                                             "--dst 10.0.0.2:80/tcp"}) {
    CommandResult r = Sh(absl::StrCat(diag, " ", args));
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_TRUE(r.out.empty()) << r.out;
    for (const std::string& m :
         {std::string("sarena-diag: "), std::string("sarena-diag-live, which is missing"),
          absl::StrCat(bin, "/sarena-diag-live"),
          dir.Path("libexec/sarena/sarena-diag-live")}) {
      EXPECT_NE(r.err.find(m), std::string::npos) << args << ": stderr should name " << m << ": "
                                                  << r.err;
    }
  }
  CommandResult json = Sh(absl::StrCat(diag, " -o json collect --out /tmp/x"));
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_TRUE(json.err.empty()) << json.err;
  EXPECT_TRUE(absl::StartsWith(json.out, "{\n \"code\": \"NOT_FOUND\",\n \"message\": \"collect, "))
      << json.out;

  CommandResult codes = Sh(absl::StrCat(diag, " codes"));
  EXPECT_EQ(codes.exit_code, 0) << codes.err;
  EXPECT_NE(codes.out.find("rp_filter_drop"), std::string::npos);
  CommandResult trace =
      Sh(absl::StrCat(diag, " trace --snapshot '", testing::CaseDir("RPF-05"),
                       "' --src node:node-a --dst 10.32.2.7:8080/tcp"));
  EXPECT_EQ(trace.exit_code, 0) << trace.err;
  EXPECT_NE(trace.out.find("verdict: unreachable"), std::string::npos) << trace.out;
}

// Through the real helper the kernel commands read as before: the same --help, the same
// results and usage errors as running sarena-diag-live directly.
TEST(DiagLiveHelper, RealHelperAnswersAsSarenaDiag) {
  const CommandResult help = Diag("--help");
  ASSERT_EQ(help.exit_code, 0);
  for (const char* args : {"collect --help", "drops --help", "--version",
                           "drops --explained-by rp_filter_drop",
                           "drops -o json --explained-by rp_filter_drop", "drops --bogus 1",
                           "collect -o json", "trace --live --dst 10.0.0.1:80/tcp"}) {
    const CommandResult via = Diag(args);
    const CommandResult direct = Sh(absl::StrCat(Helper(), " ", args));
    EXPECT_EQ(via.exit_code, direct.exit_code) << args;
    EXPECT_EQ(via.out, direct.out) << args;
    EXPECT_EQ(via.err, direct.err) << args;
  }
  EXPECT_EQ(Diag("collect --help").out, help.out);
  const CommandResult missing = Diag("trace --live --dst 10.0.0.1:80/tcp");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(absl::StartsWith(missing.err, "sarena-diag: trace --live: --src is required\nusage:"))
      << missing.err;
}

// sarena-diag-live run directly with an offline command says whose it is (exit 2).
TEST(DiagLiveHelper, HelperRefusesOfflineCommands) {
  for (const char* cmd : {"codes", "trace --snapshot /x --src node:a --dst 10.0.0.1:80/tcp"}) {
    const CommandResult r = Sh(absl::StrCat(Helper(), " ", cmd));
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("not a command of sarena-diag-live"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace sarena::diag
