// model::Conntrack: the ct state a reply meets and the NAT bindings it is translated back by.
#include "libsarena/model/conntrack.h"

#include "gtest/gtest.h"

namespace sarena::model {
namespace {

Packet Tcp(const char* src, uint16_t sport, const char* dst, uint16_t dport) {
  Packet p;
  p.src = net::Ipv4::from_string(src);
  p.sport = sport;
  p.dst = net::Ipv4::from_string(dst);
  p.dport = dport;
  p.proto = kProtoTcp;
  return p;
}

TEST(Conntrack, StateOfTheRequestAndOfTheReply) {
  Conntrack ct;
  ct.SawRequest("node:a");
  EXPECT_EQ(ct.StateOf("node:a", kProtoTcp, /*reply=*/false), CtState::kNew);
  EXPECT_EQ(ct.StateOf("node:b", kProtoTcp, false), CtState::kNew);
  EXPECT_EQ(ct.StateOf("node:a", kProtoTcp, true), CtState::kEstablished);
  // A reply where the request never passed: a TCP SYN-ACK from NONE is INVALID; UDP starts NEW.
  EXPECT_EQ(ct.StateOf("node:b", kProtoTcp, true), CtState::kInvalid);
  EXPECT_EQ(ct.StateOf("node:b", kProtoUdp, true), CtState::kNew);
  EXPECT_TRUE(ct.SawRequestIn("node:a"));
  EXPECT_FALSE(ct.SawRequestIn("node:b"));
}

TEST(Conntrack, AReplyIsTranslatedBackOnlyInTheNamespaceOfTheBinding) {
  Conntrack ct;
  // A Service DNAT in the client pod's node, then MASQUERADE on the way out of it.
  Packet req = Tcp("10.244.1.5", 40000, "10.96.0.10", 80);
  Packet dnat = Tcp("10.244.1.5", 40000, "10.244.2.7", 8080);
  Packet snat = Tcp("192.168.0.1", 50000, "10.244.2.7", 8080);
  ct.AddDnat("node:a", req, dnat);
  ct.AddSnat("node:a", dnat, snat);
  ASSERT_EQ(ct.bindings().size(), 2u);

  Packet reply = Tcp("10.244.2.7", 8080, "192.168.0.1", 50000);
  Packet elsewhere = reply;
  ct.UnSnat("node:b", &elsewhere);
  ct.UnDnat("node:b", &elsewhere);
  EXPECT_EQ(elsewhere.dst, reply.dst) << "no binding in node:b";
  ct.UnSnat("node:a", &reply);
  EXPECT_EQ(reply.dst, net::Ipv4::from_string("10.244.1.5"));
  EXPECT_EQ(reply.dport, 40000);
  ct.UnDnat("node:a", &reply);
  EXPECT_EQ(reply.src, net::Ipv4::from_string("10.96.0.10"));
  EXPECT_EQ(reply.sport, 80);
  // Another port of the same address is not this connection's reply.
  Packet other = Tcp("10.244.2.7", 9090, "192.168.0.1", 50000);
  ct.UnDnat("node:a", &other);
  EXPECT_EQ(other.src, net::Ipv4::from_string("10.244.2.7"));
}

TEST(Conntrack, ABindingWithoutPortsMatchesAnyPort) {
  Conntrack ct;
  Packet req;
  req.src = net::Ipv4::from_string("10.244.1.5");
  req.dst = net::Ipv4::from_string("203.0.113.10");
  req.proto = kProtoIcmp;
  Packet out = req;
  out.src = net::Ipv4::from_string("192.168.0.1");
  ct.AddSnat("node:a", req, out);
  Packet reply;
  reply.src = req.dst;
  reply.dst = out.src;
  reply.dport = 7;  // an ICMP id in the port field: any
  ct.UnSnat("node:a", &reply);
  EXPECT_EQ(reply.dst, req.src);
}

}  // namespace
}  // namespace sarena::model
