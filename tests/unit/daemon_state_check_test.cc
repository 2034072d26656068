// CrossCheckState and Ipam::Claim: the IPAM allocations and the endpoint records are compared
// at start, so a live pod's address can never be handed to a second pod (issue 10, item 4).
// Real directories, no privileges.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/daemon/endpoint_manager.h"
#include "libsarena/daemon/ipam.h"
#include "libsarena/daemon/state_store.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::daemon {
namespace {

namespace fs = std::filesystem;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

net::Ipv4 Ip(const char* s) { return boost::asio::ip::make_address_v4(s); }

v1::Endpoint Record(const std::string& id, const std::string& ip, uint32_t endpoint_id) {
  v1::Endpoint ep;
  ep.mutable_ref()->set_container_id(id);
  ep.mutable_ref()->set_ifname("eth0");
  ep.set_netns("/var/run/netns/" + id);
  ep.set_ip(ip);
  ep.set_prefix_len(32);
  ep.set_gateway("10.244.1.1");
  ep.set_pod_mac("aa:bb:cc:dd:ee:01");
  ep.set_host_ifname("lxc0123456789a");
  ep.set_host_mac("aa:bb:cc:dd:ee:02");
  ep.set_endpoint_id(endpoint_id);
  ep.set_mtu(1500);
  ep.set_network_name("sarena");
  return ep;
}

class DaemonStateCheckTest : public ::testing::Test {
 protected:
  // Opens both stores; call again after closing (the stores hold the dirs' locks).
  void OpenBoth() {
    store_.reset();
    ipam_.reset();
    auto ipam = Ipam::Open({.state_dir = dir_.path(),
                            .pod_cidr = *net::ParseIpv4Prefix("10.244.1.0/24"),
                            .gateway = Ip("10.244.1.1")});
    ASSERT_OK(ipam);
    ipam_ = std::move(*ipam);
    auto store = EndpointStore::Open({.state_dir = dir_.path()});
    ASSERT_OK(store);
    store_ = std::move(*store);
  }
  sarena::testing::TempDir dir_{"sarena-check-"};
  std::unique_ptr<Ipam> ipam_;
  std::unique_ptr<EndpointStore> store_;
};

TEST_F(DaemonStateCheckTest, ConsistentStateNeedsNoRepair) {
  OpenBoth();
  auto ip = ipam_->Allocate(EndpointKey{"a", "eth0"});
  ASSERT_OK(ip);
  ASSERT_OK(store_->Put(Record("a", ip->to_string(), 1)));
  auto repaired = CrossCheckState(*ipam_, *store_);
  ASSERT_OK(repaired);
  EXPECT_EQ(*repaired, 0);
}

// The defect: the allocation file of a live pod vanished (an operator's cleanup, a restore from
// backup); the next ADD got the live pod's address. Since issue 9 item 3 every ADD is in this
// state on purpose (the record is the allocation's one durable copy): the record's address is
// adopted at every start.
TEST_F(DaemonStateCheckTest, RecordWithoutAllocationFileKeepsItsAddressSoItIsNotReused) {
  OpenBoth();
  ASSERT_TRUE(ipam_->Allocate(EndpointKey{"a", "eth0"}).ok());  // 10.244.1.2
  ASSERT_OK(store_->Put(Record("a", "10.244.1.2", 1)));
  ASSERT_TRUE(fs::remove(dir_.Path("ipam/10.244.1.2")));
  OpenBoth();
  ASSERT_FALSE(ipam_->Lookup(EndpointKey{"a", "eth0"}).has_value());
  auto adopted = CrossCheckState(*ipam_, *store_);
  ASSERT_OK(adopted);
  EXPECT_EQ(*adopted, 1);
  EXPECT_FALSE(fs::exists(dir_.Path("ipam/10.244.1.2")));  // no write at start: the record is it
  EXPECT_FALSE(ipam_->List().at(0).in_file);
  auto next = ipam_->Reserve(EndpointKey{"b", "eth0"});
  ASSERT_OK(next);
  EXPECT_NE(next->to_string(), "10.244.1.2");
  EXPECT_NE(ipam_->Allocate(EndpointKey{"c", "eth0"})->to_string(), "10.244.1.2");
  OpenBoth();
  ASSERT_OK(CrossCheckState(*ipam_, *store_));
  EXPECT_EQ(ipam_->Lookup(EndpointKey{"a", "eth0"})->to_string(), "10.244.1.2");
}

TEST_F(DaemonStateCheckTest, ReservedAndAdoptedAddressesWriteNoFileAndReleaseInMemory) {
  OpenBoth();
  auto a = ipam_->Reserve(EndpointKey{"a", "eth0"});
  ASSERT_OK(a);
  EXPECT_EQ(a->to_string(), "10.244.1.2");
  EXPECT_EQ(*ipam_->Reserve(EndpointKey{"a", "eth0"}), *a);  // idempotent
  EXPECT_FALSE(fs::exists(dir_.Path("ipam/10.244.1.2")));
  ASSERT_OK(ipam_->Adopt(EndpointKey{"b", "eth0"}, Ip("10.244.1.3")));
  EXPECT_OK(ipam_->Adopt(EndpointKey{"b", "eth0"}, Ip("10.244.1.3")));
  auto taken = ipam_->Adopt(EndpointKey{"c", "eth0"}, Ip("10.244.1.2"));
  EXPECT_THAT(taken, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(taken.message(), HasSubstr("the endpoint record of a/eth0"));
  EXPECT_EQ(ipam_->Adopt(EndpointKey{"c", "eth0"}, Ip("10.244.1.1")).code(),
            absl::StatusCode::kInvalidArgument);  // the gateway
  EXPECT_EQ(ipam_->Claim(EndpointKey{"d", "eth0"}, Ip("10.244.1.3")).code(),
            absl::StatusCode::kAlreadyExists);  // a file never shadows a record-backed address
  EXPECT_EQ(ipam_->Allocate(EndpointKey{"d", "eth0"})->to_string(), "10.244.1.4");
  EXPECT_EQ(ipam_->InUse(), 3u);
  auto released = ipam_->Release(EndpointKey{"a", "eth0"});
  ASSERT_OK(released);
  EXPECT_EQ(released->value().to_string(), "10.244.1.2");
  EXPECT_TRUE(fs::exists(dir_.Path("ipam/10.244.1.4")));
  ASSERT_OK(ipam_->Release(EndpointKey{"d", "eth0"}));
  EXPECT_FALSE(fs::exists(dir_.Path("ipam/10.244.1.4")));
  EXPECT_EQ(ipam_->Reserve(EndpointKey{"e", "eth0"})->to_string(), "10.244.1.2");
  // Nothing of a reservation survives a restart without its record.
  OpenBoth();
  EXPECT_EQ(ipam_->InUse(), 0u);
}

TEST_F(DaemonStateCheckTest, AddressAllocatedToAnotherKeyRefusesStartNamingBothFiles) {
  OpenBoth();
  ASSERT_TRUE(ipam_->Allocate(EndpointKey{"other", "eth0"}).ok());  // 10.244.1.2
  ASSERT_OK(store_->Put(Record("a", "10.244.1.2", 1)));
  auto st = CrossCheckState(*ipam_, *store_);
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(st.status().message(), HasSubstr(store_->PathOf(EndpointKey{"a", "eth0"})));
  EXPECT_THAT(st.status().message(), HasSubstr(dir_.Path("ipam/10.244.1.2")));
  EXPECT_THAT(st.status().message(), HasSubstr("other/eth0"));
}

TEST_F(DaemonStateCheckTest, KeyHoldingADifferentAddressRefusesStart) {
  OpenBoth();
  ASSERT_TRUE(ipam_->Allocate(EndpointKey{"a", "eth0"}).ok());  // 10.244.1.2
  ASSERT_OK(store_->Put(Record("a", "10.244.1.7", 1)));
  auto st = CrossCheckState(*ipam_, *store_);
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(st.status().message(), HasSubstr("says 10.244.1.7"));
  EXPECT_THAT(st.status().message(), HasSubstr(dir_.Path("ipam/10.244.1.2")));
}

TEST_F(DaemonStateCheckTest, TwoRecordsOnOneAddressRefuseStartAndNothingIsClaimed) {
  OpenBoth();
  ASSERT_OK(store_->Put(Record("a", "10.244.1.5", 1)));
  ASSERT_OK(store_->Put(Record("b", "10.244.1.5", 2)));
  ASSERT_OK(store_->Put(Record("c", "10.244.1.6", 3)));
  auto st = CrossCheckState(*ipam_, *store_);
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("both hold 10.244.1.5")));
  EXPECT_TRUE(ipam_->List().empty());  // a refused start changes nothing
}

// Found by review: a record copied from a live pod's (same veth, same endpoint_id) loaded, and its
// DEL took the live pod's veth.
TEST_F(DaemonStateCheckTest, TwoRecordsOnOneVethOrEndpointIdRefuseStart) {
  OpenBoth();
  v1::Endpoint a = Record("a", "10.244.1.5", 1);
  v1::Endpoint b = Record("b", "10.244.1.6", 2);  // Record() gives both host_ifname lxc0123456789a
  ASSERT_OK(store_->Put(a));
  ASSERT_OK(store_->Put(b));
  auto st = CrossCheckState(*ipam_, *store_);
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("both own veth lxc0123456789a")));
  b.set_host_ifname("lxc00000000002");
  b.set_endpoint_id(1);
  ASSERT_OK(store_->Put(b));
  st = CrossCheckState(*ipam_, *store_);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.status().message(), HasSubstr("both use endpoint_id 1"));
  EXPECT_TRUE(ipam_->List().empty());
}

TEST_F(DaemonStateCheckTest, RecordOutsideThePodCidrRefusesStart) {
  OpenBoth();
  ASSERT_TRUE(store_->Put(Record("a", "10.99.0.5", 1)).ok());  // e.g. --pod-cidr changed
  auto st = CrossCheckState(*ipam_, *store_);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.status().message(), HasSubstr("not allocatable in pod CIDR 10.244.1.0/24"));
}

TEST_F(DaemonStateCheckTest, AllocationWithoutRecordIsKept) {
  OpenBoth();
  ASSERT_OK(ipam_->Allocate(EndpointKey{"crashed", "eth0"}));
  ASSERT_OK_AND_ASSIGN(auto repaired, CrossCheckState(*ipam_, *store_));
  EXPECT_TRUE(ipam_->Lookup(EndpointKey{"crashed", "eth0"}).has_value());
}

TEST_F(DaemonStateCheckTest, ClaimRefusesTakenReservedAndForeignAddresses) {
  OpenBoth();
  ASSERT_OK(ipam_->Claim(EndpointKey{"a", "eth0"}, Ip("10.244.1.9")));
  EXPECT_TRUE(ipam_->Claim(EndpointKey{"a", "eth0"}, Ip("10.244.1.9")).ok());  // idempotent
  EXPECT_EQ(ipam_->Claim(EndpointKey{"b", "eth0"}, Ip("10.244.1.9")).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ipam_->Claim(EndpointKey{"a", "eth0"}, Ip("10.244.1.10")).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ipam_->Claim(EndpointKey{"c", "eth0"}, Ip("10.244.1.1")).code(),
            absl::StatusCode::kInvalidArgument);  // the gateway
  EXPECT_EQ(ipam_->Claim(EndpointKey{"c", "eth0"}, Ip("10.244.1.255")).code(),
            absl::StatusCode::kInvalidArgument);  // broadcast
  EXPECT_EQ(ipam_->Claim(EndpointKey{"c", "eth0"}, Ip("10.244.2.3")).code(),
            absl::StatusCode::kInvalidArgument);
  auto next = ipam_->Allocate(EndpointKey{"d", "eth0"});
  ASSERT_OK(next);
  EXPECT_EQ(next->to_string(), "10.244.1.2");
  EXPECT_NE(ipam_->Allocate(EndpointKey{"e", "eth0"})->to_string(), "10.244.1.9");
}

}  // namespace
}  // namespace sarena::daemon
