// Linux bridge port flags (hairpin, isolation, learning / unicast flooding) and the bridge's
// br_netfilter setting, on snapshot fixtures generated from real network namespaces
// (tests/data/cases/_gen/bridge-hairpin.py, bridge-isolated.py) and mutated one flag at a time.
// What the kernel does was checked on 6.18 with `sarena-diag drops`: hairpin off drops the
// DNAT'ed SYN in br_handle_frame_finish (NOT_SPECIFIED, on the ingress port); two isolated ports
// never see each other's ARP (NEIGH_FAILED in the client); learning and flooding off without an
// fdb entry is NO_TX_TARGET in br_handle_frame_finish.
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::FindSuspicion;
using testing::Scratch;
using testing::TraceLib;

constexpr char kWww[] = "pod:web/www";
constexpr char kWwwSvc[] = "svc:web/www:80/tcp";
constexpr char kClient[] = "pod:default/client";
constexpr char kServer[] = "pod:default/server:8080/tcp";

// Sets `key` of info_slave_data (or info_data with `slave` false) of `ifname` in a node's
// ip-link.json.
void SetLinkInfo(Scratch& s, const std::string& ifname, const std::string& key,
                 const google::protobuf::Value& value, bool slave = true) {
  s.EditLink("nodes/node-a/ip-link.json", ifname, [&](google::protobuf::Struct* l) {
    auto& li = *(*l->mutable_fields())["linkinfo"].mutable_struct_value()->mutable_fields();
    (*li[slave ? "info_slave_data" : "info_data"].mutable_struct_value()->mutable_fields())[key] =
        value;
  });
}
google::protobuf::Value Bool(bool b) {
  google::protobuf::Value v;
  v.set_bool_value(b);
  return v;
}
google::protobuf::Value Num(double n) {
  google::protobuf::Value v;
  v.set_number_value(n);
  return v;
}

TEST(DiagBridge, HairpinOffDropsAPodReachingItsOwnService) {
  auto t = TraceLib(CaseDir("bridge-hairpin"), kWww, kWwwSvc);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* s = FindSuspicion(t.report, "bridge_hairpin", "FATAL");
  ASSERT_NE(s, nullptr) << t.text;
  EXPECT_EQ(s->hop(), "node-a/svc:web/www") << t.text;  // the node's bridge, not the pod
  EXPECT_NE(s->message().find("veth5e0d2a11"), std::string::npos) << s->message();
  EXPECT_NE(s->message().find("cni0"), std::string::npos) << s->message();
  EXPECT_NE(s->message().find("bridge link set dev veth5e0d2a11 hairpin on"), std::string::npos);
  // Another pod's way to the same Service crosses two ports: no hairpin.
  auto c = TraceLib(CaseDir("bridge-hairpin"), "pod:web/client", kWwwSvc);
  ASSERT_TRACED(c);
  EXPECT_EQ(c.report.verdict(), "reachable") << c.text;
  EXPECT_EQ(FindSuspicion(c.report, "bridge_hairpin"), nullptr) << c.text;
}

TEST(DiagBridge, HairpinOnIsReachable) {
  auto t = TraceLib(CaseDir("bridge-hairpin-fixed"), kWww, kWwwSvc);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "bridge_hairpin"), nullptr) << t.text;
}

TEST(DiagBridge, HairpinNeedsBrNetfilterTheBridgeOptionCounts) {
  // Without br_netfilter the DNAT happens after the bridge handed the frame up: routed out by
  // br_dev_xmit, which checks no hairpin flag.
  Scratch off("bridge-hairpin");
  off.SetSysctl("nodes/node-a/sysctl.txt", "net.bridge.bridge-nf-call-iptables", "0");
  auto t = TraceLib(off.dir(), kWww, kWwwSvc);
  ASSERT_TRACED(t);
  EXPECT_EQ(FindSuspicion(t.report, "bridge_hairpin"), nullptr) << t.text;
  // The bridge's own nf_call_iptables turns br_netfilter on for it whatever the sysctl says.
  SetLinkInfo(off, "cni0", "nf_call_iptables", Num(1), /*slave=*/false);
  auto b = TraceLib(off.dir(), kWww, kWwwSvc);
  ASSERT_TRACED(b);
  EXPECT_NE(FindSuspicion(b.report, "bridge_hairpin", "FATAL"), nullptr) << b.text;
}

TEST(DiagBridge, TwoIsolatedPortsAreNotSwitched) {
  auto t = TraceLib(CaseDir("bridge-isolated"), kClient, kServer);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* s = FindSuspicion(t.report, "bridge_isolated", "FATAL");
  ASSERT_NE(s, nullptr) << t.text;
  EXPECT_EQ(s->hop(), "node-a") << t.text;
  EXPECT_NE(s->message().find("veth91a4d0c2"), std::string::npos) << s->message();
  EXPECT_NE(s->message().find("veth6b3e8f07"), std::string::npos) << s->message();
  // Isolation is between ports: the node itself is still reached.
  auto n = TraceLib(CaseDir("bridge-isolated"), kClient, "node:node-a:22/tcp");
  ASSERT_TRACED(n);
  EXPECT_EQ(n.report.verdict(), "reachable") << n.text;
}

TEST(DiagBridge, OneIsolatedPortIsReachable) {
  auto t = TraceLib(CaseDir("bridge-isolated-fixed"), kClient, kServer);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "bridge_isolated"), nullptr) << t.text;
}

TEST(DiagBridge, LearningAndFloodingOffWithoutAnFdbEntryIsNotDelivered) {
  Scratch s("bridge-isolated-fixed");
  SetLinkInfo(s, "veth6b3e8f07", "learning", Bool(false));
  SetLinkInfo(s, "veth6b3e8f07", "flood", Bool(false));
  // The generator's fdb holds the server's MAC, learned from its IPv6 autoconfiguration when
  // the link came up; a dynamic entry ages out after 300 s and learning off never renews it.
  auto learned = [](const google::protobuf::Struct& e) {
    return e.fields().at("ifname").string_value() == "veth6b3e8f07" &&
           e.fields().at("state").string_value().empty();
  };
  Scratch with_entry("bridge-isolated-fixed");
  SetLinkInfo(with_entry, "veth6b3e8f07", "learning", Bool(false));
  SetLinkInfo(with_entry, "veth6b3e8f07", "flood", Bool(false));
  auto e = TraceLib(with_entry.dir(), kClient, kServer);
  ASSERT_TRACED(e);
  EXPECT_EQ(e.report.verdict(), "reachable") << e.text;  // the fdb still knows the MAC
  ASSERT_EQ(s.RemoveFromList("nodes/node-a/bridge-fdb.json", learned), 1);
  auto t = TraceLib(s.dir(), kClient, kServer);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* f = FindSuspicion(t.report, "bridge_flood", "FATAL");
  ASSERT_NE(f, nullptr) << t.text;
  EXPECT_EQ(f->hop(), "node-a") << t.text;
  EXPECT_NE(f->message().find("veth6b3e8f07"), std::string::npos) << f->message();
  // The node's own frames (br_dev_xmit) are flooded the same way.
  auto n = TraceLib(s.dir(), "node:node-a", kServer);
  ASSERT_TRACED(n);
  EXPECT_NE(FindSuspicion(n.report, "bridge_flood", "FATAL"), nullptr) << n.text;

  // Learning on: the server's MAC is learned from its ARP reply, flooding is not needed.
  SetLinkInfo(s, "veth6b3e8f07", "learning", Bool(true));
  auto l = TraceLib(s.dir(), kClient, kServer);
  ASSERT_TRACED(l);
  EXPECT_EQ(l.report.verdict(), "reachable") << l.text;
}

TEST(DiagBridge, SnapshotsWithoutPortFlagsKeepTheKernelDefaults) {
  Scratch s("bridge-isolated");
  s.EditJson("nodes/node-a/ip-link.json", [&](google::protobuf::Value* v) {
    for (auto& l : *v->mutable_list_value()->mutable_values()) {
      auto& f = *l.mutable_struct_value()->mutable_fields();
      if (!f.count("linkinfo")) continue;
      f["linkinfo"].mutable_struct_value()->mutable_fields()->erase("info_slave_data");
      f["linkinfo"].mutable_struct_value()->mutable_fields()->erase("info_data");
    }
  });
  auto t = TraceLib(s.dir(), kClient, kServer);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;  // not isolated, learning, flooding
}

}  // namespace
}  // namespace sarena::diag
