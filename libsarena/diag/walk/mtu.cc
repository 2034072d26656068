// Packet size and TCP MSS: MTU checks of the packet in flight, PMTU discovery, the TCP
// segment size a connection negotiates (MSS, TCPMSS clamping).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// The end `who` sending with route `r` out of `out` (see TcpEnd).
TcpEnd MakeTcpEnd(std::string who, const RouteResult& r, const Interface* out) {
  TcpEnd e;
  e.who = std::move(who);
  e.dev = r.oif;
  e.pmtu_metric = r.route != nullptr && r.route->mtu != 0;
  e.pmtu = e.pmtu_metric ? r.route->mtu : (out ? out->mtu : 0);
  if (r.route != nullptr && r.route->advmss != 0) {
    e.mss = r.route->advmss;
    e.advmss = true;
  } else if (e.pmtu > kTcpIpHeaders) {
    e.mss = e.pmtu - kTcpIpHeaders;
  }
  return e;
}

// "1500 (MTU of eth0)" / "1400 (mtu metric of its route via eth0)".
std::string PathMtuText(const TcpEnd& e) {
  if (e.pmtu == 0) return "unknown";
  return e.pmtu_metric ? absl::StrCat(e.pmtu, " (mtu metric of its route via ", e.dev, ")")
                       : absl::StrCat(e.pmtu, " (MTU of ", e.dev, ")");
}

// How the segments one end sends got their size: `size` = min(the sender's path MTU, the MSS
// `rcvd` that the receiver announced, after the `clamps` on the way, + 40).
std::string SegmentWhy(const TcpEnd& sender, const TcpEnd* receiver, uint32_t rcvd,
                       const std::string& clamps, uint32_t size) {
  std::string mss = absl::StrCat("MSS ", size > kTcpIpHeaders ? size - kTcpIpHeaders : 0);
  std::string own = sender.pmtu
                        ? absl::StrCat(sender.who, " sends at most its path MTU ", PathMtuText(sender))
                        : absl::StrCat(sender.who, " sends at most that + 40 (its path MTU is unknown)");
  if (receiver == nullptr || rcvd == 0) {
    return absl::StrCat(mss, " at most: the peer's MSS is unknown (not in the snapshot), ", own);
  }
  std::string announced =
      receiver->advmss ? absl::StrCat(receiver->mss, " (advmss metric of its route)")
                       : absl::StrCat(receiver->mss, " (path MTU ", PathMtuText(*receiver), " - 40)");
  return absl::StrCat(mss, " negotiated: ", receiver->who, " announced MSS ", announced, clamps,
                      "; ", own);
}

// "1500-byte packets" or "1450-byte TCP segments (MSS 1410 negotiated: ...)".
std::string SizeText(uint32_t size, const std::string& tcp) {
  return tcp.empty() ? absl::StrCat(size, "-byte packets")
                     : absl::StrCat(size, "-byte TCP segments (", tcp, ")");
}

// ------------------------------------------------------------------------------------------
// Packet size and TCP MSS.

std::string Walker::Who(const Where& w) const {
  return w.in_pod() ? absl::StrCat("pod ", w.pod->Key()) : absl::StrCat("node ", w.node_name);
}

bool Walker::CheckSize(Vertex v, Flight& f, uint32_t limit, uint32_t settle,
                       absl::FunctionRef<SizeFlag()> make_flag) {
  if (limit == 0) return true;
  if (f.tcp.active && !f.reply) {
    auto n = std::make_shared<SizeCheckNode>();
    n->check = SizeCheck{limit, settle, make_flag()};
    n->prev = f.tcp.pending;
    n->client = f.tcp.pending ? f.tcp.pending->client : std::make_shared<TcpEnd>(f.tcp.self);
    f.tcp.pending = n;
    size_checks_.push_back(std::move(n));
    return true;
  }
  if (f.size == 0 || f.size <= limit) return true;
  bool forced = query_.size != 0 && !f.reply;  // --size sets the request's packets only
  SizeFlag flag = make_flag();
  if (flag && flag(f.size, forced, f.tcp.active ? ReplyWhy(f) : std::string()) && forced) {
    graph_.hop(v).action = HopAction::kDrop;
    return false;
  }
  if (settle) f.size = settle;
  return true;
}

std::string Walker::ReplyWhy(const Flight& f) const {
  TcpEnd server = f.tcp.self;
  if (server.who.empty()) server.who = "the server";
  return SegmentWhy(server, &f.tcp.peer, f.tcp.peer_syn, f.tcp.peer_clamps, f.tcp.segment);
}

SizeFlag Walker::DeviceMtuFlag(Vertex v, const Interface& dev, absl::string_view whose) {
  return [this, v, name = dev.name, mtu = dev.mtu, whose = std::string(whose)](
             uint32_t size, bool forced, const std::string& tcp) {
    std::string what = SizeText(size, tcp);
    // A forced size is --size's, not an MTU: only a full-size packet is "the sender's MTU".
    if (tcp.empty() && forced) {
      absl::StrAppend(&what, " (--size)");
    } else if (tcp.empty() && !whose.empty()) {
      absl::StrAppend(&what, " (", whose, " MTU)");
    }
    Suspect(v, forced ? Level::kFatal : Level::kWarning, "mtu_mismatch",
            absl::StrCat(what, " exceed the MTU ", mtu, " of ", name,
                         forced ? ": dropped (DF set)"
                                : ": they rely on PMTU discovery (ICMP fragmentation-needed)"));
    return true;
  };
}

void Walker::ResolveChecks(const std::shared_ptr<SizeCheckNode>& leaf, uint32_t size,
                           absl::FunctionRef<std::string()> why) {
  std::optional<std::string> text;
  std::vector<SizeCheckNode*> chain;
  for (SizeCheckNode* n = leaf.get(); n; n = n->prev.get()) chain.push_back(n);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    SizeCheckNode& n = **it;
    n.resolved = true;
    if (size == 0 || size <= n.check.limit) continue;
    if (n.check.flag && !n.flagged) {
      n.flagged = true;
      if (!text) text = why();
      n.check.flag(size, false, *text);
    }
    if (n.check.settle) size = std::min(size, n.check.settle);
  }
}

void Walker::ResolveRequest(const std::shared_ptr<SizeCheckNode>& leaf, const TcpEnd* server,
                            uint32_t rcvd, const std::string& clamps) {
  if (!leaf) return;
  const TcpEnd& client = *leaf->client;
  uint32_t size = client.pmtu;
  if (server && rcvd && (size == 0 || rcvd + kTcpIpHeaders < size)) size = rcvd + kTcpIpHeaders;
  ResolveChecks(leaf, size, [&] { return SegmentWhy(client, server, rcvd, clamps, size); });
}

void Walker::Finish() {
  for (auto it = size_checks_.rbegin(); it != size_checks_.rend(); ++it) {
    if (!(*it)->resolved) ResolveRequest(*it, nullptr, 0, "");
  }
}

void Walker::ClampMss(const Where& w, NfHook hook, const Packet& pkt, absl::string_view iif,
                      absl::string_view oif, Flight& f) {
  if (!f.tcp.active || f.tcp.syn == 0 || w.ns == nullptr || !w.ns->netfilter ||
      !w.ns->netfilter->HasTarget("TCPMSS")) {
    return;
  }
  Packet syn = pkt;
  syn.tcp_flags = f.reply ? 0x12 : 0x02;  // the SYN-ACK / the SYN
  model::NfContext ctx;
  ctx.iif = iif;
  ctx.oif = oif;
  ctx.netstack = &w.ns->netstack;
  std::vector<NfOutcome> outs =
      w.ns->netfilter->EvaluateTable(model::NfTable::kMangle, hook, syn, ctx);
  const NfOutcome* o = nullptr;  // the most probable certain accepted outcome, as RunHook's
  for (const NfOutcome& c : outs) {
    if (c.verdict != NfVerdict::kAccept) continue;
    if (!o || (c.certain() && !o->certain()) ||
        (c.certain() == o->certain() && c.probability > o->probability)) {
      o = &c;
    }
  }
  if (o == nullptr) return;
  const Netstack& ns = w.ns->netstack;
  for (const model::NfStep& step : o->steps) {
    if (step.tcpmss == 0) continue;
    uint32_t mss = step.tcpmss;
    if (step.tcpmss == model::kNfTcpMssClampToPmtu) {
      // xt_TCPMSS tcpmss_mangle_packet: min(dst_mtu(skb_dst), tcpmss_reverse_mtu) - 40.
      const Interface* out = ns.FindInterface(oif);
      uint32_t mtu = out ? out->mtu : 0;
      model::Flow back;
      back.dst = pkt.src;
      RouteResult rb = ns.Lookup(back);
      if (rb.ok()) {
        TcpEnd b = MakeTcpEnd("", rb, ns.FindInterface(rb.oif));
        if (b.pmtu && (mtu == 0 || b.pmtu < mtu)) mtu = b.pmtu;
      }
      if (mtu <= kTcpIpHeaders) continue;  // "unknown or invalid path-MTU": the kernel drops
      mss = mtu - kTcpIpHeaders;
    }
    if (mss >= f.tcp.syn) continue;  // xt_TCPMSS never raises the MSS
    f.tcp.syn = mss;
    absl::StrAppend(&f.tcp.clamps, ", clamped to ", mss, " at ", w.ns->id, " by ",
                    step.rule.ToString());
  }
}

}  // namespace sarena::diag::internal
