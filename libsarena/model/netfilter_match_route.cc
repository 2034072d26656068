// The modules of iptables-extensions(8) that ask the node's routes: addrtype and rpfilter: their
// parsing and their evaluation (through the Netstack; without one they cannot be decided).
#include "libsarena/model/netfilter_rules.h"
#include "libsarena/model/netstack.h"

namespace sarena::model::internal {

namespace {

constexpr uint32_t TypeBit(RouteType t) { return 1u << static_cast<uint32_t>(t); }

constexpr NamedBits kAddrTypes[] = {
    {"UNSPEC", TypeBit(RouteType::kUnspec)},
    {"UNICAST", TypeBit(RouteType::kUnicast)},
    {"LOCAL", TypeBit(RouteType::kLocal)},
    {"BROADCAST", TypeBit(RouteType::kBroadcast)},
    {"ANYCAST", TypeBit(RouteType::kAnycast)},
    {"MULTICAST", TypeBit(RouteType::kMulticast)},
    {"BLACKHOLE", TypeBit(RouteType::kBlackhole)},
    {"UNREACHABLE", TypeBit(RouteType::kUnreachable)},
    {"PROHIBIT", TypeBit(RouteType::kProhibit)},
    {"THROW", TypeBit(RouteType::kThrow)},
    {"NAT", TypeBit(RouteType::kNat)},
    {"XRESOLVE", TypeBit(RouteType::kXresolve)},
};

uint32_t AddrTypeBits(absl::string_view list, bool* ok) {
  return NameListBits(list, kAddrTypes, ok);
}

}  // namespace

absl::Status ParseAddrtypeModule(absl::string_view mod, const std::vector<Opt>& opts,
                                 absl::string_view span, IptRule* rule) {
  uint32_t limit = 0;
  for (const Opt& o : opts) {
    if (o.name == "--limit-iface-in") limit |= 1;
    if (o.name == "--limit-iface-out") limit |= 2;
  }
  return ParseOptionMatches(mod, opts, span, 0, rule, [limit](const Opt& o, Match* m) {
    if (o.name == "--limit-iface-in" || o.name == "--limit-iface-out") return OptParse::kSkip;
    if (o.name != "--src-type" && o.name != "--dst-type") return OptParse::kUnknown;
    bool ok;
    m->kind = o.name == "--src-type" ? MatchKind::kSrcType : MatchKind::kDstType;
    m->a = AddrTypeBits(FirstValue(o), &ok);
    m->flags = limit;
    return ok ? OptParse::kKnown : OptParse::kBad;
  });
}

absl::Status ParseRpfilterModule(absl::string_view /*mod*/, const std::vector<Opt>& opts,
                                 absl::string_view span, IptRule* rule) {
  Match m;
  m.kind = MatchKind::kRpfilter;
  m.text = span;
  for (const Opt& o : opts) {
    if (o.name == "--loose") m.flags |= 1;
    else if (o.name == "--validmark") m.flags |= 2;
    else if (o.name == "--accept-local") m.flags |= 4;
    else if (o.name == "--invert") m.invert = !m.invert;
    else m.kind = MatchKind::kUnknown;
  }
  rule->matches.push_back(std::move(m));
  return absl::OkStatus();
}

Tri EvalRouteMatch(const Match& m, const MatchInput& in) {
  const Packet& p = in.packet;
  const NfContext& ctx = in.ctx;
  bool r = false;
  switch (m.kind) {
    case MatchKind::kSrcType:
    case MatchKind::kDstType: {
      if (ctx.netstack == nullptr) {
        *in.why = "addrtype needs the node's routes (no netstack given)";
        *in.note_kind = NfNote::Kind::kNeedsNetstack;
        return Tri::kFork;
      }
      absl::string_view dev;
      if (m.flags & 1) dev = ctx.iif;
      if (m.flags & 2) dev = ctx.oif;
      RouteType t = ctx.netstack->AddressType(m.kind == MatchKind::kSrcType ? p.src : p.dst, dev);
      r = (m.a & (1u << static_cast<uint32_t>(t))) != 0;
      break;
    }
    case MatchKind::kRpfilter: {
      if (ctx.netstack == nullptr) {
        *in.why = "rpfilter needs the node's routes (no netstack given)";
        *in.note_kind = NfNote::Kind::kNeedsNetstack;
        return Tri::kFork;
      }
      RpfResult rr = ctx.netstack->ReversePathCheck(p.src, p.dst, ctx.iif, (m.flags & 1) ? 2 : 1,
                                                    (m.flags & 4) != 0,
                                                    (m.flags & 2) ? p.mark : 0);
      r = rr.pass;
      break;
    }
    default: break;
  }
  return Decided(m, r);
}

}  // namespace sarena::model::internal
