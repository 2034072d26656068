// EndpointManager against a fake datapath (tests/lib/fake_endpoint_datapath.h): the bookkeeping
// of the endpoint life cycle without a kernel — ADD rollback, idempotent DEL, DEL ownership, GC
// per network (libcni's null list), restart reconcile and the start-up cross-check. The same
// verbs run against the kernel in tests/privileged/node_e2e_test.sh and cni_conformance_test.sh.
#include "libsarena/daemon/endpoint_manager.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/fake_endpoint_datapath.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::daemon {
namespace {

namespace fs = std::filesystem;
using ::sarena::testing::FakeEndpointDatapath;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

class EndpointManagerTest : public ::testing::Test {
 protected:
  EndpointManagerTest() {
    options_.pod_cidr = *net::ParseIpv4Prefix("10.250.0.0/24");
    options_.node_ip = boost::asio::ip::make_address_v4("10.250.0.1");
    options_.state_dir = dir_.Path("state");
  }
  ~EndpointManagerTest() override { manager_.reset(); }
  absl::Status Start() {
    manager_.reset();
    auto m = EndpointManager::CreateWith(
        options_, [this]() -> absl::StatusOr<std::unique_ptr<datapath::EndpointDatapath>> {
          return std::make_unique<FakeEndpointDatapath>(&world_);
        });
    if (!m.ok()) return m.status();
    manager_ = std::move(*m);
    return absl::OkStatus();
  }
  v1::Response Add(const std::string& id, const std::string& network = "net-a") {
    v1::Request r;
    auto* a = r.mutable_endpoint_add();
    a->mutable_ref()->set_container_id(id);
    a->mutable_ref()->set_ifname("eth0");
    a->set_netns("/var/run/netns/" + id);
    a->set_network_name(network);
    return manager_->Handle(r, {});
  }
  v1::Response Del(const std::string& id, const std::string& ifname = "eth0") {
    v1::Request r;
    r.mutable_endpoint_del()->mutable_ref()->set_container_id(id);
    r.mutable_endpoint_del()->mutable_ref()->set_ifname(ifname);
    return manager_->Handle(r, {});
  }
  v1::Response Gc(const std::string& network, const std::vector<std::string>& valid) {
    v1::Request r;
    r.mutable_gc()->set_network_name(network);
    for (const std::string& id : valid) {
      auto* ref = r.mutable_gc()->add_valid();
      ref->set_container_id(id);
      ref->set_ifname("eth0");
    }
    return manager_->Handle(r, {});
  }
  std::vector<std::string> Listed() {
    v1::Request r;
    r.mutable_endpoint_list();
    std::vector<std::string> out;
    const v1::Response resp = manager_->Handle(r, {});
    for (const auto& e : resp.endpoint_list().endpoints()) {
      out.push_back(e.ref().container_id());
    }
    return out;
  }
  bool IpamFile(const std::string& ip) { return fs::exists(options_.state_dir + "/ipam/" + ip); }
  uint32_t IpsUsed() {
    v1::Request r;
    r.mutable_status();
    return manager_->Handle(r, {}).status().ips_used();
  }
  std::vector<std::string> Files(const std::string& sub) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(options_.state_dir + "/" + sub)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  sarena::testing::TempDir dir_{"sarena-em-"};
  DaemonOptions options_;
  FakeEndpointDatapath::World world_;
  std::unique_ptr<EndpointManager> manager_;
};

TEST_F(EndpointManagerTest, AddRecordsNetworkAndDatapathFailureLeavesNothing) {
  ASSERT_OK(Start());
  v1::Response ok = Add("a");
  ASSERT_FALSE(ok.has_error()) << ok.error().message();
  EXPECT_EQ(ok.endpoint_add().endpoint().ip(), "10.250.0.2");
  EXPECT_EQ(ok.endpoint_add().endpoint().network_name(), "net-a");

  world_.fail_create = absl::UnavailableError("netlink says no");
  v1::Response bad = Add("b");
  ASSERT_TRUE(bad.has_error());
  EXPECT_THAT(bad.error().message(), HasSubstr("netlink says no"));
  EXPECT_EQ(IpsUsed(), 1u);  // the reservation was rolled back
  EXPECT_EQ(Listed(), std::vector<std::string>{"a"});
  v1::Response again = Add("b");  // and the next ADD gets that address
  ASSERT_FALSE(again.has_error()) << again.error().message();
  EXPECT_EQ(again.endpoint_add().endpoint().ip(), "10.250.0.3");
}

TEST_F(EndpointManagerTest, DelIsIdempotentAndARecordlessDelSparesAnotherOwnersVeth) {
  ASSERT_OK(Start());
  ASSERT_FALSE(Add("a").has_error());
  v1::Response d1 = Del("a");
  ASSERT_FALSE(d1.has_error());
  EXPECT_TRUE(d1.endpoint_del().existed());
  v1::Response d2 = Del("a");  // kubelet retries DEL
  ASSERT_FALSE(d2.has_error());
  EXPECT_FALSE(d2.endpoint_del().existed());
  EXPECT_TRUE(world_.veths.empty());
  EXPECT_EQ(IpsUsed(), 0u);
  EXPECT_EQ(Files("endpoints"), std::vector<std::string>{"lock"});

  // A veth carrying the derived name of ghost/eth0 but marked for someone else.
  world_.veths[datapath::HostVethName("ghost", "eth0")] = {"sarena:someone/eth0", ""};
  ASSERT_FALSE(Del("ghost").has_error());
  EXPECT_EQ(world_.veths.count(datapath::HostVethName("ghost", "eth0")), 1u);
}

TEST_F(EndpointManagerTest, GcTouchesOnlyItsNetworkAndAnEmptyListRemovesAllOfIt) {
  ASSERT_OK(Start());
  ASSERT_FALSE(Add("a1", "net-a").has_error());
  ASSERT_FALSE(Add("a2", "net-a").has_error());
  ASSERT_FALSE(Add("b1", "net-b").has_error());
  v1::Response r = Gc("net-a", {"a1"});
  ASSERT_FALSE(r.has_error()) << r.error().message();
  ASSERT_EQ(r.gc().removed_size(), 1);
  EXPECT_EQ(r.gc().removed(0).container_id(), "a2");
  EXPECT_EQ(Listed(), (std::vector<std::string>{"a1", "b1"}));
  r = Gc("net-b", {});  // libcni's null: none valid
  ASSERT_FALSE(r.has_error()) << r.error().message();
  EXPECT_EQ(Listed(), std::vector<std::string>{"a1"});
  r = Gc("", {});
  ASSERT_TRUE(r.has_error());
  EXPECT_THAT(r.error().message(), HasSubstr("network name"));
  EXPECT_EQ(Listed(), std::vector<std::string>{"a1"});
}

TEST_F(EndpointManagerTest, RestartRestoresLiveEndpointsKeepsVanishedOnesAndPrunesOrphans) {
  ASSERT_OK(Start());
  ASSERT_FALSE(Add("a").has_error());
  ASSERT_FALSE(Add("b").has_error());
  const std::string veth_b = datapath::HostVethName("b", "eth0");
  world_.veths.erase(veth_b);  // pod b's netns was deleted without DEL
  world_.entries[boost::asio::ip::make_address_v4("10.250.0.99")] = "lxcdead";  // crash leftover
  world_.pins.insert("lxcdead");
  ASSERT_OK(Start());
  EXPECT_EQ(world_.restores, 2);
  EXPECT_EQ(world_.entries.size(), 1u);  // a's entry; b's and the orphan pruned
  EXPECT_EQ(world_.pins, std::set<std::string>{datapath::HostVethName("a", "eth0")});
  EXPECT_EQ(IpsUsed(), 2u);  // b's IP stays allocated (by its record) until its DEL or GC
  EXPECT_EQ(Listed(), (std::vector<std::string>{"a", "b"}));
  ASSERT_FALSE(Del("b").has_error());
  EXPECT_EQ(IpsUsed(), 1u);
}

// Issue 9 item 3: one durable write per ADD. The endpoint record carries the address; no
// allocation file is written, and a restart (a crash right after the reply looks the same on
// disk: nothing is written at shutdown) gives the address back to its pod, never to a new one.
TEST_F(EndpointManagerTest, AddWritesOnlyTheRecordAndARestartKeepsItsAddress) {
  ASSERT_OK(Start());
  v1::Response a = Add("a");
  ASSERT_FALSE(a.has_error()) << a.error().message();
  EXPECT_EQ(Files("ipam"), std::vector<std::string>{"lock"});
  EXPECT_EQ(Files("endpoints"), (std::vector<std::string>{"a:eth0.json", "lock"}));
  ASSERT_OK(Start());
  EXPECT_EQ(IpsUsed(), 1u);
  v1::Response b = Add("b");
  ASSERT_FALSE(b.has_error()) << b.error().message();
  EXPECT_EQ(b.endpoint_add().endpoint().ip(), "10.250.0.3");
  v1::Response again = Add("a");  // the runtime's retried ADD gets the same attachment
  ASSERT_FALSE(again.has_error()) << again.error().message();
  EXPECT_EQ(again.endpoint_add().endpoint().ip(), "10.250.0.2");
}

// The record is written while the attach runs; a datapath failure after it (the attach, the
// host side's route) must unwrite it, or a restart would resurrect a pod that never got a reply.
TEST_F(EndpointManagerTest, DatapathFailureAfterTheRecordRemovesTheRecord) {
  ASSERT_OK(Start());
  world_.fail_after_commit = absl::PermissionDeniedError("attach refused");
  v1::Response bad = Add("a");
  ASSERT_TRUE(bad.has_error());
  EXPECT_THAT(bad.error().message(), HasSubstr("attach refused"));
  EXPECT_EQ(Files("endpoints"), std::vector<std::string>{"lock"});
  EXPECT_EQ(IpsUsed(), 0u);
  EXPECT_TRUE(world_.veths.empty());
  ASSERT_OK(Start());
  EXPECT_TRUE(Listed().empty());
  v1::Response again = Add("a");
  ASSERT_FALSE(again.has_error()) << again.error().message();
  EXPECT_EQ(again.endpoint_add().endpoint().ip(), "10.250.0.2");
}

// State written by a sarenad from before issue 9 item 3 (an allocation file plus the record)
// loads, keeps its address, and DEL removes both files.
TEST_F(EndpointManagerTest, AllocationFileOfAnOlderSarenadIsReadAndRemovedByDel) {
  ASSERT_OK(Start());
  ASSERT_FALSE(Add("old").has_error());
  manager_.reset();
  {
    auto ipam = Ipam::Open({.state_dir = options_.state_dir,
                            .pod_cidr = options_.pod_cidr,
                            .gateway = options_.node_ip});
    ASSERT_OK(ipam);
    ASSERT_TRUE((*ipam)->Claim(EndpointKey{"old", "eth0"},
                               boost::asio::ip::make_address_v4("10.250.0.2"))
                    .ok());
  }
  ASSERT_TRUE(IpamFile("10.250.0.2"));
  ASSERT_OK(Start());
  EXPECT_EQ(IpsUsed(), 1u);
  v1::Response n = Add("new");
  ASSERT_FALSE(n.has_error()) << n.error().message();
  EXPECT_EQ(n.endpoint_add().endpoint().ip(), "10.250.0.3");
  EXPECT_FALSE(IpamFile("10.250.0.3"));
  ASSERT_FALSE(Del("old").has_error());
  EXPECT_FALSE(IpamFile("10.250.0.2"));
  EXPECT_EQ(IpsUsed(), 1u);
}

TEST_F(EndpointManagerTest, StartRefusedByTheCrossCheckNeverMakesTheDatapath) {
  ASSERT_OK(Start());
  ASSERT_FALSE(Add("a").has_error());
  manager_.reset();
  // Another key now holds a's address in IPAM: a second pod would get a live pod's IP.
  fs::remove(options_.state_dir + "/ipam/10.250.0.2");
  {
    auto ipam = Ipam::Open({.state_dir = options_.state_dir,
                            .pod_cidr = options_.pod_cidr,
                            .gateway = options_.node_ip});
    ASSERT_OK(ipam);
    ASSERT_TRUE((*ipam)->Claim(EndpointKey{"intruder", "eth0"},
                               boost::asio::ip::make_address_v4("10.250.0.2"))
                    .ok());
  }
  bool made = false;
  auto m = EndpointManager::CreateWith(
      options_, [&]() -> absl::StatusOr<std::unique_ptr<datapath::EndpointDatapath>> {
        made = true;
        return std::make_unique<FakeEndpointDatapath>(&world_);
      });
  ASSERT_THAT(m, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("intruder/eth0")));
  EXPECT_FALSE(made);
}

}  // namespace
}  // namespace sarena::daemon
