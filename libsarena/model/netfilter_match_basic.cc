// The basic matches of iptables(8) (-s/-d, -i/-o, -p, -f) and the address-shaped modules of
// iptables-extensions(8) (iprange, pkttype): their parsing and their evaluation.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/model/netfilter_rules.h"
#include "libsarena/model/netstack.h"
#include "libsarena/net/ip.h"

namespace sarena::model::internal {

absl::Status ParseAddressOption(absl::string_view opt, absl::string_view value, bool invert,
                                absl::string_view span, IptRule* rule) {
  Match m;
  m.kind = (opt == "-s" || opt == "--source") ? MatchKind::kSrc : MatchKind::kDst;
  m.invert = invert;
  if (!ParseAddrMask(value, &m.a, &m.b)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid address '", value, "' for ", opt));
  }
  m.text = span;
  rule->matches.push_back(std::move(m));
  return absl::OkStatus();
}

void ParseInterfaceOption(absl::string_view opt, absl::string_view value, bool invert,
                          absl::string_view span, IptRule* rule) {
  Match m;
  m.kind = (opt == "-i" || opt == "--in-interface") ? MatchKind::kIif : MatchKind::kOif;
  m.invert = invert;
  m.name = value;
  m.text = span;
  rule->matches.push_back(std::move(m));
}

absl::StatusOr<uint8_t> ParseProtocolOption(absl::string_view value, bool invert,
                                            absl::string_view span, IptRule* rule) {
  auto p = ParseProto(value, "protocol");
  if (!p.ok()) return p.status();
  if (*p != 0) {
    Match m;
    m.kind = MatchKind::kProto;
    m.invert = invert;
    m.a = *p;
    m.text = span;
    rule->matches.push_back(std::move(m));
  }
  return *p;
}

void ParseFragmentOption(bool invert, absl::string_view span, IptRule* rule) {
  Match m;
  m.kind = MatchKind::kFragment;
  m.invert = invert;
  m.text = span;
  rule->matches.push_back(std::move(m));
}

absl::Status ParseIprangeModule(absl::string_view mod, const std::vector<Opt>& opts,
                                absl::string_view span, IptRule* rule) {
  return ParseOptionMatches(mod, opts, span, 0, rule, [](const Opt& o, Match* m) {
    if (o.name != "--src-range" && o.name != "--dst-range") return OptParse::kUnknown;
    m->kind = o.name == "--src-range" ? MatchKind::kSrcRange : MatchKind::kDstRange;
    absl::string_view v = FirstValue(o);
    size_t dash = v.find('-');
    auto lo = net::ParseIpv4(v.substr(0, dash));
    auto hi = dash == absl::string_view::npos ? lo : net::ParseIpv4(v.substr(dash + 1));
    if (!lo.ok() || !hi.ok()) return OptParse::kBad;
    m->a = lo->to_uint();
    m->b = hi->to_uint();
    return OptParse::kKnown;
  });
}

absl::Status ParsePkttypeModule(absl::string_view mod, const std::vector<Opt>& opts,
                                absl::string_view span, IptRule* rule) {
  return ParseOptionMatches(mod, opts, span, 0, rule, [](const Opt& o, Match* m) {
    std::string v = absl::AsciiStrToLower(FirstValue(o));
    if (o.name != "--pkt-type" || (v != "unicast" && v != "broadcast" && v != "multicast")) {
      return OptParse::kUnknown;
    }
    m->kind = MatchKind::kPktType;
    m->a = v == "unicast" ? 0 : v == "broadcast" ? 1 : 2;
    return OptParse::kKnown;
  });
}

namespace {

bool IfaceMatches(absl::string_view pattern, absl::string_view name) {
  if (!pattern.empty() && pattern.back() == '+') {
    return absl::StartsWith(name, pattern.substr(0, pattern.size() - 1));
  }
  return pattern == name;
}

// 0 unicast, 1 broadcast, 2 multicast.
uint32_t PacketType(const Packet& p, const NfContext& ctx) {
  uint32_t d = p.dst.to_uint();
  uint32_t type = (d >> 28) == 0xe ? 2 : d == 0xffffffffu ? 1 : 0;
  if (ctx.netstack != nullptr && type == 0 &&
      ctx.netstack->AddressType(p.dst) == RouteType::kBroadcast) {
    type = 1;
  }
  return type;
}

}  // namespace

Tri EvalBasicMatch(const Match& m, const MatchInput& in) {
  const Packet& p = in.packet;
  bool r = false;
  switch (m.kind) {
    case MatchKind::kSrc: r = (p.src.to_uint() & m.b) == m.a; break;
    case MatchKind::kDst: r = (p.dst.to_uint() & m.b) == m.a; break;
    case MatchKind::kIif: r = IfaceMatches(m.name, in.ctx.iif); break;
    case MatchKind::kOif: r = IfaceMatches(m.name, in.ctx.oif); break;
    case MatchKind::kProto: r = p.proto == m.a; break;
    case MatchKind::kFragment: r = false; break;  // modelled packets are never fragments
    case MatchKind::kSrcRange: r = p.src.to_uint() >= m.a && p.src.to_uint() <= m.b; break;
    case MatchKind::kDstRange: r = p.dst.to_uint() >= m.a && p.dst.to_uint() <= m.b; break;
    case MatchKind::kPktType: r = PacketType(p, in.ctx) == m.a; break;
    default: break;
  }
  return Decided(m, r);
}

}  // namespace sarena::model::internal
