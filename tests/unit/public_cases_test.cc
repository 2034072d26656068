// The public failure cases of ../shared/cases/public-cases.md, each a snapshot directory under
// tests/data/cases/<ID>/ (generated from real network namespaces by tests/data/cases/_gen/), run
// through the REAL sarena-diag binary with -o json. Each asserts the verdict, the hop and the
// suspicion code, and that the repaired variant (<id>-fixed) of the same topology is reachable,
// so a tool that always says "unreachable" fails.
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/diag/report.pb.h"
#include "tests/lib/test_util.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::FindHop;
using testing::FindSuspicion;
using testing::HopOf;

struct BinRun {
  int exit_code = -1;
  std::string out, err;
  v1::Report report;
};

// Runs `sarena-diag trace ... -o json` and parses stdout strictly (unknown keys fail), which also
// checks the JSON contract's key names.
BinRun TraceBinary(absl::string_view dir, absl::string_view src, absl::string_view dst) {
  BinRun r;
  auto res = sarena::testing::Run(absl::StrCat(testing::DiagBinary(), " trace --snapshot '", dir,
                                               "' --src '", src, "' --dst '", dst, "' -o json"));
  r.exit_code = res.exit_code;
  r.out = res.out;
  r.err = res.err;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(r.out, &r.report, opts);
  EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << r.out;
  return r;
}

std::string Dump(const BinRun& r) { return absl::StrCat(r.out, "\nstderr: ", r.err); }

// RPF-05: node-a -> api on node-b over IPIP across subnets; node-b's strict rp_filter drops the
// decapsulated packet on tun-nodea (no policy route back through the tunnel).
TEST(PublicCases, Rpf05) {
  BinRun r = TraceBinary(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_EQ(r.report.verdict(), "unreachable") << Dump(r);
  const v1::Suspicion* s = FindSuspicion(r.report, "rp_filter_drop", "FATAL");
  ASSERT_NE(s, nullptr) << Dump(r);
  const v1::Hop* h = HopOf(r.report, s);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->kind(), "node");
  EXPECT_EQ(h->node(), "node-b");
  EXPECT_EQ(h->iif(), "tun-nodea");
  EXPECT_EQ(h->action(), "drop");
  EXPECT_EQ(h->packet().src(), "192.168.10.10");
  EXPECT_EQ(h->packet().dst(), "10.32.2.7");

  BinRun fixed = TraceBinary(CaseDir("rpf-05-fixed"), "node:node-a", "10.32.2.7:8080/tcp");
  ASSERT_EQ(fixed.exit_code, 0);
  EXPECT_EQ(fixed.report.verdict(), "reachable") << Dump(fixed);
}

// CAL-MTU-01: tunl0 1480 over an eth0 of 1460: full-size packets die after encapsulation, on
// node-a's egress for the request and node-b's egress for the response.
TEST(PublicCases, CalMtu01) {
  BinRun r = TraceBinary(CaseDir("CAL-MTU-01"), "pod:default/client", "10.65.2.8:8080/tcp");
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_EQ(r.report.verdict(), "degraded") << Dump(r);
  bool node_a = false, node_b = false;
  for (const auto& s : r.report.suspicions()) {
    if (s.code() != "mtu_mismatch" || s.level() != "CRITICAL") continue;
    const v1::Hop* h = FindHop(r.report, s.hop());
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->oif(), "tunl0");
    if (h->node() == "node-a") node_a = true;
    if (h->node() == "node-b") node_b = true;
  }
  EXPECT_TRUE(node_a) << "request direction (node-a egress)\n" << Dump(r);
  EXPECT_TRUE(node_b) << "response direction (node-b egress)\n" << Dump(r);
  EXPECT_EQ(FindSuspicion(r.report, "mtu_mismatch", "FATAL"), nullptr);

  BinRun fixed =
      TraceBinary(CaseDir("cal-mtu-01-fixed"), "pod:default/client", "10.65.2.8:8080/tcp");
  EXPECT_EQ(fixed.report.verdict(), "reachable") << Dump(fixed);
}

// CAL-ANNOT-01: node-c lost projectcalico.org/IPv4Address; node-a has no route for its block and
// hands the packet to the LAN gateway.
TEST(PublicCases, CalAnnot01) {
  BinRun r = TraceBinary(CaseDir("CAL-ANNOT-01"), "pod:data/app", "10.70.9.4:5432/tcp");
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_EQ(r.report.verdict(), "unreachable") << Dump(r);
  for (const char* code : {"node_address_missing", "route_mismatch"}) {
    const v1::Suspicion* s = FindSuspicion(r.report, code, "FATAL");
    ASSERT_NE(s, nullptr) << code << "\n" << Dump(r);
    const v1::Hop* h = HopOf(r.report, s);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->node(), "node-a") << code;
    EXPECT_EQ(h->kind(), "node") << code;
  }
  EXPECT_NE(FindSuspicion(r.report, "node_address_missing")->message().find("node-c"),
            std::string::npos);

  BinRun fixed = TraceBinary(CaseDir("cal-annot-01-fixed"), "pod:data/app", "10.70.9.4:5432/tcp");
  EXPECT_EQ(fixed.report.verdict(), "reachable") << Dump(fixed);
}

// FWD-02: conf.eth0.forwarding=0; the request (ingress cni0) passes, the SYN-ACK (ingress eth0,
// un-NATed to the pod) is not forwarded.
TEST(PublicCases, Fwd02) {
  BinRun r = TraceBinary(CaseDir("FWD-02"), "pod:default/client", "203.0.113.44:443/tcp");
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_EQ(r.report.verdict(), "unreachable") << Dump(r);
  const v1::Suspicion* s = FindSuspicion(r.report, "iface_forwarding_disabled", "FATAL");
  ASSERT_NE(s, nullptr) << Dump(r);
  const v1::Hop* h = HopOf(r.report, s);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->node(), "node-a");
  EXPECT_EQ(h->iif(), "eth0");
  // The reply, already un-NATed back to the pod.
  EXPECT_EQ(h->packet().src(), "203.0.113.44");
  EXPECT_EQ(h->packet().dst(), "10.244.0.9");
  EXPECT_EQ(FindSuspicion(r.report, "ip_forward_disabled"), nullptr);

  BinRun fixed = TraceBinary(CaseDir("fwd-02-fixed"), "pod:default/client", "203.0.113.44:443/tcp");
  EXPECT_EQ(fixed.report.verdict(), "reachable") << Dump(fixed);
}

// KP-01: a Service whose selector matches nothing.
TEST(PublicCases, Kp01) {
  BinRun r = TraceBinary(CaseDir("KP-01"), "pod:web/client", "10.96.120.40:80/tcp");
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_EQ(r.report.verdict(), "unreachable") << Dump(r);
  const v1::Suspicion* s = FindSuspicion(r.report, "service_no_endpoints", "FATAL");
  ASSERT_NE(s, nullptr) << Dump(r);
  const v1::Hop* h = HopOf(r.report, s);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->node(), "node-a");
  EXPECT_EQ(h->kind(), "service");
  EXPECT_NE(s->message().find("app=www"), std::string::npos) << s->message();
  // How it fails: nothing rejects it on the FORWARD path (the client hangs).
  const v1::Suspicion* how = FindSuspicion(r.report, "netfilter_drop", "INFO");
  ASSERT_NE(how, nullptr) << Dump(r);
  EXPECT_NE(how->message().find("FORWARD"), std::string::npos) << how->message();

  BinRun fixed = TraceBinary(CaseDir("kp-01-fixed"), "pod:web/client", "10.96.120.40:80/tcp");
  EXPECT_EQ(fixed.report.verdict(), "reachable") << Dump(fixed);
  // Same Service by name.
  BinRun by_name = TraceBinary(CaseDir("KP-01"), "pod:web/client", "svc:web/www:80/tcp");
  EXPECT_EQ(by_name.report.verdict(), "unreachable");
  EXPECT_NE(FindSuspicion(by_name.report, "service_no_endpoints", "FATAL"), nullptr);
}

// EBPF-01: the recorded endpoint MAC is no longer the pod's; the pod drops the redirected frame.
TEST(PublicCases, Ebpf01) {
  BinRun r = TraceBinary(CaseDir("EBPF-01"), "node:node-a", "10.20.0.77:80/tcp");
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_EQ(r.report.verdict(), "unreachable") << Dump(r);
  const v1::Suspicion* s = FindSuspicion(r.report, "endpoint_mac_mismatch", "FATAL");
  ASSERT_NE(s, nullptr) << Dump(r);
  const v1::Hop* h = HopOf(r.report, s);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->kind(), "pod");
  EXPECT_EQ(h->node(), "node-a");
  EXPECT_EQ(h->iif(), "eth0");
  EXPECT_EQ(h->action(), "drop");
  EXPECT_NE(s->message().find("52:54:aa:10:00:02"), std::string::npos) << s->message();
  EXPECT_NE(s->message().find("9e:31:c4:55:17:08"), std::string::npos) << s->message();

  BinRun fixed = TraceBinary(CaseDir("ebpf-01-fixed"), "node:node-a", "10.20.0.77:80/tcp");
  EXPECT_EQ(fixed.report.verdict(), "reachable") << Dump(fixed);
}

}  // namespace
}  // namespace sarena::diag
