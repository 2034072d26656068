// The connection-tracking and mark modules of iptables-extensions(8): conntrack/state and
// mark/connmark: their parsing and their evaluation.
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model::internal {

namespace {

constexpr uint32_t kCtSnatBit = 1u << 5;
constexpr uint32_t kCtDnatBit = 1u << 6;

constexpr uint32_t CtBit(CtState s) { return 1u << static_cast<int>(s); }

constexpr NamedBits kCtStates[] = {
    {"NEW", CtBit(CtState::kNew)},           {"ESTABLISHED", CtBit(CtState::kEstablished)},
    {"RELATED", CtBit(CtState::kRelated)},   {"INVALID", CtBit(CtState::kInvalid)},
    {"UNTRACKED", CtBit(CtState::kUntracked)}, {"SNAT", kCtSnatBit},
    {"DNAT", kCtDnatBit},
};

uint32_t CtStateBits(absl::string_view list, bool* ok) {
  return NameListBits(list, kCtStates, ok);
}

}  // namespace

absl::Status ParseMarkModule(absl::string_view mod, const std::vector<Opt>& opts,
                             absl::string_view span, IptRule* rule) {
  MatchKind kind = mod == "mark" ? MatchKind::kMark : MatchKind::kConnmark;
  return ParseOptionMatches(mod, opts, span, 0, rule, [kind](const Opt& o, Match* m) {
    if (o.name != "--mark") return OptParse::kUnknown;
    m->kind = kind;
    if (!ParseMarkMask(FirstValue(o), &m->a, &m->b, 0xffffffffu)) return OptParse::kBad;
    return OptParse::kKnown;
  });
}

absl::Status ParseConntrackModule(absl::string_view mod, const std::vector<Opt>& opts,
                                  absl::string_view span, IptRule* rule) {
  return ParseOptionMatches(mod, opts, span, 0, rule, [](const Opt& o, Match* m) {
    if (o.name != "--ctstate" && o.name != "--state") return OptParse::kUnknown;
    bool ok;
    m->kind = MatchKind::kCtState;
    m->a = CtStateBits(FirstValue(o), &ok);
    return ok ? OptParse::kKnown : OptParse::kBad;
  });
}

Tri EvalConntrackMatch(const Match& m, const MatchInput& in) {
  const Packet& p = in.packet;
  bool r = false;
  switch (m.kind) {
    case MatchKind::kMark: r = (p.mark & m.b) == m.a; break;
    case MatchKind::kConnmark: r = (p.ct_mark & m.b) == m.a; break;
    case MatchKind::kCtState: {
      uint32_t bit = 1u << static_cast<int>(p.ct_state);
      r = (m.a & bit) != 0;
      if (!r && (m.a & kCtSnatBit) && in.out.snat) r = true;
      if (!r && (m.a & kCtDnatBit) && in.out.dnat) r = true;
      break;
    }
    default: break;
  }
  return Decided(m, r);
}

}  // namespace sarena::model::internal
