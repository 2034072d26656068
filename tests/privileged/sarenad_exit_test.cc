// How the real sarenad reports a failure after its flags parsed and the node is being set up:
// once, at exit, in the shape -o asks for (docs/cli.md "Errors and exit status"). The daemon runs
// in a network namespace of its own (so its instance lock and anything it would set up stay
// there) with a --state-dir it cannot create (under a regular file in a temporary directory): its
// start logs stay on stderr, and the failure is the one {"code", "message"} object on stdout
// under -o json, or "sarenad: <message>" on stderr in text; exit status 1; no socket, no state,
// no bpffs directory made. (Flag errors: unit sarenad_flags_test.)
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/test_util.h"

namespace sarena {
namespace {

using ::sarena::testing::IsRoot;
using ::sarena::testing::ScopedNetns;
using ::sarena::testing::TempDir;
using ::sarena::testing::UniqueName;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

class SarenadExit : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(IsRoot()) << "needs root (a network namespace of its own)";
    ASSERT_FALSE(tmp_.path().empty());
    std::ofstream(tmp_.path() + "/file") << "not a directory\n";
    bpffs_ = absl::StrCat("/sys/fs/bpf/", UniqueName("sdx"));
  }

  // sarenad with `output_flags`, in netns_ (nsenter --net: the host's mount namespace, so a
  // bpffs directory it made would be seen here), its state directory under a regular file.
  testing::CommandResult Run(const std::string& output_flags) {
    return testing::Run(absl::StrCat("nsenter --net=", netns_.path(), " ", testing::BinaryDir(),
                                     "/tools/sarenad ", output_flags,
                                     " --pod-cidr 10.1.0.0/24 --node-ip 10.1.0.1 --state-dir ",
                                     state(), " --socket ", socket(), " --bpffs ", bpffs_));
  }
  std::string state() const { return tmp_.path() + "/file/state"; }
  std::string socket() const { return tmp_.path() + "/sarenad.sock"; }

  void ExpectNothingMade() {
    EXPECT_FALSE(Exists(socket()));
    EXPECT_FALSE(Exists(bpffs_)) << bpffs_;
  }

  TempDir tmp_{"sarenad-exit-"};
  ScopedNetns netns_{"sdx"};
  std::string bpffs_;
};

TEST_F(SarenadExit, StateDirFailureUnderJsonIsTheErrorObjectOnStdout) {
  for (const char* json : {"-o json", "--output=json"}) {
    SCOPED_TRACE(json);
    testing::CommandResult r = Run(json);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    rpc::v1::CliError e;
    const auto st = google::protobuf::util::JsonStringToMessage(r.out, &e);
    ASSERT_TRUE(st.ok()) << st.ToString() << " in stdout:\n" << r.out;
    EXPECT_EQ(e.code(), "FAILED_PRECONDITION");
    EXPECT_THAT(e.message(), HasSubstr(tmp_.path() + "/file"));
    EXPECT_THAT(e.message(), HasSubstr("not a directory"));
    // Logs stay logs (stderr); the failure is not repeated there.
    EXPECT_THAT(r.err, HasSubstr("sarenad starting"));
    EXPECT_THAT(r.err, Not(HasSubstr(e.message())));
    EXPECT_THAT(r.err, Not(HasSubstr("sarenad: ")));
    ExpectNothingMade();
  }
}

TEST_F(SarenadExit, StateDirFailureInTextIsTheLastLineOnStderr) {
  testing::CommandResult r = Run("");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("sarenad starting"));
  EXPECT_THAT(r.err, EndsWith(absl::StrCat("\nsarenad: create directory '", state(), "/ipam': '",
                                           tmp_.path(), "/file' is not a directory\n")));
  ExpectNothingMade();
}

}  // namespace
}  // namespace sarena
