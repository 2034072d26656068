// The targets of iptables(8) / iptables-extensions(8): their parsing ("-j NAME opts") and, for
// the targets that rewrite the packet (NAT, MARK, CONNMARK, NOTRACK), their effect. The control
// targets (ACCEPT, DROP, jumps, RETURN, ...) are the evaluator's (netfilter_eval.cc).
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libsarena/model/netfilter_rules.h"
#include "libsarena/model/netstack.h"
#include "libsarena/net/ip.h"

namespace sarena::model::internal {

namespace {

const Opt* FindOpt(const std::vector<Opt>& opts, absl::string_view n) {
  for (const Opt& o : opts) {
    if (o.name == n) return &o;
  }
  return nullptr;
}

absl::Status BadTargetValue(absl::string_view name, const Opt& o) {
  return absl::InvalidArgumentError(absl::StrCat("invalid value for -j ", name, " ", o.name,
                                                 ": '", absl::StrJoin(o.values, " "), "'"));
}

// "ip[-ip][:port[-port]]" (DNAT/SNAT --to-*), or ":port" / "port[-port]" for --to-ports.
bool ParseNatRange(absl::string_view s, Target* t) {
  size_t colon = s.find(':');
  absl::string_view ips = s.substr(0, colon);
  if (!ips.empty()) {
    size_t dash = ips.find('-');
    auto lo = net::ParseIpv4(ips.substr(0, dash));
    if (!lo.ok()) return false;
    t->ip_lo = t->ip_hi = lo->to_uint();
    if (dash != absl::string_view::npos) {
      auto hi = net::ParseIpv4(ips.substr(dash + 1));
      if (!hi.ok()) return false;
      t->ip_hi = hi->to_uint();
    }
  }
  if (colon != absl::string_view::npos) {
    return ParsePortRange(s.substr(colon + 1), &t->port_lo, &t->port_hi);
  }
  return true;
}

// DNAT, SNAT, MASQUERADE, REDIRECT.
absl::Status ParseNatTarget(absl::string_view name, const std::vector<Opt>& opts, Target* t) {
  if (name == "DNAT" || name == "SNAT") {
    t->kind = name == "DNAT" ? TargetKind::kDnat : TargetKind::kSnat;
    const Opt* o = FindOpt(opts, name == "DNAT" ? "--to-destination" : "--to-source");
    if (o == nullptr || o->values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("-j ", name, " needs ",
                                                     name == "DNAT" ? "--to-destination" : "--to-source"));
    }
    if (!ParseNatRange(o->values[0], t)) return BadTargetValue(name, *o);
    return absl::OkStatus();
  }
  t->kind = name == "MASQUERADE" ? TargetKind::kMasquerade : TargetKind::kRedirect;
  if (const Opt* o = FindOpt(opts, "--to-ports"); o != nullptr && !o->values.empty()) {
    if (!ParsePortRange(o->values[0], &t->port_lo, &t->port_hi)) return BadTargetValue(name, *o);
  }
  return absl::OkStatus();
}

// One option of MARK / CONNMARK; *found when it sets the target's effect.
absl::Status ParseMarkOption(absl::string_view name, const Opt& o, Target* t, bool* found) {
  uint32_t v = 0, m = 0;
  absl::string_view val = o.values.empty() ? absl::string_view() : o.values[0];
  if (o.name == "--set-xmark") {
    if (!ParseMarkMask(val, &v, &m, 0xffffffffu)) return BadTargetValue(name, o);
    t->mark_value = v;
    t->mark_mask = m;
    *found = true;
  } else if (o.name == "--set-mark") {
    if (!ParseMarkMask(val, &v, &m, 0xffffffffu)) return BadTargetValue(name, o);
    t->mark_value = v;  // libxt_MARK: --set-mark v/m == --set-xmark v/(m|v)
    t->mark_mask = m | v;
    *found = true;
  } else if (o.name == "--or-mark") {
    if (!ParseU32Any(val, &v)) return BadTargetValue(name, o);
    t->mark_value = v;
    t->mark_mask = v;
    *found = true;
  } else if (o.name == "--and-mark") {
    if (!ParseU32Any(val, &v)) return BadTargetValue(name, o);
    t->mark_value = 0;
    t->mark_mask = ~v;
    *found = true;
  } else if (o.name == "--xor-mark") {
    if (!ParseU32Any(val, &v)) return BadTargetValue(name, o);
    t->mark_value = v;
    t->mark_mask = 0;
    *found = true;
  } else if (o.name == "--save-mark" && t->kind == TargetKind::kConnmark) {
    t->connmark_op = 1;
    *found = true;
  } else if (o.name == "--restore-mark" && t->kind == TargetKind::kConnmark) {
    t->connmark_op = 2;
    *found = true;
  }
  return absl::OkStatus();
}

// MARK, CONNMARK.
absl::Status ParseMarkTarget(absl::string_view name, const std::vector<Opt>& opts, Target* t) {
  t->kind = name == "MARK" ? TargetKind::kMark : TargetKind::kConnmark;
  bool found = false;
  for (const Opt& o : opts) {
    absl::Status st = ParseMarkOption(name, o, t, &found);
    if (!st.ok()) return st;
  }
  if (!found) t->kind = TargetKind::kUnknown;
  return absl::OkStatus();
}

// iptables-extensions(8) TCPMSS: exactly one of --set-mss VALUE / --clamp-mss-to-pmtu;
// non-terminating. Applied by whoever follows a SYN (NfStep::tcpmss), not here.
absl::Status ParseTcpmssTarget(absl::string_view name, const std::vector<Opt>& opts, Target* t) {
  t->kind = TargetKind::kContinue;
  if (FindOpt(opts, "--clamp-mss-to-pmtu") != nullptr) {
    t->tcpmss = kNfTcpMssClampToPmtu;
  } else if (const Opt* o = FindOpt(opts, "--set-mss")) {
    uint32_t v = 0;
    if (o->values.size() != 1 || !absl::SimpleAtoi(o->values[0], &v) || v == 0 || v > 65535) {
      return BadTargetValue(name, *o);
    }
    t->tcpmss = v;
  }
  return absl::OkStatus();
}

// Targets that neither end the chain nor change what the model follows.
bool IsContinueTarget(absl::string_view name) {
  return name == "LOG" || name == "NFLOG" || name == "ULOG" || name == "TRACE" ||
         name == "AUDIT" || name == "CT" || name == "CHECKSUM" || name == "DSCP" ||
         name == "TOS" || name == "TTL" || name == "CLASSIFY" || name == "SET" || name == "TEE" ||
         name == "IDLETIMER" || name == "LED" || name == "SECMARK" || name == "CONNSECMARK";
}

}  // namespace

absl::Status ParseTarget(absl::string_view name, bool is_goto, const std::vector<Opt>& opts,
                         absl::string_view span, Target* t) {
  t->name = name;
  t->text = span;
  if (is_goto) {
    t->kind = TargetKind::kGoto;
    return absl::OkStatus();
  }
  if (name == "ACCEPT") t->kind = TargetKind::kAccept;
  else if (name == "DROP") t->kind = TargetKind::kDrop;
  else if (name == "REJECT") t->kind = TargetKind::kReject;
  else if (name == "RETURN") t->kind = TargetKind::kReturn;
  else if (name == "QUEUE" || name == "NFQUEUE") t->kind = TargetKind::kQueue;
  else if (name == "DNAT" || name == "SNAT" || name == "MASQUERADE" || name == "REDIRECT") {
    return ParseNatTarget(name, opts, t);
  } else if (name == "MARK" || name == "CONNMARK") {
    return ParseMarkTarget(name, opts, t);
  } else if (name == "TCPMSS") {
    return ParseTcpmssTarget(name, opts, t);
  } else if (name == "NOTRACK" || (name == "CT" && FindOpt(opts, "--notrack") != nullptr)) {
    t->kind = TargetKind::kNotrack;
  } else if (IsContinueTarget(name)) {
    t->kind = TargetKind::kContinue;
  } else {
    t->kind = TargetKind::kJump;  // a user chain, or an unknown extension if no such chain
  }
  return absl::OkStatus();
}

void ApplyMangleTarget(const Target& t, Packet* p) {
  switch (t.kind) {
    case TargetKind::kMark:
      p->mark = (p->mark & ~t.mark_mask) ^ t.mark_value;
      break;
    case TargetKind::kConnmark:
      if (t.connmark_op == 1) p->ct_mark = p->mark;
      else if (t.connmark_op == 2) p->mark = p->ct_mark;
      else p->ct_mark = (p->ct_mark & ~t.mark_mask) ^ t.mark_value;
      break;
    case TargetKind::kNotrack:
      p->ct_state = CtState::kUntracked;
      break;
    default: break;
  }
}

namespace {

// MASQUERADE: the source address the egress device would choose.
bool ApplyMasquerade(const Target& t, const NfContext& ctx, Packet* p, std::string* note) {
  if (ctx.netstack != nullptr && !ctx.oif.empty()) {
    auto src = ctx.netstack->SelectSourceAddress(
        ctx.oif, ctx.nexthop ? ctx.nexthop : std::optional<net::Ipv4>(p->dst), Scope::kUniverse);
    if (!src) {
      *note = absl::StrCat("no usable address on ", ctx.oif, ": the kernel drops the packet");
      return false;
    }
    p->src = *src;
  } else {
    *note = "MASQUERADE source unknown without the egress device's addresses";
  }
  if (t.port_lo != 0) p->sport = t.port_lo;
  return true;
}

// REDIRECT: the ingress device's primary address (loopback for locally generated packets).
bool ApplyRedirect(const Target& t, NfHook hook, const NfContext& ctx, Packet* p,
                   std::string* note) {
  if (hook == NfHook::kOutput || ctx.iif.empty()) {
    p->dst = net::Ipv4(0x7f000001u);
  } else if (ctx.netstack != nullptr) {
    const Interface* in = ctx.netstack->FindInterface(ctx.iif);
    const InterfaceAddress* a = in ? in->PrimaryAddress() : nullptr;
    if (a == nullptr) return false;  // no address: NF_DROP
    p->dst = a->local;
  } else {
    *note = "REDIRECT address unknown without the ingress device's addresses";
  }
  if (t.port_lo != 0) p->dport = t.port_lo;
  return true;
}

}  // namespace

bool ApplyNatTarget(const Target& t, NfHook hook, const NfContext& ctx, NfOutcome* out,
                    std::string* note) {
  Packet& p = out->packet;
  switch (t.kind) {
    case TargetKind::kDnat:
      if (t.ip_lo != 0) p.dst = net::Ipv4(t.ip_lo);
      if (t.port_lo != 0) p.dport = t.port_lo;
      out->dnat = true;
      return true;
    case TargetKind::kSnat:
      if (t.ip_lo != 0) p.src = net::Ipv4(t.ip_lo);
      if (t.port_lo != 0) p.sport = t.port_lo;
      out->snat = true;
      return true;
    case TargetKind::kMasquerade:
      if (!ApplyMasquerade(t, ctx, &p, note)) return false;
      out->snat = true;
      return true;
    case TargetKind::kRedirect:
      if (!ApplyRedirect(t, hook, ctx, &p, note)) return false;
      out->dnat = true;
      return true;
    default: return true;
  }
}

}  // namespace sarena::model::internal
