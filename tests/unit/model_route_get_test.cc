// The netstack model against the real kernel: tests/data/model/route-get holds the `ip -j` state
// of a namespace built by gen.sh (policy rules with not/fwmark/iif/goto/suppress/unreachable,
// tables main/77/local, blackhole/unreachable/prohibit/throw routes, a secondary address, a
// link-scope address, rp_filter 1 on eth0 and the cali veth and 2 on br0) and the kernel's own
// `ip -j route get` answer for every query in queries.txt. Each answer must be reproduced:
// output device, gateway, source address, route type, table, and the errno of failures
// (rp_filter / martian drops included).
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "libsarena/model/json.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

std::string Dir() { return sarena::testing::SourceDir() + "/tests/data/model/route-get"; }

Netstack Load() {
  NetnsState st;
  absl::Status s = LoadNetnsDir(Dir(), "route-get", /*with_iptables=*/false, &st);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(st.netstack);
}

int ErrnoOf(absl::string_view msg) {
  if (msg == "Invalid argument") return EINVAL;
  if (msg == "No route to host") return EHOSTUNREACH;
  if (msg == "Permission denied") return EACCES;
  if (msg == "Network is unreachable") return ENETUNREACH;
  return -1;
}

// The errno `ip route get ... iif` reports for a model drop (Linux 6.x reports martian and
// rp_filter drops as EINVAL).
int ErrnoOf(const InputResult& r) {
  switch (r.drop) {
    case InputDrop::kRpFilter:
    case InputDrop::kMartianSource:
    case InputDrop::kMartianDestination:
    case InputDrop::kBlackhole:
      return EINVAL;
    case InputDrop::kProhibit: return EACCES;
    case InputDrop::kForwardingDisabled: return EHOSTUNREACH;
    case InputDrop::kUnreachable:
    case InputDrop::kNoRoute:
      return r.route.error;
    default: return 0;
  }
}

TEST(RouteGetAgainstKernel, EveryRecordedAnswerIsReproduced) {
  Netstack ns = Load();
  std::ifstream in(Dir() + "/kernel-route-get.txt");
  ASSERT_TRUE(in.good());
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    size_t arrow = line.find(" => ");
    ASSERT_NE(arrow, std::string::npos) << line;
    std::string query = line.substr(0, arrow);
    std::string answer = line.substr(arrow + 4);
    SCOPED_TRACE(line);
    std::istringstream is(query);
    std::string dst, k, v, iif, oif;
    is >> dst;
    Flow f;
    f.dst = net::Ipv4::from_string(dst);
    while (is >> k >> v) {
      if (k == "from") f.src = net::Ipv4::from_string(v);
      if (k == "iif") iif = v;
      if (k == "oif") oif = v;
      if (k == "mark") f.mark = static_cast<uint32_t>(std::stoul(v, nullptr, 0));
    }
    f.iif = iif;
    f.oif = oif;
    const std::string kErr = "RTNETLINK answers: ";
    if (answer.rfind(kErr, 0) == 0) {
      int want = ErrnoOf(answer.substr(kErr.size()));
      ASSERT_NE(want, -1);
      if (!iif.empty()) {
        InputResult r = ns.RouteInput(f);
        EXPECT_EQ(r.decision, InputDecision::kDrop);
        EXPECT_EQ(ErrnoOf(r), want) << ToString(r.drop) << ": " << r.detail;
      } else {
        EXPECT_EQ(ns.RouteOutput(f).error, want);
      }
      ++checked;
      continue;
    }
    auto doc = JsonDoc::Parse(answer, "kernel-route-get.txt");
    ASSERT_TRUE(doc.ok()) << doc.status();
    const JsonValue& k0 = doc->root()[0];
    auto str = [&](const char* key) {
      const JsonValue* x = k0.Find(key);
      return x ? std::string(x->str()) : std::string();
    };
    std::string type = str("type");
    RouteResult r;
    if (!iif.empty()) {
      InputResult ir = ns.RouteInput(f);
      ASSERT_NE(ir.decision, InputDecision::kDrop) << ToString(ir.drop) << ": " << ir.detail;
      EXPECT_EQ(ir.decision, type == "local" ? InputDecision::kLocal : InputDecision::kForward);
      r = ir.route;
    } else {
      r = ns.RouteOutput(f);
      ASSERT_TRUE(r.ok()) << r.ToString();
      if (!str("prefsrc").empty()) {
        ASSERT_TRUE(r.prefsrc.has_value());
        EXPECT_EQ(r.prefsrc->to_string(), str("prefsrc"));
      }
    }
    EXPECT_EQ(std::string(ToString(r.type)), type.empty() ? "unicast" : type);
    EXPECT_EQ(r.oif, str("dev"));
    EXPECT_EQ(r.gateway ? r.gateway->to_string() : std::string(), str("gateway"));
    if (!str("table").empty()) EXPECT_EQ(TableName(r.table), str("table"));
    ++checked;
  }
  EXPECT_EQ(checked, 35);
}

}  // namespace
}  // namespace sarena::model
