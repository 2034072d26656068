// The protocol modules of iptables-extensions(8): tcp/udp/sctp/udplite (ports, TCP flags),
// multiport and icmp: their parsing and their evaluation.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model::internal {

namespace {

constexpr NamedBits kTcpFlags[] = {
    {"FIN", 0x01}, {"SYN", 0x02}, {"RST", 0x04}, {"PSH", 0x08},
    {"ACK", 0x10}, {"URG", 0x20}, {"ALL", 0x3f}, {"NONE", 0},
};

uint32_t TcpFlagBits(absl::string_view list, bool* ok) {
  return NameListBits(list, kTcpFlags, ok);
}

}  // namespace

absl::Status ParseProtoModule(absl::string_view mod, const std::vector<Opt>& opts,
                              absl::string_view span, IptRule* rule) {
  uint8_t p = mod == "tcp" ? kProtoTcp : mod == "udp" ? kProtoUdp : mod == "sctp" ? kProtoSctp : 136;
  if (opts.empty()) {
    // "-m tcp" alone only restates the protocol.
    Match m;
    m.kind = MatchKind::kProto;
    m.a = p;
    m.text = span;
    rule->matches.push_back(std::move(m));
  }
  return ParseOptionMatches(mod, opts, span, p, rule, [](const Opt& o, Match* m) {
    if (o.name == "--dport" || o.name == "--destination-port" || o.name == "--sport" ||
        o.name == "--source-port") {
      uint16_t lo, hi;
      if (!ParsePortRange(FirstValue(o), &lo, &hi)) return OptParse::kBad;
      m->kind = (o.name == "--dport" || o.name == "--destination-port") ? MatchKind::kDport
                                                                         : MatchKind::kSport;
      m->a = lo;
      m->b = hi;
    } else if (o.name == "--tcp-flags" && o.values.size() == 2) {
      bool ok1, ok2;
      m->kind = MatchKind::kTcpFlags;
      m->a = TcpFlagBits(o.values[0], &ok1);
      m->b = TcpFlagBits(o.values[1], &ok2);
      if (!ok1 || !ok2) return OptParse::kBad;
    } else if (o.name == "--syn") {
      m->kind = MatchKind::kTcpFlags;
      m->a = 0x17;  // FIN,SYN,RST,ACK
      m->b = 0x02;  // SYN
    } else {
      return OptParse::kUnknown;
    }
    return OptParse::kKnown;
  });
}

absl::Status ParseMultiportModule(absl::string_view mod, const std::vector<Opt>& opts,
                                  absl::string_view span, IptRule* rule) {
  return ParseOptionMatches(mod, opts, span, 0, rule, [](const Opt& o, Match* m) {
    if (o.name != "--dports" && o.name != "--destination-ports" && o.name != "--sports" &&
        o.name != "--source-ports" && o.name != "--ports") {
      return OptParse::kUnknown;
    }
    m->kind = MatchKind::kMultiport;
    m->flags = (o.name == "--sports" || o.name == "--source-ports") ? 0
               : (o.name == "--ports")                               ? 2
                                                                     : 1;
    for (absl::string_view part : absl::StrSplit(FirstValue(o), ',')) {
      uint16_t lo, hi;
      if (!ParsePortRange(part, &lo, &hi)) return OptParse::kBad;
      m->ranges.emplace_back(lo, hi);
    }
    return OptParse::kKnown;
  });
}

absl::Status ParseIcmpModule(absl::string_view mod, const std::vector<Opt>& opts,
                             absl::string_view span, IptRule* rule) {
  return ParseOptionMatches(mod, opts, span, 0, rule, [](const Opt& o, Match* m) {
    std::string v = absl::AsciiStrToLower(FirstValue(o));
    if (o.name != "--icmp-type" || !(v == "any" || v == "echo-request" || v == "8" ||
                                     absl::StartsWith(v, "8/"))) {
      return OptParse::kUnknown;
    }
    m->kind = MatchKind::kIcmpType;
    m->a = v == "any" ? 255 : 8;
    return OptParse::kKnown;
  });
}

Tri EvalPortMatch(const Match& m, const MatchInput& in) {
  const Packet& p = in.packet;
  bool r = false;
  switch (m.kind) {
    case MatchKind::kSport:
    case MatchKind::kDport: {
      if (p.proto != m.proto) return Tri::kNo;  // the protocol module never matches others
      uint16_t port = m.kind == MatchKind::kSport ? p.sport : p.dport;
      r = port >= m.a && port <= m.b;
      break;
    }
    case MatchKind::kTcpFlags: {
      if (p.proto != kProtoTcp) return Tri::kNo;
      uint32_t flags = p.tcp_flags ? p.tcp_flags
                                   : p.ct_state == CtState::kNew ? 0x02 : 0x10;  // SYN, else ACK
      r = (flags & m.a) == m.b;
      break;
    }
    case MatchKind::kMultiport: {
      if (p.proto != kProtoTcp && p.proto != kProtoUdp && p.proto != kProtoSctp) return Tri::kNo;
      for (const auto& [lo, hi] : m.ranges) {
        if ((m.flags != 1 && p.sport >= lo && p.sport <= hi) ||
            (m.flags != 0 && p.dport >= lo && p.dport <= hi)) {
          r = true;
          break;
        }
      }
      break;
    }
    case MatchKind::kIcmpType:
      if (p.proto != kProtoIcmp) return Tri::kNo;
      r = true;  // modelled ICMP packets are echo requests
      break;
    default: break;
  }
  return Decided(m, r);
}

}  // namespace sarena::model::internal
