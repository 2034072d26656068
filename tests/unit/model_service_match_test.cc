// model::MatchService / ApplyTrafficPolicy: which Service a packet names and which endpoints it
// may reach, on the cluster fixture of tests/data/model/cluster.
#include "libsarena/model/service_match.h"

#include <string>

#include "gtest/gtest.h"
#include "libsarena/base/file.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }

Cluster LoadFixture() {
  auto read = [](const char* name) {
    auto text = ReadFileToString(sarena::testing::SourceDir() + "/tests/data/model/cluster/" + name);
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : std::string();
  };
  Cluster c;
  EXPECT_TRUE(c.ParsePods(read("pods.json")).ok());
  EXPECT_TRUE(c.ParseNodes(read("nodes.json")).ok());
  EXPECT_TRUE(c.ParseServices(read("services.json")).ok());
  EXPECT_TRUE(c.ParseEndpointSlices(read("endpointslices.json")).ok());
  c.Finalize();
  return c;
}

Packet To(const char* src, const char* dst, uint16_t dport, uint8_t proto = kProtoTcp) {
  Packet p;
  p.src = Ip(src);
  p.sport = 40000;
  p.dst = Ip(dst);
  p.dport = dport;
  p.proto = proto;
  return p;
}

Backend On(const char* ip, const char* node) {
  Backend b;
  b.ip = Ip(ip);
  b.port = 8443;
  b.node_name = node;
  return b;
}

TEST(ServiceMatch, ClusterIpExternalIpAndMissingPort) {
  Cluster c = LoadFixture();
  auto web = MatchService(c, nullptr, To("10.65.1.3", "10.96.0.100", 80));
  ASSERT_TRUE(web.has_value());
  EXPECT_EQ(web->svc->Key(), "shop/web");
  EXPECT_EQ(web->via, ServiceVia::kClusterIp);
  ASSERT_NE(web->port, nullptr);
  EXPECT_EQ(web->port->port, 80);
  auto no_port = MatchService(c, nullptr, To("10.65.1.3", "10.96.0.100", 81));
  ASSERT_TRUE(no_port.has_value()) << "the Service's address, none of its ports";
  EXPECT_EQ(no_port->port, nullptr);
  auto lb = MatchService(c, nullptr, To("192.0.2.5", "203.0.113.11", 443));
  ASSERT_TRUE(lb.has_value());
  EXPECT_EQ(lb->svc->Key(), "shop/lb");
  EXPECT_EQ(lb->via, ServiceVia::kExternal);
  // A nodePort needs the namespace's local addresses: without them nothing matches.
  EXPECT_FALSE(MatchService(c, nullptr, To("192.0.2.5", "192.168.10.10", 30443)).has_value());
  EXPECT_FALSE(MatchService(c, nullptr, To("10.65.1.3", "10.96.9.9", 80)).has_value());
}

TEST(ServiceMatch, SourceRangesAndExternalTrafficPolicyLocal) {
  Cluster c = LoadFixture();
  const std::vector<Backend> ready = {On("10.65.2.8", "node-b")};
  // loadBalancerSourceRanges [192.0.2.0/24]: another source is dropped at the load-balancer IP.
  Packet denied = To("198.18.0.1", "203.0.113.11", 443);
  auto m = MatchService(c, nullptr, denied);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(ApplyTrafficPolicy(c, *m, denied, "node-b", nullptr, ready, false).denied,
            PolicyResult::Denied::kSourceRange);
  // An allowed external client, externalTrafficPolicy Local: only node-b has an endpoint.
  Packet ok = To("192.0.2.5", "203.0.113.11", 443);
  PolicyResult a = ApplyTrafficPolicy(c, *m, ok, "node-a", nullptr, ready, false);
  EXPECT_EQ(a.denied, PolicyResult::Denied::kExternalTrafficPolicyLocal);
  EXPECT_TRUE(a.backends.empty());
  PolicyResult b = ApplyTrafficPolicy(c, *m, ok, "node-b", nullptr, ready, false);
  EXPECT_EQ(b.denied, PolicyResult::Denied::kNone);
  ASSERT_EQ(b.backends.size(), 1u);
  EXPECT_EQ(b.backends[0].ip, Ip("10.65.2.8"));
  // The source ranges apply to every client of the load-balancer IP, pods and nodes too.
  for (const char* src : {"10.65.1.3", "192.168.10.10"}) {
    Packet inside = To(src, "203.0.113.11", 443);
    EXPECT_EQ(ApplyTrafficPolicy(c, *m, inside, "node-a", nullptr, ready, false).denied,
              PolicyResult::Denied::kSourceRange)
        << src << ": the source ranges apply to every client of the load-balancer IP";
  }
  // Through an externalIP (not a load-balancer IP, no source ranges): a pod, or a packet sent
  // from this node, is not an external client and reaches every endpoint.
  Packet via_external_ip = To("10.65.1.3", "203.0.113.50", 443);
  auto e = MatchService(c, nullptr, via_external_ip);
  ASSERT_TRUE(e.has_value());
  PolicyResult pod = ApplyTrafficPolicy(c, *e, via_external_ip, "node-a", nullptr, ready, false);
  EXPECT_EQ(pod.denied, PolicyResult::Denied::kNone) << "a pod is not an external client";
  EXPECT_EQ(pod.backends.size(), 1u);
  Packet ext = To("198.18.0.1", "203.0.113.50", 443);
  EXPECT_EQ(ApplyTrafficPolicy(c, *e, ext, "node-a", nullptr, ready, /*originated=*/true).denied,
            PolicyResult::Denied::kNone);
  EXPECT_EQ(ApplyTrafficPolicy(c, *e, ext, "node-a", nullptr, ready, false).denied,
            PolicyResult::Denied::kExternalTrafficPolicyLocal);
}

}  // namespace
}  // namespace sarena::model
