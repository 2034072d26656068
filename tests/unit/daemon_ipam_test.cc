// Ipam: allocation order, reserved addresses, idempotency, exhaustion, persistence, concurrency,
// crash leftovers and corrupt-state reporting — on a real directory, no privileges needed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/daemon/ipam.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::daemon {
namespace {

namespace fs = std::filesystem;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

using ::sarena::testing::TempDir;

net::Ipv4 Ip(const char* s) { return boost::asio::ip::make_address_v4(s); }
net::Ipv4Prefix Cidr(const char* s) { return *net::ParseIpv4Prefix(s); }
EndpointKey Key(int i, std::string ifname = "eth0") {
  return EndpointKey{absl::StrCat("c", i), std::move(ifname)};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
}

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

class DaemonIpamTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Ipam>> Open(const char* cidr, const char* gw) {
    return Ipam::Open({.state_dir = dir_.path(), .pod_cidr = Cidr(cidr), .gateway = Ip(gw)});
  }
  std::string IpamDir() const { return dir_.path() + "/ipam"; }
  TempDir dir_{"sarena-ipam-"};
};

TEST_F(DaemonIpamTest, AllocatesLowestFreeSkippingNetworkAndGateway) {
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  EXPECT_EQ(ipam->capacity(), 253u);  // 256 - network - broadcast - gateway
  EXPECT_EQ(ipam->FreeCount(), 253u);
  EXPECT_EQ(*ipam->Allocate(Key(1)), Ip("10.244.1.2"));
  EXPECT_EQ(*ipam->Allocate(Key(2)), Ip("10.244.1.3"));
  EXPECT_EQ(*ipam->Allocate(Key(3)), Ip("10.244.1.4"));
  EXPECT_EQ(ipam->FreeCount(), 250u);
  EXPECT_EQ(ipam->InUse(), 3u);
}

TEST_F(DaemonIpamTest, GatewayInTheMiddleIsSkipped) {
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.0.0.0/29", "10.0.0.3"));
  std::vector<net::Ipv4> got;
  for (int i = 0; i < 3; ++i) got.push_back(*ipam->Allocate(Key(i)));
  EXPECT_EQ(got, (std::vector<net::Ipv4>{Ip("10.0.0.1"), Ip("10.0.0.2"), Ip("10.0.0.4")}));
}

TEST_F(DaemonIpamTest, NeverAllocatesNetworkBroadcastOrGatewayAndReportsExhaustion) {
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.0.0.8/29", "10.0.0.9"));
  ASSERT_EQ(ipam->capacity(), 5u);
  std::set<std::string> got;
  for (int i = 0; i < 5; ++i) {
    auto ip = ipam->Allocate(Key(i));
    ASSERT_OK(ip);
    got.insert(ip->to_string());
  }
  EXPECT_EQ(got, (std::set<std::string>{"10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.0.13",
                                        "10.0.0.14"}));
  EXPECT_EQ(ipam->FreeCount(), 0u);

  auto full = ipam->Allocate(Key(99));
  ASSERT_THAT(full, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(full.status().message(), "pod CIDR 10.0.0.8/29 exhausted (5 addresses in use)");
  // Exhaustion leaves nothing behind.
  EXPECT_EQ(FilesIn(IpamDir()).size(), 5u + 1u);  // + lock
  EXPECT_FALSE(ipam->Lookup(Key(99)).has_value());
}

TEST_F(DaemonIpamTest, SmallPrefixesFollowRfc3021) {
  auto p31 = Open("10.9.0.0/31", "10.9.1.1");  // gateway outside the CIDR
  ASSERT_OK(p31);
  EXPECT_EQ((*p31)->capacity(), 2u);
  EXPECT_EQ(*(*p31)->Allocate(Key(1)), Ip("10.9.0.0"));
  EXPECT_EQ(*(*p31)->Allocate(Key(2)), Ip("10.9.0.1"));
  p31->reset();
  TempDir other{"sarena-ipam-"};
  auto p32 = Ipam::Open(
      {.state_dir = other.path(), .pod_cidr = Cidr("10.9.0.7/32"), .gateway = Ip("10.9.0.7")});
  ASSERT_OK(p32);
  EXPECT_EQ((*p32)->capacity(), 0u);
  EXPECT_THAT((*p32)->Allocate(Key(1)), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(DaemonIpamTest, AllocateIsIdempotentPerContainerAndIfname) {
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  auto a = ipam->Allocate(Key(1, "eth0"));
  auto again = ipam->Allocate(Key(1, "eth0"));
  auto other_if = ipam->Allocate(Key(1, "net1"));
  ASSERT_TRUE(a.ok() && again.ok() && other_if.ok());
  EXPECT_EQ(*a, *again);
  EXPECT_NE(*a, *other_if);
  EXPECT_EQ(ipam->InUse(), 2u);
  EXPECT_EQ(ipam->Lookup(Key(1, "eth0")), *a);
  EXPECT_EQ(ReadFile(IpamDir() + "/" + a->to_string()), "c1\neth0");
}

TEST_F(DaemonIpamTest, ReleaseIsIdempotentAndTheFreedAddressIsReusedNext) {
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ipam->Allocate(Key(i)).ok());  // .2 .. .5
  auto released = ipam->Release(Key(1));
  ASSERT_OK(released);
  EXPECT_EQ(*released, Ip("10.244.1.3"));
  EXPECT_FALSE(fs::exists(IpamDir() + "/10.244.1.3"));
  auto twice = ipam->Release(Key(1));
  ASSERT_OK(twice);
  EXPECT_FALSE(twice->has_value());
  auto never = ipam->Release(Key(42));
  ASSERT_OK(never);
  EXPECT_FALSE(never->has_value());
  // Lowest-free: the released address is the next one handed out.
  EXPECT_EQ(*ipam->Allocate(Key(7)), Ip("10.244.1.3"));
  EXPECT_EQ(*ipam->Allocate(Key(8)), Ip("10.244.1.6"));
}

TEST_F(DaemonIpamTest, AllocationsSurviveReopen) {
  {
    auto ipam = Open("10.244.1.0/24", "10.244.1.1");
    ASSERT_OK(ipam);
    ASSERT_OK((*ipam)->Allocate(Key(1)));
    ASSERT_OK((*ipam)->Allocate(Key(2)));
    ASSERT_OK((*ipam)->Allocate(Key(3)));
    ASSERT_OK((*ipam)->Release(Key(2)));
  }
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  std::vector<IpamAllocation> list = ipam->List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].ip, Ip("10.244.1.2"));
  EXPECT_EQ(list[0].key, Key(1));
  EXPECT_EQ(list[1].ip, Ip("10.244.1.4"));
  EXPECT_EQ(list[1].key, Key(3));
  EXPECT_EQ(*ipam->Allocate(Key(3)), Ip("10.244.1.4"));  // still idempotent after restart
  EXPECT_EQ(*ipam->Allocate(Key(9)), Ip("10.244.1.3"));
}

TEST_F(DaemonIpamTest, SecondOpenOfTheSameStateDirIsRefused) {
  auto first = Open("10.244.1.0/24", "10.244.1.1");
  ASSERT_OK(first);
  auto second = Open("10.244.1.0/24", "10.244.1.1");
  ASSERT_THAT(second,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("in use by another process")));
  first->reset();
  EXPECT_OK(Open("10.244.1.0/24", "10.244.1.1"));
}

TEST_F(DaemonIpamTest, ConcurrentAllocationFromThreadsNeverDuplicates) {
  auto opened = Open("10.244.0.0/22", "10.244.0.1");
  ASSERT_OK(opened);
  Ipam* ipam = opened->get();
  constexpr int kThreads = 16;
  constexpr int kPerThread = 20;
  std::vector<std::vector<net::Ipv4>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto ip = ipam->Allocate(Key(t * 1000 + i));
        if (ip.ok()) got[t].push_back(*ip);
        if (i % 5 == 4) (void)ipam->Release(Key(t * 1000 + i - 1));  // churn
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint32_t> distinct;
  size_t total = 0;
  for (const auto& v : got) {
    total += v.size();
    for (const auto& ip : v) EXPECT_TRUE(net::Contains(Cidr("10.244.0.0/22"), ip));
  }
  EXPECT_EQ(total, size_t{kThreads * kPerThread});
  // What is allocated now is distinct and exactly what is on disk.
  for (const IpamAllocation& a : ipam->List()) {
    EXPECT_TRUE(distinct.insert(a.ip.to_uint()).second) << a.ip.to_string();
    EXPECT_NE(a.ip, Ip("10.244.0.1"));
  }
  EXPECT_EQ(distinct.size(), size_t{kThreads * (kPerThread - kPerThread / 5)});
  EXPECT_EQ(FilesIn(IpamDir()).size(), distinct.size() + 1);  // + lock
  opened->reset();
  ASSERT_OK_AND_ASSIGN(auto reopened, Open("10.244.0.0/22", "10.244.0.1"));
  EXPECT_EQ(reopened->InUse(), distinct.size());
}

TEST_F(DaemonIpamTest, LeftoverTemporaryFromACrashIsRemovedNotLoaded) {
  ASSERT_TRUE(fs::create_directories(IpamDir()));
  WriteFile(IpamDir() + "/.tmp-10.244.1.2.4242.0", "half-writ");
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  EXPECT_EQ(ipam->InUse(), 0u);
  EXPECT_EQ(FilesIn(IpamDir()), (std::set<std::string>{"lock"}));
  EXPECT_EQ(*ipam->Allocate(Key(1)), Ip("10.244.1.2"));
  EXPECT_EQ(FilesIn(IpamDir()), (std::set<std::string>{"lock", "10.244.1.2"}));
}

TEST_F(DaemonIpamTest, HostLocalCrLfContentIsAccepted) {
  ASSERT_TRUE(fs::create_directories(IpamDir()));
  WriteFile(IpamDir() + "/10.244.1.7", "abc123\r\neth0");
  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  EXPECT_EQ(ipam->Lookup(EndpointKey{"abc123", "eth0"}), Ip("10.244.1.7"));
}

struct CorruptCase {
  const char* name;
  const char* file;
  const char* content;
  const char* expect;  // substring of the error
};
void PrintTo(const CorruptCase& c, std::ostream* os) { *os << c.name; }


class DaemonIpamCorruptTest : public DaemonIpamTest,
                              public ::testing::WithParamInterface<CorruptCase> {};

TEST_P(DaemonIpamCorruptTest, IsReportedWithFileAndContentAndLeftUntouched) {
  const CorruptCase& c = GetParam();
  ASSERT_TRUE(fs::create_directories(IpamDir()));
  WriteFile(IpamDir() + "/10.244.1.20", "good\neth0");  // a healthy neighbour
  const std::string path = IpamDir() + "/" + c.file;
  WriteFile(path, c.content);
  auto ipam = Open("10.244.1.0/24", "10.244.1.1");
  ASSERT_THAT(ipam, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(ipam.status().message(), HasSubstr(path));
  EXPECT_THAT(ipam.status().message(), HasSubstr(c.expect));
  EXPECT_THAT(ipam.status().message(), HasSubstr("1 corrupt allocation file"));
  // Never deleted or reset.
  EXPECT_EQ(ReadFile(path), c.content);
  EXPECT_EQ(ReadFile(IpamDir() + "/10.244.1.20"), "good\neth0");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DaemonIpamCorruptTest,
    ::testing::Values(
        CorruptCase{"Garbage", "10.244.1.5", "\x01\x02garbage", "\"\\001\\002garbage\""},
        CorruptCase{"Empty", "10.244.1.5", "", "has content \"\""},
        CorruptCase{"OneLine", "10.244.1.5", "abc", "expected two lines"},
        CorruptCase{"BadContainerId", "10.244.1.5", "../etc\neth0", "invalid container_id"},
        CorruptCase{"BadIfname", "10.244.1.5", "abc\neth0:1", "invalid ifname"},
        CorruptCase{"OutsideCidr", "10.9.9.9", "abc\neth0", "outside pod CIDR 10.244.1.0/24"},
        CorruptCase{"Gateway", "10.244.1.1", "abc\neth0", "is the gateway"},
        CorruptCase{"Network", "10.244.1.0", "abc\neth0", "is the network address"},
        CorruptCase{"Broadcast", "10.244.1.255", "abc\neth0", "is the broadcast address"},
        CorruptCase{"NotAnIp", "last_reserved_ip.0", "10.244.1.4", "not an IPv4 address"},
        CorruptCase{"DuplicateKey", "10.244.1.21", "good\neth0", "both belong to good/eth0"}),
    [](const ::testing::TestParamInfo<CorruptCase>& info) { return info.param.name; });

TEST_F(DaemonIpamTest, ManyCorruptFilesAreAllNamed) {
  ASSERT_TRUE(fs::create_directories(IpamDir()));
  WriteFile(IpamDir() + "/10.244.1.5", "x");
  WriteFile(IpamDir() + "/10.244.1.6", "y");
  auto ipam = Open("10.244.1.0/24", "10.244.1.1");
  ASSERT_FALSE(ipam.ok());
  EXPECT_THAT(ipam.status().message(), HasSubstr("2 corrupt allocation file(s)"));
  EXPECT_THAT(ipam.status().message(), HasSubstr("10.244.1.5"));
  EXPECT_THAT(ipam.status().message(), HasSubstr("10.244.1.6"));
}

TEST_F(DaemonIpamTest, RejectsBadInput) {
  auto bits = Open("10.244.1.5/24", "10.244.1.1");
  ASSERT_THAT(bits, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(bits.status().message(), HasSubstr("host bits set (the network is 10.244.1.0/24)"));

  ASSERT_OK_AND_ASSIGN(auto ipam, Open("10.244.1.0/24", "10.244.1.1"));
  for (const EndpointKey& bad :
       {EndpointKey{"../x", "eth0"}, EndpointKey{"", "eth0"}, EndpointKey{"abc", ""},
        EndpointKey{"abc", "a/b"}, EndpointKey{"abc", ".."}, EndpointKey{"abc", "0123456789abcdef"},
        EndpointKey{"abc", "eth 0"}}) {
    auto r = ipam->Allocate(bad);
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument)) << bad.ToString();
  }
  EXPECT_EQ(FilesIn(IpamDir()), (std::set<std::string>{"lock"}));
}

}  // namespace
}  // namespace sarena::daemon
