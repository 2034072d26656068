// The path graph and its reports: the verdict rules (docs/architecture.md "The diagnoser's
// contract"), unique hop ids, the exact JSON contract (every key, even empty ones), the text form,
// Graphviz DOT and SVG through `dot`.
#include <unistd.h>

#include <set>
#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/diag/report.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

Suspicion S(Level l) { return Suspicion{l, "x", "h", "m"}; }

TEST(DiagVerdict, DesignRules) {
  EXPECT_EQ(ComputeVerdict({}), Verdict::kReachable);
  EXPECT_EQ(ComputeVerdict({S(Level::kInfo), S(Level::kInfo)}), Verdict::kReachable);
  EXPECT_EQ(ComputeVerdict({S(Level::kInfo), S(Level::kWarning)}), Verdict::kDegraded);
  EXPECT_EQ(ComputeVerdict({S(Level::kCritical)}), Verdict::kDegraded);
  EXPECT_EQ(ComputeVerdict({S(Level::kWarning), S(Level::kFatal), S(Level::kCritical)}),
            Verdict::kUnreachable);
  EXPECT_EQ(ComputeVerdict({S(Level::kFatal)}), Verdict::kUnreachable);
  EXPECT_EQ(ToString(Verdict::kReachable), "reachable");
  EXPECT_EQ(ToString(Verdict::kUnreachable), "unreachable");
  EXPECT_EQ(ToString(Verdict::kDegraded), "degraded");
}

PathGraph TwoHops() {
  PathGraph g;
  Hop a;
  a.id = "default/client";
  a.kind = HopKind::kPod;
  a.node = "node-a";
  a.oif = "eth0";
  a.action = HopAction::kSend;
  a.packet.src = net::Ipv4(0x0a000001);
  a.packet.dst = net::Ipv4(0x0a000002);
  a.packet.dport = 80;
  auto va = g.AddHop(a);
  Hop b;
  b.id = "node-a";
  b.kind = HopKind::kNode;
  b.node = "node-a";
  b.iif = "cali1";
  b.action = HopAction::kDrop;
  b.packet = a.packet;
  auto vb = g.AddHop(b);
  g.Link(va, vb, "veth eth0 -> cali1");
  g.AddSuspicion(vb, Level::kFatal, "no_route", "no route to \"10.0.0.2\"");
  g.AddSuspicion(va, Level::kInfo, "file_missing", "cannot check X: file Y missing");
  return g;
}

TEST(DiagGraph, UniqueIdsAndDedupedSuspicions) {
  PathGraph g;
  Hop h;
  h.id = "node-a";
  auto v1 = g.AddHop(h);
  auto v2 = g.AddHop(h);
  auto v3 = g.AddHop(h);
  EXPECT_EQ(g.hop(v1).id, "node-a");
  EXPECT_EQ(g.hop(v2).id, "node-a#2");
  EXPECT_EQ(g.hop(v3).id, "node-a#3");
  EXPECT_EQ(g.Find("node-a#2"), v2);
  g.AddSuspicion(v2, Level::kWarning, "mtu_mismatch", "m");
  g.AddSuspicion(v2, Level::kWarning, "mtu_mismatch", "m");
  g.AddGlobalSuspicion(Level::kInfo, "q", "about the query");
  auto all = g.Suspicions();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].hop, "node-a#2");
  EXPECT_EQ(all[1].hop, "");
}

std::set<std::string> Keys(const google::protobuf::Struct& s) {
  std::set<std::string> k;
  for (const auto& [name, v] : s.fields()) k.insert(name);
  return k;
}

TEST(DiagReport, JsonContractKeysExactly) {
  PathGraph g = TwoHops();
  auto json = ToJson(g);
  ASSERT_TRUE(json.ok()) << json.status();
  google::protobuf::Struct root;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &root).ok()) << *json;
  EXPECT_EQ(Keys(root), (std::set<std::string>{"verdict", "hops", "suspicions"}));
  EXPECT_EQ(root.fields().at("verdict").string_value(), "unreachable");
  const auto& hops = root.fields().at("hops").list_value();
  ASSERT_EQ(hops.values_size(), 2);
  for (const auto& h : hops.values()) {
    EXPECT_EQ(Keys(h.struct_value()),
              (std::set<std::string>{"id", "kind", "node", "iif", "oif", "action", "packet"}));
    EXPECT_EQ(Keys(h.struct_value().fields().at("packet").struct_value()),
              (std::set<std::string>{"src", "dst", "sport", "dport", "proto"}));
  }
  const auto& first = hops.values(0).struct_value().fields();
  EXPECT_EQ(first.at("id").string_value(), "default/client");
  EXPECT_EQ(first.at("kind").string_value(), "pod");
  EXPECT_EQ(first.at("iif").string_value(), "");  // printed although empty
  EXPECT_EQ(first.at("action").string_value(), "send");
  const auto& pkt = first.at("packet").struct_value().fields();
  EXPECT_EQ(pkt.at("src").string_value(), "10.0.0.1");
  EXPECT_EQ(pkt.at("sport").number_value(), 0);  // printed although zero
  EXPECT_EQ(pkt.at("dport").number_value(), 80);
  EXPECT_EQ(pkt.at("proto").string_value(), "tcp");
  EXPECT_EQ(hops.values(1).struct_value().fields().at("action").string_value(), "drop");
  const auto& sus = root.fields().at("suspicions").list_value();
  ASSERT_EQ(sus.values_size(), 2);
  for (const auto& s : sus.values()) {
    EXPECT_EQ(Keys(s.struct_value()), (std::set<std::string>{"level", "code", "hop", "message"}));
  }
  // Hop order: the client's INFO first, then node-a's FATAL.
  EXPECT_EQ(sus.values(0).struct_value().fields().at("level").string_value(), "INFO");
  EXPECT_EQ(sus.values(1).struct_value().fields().at("code").string_value(), "no_route");
  EXPECT_EQ(sus.values(1).struct_value().fields().at("hop").string_value(), "node-a");
}

TEST(DiagReport, TextListsHopsThenSuspicions) {
  std::string t = ToText(TwoHops());
  EXPECT_EQ(t.rfind("verdict: unreachable\n", 0), 0u) << t;
  size_t hop1 = t.find("[1] default/client (pod on node-a) send");
  size_t hop2 = t.find("[2] node-a (node) drop");
  size_t list = t.find("suspicions (2):");
  ASSERT_NE(hop1, std::string::npos) << t;
  ASSERT_NE(hop2, std::string::npos) << t;
  ASSERT_NE(list, std::string::npos) << t;
  EXPECT_LT(hop1, hop2);
  EXPECT_LT(hop2, list);
  EXPECT_NE(t.find("FATAL no_route @ node-a"), std::string::npos) << t;
}

TEST(DiagReport, DotHasHopsSuspicionsColoursAndEdges) {
  std::string dot = ToDot(TwoHops());
  EXPECT_EQ(dot.rfind("digraph G {", 0), 0u) << dot;
  EXPECT_NE(dot.find("id=\"default/client\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("fillcolor=tomato"), std::string::npos) << dot;     // the FATAL hop
  EXPECT_NE(dot.find("fillcolor=lightblue"), std::string::npos) << dot;  // the INFO hop
  EXPECT_NE(dot.find("FATAL no_route"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\\\"10.0.0.2\\\""), std::string::npos) << "quotes escaped\n" << dot;
  EXPECT_NE(dot.find("0->1 [label=\"veth eth0 -> cali1\"]"), std::string::npos) << dot;
}

TEST(DiagReport, SvgThroughGraphviz) {
  char tmpl[] = "/tmp/sarena-diag-svg-XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  absl::Status st = RenderSvg(ToDot(TwoHops()), tmpl);
  ASSERT_TRUE(st.ok()) << st;
  std::string svg = testing::ReadAll(tmpl);
  unlink(tmpl);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("no_route"), std::string::npos);
  // Broken DOT is an error with graphviz's message, not a crash.
  st = RenderSvg("digraph {", "/tmp/sarena-diag-never.svg");
  EXPECT_FALSE(st.ok());
  unlink("/tmp/sarena-diag-never.svg");
}

}  // namespace
}  // namespace sarena::diag
