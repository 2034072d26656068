// sarenad's command line as an operator meets it: every bad flag or flag value is refused with
// exit status 2 and a message naming the flag and the value, before anything on the node is
// touched (no state directory, no socket, no bpffs directory); the failure that ends sarenad is
// reported once, as sarena's and sarena-diag's: "sarenad: <message>" on stderr, or with -o json
// (--output json) the one {"code", "message"} object (rpc::ReportCliError) on stdout and not on
// stderr. (A failure once sarenad runs, at its state directory in a network namespace of its
// own: privileged sarenad_exit_test.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/test_util.h"

namespace sarena {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Sarenad() { return absl::StrCat(sarena::testing::BinaryDir(), "/tools/sarenad"); }

// `out` as the one JSON error object (sarena.rpc.v1.CliError: unknown fields and anything after
// the object are parse errors).
rpc::v1::CliError ParseCliError(const std::string& out) {
  rpc::v1::CliError e;
  const auto st = google::protobuf::util::JsonStringToMessage(out, &e);
  EXPECT_TRUE(st.ok()) << st.ToString() << " in stdout:\n" << out;
  return e;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(SarenadFlags, BadValuesExitTwoNamingTheFlagAndTouchNothing) {
  const std::string bin = Sarenad();
  const std::string tag = testing::UniqueName("sdf");
  const std::string state = absl::StrCat("/tmp/", tag, "-state");
  const std::string sock = absl::StrCat("/tmp/", tag, ".sock");
  const std::string bpffs = absl::StrCat("/sys/fs/bpf/", tag);
  const std::string common =
      absl::StrCat(" --state-dir ", state, " --socket ", sock, " --bpffs ", bpffs);
  struct Case {
    std::string flags;
    std::string want;
  };
  const Case cases[] = {
      {"--node-ip 10.1.0.1", "--pod-cidr and --node-ip are required"},
      {"--pod-cidr 10.1.0.0/24", "--pod-cidr and --node-ip are required"},
      {"--pod-cidr 10.1.0.0/33 --node-ip 10.1.0.1", "10.1.0.0/33"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.300", "10.1.0.300"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.0", "invalid --node-ip '10.1.0.0'"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.255", "invalid --node-ip '10.1.0.255'"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.1 --attach-mode xdp", "--attach-mode 'xdp'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    testing::CommandResult r = testing::Run(absl::StrCat(bin, " ", c.flags, common));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.want));
    EXPECT_EQ(r.out, "");
    // The same refusal under -o json: the error object on stdout, and not on stderr (where a
    // value the daemon checks once it runs, --node-ip at the edge of --pod-cidr, follows the
    // "sarenad starting" log line: logs stay logs).
    testing::CommandResult j = testing::Run(absl::StrCat(bin, " -o json ", c.flags, common));
    EXPECT_EQ(j.exit_code, 2) << j.out;
    EXPECT_THAT(j.err, Not(HasSubstr(c.want)));
    EXPECT_THAT(j.err, Not(HasSubstr("sarenad: ")));
    const rpc::v1::CliError e = ParseCliError(j.out);
    EXPECT_EQ(e.code(), "INVALID_ARGUMENT");
    EXPECT_THAT(e.message(), HasSubstr(c.want));
    EXPECT_FALSE(Exists(state)) << "state directory created for a refused start";
    EXPECT_FALSE(Exists(sock));
    EXPECT_FALSE(Exists(bpffs));
  }
}

// A flag value its type does not parse, an unknown flag: stopped by the flag parse, so -o json is
// read from the raw arguments (wherever it stands, in each spelling) and the flag error is the
// JSON error object too, naming the flag as typed and the value.
TEST(SarenadFlags, FlagErrorsUnderJsonAreTheErrorObjectOnStdout) {
  for (const char* json : {"-o json", "-ojson", "-o=json", "--output=json", "--output json",
                           "-o text --output json"}) {
    for (const bool json_first : {true, false}) {
      const std::string args = json_first ? absl::StrCat(json, " --node-mask-len=x")
                                          : absl::StrCat("--node-mask-len=x ", json);
      SCOPED_TRACE(args);
      testing::CommandResult r = testing::Run(absl::StrCat(Sarenad(), " ", args));
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.err, "");
      const rpc::v1::CliError e = ParseCliError(r.out);
      EXPECT_EQ(e.code(), "INVALID_ARGUMENT");
      EXPECT_EQ(e.message(), "invalid value 'x' for --node-mask-len (uint32) (see --help)");
    }
  }
  testing::CommandResult u = testing::Run(absl::StrCat(Sarenad(), " --pod-cidrr=1 -o json"));
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_EQ(u.err, "");
  EXPECT_EQ(ParseCliError(u.out).message(), "unknown flag --pod-cidrr (see --help)");
  testing::CommandResult p = testing::Run(absl::StrCat(Sarenad(), " --output=json extra"));
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_EQ(p.err, "");
  EXPECT_THAT(ParseCliError(p.out).message(), HasSubstr("unexpected argument 'extra'"));
}

// Without -o json (or with -o text, or when a later --output says text) the same error is one
// line "sarenad: <message>" on stderr and stdout stays empty; -o takes text or json only.
TEST(SarenadFlags, FlagErrorsInTextAreOneLineOnStderr) {
  for (const char* text : {"", "-o text", "--output=text", "-o json --output text"}) {
    SCOPED_TRACE(text);
    testing::CommandResult r =
        testing::Run(absl::StrCat(Sarenad(), " ", text, " --node-mask-len=x"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "sarenad: invalid value 'x' for --node-mask-len (uint32) (see --help)\n");
  }
  for (const char* bad : {"-o yaml", "--output=table"}) {
    SCOPED_TRACE(bad);
    testing::CommandResult r = testing::Run(absl::StrCat(Sarenad(), " ", bad));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(
        r.err, HasSubstr(std::string(bad) == "-o yaml" ? "invalid -o 'yaml': expected text or json"
                                                       : "invalid --output 'table': expected text or json"));
  }
}

// A failure after the flags parsed that is no bad flag: --metrics-address on a port another
// socket listens on (checked before the node is touched), exit 1. Under -o json it is the error
// object on stdout, not a log line; in text "sarenad: <message>" on stderr.
TEST(SarenadFlags, RuntimeFailureIsReportedInTheAskedShape) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string taken = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  testing::TempDir tmp("sarenad-flags-");
  ASSERT_FALSE(tmp.path().empty());
  const std::string flags = absl::StrCat(
      " --pod-cidr 10.1.0.0/24 --node-ip 10.1.0.1 --metrics-address ", taken, " --state-dir ",
      tmp.path(), "/state --socket ", tmp.path(), "/s.sock --bpffs ", tmp.path(), "/bpffs");

  testing::CommandResult j = testing::Run(absl::StrCat(Sarenad(), " -o json", flags));
  EXPECT_EQ(j.exit_code, 1) << j.out << j.err;
  const rpc::v1::CliError e = ParseCliError(j.out);
  EXPECT_NE(e.code(), "INVALID_ARGUMENT");
  EXPECT_NE(e.code(), "OK");
  EXPECT_THAT(e.message(), HasSubstr(absl::StrCat("--metrics-address ", taken)));
  EXPECT_THAT(j.err, Not(HasSubstr(taken))) << "the failure is reported once, on stdout";

  testing::CommandResult t = testing::Run(absl::StrCat(Sarenad(), flags));
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_EQ(t.out, "");
  EXPECT_EQ(t.err, absl::StrCat("sarenad: ", e.message(), "\n"));
  ::close(fd);
  for (const char* made : {"/state", "/s.sock", "/bpffs"}) {
    EXPECT_FALSE(Exists(tmp.path() + made)) << made;
  }
}

}  // namespace
}  // namespace sarena
