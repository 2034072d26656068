// The set module of iptables-extensions(8) (`-m set --match-set NAME src,dst`): its parsing and
// its evaluation against the namespace's IP sets (`ipset save`, libsarena/model/ipset.h).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model::internal {

absl::Status ParseSetModule(absl::string_view mod, const std::vector<Opt>& opts,
                            absl::string_view span, IptRule* rule) {
  return ParseOptionMatches(mod, opts, span, 0, rule, [](const Opt& o, Match* m) {
    if (o.name == "--update-counters" || o.name == "--update-subcounters") {
      return OptParse::kSkip;  // counters never change the verdict
    }
    if ((o.name != "--match-set" && o.name != "--set") || o.values.size() != 2) {
      return OptParse::kUnknown;
    }
    m->kind = MatchKind::kSet;
    m->name = o.values[0];
    std::vector<absl::string_view> dirs = absl::StrSplit(o.values[1], ',');
    if (dirs.empty() || dirs.size() > 6) return OptParse::kBad;
    m->a = static_cast<uint32_t>(dirs.size());
    for (size_t d = 0; d < dirs.size(); ++d) {
      if (dirs[d] == "src") m->b |= 1u << d;
      else if (dirs[d] != "dst") return OptParse::kBad;
    }
    return OptParse::kKnown;
  });
}

Tri EvalSetMatch(const Match& m, const MatchInput& in) {
  const Ipsets* sets = in.ctx.ipsets != nullptr ? in.ctx.ipsets : in.ipsets;
  if (sets == nullptr) {
    *in.why = "ipset contents unknown (no ipset-save.txt for this network namespace)";
    *in.note_kind = NfNote::Kind::kUnknownMatch;
    return Tri::kFork;
  }
  std::vector<bool> flags(m.a);
  for (uint32_t d = 0; d < m.a; ++d) flags[d] = (m.b >> d) & 1;
  std::optional<bool> t = sets->Test(m.name, flags, in.packet);
  if (!t.has_value()) {
    *in.why = absl::StrCat("set '", m.name, "' is not in ipset-save.txt or its type (",
                           sets->Type(m.name), ") is not modelled");
    *in.note_kind = NfNote::Kind::kUnknownMatch;
    return Tri::kFork;
  }
  return Decided(m, *t);
}

}  // namespace sarena::model::internal
