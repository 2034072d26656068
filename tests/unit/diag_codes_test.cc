// The suspicion codes are one list (libsarena/diag/codes.h): every code a diagnoser source reports
// is in it with a level it allows, every code in it is reported somewhere, and the table in
// docs/diag-snapshot.md is the list verbatim. (Codes reported at run time are checked too: every
// trace the diag unit tests run through TraceLib fails on a code or level the list does not
// allow.)
#include "libsarena/diag/codes.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <bpf/btf.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/lib/test_util.h"

namespace sarena::diag {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SuspicionCodesTest, ListIsSortedUniqueAndComplete) {
  const auto& all = AllSuspicionCodes();
  // The minimum vocabulary alone has 24 (docs/architecture.md "The diagnoser's contract").
  ASSERT_GE(all.size(), 24u);
  for (size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(all[i].code);
    EXPECT_FALSE(all[i].meaning.empty());
    EXPECT_NE(all[i].levels, 0);
    EXPECT_EQ(all[i].levels & kLevelCritical, 0) << "CRITICAL is implied by FATAL";
    if (i > 0) EXPECT_LT(all[i - 1].code, all[i].code) << "sorted and unique";
    EXPECT_EQ(FindSuspicionCode(all[i].code), &all[i]);
  }
  EXPECT_EQ(FindSuspicionCode("no_such_code"), nullptr);
  // docs/architecture.md "The diagnoser's contract": codes are added, never renamed.
  for (const char* code :
       {"no_route", "route_mismatch", "rp_filter_drop", "ip_forward_disabled",
        "iface_forwarding_disabled", "link_down", "link_missing", "mtu_mismatch",
        "service_no_endpoints", "source_range_denied", "external_traffic_policy_local_drop",
        "netfilter_drop", "nat_outgoing_missing", "ippool_not_found", "tunnel_missing",
        "node_address_missing", "endpoint_map_missing", "endpoint_mac_mismatch",
        "program_not_attached", "ttl_exceeded", "policy_route_unexpected", "not_listening",
        "vxlan_fdb_missing", "neighbor_missing"}) {
    EXPECT_NE(FindSuspicionCode(code), nullptr) << code;
  }
}

TEST(SuspicionCodesTest, LevelsFollowTheList) {
  EXPECT_TRUE(CodeAllowsLevel("rp_filter_drop", Level::kFatal));
  EXPECT_TRUE(CodeAllowsLevel("rp_filter_drop", Level::kCritical));  // a failing fan-out branch
  EXPECT_FALSE(CodeAllowsLevel("rp_filter_drop", Level::kInfo));
  EXPECT_TRUE(CodeAllowsLevel("cross_subnet", Level::kInfo));
  EXPECT_FALSE(CodeAllowsLevel("cross_subnet", Level::kCritical));
  EXPECT_FALSE(CodeAllowsLevel("no_such_code", Level::kInfo));
  EXPECT_EQ(LevelsText(kLevelFatal | kLevelWarning | kLevelInfo), "FATAL / WARNING / INFO");
}

// Every literal code passed to Suspect / Drop / AddSuspicion / AddGlobalSuspicion / InfoOnce in
// libsarena/diag/ (any depth) is in the list, with the literal level when the call names one;
// and every code of the list is reported by some source.
TEST(SuspicionCodesTest, EverySourceCodeIsListedAndEveryListedCodeIsUsed) {
  const fs::path root = sarena::testing::SourceDir();
  const std::regex call(
      R"re(\b(Drop|Suspect|AddSuspicion|AddGlobalSuspicion)\(([^;]{0,300}?)"([a-z][a-z_]*)")re");
  // InfoOnce(v, key, code, message): the key is often built from literals ("missing|", ...), so
  // the code is the plain literal argument that follows it.
  const std::regex info_once(R"re(\b(InfoOnce)\(([^;]{0,300}?),\s*"([a-z][a-z_]*)"\s*,)re");
  const std::regex level(R"re(Level::k(Info|Warning|Critical|Fatal)\b)re");
  std::set<std::string> used;
  int calls = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "libsarena/diag")) {
    if (e.path().extension() != ".cc") continue;
    const std::string text = Read(e.path());
    std::vector<std::smatch> matches;
    for (const std::regex* re : {&call, &info_once}) {
      for (auto it = std::sregex_iterator(text.begin(), text.end(), *re);
           it != std::sregex_iterator(); ++it) {
        matches.push_back(*it);
      }
    }
    for (const std::smatch& m : matches) {
      const std::string fn = m[1], args = m[2], code = m[3];
      // For the others the first string literal after the parenthesis is the code only when no
      // other literal precedes it.
      if (fn != "InfoOnce" && args.find('"') != std::string::npos) continue;
      ++calls;
      SCOPED_TRACE(absl::StrCat(e.path().filename().string(), ": ", fn, "(... \"", code, "\""));
      ASSERT_NE(FindSuspicionCode(code), nullptr) << "not in libsarena/diag/codes.h";
      used.insert(code);
      if (fn == "Drop") {
        EXPECT_TRUE(CodeAllowsLevel(code, Level::kFatal));
      }
      for (auto l = std::sregex_iterator(args.begin(), args.end(), level);
           l != std::sregex_iterator(); ++l) {
        const std::string name = (*l)[1];
        Level lv = name == "Info"       ? Level::kInfo
                   : name == "Warning"  ? Level::kWarning
                   : name == "Critical" ? Level::kCritical
                                        : Level::kFatal;
        EXPECT_TRUE(CodeAllowsLevel(code, lv)) << "level " << name;
      }
    }
  }
  EXPECT_GT(calls, 100);
  for (const SuspicionCode& c : AllSuspicionCodes()) {
    EXPECT_TRUE(used.count(std::string(c.code))) << c.code << " is listed but nothing reports it";
  }
}

TEST(SuspicionCodesTest, DocsTableIsTheList) {
  const std::string doc = Read(fs::path(sarena::testing::SourceDir()) / "docs/diag-snapshot.md");
  const std::string table = SuspicionCodesMarkdown();
  EXPECT_NE(doc.find(table), std::string::npos)
      << "docs/diag-snapshot.md must hold `sarena-diag codes -o markdown` verbatim:\n"
      << table;
}

// The drop-reason column names kernel reasons: each is in the running kernel's enum
// skb_drop_reason (read from its BTF, /sys/kernel/btf/vmlinux, as `trace --live` names the drops it
// sees), or in the short list below of names other kernel versions use, each with its source. A
// name in neither would never match a drop, and misleads a reader of the docs table.
TEST(SuspicionCodesTest, DropReasonsAreKernelNames) {
  const std::map<std::string, std::string> other_kernels = {
      {"IP_TTL_EXCEEDED",
       "added upstream after 6.18 (219c6b768ec7 'net: dropreason: add "
       "SKB_DROP_REASON_IP_TTL_EXCEEDED'); ip_forward used IP_INHDR before"},
      {"VXLAN_NO_REMOTE",
       "6.13 (vxlan_xmit's kfree_skb_reason); renamed NO_TX_TARGET in 6.14 (46e0ccfb88f0)"},
  };
  btf* vmlinux = btf__load_vmlinux_btf();
  ASSERT_NE(vmlinux, nullptr) << "no kernel BTF at /sys/kernel/btf/vmlinux";
  std::set<std::string> kernel;
  for (const char* enum_name : {"skb_drop_reason", "skb_drop_reason_core"}) {
    int id = btf__find_by_name_kind(vmlinux, enum_name, BTF_KIND_ENUM);
    if (id <= 0) continue;
    const btf_type* t = btf__type_by_id(vmlinux, id);
    const struct btf_enum* e = btf_enum(t);
    for (int i = 0; i < btf_vlen(t); ++i) {
      absl::string_view name = btf__name_by_offset(vmlinux, e[i].name_off);
      if (absl::ConsumePrefix(&name, "SKB_DROP_REASON_")) kernel.insert(std::string(name));
    }
    break;
  }
  btf__free(vmlinux);
  ASSERT_GT(kernel.size(), 50u) << "enum skb_drop_reason not found in the kernel's BTF";
  std::set<std::string> used_others;
  for (const SuspicionCode& c : AllSuspicionCodes()) {
    for (absl::string_view r : DropReasonsOf(c)) {
      std::string reason(r);
      if (kernel.count(reason)) continue;
      EXPECT_TRUE(other_kernels.count(reason))
          << c.code << " names " << reason
          << ", which this kernel's enum skb_drop_reason does not have and the list of other "
             "kernels' names does not hold";
      used_others.insert(reason);
    }
  }
  for (const auto& [name, source] : other_kernels) {
    EXPECT_TRUE(used_others.count(name) || kernel.count(name))
        << name << " is listed as another kernel's name but no code uses it (" << source << ")";
  }
}

}  // namespace
}  // namespace sarena::diag
