// --src / --dst parsing (docs/architecture.md "The diagnoser's contract": pod:NS/NAME | node:NAME |
// svc:NS/NAME (dst only) | IPv4, DST:PORT/PROTO) and the Calico workload veth name.
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "tests/lib/status_matchers.h"

namespace sarena::diag {
namespace {

using ::sarena::testing::StatusIs;

TEST(DiagQuery, Forms) {
  auto q = ParseQuery("pod:default/client", "pod:web/api-0:8080/tcp");
  ASSERT_OK(q);
  EXPECT_EQ(q->src.kind, EndpointSpec::Kind::kPod);
  EXPECT_EQ(q->src.namespace_, "default");
  EXPECT_EQ(q->src.name, "client");
  EXPECT_EQ(q->dst.kind, EndpointSpec::Kind::kPod);
  EXPECT_EQ(q->dst.name, "api-0");
  EXPECT_EQ(q->dport, 8080);
  EXPECT_EQ(q->proto, 6);

  q = ParseQuery("node:node-a", "svc:kube-system/kube-dns:53/udp");
  ASSERT_OK(q);
  EXPECT_EQ(q->src.kind, EndpointSpec::Kind::kNode);
  EXPECT_EQ(q->src.name, "node-a");
  EXPECT_EQ(q->dst.kind, EndpointSpec::Kind::kService);
  EXPECT_EQ(q->dst.ToString(), "svc:kube-system/kube-dns");
  EXPECT_EQ(q->proto, 17);
  EXPECT_EQ(q->dport, 53);

  q = ParseQuery("10.0.0.1", "203.0.113.4:443/tcp");
  ASSERT_OK(q);
  EXPECT_EQ(q->src.kind, EndpointSpec::Kind::kIp);
  EXPECT_EQ(q->src.ip.to_string(), "10.0.0.1");
  EXPECT_EQ(q->dst.ip.to_string(), "203.0.113.4");
  EXPECT_EQ(q->proto, 6);
  // No protocol is never guessed (it was tcp): an error naming the value.
  q = ParseQuery("10.0.0.1", "203.0.113.4:443");
  ASSERT_THAT(q, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(q.status().message(),
            "invalid --dst '203.0.113.4:443': no protocol: write 203.0.113.4:443/tcp, "
            "203.0.113.4:443/udp (PROTO tcp|udp, or 203.0.113.4:0/icmp)");

  q = ParseQuery("10.0.0.1", "10.0.0.2:0/icmp");
  ASSERT_OK(q);
  EXPECT_EQ(q->proto, 1);
  EXPECT_EQ(q->dport, 0);
}

TEST(DiagQuery, ErrorsNameTheFlag) {
  struct Bad {
    const char* src;
    const char* dst;
    const char* flag;
  };
  for (const Bad& b :
       {Bad{"svc:a/b", "10.0.0.1:80/tcp", "--src"},
        Bad{"pod:nonamespace", "10.0.0.1:80/tcp", "--src"},
        Bad{"pod:/x", "10.0.0.1:80/tcp", "--src"}, Bad{"host:a", "10.0.0.1:80/tcp", "--src"},
        Bad{"10.0.0.256", "10.0.0.1:80/tcp", "--src"}, Bad{"node:a", "10.0.0.1", "--dst"},
        Bad{"node:a", "10.0.0.1:99999/tcp", "--dst"}, Bad{"node:a", "10.0.0.1:0/tcp", "--dst"},
        Bad{"node:a", "10.0.0.1:80/bogus", "--dst"}, Bad{"node:a", "pod:x:80/tcp", "--dst"},
        Bad{"node:a", "node::80/tcp", "--dst"}, Bad{"node:a", "10.0.0.1:080/tcp", "--dst"},
        Bad{"node:a", "10.0.0.1:+80/tcp", "--dst"}, Bad{"node:a", "10.0.0.1: 80/tcp", "--dst"}}) {
    auto q = ParseQuery(b.src, b.dst);
    ASSERT_FALSE(q.ok()) << b.src << " " << b.dst;
    EXPECT_THAT(q, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_NE(q.status().message().find(b.flag), absl::string_view::npos) << q.status();
  }
}

// The protocol is one of the spellings --help names, exactly; icmp takes no port (a port was
// once dropped silently, and /sctp, /TCP accepted).
TEST(DiagQuery, ProtocolIsStrictAndIcmpHasNoPort) {
  for (const char* proto : {"sctp", "TCP", "Udp", "ICMP", "", "gre", "6"}) {
    const std::string dst = absl::StrCat("10.0.0.2:80/", proto);
    auto q = ParseQuery("10.0.0.1", dst);
    ASSERT_FALSE(q.ok()) << dst;
    EXPECT_THAT(q, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_NE(q.status().message().find(absl::StrCat("unknown protocol '", proto, "'")),
              absl::string_view::npos)
        << q.status();
    EXPECT_NE(q.status().message().find("want tcp, udp or icmp"), absl::string_view::npos)
        << q.status();
  }
  auto q = ParseQuery("10.0.0.1", "10.0.0.2:8080/icmp");
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(q.status().message().find("icmp has no ports: port 8080"), absl::string_view::npos)
      << q.status();
  q = ParseQuery("10.0.0.1", "10.0.0.2:0/icmp");
  ASSERT_OK(q);
  EXPECT_EQ(q->proto, 1);
  q = ParseQuery("10.0.0.1", "10.0.0.2:53/udp");
  ASSERT_OK(q);
  EXPECT_EQ(q->dport, 53);
}

TEST(DiagQuery, CalicoVethName) {
  // "cali" + sha1("<namespace>.<name>")[:11], checked against Python's hashlib.
  EXPECT_EQ(CalicoVethName("default", "client"), "calia7a3e029a7b");
  EXPECT_EQ(CalicoVethName("data", "db-0"), "cali407af4d7387");
  EXPECT_EQ(CalicoVethName("data", "app"), "cali570d70de567");
  EXPECT_EQ(CalicoVethName("default", "files").size(), 15u);  // IFNAMSIZ - 1
}

// --size's minimum is the protocol's headers: IPv4 + TCP 40, IPv4 + UDP / ICMP echo 28.
TEST(DiagQuery, PacketSizeMinimumPerProtocol) {
  EXPECT_EQ(MinPacketSize(6), 40u);
  EXPECT_EQ(MinPacketSize(17), 28u);
  EXPECT_EQ(MinPacketSize(1), 28u);
  EXPECT_EQ(*ParsePacketSize("0", 6), 0u);
  EXPECT_EQ(*ParsePacketSize("40", 6), 40u);
  EXPECT_EQ(*ParsePacketSize("28", 17), 28u);
  EXPECT_EQ(*ParsePacketSize("65535", 1), 65535u);
  auto r = ParsePacketSize("28", 6);
  ASSERT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(r.status().message(),
            "invalid --size '28': want 0 (the source device's MTU) or 40..65535 for tcp (40 "
            "bytes are its IPv4 and tcp headers alone)");
  EXPECT_FALSE(ParsePacketSize("27", 17).ok());
  EXPECT_FALSE(ParsePacketSize("65536", 17).ok());
  EXPECT_FALSE(ParsePacketSize("x", 1).ok());
}

}  // namespace
}  // namespace sarena::diag
