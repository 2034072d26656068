// The registry's keys and record validation (libsarena/cluster/records.h); no etcd needed.
#include "libsarena/cluster/records.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace sarena::cluster {
namespace {

constexpr absl::string_view kGood =
    R"({"name":"n1","node_id":3,"boot_id":"b","addresses":[{"family":"IPV6","address":"2001:db8::1"},)"
    R"({"family":"IPV4","address":"192.0.2.1"},{"family":"IPV4","address":"192.0.2.9"}],)"
    R"("pod_cidrs":[{"family":"IPV4","cidr":"10.244.3.0/24"},{"family":"IPV6","cidr":"fd00:3::/64"}],)"
    R"("tunnel_port":8472,"mtu":1450,"routing_mode":"native","future_field":1})";

TEST(RecordsTest, KeysRoundTrip) {
  auto cidr = net::ParseIpv4Prefix("10.244.1.0/24");
  ASSERT_TRUE(cidr.ok());
  EXPECT_EQ(PodCidrKey(*cidr), "/sarena/v1/podcidrs/10.244.1.0-24");
  EXPECT_EQ(PodCidrKey(*net::ParseIpv4Prefix("10.244.1.7/24")), "/sarena/v1/podcidrs/10.244.1.0-24");
  auto back = PodCidrFromKey("/sarena/v1/podcidrs/10.244.1.0-24");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *cidr);
  EXPECT_FALSE(PodCidrFromKey("/sarena/v1/podcidrs/10.244.1.7-24").ok());  // host bits
  EXPECT_FALSE(PodCidrFromKey("/sarena/v1/nodes/x").ok());
  EXPECT_EQ(NodeIdKey(42), "/sarena/v1/nodeids/42");
  EXPECT_EQ(*NodeIdFromKey("/sarena/v1/nodeids/42"), 42u);
  for (const char* bad : {"/sarena/v1/nodeids/0", "/sarena/v1/nodeids/16384",
                          "/sarena/v1/nodeids/x", "/sarena/v1/other/1", "/sarena/v1/nodeids/042",
                          "/sarena/v1/nodeids/+42", "/sarena/v1/nodeids/ 42"}) {
    EXPECT_FALSE(NodeIdFromKey(bad).ok()) << bad;
  }
  EXPECT_EQ(NodeKey("n1"), "/sarena/v1/nodes/n1");
  EXPECT_TRUE(ValidateNodeName("node-1.example").ok());
  for (const char* bad : {"", "Node", "a/b", "a b", "a_b"}) {
    EXPECT_EQ(ValidateNodeName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(RecordsTest, ParsesAValidRecordTakingTheFirstIpv4AndIgnoringUnknownFields) {
  auto n = ParseNodeRecord("/sarena/v1/nodes/n1", kGood);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->name, "n1");
  EXPECT_EQ(n->node_id, 3u);
  EXPECT_EQ(n->underlay.to_string(), "192.0.2.1");
  ASSERT_EQ(n->pod_cidrs.size(), 1u);  // the IPv6 CIDR is valid but not part of the IPv4 view
  EXPECT_EQ(n->pod_cidrs[0].to_string(), "10.244.3.0/24");
  EXPECT_EQ(n->tunnel_port, 8472);
  EXPECT_EQ(n->mtu, 1450u);
  EXPECT_EQ(n->routing_mode, "native");
}

TEST(RecordsTest, RejectsCorruptRecordsNamingTheKey) {
  const std::string key = "/sarena/v1/nodes/n1";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "corrupt record"},
      {R"({"name":"n2","node_id":1,"addresses":[{"family":"IPV4","address":"192.0.2.1"}]})",
       "is not the key's"},
      {R"({"name":"n1","node_id":0,"addresses":[{"family":"IPV4","address":"192.0.2.1"}]})",
       "node_id 0"},
      {R"({"name":"n1","node_id":16384,"addresses":[{"family":"IPV4","address":"192.0.2.1"}]})",
       "node_id 16384"},
      {R"({"name":"n1","node_id":1,"addresses":[{"family":"IPV4","address":"2001:db8::1"}]})",
       "is not ipv4"},
      {R"({"name":"n1","node_id":1,"addresses":[{"family":"IPV6","address":"192.0.2.1"}]})",
       "is not ipv6"},
      {R"({"name":"n1","node_id":1,"addresses":[{"address":"192.0.2.1"}]})", "has no family"},
      {R"({"name":"n1","node_id":1,"addresses":[{"family":"IPV6","address":"2001:db8::1"}]})",
       "no ipv4 underlay"},
      {R"({"name":"n1","node_id":1,"addresses":[{"family":"IPV4","address":"192.0.2.1"}],)"
       R"("pod_cidrs":[{"family":"IPV4","cidr":"10.244.3.1/24"}]})",
       "host bits"},
      {R"({"name":"n1","node_id":1,"addresses":[{"family":"IPV4","address":"192.0.2.1"}],)"
       R"("pod_cidrs":[{"family":"IPV4","cidr":"fd00::/64"}]})",
       "is not ipv4"},
      {R"({"name":"n1","node_id":1,"addresses":[{"family":"IPV4","address":"192.0.2.1"}],)"
       R"("tunnel_port":70000})",
       "tunnel_port 70000"},
  };
  for (const auto& [value, want] : cases) {
    auto n = ParseNodeRecord(key, value);
    ASSERT_FALSE(n.ok()) << value;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument) << value;
    EXPECT_TRUE(absl::StrContains(n.status().message(), key)) << n.status();
    EXPECT_TRUE(absl::StrContains(n.status().message(), want)) << n.status() << " want " << want;
  }
}

TEST(RecordsTest, JsonRoundTripUsesProtoFieldNames) {
  v1::PodCidrClaim c;
  c.set_node_name("n1");
  c.set_claimed_at("2026-01-01T00:00:00Z");
  std::string json = RecordToJson(c);
  EXPECT_EQ(json, R"({"node_name":"n1","claimed_at":"2026-01-01T00:00:00Z"})");
  v1::PodCidrClaim back;
  ASSERT_TRUE(RecordFromJson(json, &back, "k").ok());
  EXPECT_EQ(back.node_name(), "n1");
}

}  // namespace
}  // namespace sarena::cluster
