// The sarena plugin (our eBPF datapath), one behaviour per test, on the sarena-node fixture
// (tests/data/cases/_gen/sarena-node.py: sarena_host/sarena_net, lxc veths with their endpoint
// routes, endpoint list, programs, strict rp_filter in conf/all) mutated one fault at a time.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::FindHop;
using testing::FindSuspicion;
using testing::HopOf;
using testing::Scratch;
using testing::Str;
using testing::TraceLib;

constexpr const char* kEndpoints = "nodes/node-a/sarena-endpoints.json";
constexpr const char* kPrograms = "nodes/node-a/sarena-programs.json";

// The host-side veth of a pod, from the fixture's endpoint list.
std::string LxcOf(const std::string& dir, const std::string& pod) {
  std::string text = testing::ReadAll(absl::StrCat(dir, "/", kEndpoints));
  google::protobuf::Value v;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &v).ok());
  for (const auto& e : v.struct_value().fields().at("endpoints").list_value().values()) {
    if (Str(e.struct_value(), "pod_name") == pod) return Str(e.struct_value(), "host_ifname");
  }
  return "";
}

TEST(DiagSarena, HealthyPaths) {
  std::string dir = CaseDir("sarena-node");
  struct Q {
    const char* src;
    const char* dst;
  };
  for (const Q& q : {Q{"node:node-a", "pod:default/pod-a:8080/tcp"},
                     Q{"pod:default/pod-a", "pod:default/pod-b:8080/tcp"},
                     Q{"pod:default/pod-a", "svc:default/api:80/tcp"},
                     Q{"pod:default/pod-a", "node:node-a:22/tcp"}}) {
    auto t = TraceLib(dir, q.src, q.dst);
    ASSERT_TRACED(t);
    EXPECT_EQ(t.plugin, "sarena");
    EXPECT_EQ(t.report.verdict(), "reachable") << q.src << " -> " << q.dst << "\n" << t.text;
    EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  }
}

// Removes pod `ip`'s endpoint route (`<ip>/32 dev lxc...`) from the node's routes.
int RemoveEndpointRoute(Scratch& s, const std::string& ip) {
  return s.RemoveFromList("nodes/node-a/ip-route.json", [&](const google::protobuf::Struct& r) {
    return Str(r, "dst") == ip;
  });
}

TEST(DiagSarena, HostToPodUsesTheEndpointRoute) {
  std::string dir = CaseDir("sarena-node");
  auto t = TraceLib(dir, "node:node-a", "pod:default/pod-a:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Hop* n = FindHop(t.report, "node-a");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->oif(), LxcOf(dir, "pod-a"));
  // The reply enters the host on the pod's lxc veth; the endpoint route is its reverse path,
  // so strict rp_filter passes.
  const v1::Hop* r = FindHop(t.report, "node-a@reply");
  ASSERT_NE(r, nullptr) << t.text;
  EXPECT_EQ(r->iif(), LxcOf(dir, "pod-a"));
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_NE(FindSuspicion(t.report, "rp_filter", "INFO"), nullptr) << "the seed's bug, as context";
}

TEST(DiagSarena, ServiceReplyReturnsThroughTheHost) {
  auto t = TraceLib(CaseDir("sarena-node"), "pod:default/pod-a", "svc:default/api:80/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  const v1::Hop* r = FindHop(t.report, "node-a@reply");
  ASSERT_NE(r, nullptr) << t.text;
  // The backend's reply is not short-circuited to pod-a: it enters the host on the backend's
  // lxc veth (pod-a's request recorded a host flow) and conntrack un-DNATs it.
  EXPECT_EQ(r->iif().rfind("lxc", 0), 0u) << "host flow: the reply crosses conntrack\n" << t.text;
  EXPECT_NE(r->iif(), LxcOf(CaseDir("sarena-node"), "pod-a")) << t.text;
  EXPECT_EQ(r->packet().src(), "10.96.0.80") << "un-DNATed\n" << t.text;
}

TEST(DiagSarena, EndpointRouteMissingWithStrictRpFilter) {
  Scratch s("sarena-node");
  ASSERT_EQ(RemoveEndpointRoute(s, "10.20.0.10"), 1);
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/pod-a:8080/tcp");
  ASSERT_TRACED(t);
  // The request falls back to sarena_host, where from_host delivers it; the reply enters on
  // the lxc veth, whose address is not routed back through it: strict rp_filter drops it.
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* w = FindSuspicion(t.report, "route_mismatch", "WARNING");
  ASSERT_NE(w, nullptr) << t.text;
  EXPECT_NE(w->message().find("endpoint route 10.20.0.10/32"), std::string::npos) << w->message();
  const v1::Suspicion* m = FindSuspicion(t.report, "rp_filter_drop", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->iif(), LxcOf(s.dir(), "pod-a"));
}

TEST(DiagSarena, DestinationEndpointMissing) {
  Scratch s("sarena-node");
  ASSERT_EQ(s.RemoveFromList(
                kEndpoints,
                [](const google::protobuf::Struct& e) { return Str(e, "pod_name") == "pod-b"; }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "endpoint_map_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  EXPECT_NE(m->message().find("10.20.0.11"), std::string::npos) << m->message();
}

TEST(DiagSarena, SourceEndpointMissingIsSpoofed) {
  Scratch s("sarena-node");
  ASSERT_EQ(s.RemoveFromList(
                kEndpoints,
                [](const google::protobuf::Struct& e) { return Str(e, "pod_name") == "pod-a"; }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "endpoint_map_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("spoofed"), std::string::npos) << m->message();
  EXPECT_EQ(HopOf(t.report, m)->iif(), LxcOf(CaseDir("sarena-node"), "pod-a"));
}

TEST(DiagSarena, StalePodMac) {
  Scratch s("sarena-node");
  s.EditJson(kEndpoints, [](google::protobuf::Value* v) {
    for (auto& e : *v->mutable_struct_value()
                        ->mutable_fields()
                        ->at("endpoints")
                        .mutable_list_value()
                        ->mutable_values()) {
      auto& f = *e.mutable_struct_value()->mutable_fields();
      if (f["pod_name"].string_value() == "pod-b")
        f["pod_mac"].set_string_value("02:00:00:00:00:99");
    }
  });
  // Pod to pod: from_container delivers with bpf_redirect_peer, which does not make the pod's
  // kernel look at the destination MAC again — the kernel delivered in the differential suite.
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "endpoint_mac_mismatch", "INFO");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("02:00:00:00:00:99"), std::string::npos) << m->message();
  // from_host's bpf_redirect goes through the veth: the pod drops the frame (PACKET_OTHERHOST);
  // the node -> pod path of EBPF-01 (public_cases_test.cc) shows it at the pod hop.
}

TEST(DiagSarena, StaleIfindex) {
  Scratch s("sarena-node");
  s.EditJson(kEndpoints, [](google::protobuf::Value* v) {
    for (auto& e : *v->mutable_struct_value()
                        ->mutable_fields()
                        ->at("endpoints")
                        .mutable_list_value()
                        ->mutable_values()) {
      auto& f = *e.mutable_struct_value()->mutable_fields();
      if (f["pod_name"].string_value() == "pod-b") f["host_ifindex"].set_number_value(99);
    }
  });
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  ASSERT_NE(FindSuspicion(t.report, "endpoint_ifindex_mismatch", "FATAL"), nullptr) << t.text;
}

TEST(DiagSarena, FromHostNotAttached) {
  Scratch s("sarena-node");
  ASSERT_EQ(s.RemoveFromList(kPrograms,
                             [](const google::protobuf::Struct& p) {
                               return Str(p, "ifname") == "sarena_host";
                             }),
            1);
  // With the endpoint route, host -> pod never meets from_host: still reachable.
  auto ok = TraceLib(s.dir(), "node:node-a", "pod:default/pod-a:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_NE(ok.report.verdict(), "unreachable") << ok.text;
  // Without it the packet needs from_host on sarena_host.
  ASSERT_EQ(RemoveEndpointRoute(s, "10.20.0.10"), 1);
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/pod-a:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "program_not_attached", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("from_host"), std::string::npos);
  EXPECT_EQ(HopOf(t.report, m)->id(), "node-a");
}

// The blog seed's bug: the pod's traffic enters the host on its lxc veth, and strict rp_filter
// (conf/all = 1, max(all, dev)) drops it when the reverse route of the pod IP is not that veth.
// With the endpoint route it is; without from_container the kernel path still works (the
// missing program is reported); without the endpoint route strict rp_filter drops it.
TEST(DiagSarena, FromContainerNotAttachedWithStrictRpFilter) {
  Scratch s("sarena-node");
  std::string lxc = LxcOf(s.dir(), "pod-a");
  ASSERT_EQ(
      s.RemoveFromList(kPrograms,
                       [&](const google::protobuf::Struct& p) { return Str(p, "ifname") == lxc; }),
      1);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "node:node-a:22/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  ASSERT_NE(FindSuspicion(t.report, "program_not_attached", "WARNING"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "rp_filter_drop"), nullptr) << t.text;

  ASSERT_EQ(RemoveEndpointRoute(s, "10.20.0.10"), 1);
  auto strict = TraceLib(s.dir(), "pod:default/pod-a", "node:node-a:22/tcp");
  ASSERT_TRACED(strict);
  EXPECT_EQ(strict.report.verdict(), "unreachable") << strict.text;
  const v1::Suspicion* m = FindSuspicion(strict.report, "rp_filter_drop", "FATAL");
  ASSERT_NE(m, nullptr) << strict.text;
  EXPECT_EQ(HopOf(strict.report, m)->iif(), lxc);

  // rp_filter off everywhere: the kernel path works, the missing pieces are still reported.
  std::string text = testing::ReadAll(s.Path("nodes/node-a/sysctl.txt"));
  s.Write("nodes/node-a/sysctl.txt",
          absl::StrReplaceAll(
              text, {{"rp_filter = 1", "rp_filter = 0"}, {"rp_filter = 2", "rp_filter = 0"}}));
  auto loose = TraceLib(s.dir(), "pod:default/pod-a", "node:node-a:22/tcp");
  ASSERT_TRACED(loose);
  EXPECT_EQ(loose.report.verdict(), "degraded") << loose.text;
  EXPECT_EQ(FindSuspicion(loose.report, "rp_filter_drop"), nullptr) << loose.text;
}

TEST(DiagSarena, PodCidrNotRoutedViaSarenaHost) {
  Scratch s("sarena-node");
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    for (auto& r : *v->mutable_list_value()->mutable_values()) {
      auto& f = *r.mutable_struct_value()->mutable_fields();
      if (f["dst"].string_value() == "10.20.0.0/24") f["dev"].set_string_value("eth0");
    }
  });
  // A pod-CIDR address without a pod: no longer routed to sarena_host.
  auto t = TraceLib(s.dir(), "node:node-a", "10.20.0.99:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_NE(t.report.verdict(), "reachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "route_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("sarena_host"), std::string::npos) << m->message();
}

TEST(DiagSarena, TtlExpiresInLocalDelivery) {
  auto snap = sarena::model::Snapshot::Open(CaseDir("sarena-node"));
  ASSERT_TRUE(snap.ok());
  // pod -> pod with TTL 1: local_delivery (from_container) routes, so it drops.
  auto t = TraceLib(CaseDir("sarena-node"), "pod:default/pod-a", "pod:default/pod-b:8080/tcp",
                    "auto", /*ttl=*/1);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "ttl_exceeded", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "node-a");
}

TEST(DiagSarena, MissingDatapathFilesAreInfo) {
  Scratch s("sarena-node");
  s.Remove(kPrograms);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "file_missing", "INFO");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("sarena-programs.json"), std::string::npos) << m->message();

  Scratch e("sarena-node");
  e.Remove(kEndpoints);
  auto u = TraceLib(e.dir(), "node:node-a", "pod:default/pod-a:8080/tcp");
  ASSERT_TRACED(u);
  EXPECT_EQ(u.plugin, "sarena");  // sarena_host alone identifies the datapath
  EXPECT_EQ(u.report.verdict(), "reachable") << u.text;
  bool named = false;
  for (const auto& sus : u.report.suspicions()) {
    if (sus.code() == "file_missing" &&
        sus.message().find("sarena-endpoints.json") != std::string::npos) {
      named = true;
    }
  }
  EXPECT_TRUE(named) << u.text;
}

}  // namespace
}  // namespace sarena::diag
