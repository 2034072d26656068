// Corrupt or inconsistent snapshot input (docs/diag-snapshot.md): a corrupt file fails the trace
// with an error naming the file, the field and the value, never read as absent; a snapshot that
// loads but contradicts itself is walked and the contradiction is reported at the hop that meets
// it. Each case copies a real fixture (RPF-05, rpf-05-fixed) and corrupts one thing. A file that
// is absent is reported (file_missing, snapshot_incomplete), never taken as evidence
// (libsarena/diag/snapshot_input.h).
#include <set>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using ::testing::HasSubstr;
using testing::CaseDir;
using testing::FindSuspicion;
using testing::HopOf;
using testing::Scratch;
using testing::TraceLib;

constexpr const char* kNodeBSysctl = "nodes/node-b/sysctl.txt";

// RPF-05: node-a -> 10.32.2.7:8080 over ipip, dropped by node-b's strict rp_filter.
TEST(DiagSnapshotInput, UnparseableSysctlFailsTheTraceNamingFileLineKeyValue) {
  struct Case {
    const char* value;
    const char* want;
  };
  for (const Case& c : {Case{"banana", "value 'banana' is not an integer"},
                        Case{"1banana", "value '1banana' is not an integer"},
                        Case{"", "value '' is not an integer"},
                        Case{"1 2", "value '1 2' is not an integer"}}) {
    Scratch s("RPF-05");
    s.SetSysctl(kNodeBSysctl, "net.ipv4.conf.all.rp_filter", c.value);
    auto t = TraceLib(s.dir(), "node:node-a", "10.32.2.7:8080/tcp");
    ASSERT_FALSE(t.status.ok()) << "rp_filter = '" << c.value << "' traced as\n" << t.text;
    EXPECT_EQ(t.status.code(), absl::StatusCode::kInvalidArgument) << t.status;
    std::string msg(t.status.message());
    EXPECT_THAT(msg, HasSubstr("parse nodes/node-b/sysctl.txt: line ")) << msg;
    EXPECT_THAT(msg, HasSubstr(absl::StrCat("key 'net.ipv4.conf.all.rp_filter': ", c.want)))
        << msg;
  }
  // The per-device forwarding flag the walk checks on node-b's ingress device.
  Scratch f("RPF-05");
  f.SetSysctl(kNodeBSysctl, "net.ipv4.conf.tun-nodea.forwarding", "banana");
  auto t = TraceLib(f.dir(), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_FALSE(t.status.ok()) << t.text;
  EXPECT_EQ(t.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status.message()),
              HasSubstr("key 'net.ipv4.conf.tun-nodea.forwarding': value 'banana' is not an "
                        "integer"));
  // A value outside the documented 0-2 that the kernel stores (proc_dointvec) is read as the
  // kernel reads it: rp_filter = max(all, dev) = 3 is not 1, so loose (__fib_validate_source),
  // and loose mode too drops a packet whose ingress device has no address (its last_resort).
  Scratch loose("RPF-05");
  loose.SetSysctl(kNodeBSysctl, "net.ipv4.conf.all.rp_filter", "3");
  auto l = TraceLib(loose.dir(), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_TRACED(l);
  const auto* drop = FindSuspicion(l.report, "rp_filter_drop", "FATAL");
  ASSERT_NE(drop, nullptr) << l.text;
  EXPECT_THAT(drop->message(), HasSubstr("reverse-path filter loose (3)")) << l.text;
  EXPECT_THAT(drop->message(), HasSubstr("has no IPv4 address")) << l.text;
  // A key the model does not interpret stays free-form.
  Scratch free("RPF-05");
  free.SetSysctl(kNodeBSysctl, "net.ipv4.conf.all.log_martians", "banana");
  auto ok = TraceLib(free.dir(), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_NE(FindSuspicion(ok.report, "rp_filter_drop", "FATAL"), nullptr) << ok.text;
}

TEST(DiagSnapshotInput, JsonObjectWithoutItemsIsAnErrorNotAnEmptyList) {
  Scratch s("RPF-05");
  s.Write("nodes/node-b/ip-link.json", R"({"a":1})");
  auto t = TraceLib(s.dir(), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_FALSE(t.status.ok()) << t.text;
  EXPECT_EQ(t.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status.message()),
              HasSubstr("parse nodes/node-b/ip-link.json: (root): expected a JSON array or a "
                        "list object with \"items\", got an object with keys \"a\""));

  // What `kubectl get pods -A -o json > pods.json` leaves when the API refuses.
  Scratch k("RPF-05");
  k.Write("cluster/pods.json",
          R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
              "message":"pods is forbidden: User \"dev\" cannot list resource \"pods\"",
              "reason":"Forbidden","details":{"kind":"pods"},"code":403})");
  auto p = TraceLib(k.dir(), "node:node-a", "pod:default/api:8080/tcp");
  ASSERT_FALSE(p.status.ok()) << p.text;
  EXPECT_EQ(p.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status.message()),
              HasSubstr("parse cluster/pods.json: (root): a kubectl Status object, not a list: "
                        "status 'Failure', message 'pods is forbidden: User \"dev\" cannot list "
                        "resource \"pods\"'"));

  // The empty lists stay empty: "items": [] and kubectl's "items": null.
  for (const char* empty : {R"({"items":[]})", R"({"kind":"List","items":null})", "[]"}) {
    Scratch e("rpf-05-fixed");
    e.Write("cluster/services.json", empty);
    auto r = TraceLib(e.dir(), "node:node-a", "pod:default/api:8080/tcp");
    ASSERT_TRACED(r) << empty;
    EXPECT_EQ(r.report.verdict(), "reachable") << empty << "\n" << r.text;
  }
}

// A second Running pod with api's address (IPAM handed 10.32.2.7 out twice).
void AddTwin(Scratch& s) {
  s.EditJson("cluster/pods.json", [](google::protobuf::Value* v) {
    auto* items = (*v->mutable_struct_value()->mutable_fields())["items"].mutable_list_value();
    google::protobuf::Value twin = items->values(0);
    auto& meta = *(*twin.mutable_struct_value()->mutable_fields())["metadata"].mutable_struct_value();
    (*meta.mutable_fields())["name"].set_string_value("api-twin");
    (*meta.mutable_fields())["uid"].set_string_value("00000000-0000-0000-0000-00000000beef");
    *items->add_values() = twin;
  });
}

TEST(DiagSnapshotInput, DuplicatePodIpIsReportedAtTheDeliveringHop) {
  Scratch s("rpf-05-fixed");
  AddTwin(s);
  // The query names api: the walk reaches api, but the address is not api's alone.
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/api:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* w = FindSuspicion(t.report, "pod_ip_duplicate", "WARNING");
  ASSERT_NE(w, nullptr) << t.text;
  ASSERT_NE(HopOf(t.report, w), nullptr);
  EXPECT_EQ(HopOf(t.report, w)->id(), "default/api") << t.text;
  EXPECT_THAT(w->message(), HasSubstr("10.32.2.7 is the address of 2 live pods: default/api "
                                      "(node node-b, Running), default/api-twin (node node-b, "
                                      "Running)"));
  // The query names the twin: the routes lead to api, so the packet is not delivered where it
  // was sent.
  auto u = TraceLib(s.dir(), "node:node-a", "pod:default/api-twin:8080/tcp");
  ASSERT_TRACED(u);
  const v1::Suspicion* f = FindSuspicion(u.report, "pod_ip_duplicate", "FATAL");
  ASSERT_NE(f, nullptr) << u.text;
  EXPECT_EQ(HopOf(u.report, f)->id(), "default/api") << u.text;
  EXPECT_THAT(f->message(), HasSubstr("not to default/api-twin that the query named"));
  // A finished pod that kept the address in its status is no duplicate.
  Scratch done("rpf-05-fixed");
  AddTwin(done);
  done.EditJson("cluster/pods.json", [](google::protobuf::Value* v) {
    auto* items = (*v->mutable_struct_value()->mutable_fields())["items"].mutable_list_value();
    auto& twin = *items->mutable_values(1)->mutable_struct_value()->mutable_fields();
    (*twin["status"].mutable_struct_value()->mutable_fields())["phase"].set_string_value(
        "Succeeded");
  });
  auto d = TraceLib(done.dir(), "node:node-a", "pod:default/api:8080/tcp");
  ASSERT_TRACED(d);
  EXPECT_EQ(FindSuspicion(d.report, "pod_ip_duplicate"), nullptr) << d.text;
}

TEST(DiagSnapshotInput, RouteToAMissingDeviceIsLinkMissing) {
  Scratch s("rpf-05-fixed");
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    google::protobuf::Value r;
    auto& f = *r.mutable_struct_value()->mutable_fields();
    f["dst"].set_string_value("10.32.2.7");
    f["dev"].set_string_value("ghost0");
    f["scope"].set_string_value("link");
    *v->mutable_list_value()->add_values() = r;
  });
  auto t = TraceLib(s.dir(), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "link_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "node-a") << t.text;
  EXPECT_THAT(m->message(), HasSubstr("route 'unicast 10.32.2.7"));
  EXPECT_THAT(m->message(), HasSubstr(" dev ghost0 table main"));
  EXPECT_THAT(m->message(), HasSubstr("uses device 'ghost0' which does not exist"));
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
}

TEST(DiagSnapshotInput, MissingLinksDoNotProveTheTunnelMissing) {
  Scratch s("rpf-05-fixed");
  s.Remove("nodes/node-b/ip-link.json");
  auto t = TraceLib(s.dir(), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(FindSuspicion(t.report, "tunnel_missing"), nullptr) << t.text;
  const v1::Suspicion* info = FindSuspicion(t.report, "file_missing", "INFO");
  ASSERT_NE(info, nullptr) << t.text;
  EXPECT_THAT(info->message(), HasSubstr("nodes/node-b/ip-link.json missing"));
  const v1::Suspicion* w = FindSuspicion(t.report, "snapshot_incomplete", "WARNING");
  ASSERT_NE(w, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, w)->id(), "node-b") << t.text;
  EXPECT_THAT(w->message(), HasSubstr("cannot check which ipip device on"));
  EXPECT_NE(t.report.verdict(), "unreachable") << t.text;
}


// One file deleted from a real case (what a new user saw, one row each). Without it the trace may
// end earlier, but it concludes nothing the complete snapshot does not: no FATAL, CRITICAL or
// WARNING beyond the complete trace's, except the snapshot_incomplete that ends an unchecked
// path; and the file is named by a file_missing.
struct AbsentRow {
  const char* saw;      // what the deletion used to produce
  const char* fixture;  // tests/data/cases/<fixture>
  const char* remove;   // the deleted file
  const char* src;
  const char* dst;
  bool ends;  // the path ends unchecked: snapshot_incomplete
};

constexpr AbsentRow kAbsentRows[] = {
    {"pod ip-link.json: FATAL netfilter_drop on the reply", "neigh-stale",
     "nodes/node-a/pods/default/server/ip-link.json", "pod:default/server",
     "203.0.113.10:443/tcp", true},
    {"bridge node ip-link.json: an invented routing loop", "bridge-node",
     "nodes/node-a/ip-link.json", "pod:default/client", "pod:default/server:8080/tcp", true},
    {"bridge node ip-link.json: an invented martian", "bridge-node", "nodes/node-a/ip-link.json",
     "node:node-a", "pod:default/client:8080/tcp", true},
    {"RPF-05 node-a ip-link.json: the IPIP tunnel taken for an underlay", "RPF-05",
     "nodes/node-a/ip-link.json", "node:node-a", "10.32.2.7:8080/tcp", true},
    {"pod ip-route.json: FATAL no_route", "neigh-stale",
     "nodes/node-a/pods/default/server/ip-route.json", "pod:default/server",
     "pod:default/client:8080/tcp", true},
    {"node ip-addr.json: FATAL no_route (no source address)", "rpf-05-fixed",
     "nodes/node-a/ip-addr.json", "node:node-a", "203.0.113.10:443/tcp", true},
    {"node ip-addr.json: FATAL no_route (tunnel outer route)", "rpf-05-fixed",
     "nodes/node-a/ip-addr.json", "node:node-a", "pod:default/api:8080/tcp", true},
    {"node ip-addr.json: FATAL route_mismatch on the reply", "rpf-05-fixed",
     "nodes/node-b/ip-addr.json", "node:node-a", "node:node-b:22/tcp", true},
    {"node ip-addr.json: FATAL neighbor_missing (bridge port)", "rpf-05-fixed",
     "nodes/node-b/ip-addr.json", "node:node-a", "pod:default/api:8080/tcp", true},
    {"router ip-addr.json: FATAL neighbor_missing (ARP)", "router-noreturn-fixed",
     "nodes/router/ip-addr.json", "node:node-a", "node:node-c:22/tcp", false},
    {"node ip-addr.json: FATAL netfilter_drop (MASQUERADE)", "neigh-stale",
     "nodes/node-a/ip-addr.json", "pod:default/client", "203.0.113.10:443/tcp", true},
    {"pod ip-addr.json: FATAL route_mismatch", "neigh-stale",
     "nodes/node-a/pods/default/server/ip-addr.json", "pod:default/server",
     "pod:default/client:8080/tcp", true},
    {"endpointslices.json: FATAL service_no_endpoints saying 1 ready", "kp-01-fixed",
     "cluster/endpointslices.json", "pod:web/client", "svc:web/www:80/tcp", true},
    {"node iptables-save.txt: FATAL asymmetric_return on the assumed DNAT", "kp-01-fixed",
     "nodes/node-a/iptables-save.txt", "pod:web/client", "svc:web/www:80/tcp", false},
    {"ippools.json: no file_missing", "calico-ipip", "cluster/ippools.json", "pod:default/client",
     "pod:default/web-2:8080/tcp", false},
    {"ip-rule.json: no file_missing", "rpf-05-fixed", "nodes/node-a/ip-rule.json", "node:node-a",
     "pod:default/api:8080/tcp", false},
    {"sarena node ip-route.json: FATAL no_route for the VXLAN outer packet", "sarena-cluster",
     "nodes/node-a/ip-route.json", "pod:default/pod-a", "pod:default/pod-b:8080/tcp", true},
    {"node ip-addr.json: a martian from the VXLAN outer packet's invented source", "CAL-MTU-01",
     "nodes/node-a/ip-addr.json", "node:node-b", "pod:default/client:8080/tcp", true},
    {"peer ip-link.json: FATAL neighbor_missing on the underlay", "diff-bgp",
     "nodes/bgp1/ip-link.json", "node:bgp2", "203.0.113.10:443/tcp", true},
    {"peer ip-route.json: FATAL no_route at the peer", "diff-bgp", "nodes/bgp1/ip-route.json",
     "pod:diff/ba", "pod:diff/bb:8080/tcp", true},
    {"pod directory: its host veth taken for a cable to the other node's uplink (same ifindex "
     "pair), FATAL neighbor_missing",
     "kind-veth-uplink", "nodes/kind-control-plane/pods/default/web", "pod:default/client",
     "pod:default/web:80/tcp", false},
};

TEST(DiagSnapshotInput, AbsentFileIsReportedNeverEvidence) {
  for (const AbsentRow& r : kAbsentRows) {
    SCOPED_TRACE(absl::StrCat(r.saw, ": ", r.fixture, " without ", r.remove, ", ", r.src, " -> ",
                              r.dst));
    auto whole = TraceLib(CaseDir(r.fixture), r.src, r.dst);
    ASSERT_TRACED(whole);
    std::set<std::tuple<std::string, std::string, std::string>> before;
    for (const auto& sus : whole.report.suspicions()) {
      before.emplace(sus.level(), sus.code(), sus.hop());
    }
    Scratch s(r.fixture);
    s.Remove(r.remove);
    auto t = TraceLib(s.dir(), r.src, r.dst);
    ASSERT_TRACED(t);
    bool named = false;
    for (const auto& sus : t.report.suspicions()) {
      if (sus.code() == "file_missing" && absl::StrContains(sus.message(), r.remove)) named = true;
      if (sus.level() == "INFO" || sus.code() == "snapshot_incomplete") continue;
      EXPECT_TRUE(before.contains({sus.level(), sus.code(), sus.hop()}))
          << sus.level() << " " << sus.code() << " @ " << sus.hop() << ": " << sus.message()
          << " drawn from the absent file\n"
          << t.text;
    }
    EXPECT_TRUE(named) << "no file_missing names " << r.remove << "\n" << t.text;
    if (r.ends) EXPECT_NE(FindSuspicion(t.report, "snapshot_incomplete", "WARNING"), nullptr) << t.text;
  }
}

}  // namespace
}  // namespace sarena::diag
