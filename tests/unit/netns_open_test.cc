// nl::Netns::Open must refuse anything that is not a namespace file at once, never block on it
// (issue 10 defect 5: a FIFO as CNI_NETNS hung the whole daemon). No privileges needed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/netlink/netns.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::nl {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

// Netns::Open on another thread, so that a regression (a blocking open) fails the test after
// `timeout` instead of hanging it. The stuck thread is detached and dies with the process.
absl::Status OpenWithTimeout(const std::string& path, absl::Duration timeout = absl::Seconds(5)) {
  auto task = std::make_shared<std::packaged_task<absl::Status()>>(
      [path] { return Netns::Open(path).status(); });
  std::future<absl::Status> result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(absl::ToChronoMilliseconds(timeout)) != std::future_status::ready) {
    return absl::DeadlineExceededError("Netns::Open('" + path + "') blocked");
  }
  return result.get();
}

class NetnsOpenTest : public ::testing::Test {
 protected:
  sarena::testing::TempDir dir_{"sarena-netns-"};
};

TEST_F(NetnsOpenTest, FifoIsRefusedAtOnceNamingThePath) {
  const std::string fifo = dir_.Path("netns-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  absl::Status st = OpenWithTimeout(fifo);
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(st.message(), HasSubstr("'" + fifo + "'"));
  EXPECT_THAT(st.message(), HasSubstr("not a network namespace (fifo)"));
}

TEST_F(NetnsOpenTest, RegularFileAndDirectoryAreRefused) {
  const std::string file = dir_.Path("plain");
  { std::FILE* f = std::fopen(file.c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  absl::Status st = OpenWithTimeout(file);
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(regular file)")));
  st = OpenWithTimeout(dir_.path());
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(directory)")));
}

TEST_F(NetnsOpenTest, OtherNamespaceTypeIsRefusedAndMissingIsNotFound) {
  absl::Status st = OpenWithTimeout("/proc/self/ns/uts");
  EXPECT_THAT(st,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a network namespace")));
  st = OpenWithTimeout(dir_.Path("missing"));
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(NetnsOpenTest, RealNetworkNamespaceOpensAndIsUsable) {
  absl::StatusOr<Netns> ns = Netns::Open("/proc/self/ns/net");
  ASSERT_OK(ns);
  absl::StatusOr<Netns> cur = Netns::Current();
  ASSERT_OK(cur);
  EXPECT_EQ(*ns, *cur);
  EXPECT_OK(RunIn(*ns, [] { return absl::OkStatus(); }));
}

}  // namespace
}  // namespace sarena::nl
