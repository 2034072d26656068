#include "libsarena/diag/walk.h"

#include <dirent.h>

#include <cerrno>

#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

std::string Ep(const net::Ipv4& ip, uint16_t port) {
  return port ? absl::StrCat(ip.to_string(), ":", port) : ip.to_string();
}

std::string Tuple(const Packet& p) {
  return absl::StrCat(Ep(p.src, p.sport), " -> ", Ep(p.dst, p.dport), "/",
                      model::ProtoName(p.proto));
}

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
// Locations.

absl::StatusOr<Where> Walker::NodeWhere(absl::string_view node) {
  Where w;
  w.node_name = std::string(node);
  auto st = snap_.Node(node);
  if (st.ok()) {
    w.node = *st;
    w.ns = *st;
    return w;
  }
  if (absl::IsNotFound(st.status())) return w;  // ns == nullptr: not in the snapshot
  return st.status();
}

absl::StatusOr<Where> Walker::PodWhere(const model::Pod& pod) {
  Where w;
  SARENA_ASSIGN_OR_RETURN(Where node, NodeWhere(pod.node_name));
  w.node = node.node;
  w.node_name = pod.node_name;
  w.pod = &pod;
  if (pod.host_network) {
    w.pod = nullptr;
    w.ns = node.node;
    return w;
  }
  auto st = snap_.PodNetns(pod.namespace_, pod.name, pod.node_name);
  if (st.ok()) {
    w.ns = *st;
  } else if (!absl::IsNotFound(st.status())) {
    return st.status();
  }
  return w;
}

std::string Walker::HopId(const Where& w, bool reply) const {
  std::string id = w.in_pod() ? w.pod->Key() : w.node_name;
  if (reply) absl::StrAppend(&id, "@reply");
  return id;
}

// ------------------------------------------------------------------------------------------
// Graph helpers.

Vertex Walker::AddHop(Hop hop, const Prev& prev) {
  Vertex v = graph_.AddHop(std::move(hop));
  if (prev.v) graph_.Link(*prev.v, v, prev.label);
  for (auto* c : collectors_) c->push_back(v);
  return v;
}

void Walker::InfoOnce(Vertex v, absl::string_view key, absl::string_view code,
                      absl::string_view msg) {
  if (!once_.insert(std::string(key)).second) return;
  Suspect(v, Level::kInfo, code, msg);
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

SizeFlag Walker::DeviceMtuFlag(Vertex v, const Interface& dev) {
  return [this, v, name = dev.name, mtu = dev.mtu](uint32_t size, bool forced,
                                                   const std::string& tcp) {
    Suspect(v, forced ? Level::kFatal : Level::kWarning, "mtu_mismatch",
            absl::StrCat(SizeText(size, tcp), " exceed the MTU ", mtu, " of ", name,
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

bool Walker::Need(const Where& w, Vertex v, NetstackSource src, absl::string_view what) {
  if (w.ns == nullptr) return false;
  if (w.ns->netstack.Has(src)) return true;
  std::string file = absl::StrCat(w.ns->dir, "/", model::ToString(src));
  InfoOnce(v, absl::StrCat("missing|", file, "|", what), "file_missing",
           absl::StrCat("cannot check ", what, ": file ", file, " missing"));
  return false;
}

void Walker::WalkBranches(Vertex parent, std::vector<std::function<void()>> branches) {
  if (branches.size() <= 1) {
    for (auto& b : branches) b();
    return;
  }
  std::vector<std::vector<Vertex>> sets(branches.size());
  for (size_t i = 0; i < branches.size(); ++i) {
    collectors_.push_back(&sets[i]);
    branches[i]();
    collectors_.pop_back();
    if (!error_.ok()) return;
  }
  // DESIGN: FATAL means the path is broken. When only some backends fail, some connections
  // succeed: report those FATALs as CRITICAL (the branch still shows where it fails).
  std::vector<bool> fatal(branches.size(), false);
  size_t nfatal = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    for (Vertex v : sets[i]) {
      if (graph_.hop(v).MaxLevel() == Level::kFatal) fatal[i] = true;
    }
    nfatal += fatal[i];
  }
  if (nfatal == 0 || nfatal == sets.size()) return;
  for (size_t i = 0; i < sets.size(); ++i) {
    if (!fatal[i]) continue;
    for (Vertex v : sets[i]) {
      for (Suspicion& s : graph_.hop(v).suspicions) {
        if (s.level != Level::kFatal) continue;
        s.level = Level::kCritical;
        s.message = absl::StrCat(s.message, " (only ", nfatal, " of ", sets.size(),
                                 " Service branches fail: some connections succeed)");
      }
    }
  }
  (void)parent;
}

// ------------------------------------------------------------------------------------------
// Netfilter.

NfPass Walker::RunHook(const Where& w, Vertex v, NfHook hook, const Packet& pkt,
                       absl::string_view iif, absl::string_view oif,
                       std::optional<net::Ipv4> nexthop) {
  NfPass pass;
  if (w.ns == nullptr || !w.ns->netfilter) {
    if (w.ns != nullptr && !w.in_pod()) {
      std::string file = absl::StrCat(w.ns->dir, "/", model::kIptablesFile);
      InfoOnce(v, absl::StrCat("missing|", file), "file_missing",
               absl::StrCat("cannot check netfilter (iptables): file ", file, " missing"));
    }
    NfOutcome o;
    o.packet = pkt;
    pass.accepted.push_back(std::move(o));
    return pass;
  }
  model::NfContext ctx;
  ctx.iif = iif;
  ctx.oif = oif;
  ctx.nexthop = nexthop;
  ctx.netstack = &w.ns->netstack;
  std::vector<NfOutcome> outs = w.ns->netfilter->EvaluateHook(hook, pkt, ctx);
  double drop_certain = 0, drop_assumed = 0;
  const NfOutcome* first_drop = nullptr;
  const NfOutcome* first_assumed_drop = nullptr;
  for (NfOutcome& o : outs) {
    for (const model::NfNote& n : o.notes) {
      std::string key = absl::StrCat("nfnote|", w.ns->id, "|", n.rule.line, "|", n.what);
      InfoOnce(v, key, "netfilter_unknown",
               absl::StrCat("netfilter: ", model::ToString(n.kind), " '", n.what, "' at ",
                            n.rule.ToString(), ": ", n.detail));
    }
    if (o.verdict == NfVerdict::kAccept) {
      pass.accepted.push_back(o);
    } else if (o.verdict == NfVerdict::kQueue) {
      InfoOnce(v, absl::StrCat("nfqueue|", w.ns->id, "|", model::ToString(hook)),
               "netfilter_unknown",
               absl::StrCat("netfilter ", model::ToString(hook),
                            ": packet queued to user space (NFQUEUE); assumed accepted"));
      pass.accepted.push_back(o);
    } else if (o.certain()) {
      drop_certain += o.probability;
      if (!first_drop) first_drop = &o;
    } else {
      drop_assumed += o.probability;
      if (!first_assumed_drop) first_assumed_drop = &o;
    }
  }
  std::stable_sort(pass.accepted.begin(), pass.accepted.end(),
                   [](const NfOutcome& a, const NfOutcome& b) {
                     if (a.certain() != b.certain()) return a.certain();
                     return a.probability > b.probability;
                   });
  auto describe = [&](const NfOutcome& o) {
    std::string by = o.decided_by ? o.decided_by->ToString() : "chain policy";
    return absl::StrCat(model::ToString(o.verdict), " by ", by);
  };
  if (first_drop && pass.accepted.empty()) {
    pass.dropped = true;
    Drop(v, "netfilter_drop",
         absl::StrCat("netfilter ", model::ToString(hook), " drops ", Tuple(pkt), ": ",
                      describe(*first_drop)));
  } else if (first_drop) {
    bool any_certain_accept = std::any_of(pass.accepted.begin(), pass.accepted.end(),
                                          [](const NfOutcome& o) { return o.certain(); });
    Suspect(v, any_certain_accept ? Level::kCritical : Level::kWarning, "netfilter_drop",
            absl::StrFormat("netfilter %s drops %.0f%% of %s: %s", model::ToString(hook),
                            drop_certain * 100, Tuple(pkt), describe(*first_drop)));
  } else if (first_assumed_drop) {
    if (pass.accepted.empty()) {
      pass.dropped = true;
      Drop(v, "netfilter_drop",
           absl::StrCat("netfilter ", model::ToString(hook), " drops ", Tuple(pkt), ": ",
                        describe(*first_assumed_drop),
                        " (depends on a match the model cannot "
                        "evaluate; see the INFO notes)"));
    } else {
      std::vector<std::string> what;
      for (const auto& a : first_assumed_drop->assumptions) {
        what.push_back(absl::StrCat(a.assumed_match ? "if '" : "unless '", a.what, "' matches"));
      }
      Suspect(v, Level::kWarning, "netfilter_drop",
              absl::StrCat("netfilter ", model::ToString(hook), " may drop ", Tuple(pkt), " (",
                           absl::StrJoin(what, ", "), "): ", describe(*first_assumed_drop)));
    }
  }
  return pass;
}

void Walker::SetCtState(const Where& w, Packet* p, const Flight& f, const Branch& br) {
  if (!f.reply || w.ns == nullptr) {
    p->ct_state = CtState::kNew;
    return;
  }
  if (br.request_netns.contains(w.ns->id)) {
    p->ct_state = CtState::kEstablished;
  } else {
    // A reply meeting a conntrack that never saw the request: for TCP a SYN-ACK without a SYN is
    // INVALID (nf_conntrack_proto_tcp: sSA from sNO); other protocols start a NEW entry.
    p->ct_state = p->proto == model::kProtoTcp ? CtState::kInvalid : CtState::kNew;
  }
}

void Walker::UnSnat(const Where& w, Packet* p, const Branch& br) {
  if (w.ns == nullptr) return;
  for (const NatRecord& r : br.nat) {
    if (!r.snat || r.netns != w.ns->id) continue;
    if (p->dst == r.after.src && (r.after.sport == 0 || p->dport == r.after.sport)) {
      p->dst = r.before.src;
      p->dport = r.before.sport;
    }
  }
}

void Walker::UnDnat(const Where& w, Packet* p, const Branch& br) {
  if (w.ns == nullptr) return;
  for (const NatRecord& r : br.nat) {
    if (!r.dnat || r.netns != w.ns->id) continue;
    if (p->src == r.after.dst && (r.after.dport == 0 || p->sport == r.after.dport)) {
      p->src = r.before.dst;
      p->sport = r.before.dport;
    }
  }
}

// ------------------------------------------------------------------------------------------
// Routing helpers.

// A device that is down and would carry `dst`: the kernel flushes the routes of a device that
// goes down, so the lookup fails (or falls to a wider route) and the real cause is the link.
const Interface* Walker::DownDeviceFor(const Where& w, const net::Ipv4& dst) {
  if (w.ns == nullptr) return nullptr;
  const Netstack& ns = w.ns->netstack;
  auto down = [](const Interface* i) {
    return i && !i->loopback && (!i->admin_up || !i->CanTransmit());
  };
  for (const Interface& i : ns.interfaces()) {
    if (!down(&i)) continue;
    for (const auto& a : i.addresses) {
      if (a.prefixlen < 32 && net::Contains(a.Subnet(), dst)) return &i;
    }
  }
  // Routes still listed through a down device (no carrier keeps them, flagged linkdown): the
  // most specific one covering dst.
  const Interface* best = nullptr;
  int best_len = -1;
  for (const model::Route& r : ns.routes()) {
    if (r.type != RouteType::kUnicast || !net::Contains(r.dst, dst)) continue;
    for (const model::Nexthop& nh : r.nexthops) {
      const Interface* i = ns.FindInterface(nh.dev);
      if (down(i) && r.dst.prefix_length() > best_len) {
        best = i;
        best_len = r.dst.prefix_length();
      }
    }
  }
  if (best) return best;
  if (w.in_pod()) {
    for (const Interface& i : ns.interfaces()) {
      if (down(&i) && i.kind == "veth") return &i;
    }
    return nullptr;
  }
  const model::Pod* pod = cluster_.FindPodByIp(dst);
  if (pod && !pod->host_network && pod->node_name == w.node_name) {
    auto pn = snap_.PodNetns(pod->namespace_, pod->name, pod->node_name);
    if (pn.ok()) {
      for (const Interface& pi : (*pn)->netstack.interfaces()) {
        if (pi.kind != "veth" || !pi.link_index) continue;
        const Interface* host = ns.FindInterfaceByIndex(*pi.link_index);
        if (down(host)) return host;
        if (down(&pi)) return &pi;  // the pod side is down: no carrier on the host side either
      }
    }
  }
  return nullptr;
}

void Walker::NotePolicyRoute(Vertex v, const RouteResult& r) {
  const model::Rule* rule = r.rule;
  if (rule == nullptr) return;
  bool selector = rule->src || rule->dst || !rule->iif.empty() || !rule->oif.empty() ||
                  rule->fwmark || rule->tos || rule->ipproto || rule->sport_start ||
                  rule->dport_start || rule->invert || rule->l3mdev;
  bool standard_table = rule->table == model::kTableLocal || rule->table == model::kTableMain ||
                        rule->table == model::kTableDefault;
  if (!selector && standard_table) return;
  Suspect(v, Level::kInfo, "policy_route_unexpected",
          absl::StrCat("the route was chosen by policy rule '", rule->ToString(), "' (table ",
                       model::TableName(r.table), "): ", r.ToString()));
}

void Walker::ReportRouteError(Vertex v, const RouteResult& r, const Packet& p,
                              absl::string_view what, const Where* w) {
  if (w) {
    const Interface* d = DownDeviceFor(*w, p.dst);
    if (d == nullptr && !w->in_pod() && !r.route && r.error == ENETUNREACH) {
      // No table routes dst at all and the node's primary (underlay) device is down: its routes
      // (remote pod blocks, the default route) went with it when it went down.
      const Interface* primary = PrimaryInterface(*w);
      if (primary && !primary->loopback && (!primary->admin_up || !primary->CanTransmit())) {
        d = primary;
      }
    }
    if (d != nullptr) {
      Drop(v, "link_down",
           absl::StrCat(d->name, " is down (", d->operstate.empty() ? "no carrier" : d->operstate,
                        "): the kernel dropped its routes, so ", what, " ", p.dst.to_string(),
                        " fails (", r.ok() ? r.ToString() : std::string("no route"), ")"));
      return;
    }
  }
  std::string how;
  switch (r.type) {
    case RouteType::kBlackhole:
      how = "blackhole";
      break;
    case RouteType::kUnreachable:
      how = "unreachable";
      break;
    case RouteType::kProhibit:
      how = "prohibit";
      break;
    default:
      how = r.error == ENETUNREACH ? "no route" : "route error";
  }
  std::string by;
  if (r.route) {
    by = absl::StrCat(": ", how, " route '", r.route->ToString(), "'");
  } else if (r.rule) {
    by = absl::StrCat(": rule '", r.rule->ToString(), "'");
  } else {
    by = absl::StrCat(": ", how, " (no table has a route for ", p.dst.to_string(), ")");
  }
  Drop(v, "no_route", absl::StrCat(what, " ", p.dst.to_string(), by));
  if (w && w->ns && !w->in_pod()) {
    HookPacket hp{p, graph_.hop(v).reply, nullptr};
    plugin_.OnRouteFailure(pctx_, *w, v, hp, r);
  }
}

void Walker::CheckNeighbor(const Where& w, Vertex v, const Interface& dev,
                           const std::optional<net::Ipv4>& gateway) {
  if (!gateway || dev.noarp || dev.loopback) return;
  if (!Need(w, v, NetstackSource::kNeighbors, "neighbour entries")) return;
  const model::Neighbor* n = w.ns->netstack.FindNeighbor(*gateway, dev.name);
  if (n == nullptr) {
    if (w.in_pod()) return;  // a pod's gateway is resolved by ARP / proxy ARP on first use
    Suspect(v, Level::kInfo, "neighbor_missing",
            absl::StrCat("no neighbour entry for gateway ", gateway->to_string(), " on ", dev.name,
                         " (not cached: resolved by ARP on first use)"));
    return;
  }
  if (!n->Usable()) {
    Suspect(
        v, Level::kWarning, "neighbor_missing",
        absl::StrCat("neighbour entry for gateway ", gateway->to_string(), " on ", dev.name, " is ",
                     absl::StrJoin(n->state, ","), ": ARP resolution of the gateway failed"));
  }
}

const Interface* Walker::PrimaryInterface(const Where& node) {
  if (node.ns == nullptr) return nullptr;
  const model::Node* k = cluster_.FindNode(node.node_name);
  if (k) {
    for (const auto& ip : k->internal_ips) {
      if (const Interface* i = node.ns->netstack.InterfaceWithAddress(ip)) return i;
    }
    if (k->calico_ipv4_address) {
      if (const Interface* i =
              node.ns->netstack.InterfaceWithAddress(k->calico_ipv4_address->address())) {
        return i;
      }
    }
  }
  // The device of the default route.
  model::Flow fl;
  fl.dst = net::Ipv4(0x08080808);
  RouteResult r = node.ns->netstack.Lookup(fl);
  if (r.ok()) return node.ns->netstack.FindInterface(r.oif);
  return nullptr;
}

std::optional<Walker::Owner> Walker::OwnerOf(const net::Ipv4& ip) {
  const model::Node* k = cluster_.FindNodeByIp(ip);
  auto check = [&](absl::string_view name) -> std::optional<Owner> {
    auto w = NodeWhere(name);
    if (!w.ok()) {
      error_.Update(w.status());
      return std::nullopt;
    }
    if (w->ns == nullptr) return Owner{*w, ""};
    if (const Interface* i = w->ns->netstack.InterfaceWithAddress(ip)) return Owner{*w, i->name};
    return std::nullopt;
  };
  if (k) {
    if (auto o = check(k->name)) return o;
    // Known node, address not configured on it (e.g. a Calico annotation): its primary device.
    auto w = NodeWhere(k->name);
    if (!w.ok()) {
      error_.Update(w.status());
      return std::nullopt;
    }
    if (w->ns == nullptr) return Owner{*w, ""};
    const Interface* p = PrimaryInterface(*w);
    return Owner{*w, p ? p->name : ""};
  }
  if (snap_.node_names().size() <= 64) {
    for (const std::string& n : snap_.node_names()) {
      auto w = NodeWhere(n);
      if (!w.ok()) {
        error_.Update(w.status());
        return std::nullopt;
      }
      if (w->ns == nullptr) continue;
      if (const Interface* i = w->ns->netstack.InterfaceWithAddress(ip)) {
        return Owner{*w, i->name};
      }
    }
  }
  return std::nullopt;
}

const std::vector<const model::Pod*>& Walker::PodsOn(const std::string& node) {
  auto it = pods_on_.find(node);
  if (it != pods_on_.end()) return it->second;
  std::vector<const model::Pod*> pods = cluster_.PodsOnNode(node);
  std::string base = absl::StrCat(snap_.dir(), "/nodes/", node, "/pods");
  auto list = [](const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") out.push_back(n);
      }
      closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  for (const std::string& ns : list(base)) {
    for (const std::string& name : list(absl::StrCat(base, "/", ns))) {
      if (cluster_.FindPod(ns, name)) continue;
      auto st = snap_.PodNetns(ns, name, node);
      if (!st.ok()) continue;
      model::Pod p;
      p.namespace_ = ns;
      p.name = name;
      p.node_name = node;
      p.phase = "Running";
      p.ready = true;
      for (const Interface& i : (*st)->netstack.interfaces()) {
        if (i.loopback) continue;
        if (const auto* a = i.PrimaryAddress()) {
          p.pod_ip = a->local;
          p.pod_ips.push_back(a->local);
          break;
        }
      }
      synthetic_pods_.push_back(std::move(p));
      pods.push_back(&synthetic_pods_.back());
    }
  }
  return pods_on_.emplace(node, std::move(pods)).first->second;
}

const model::Pod* Walker::FindPodAnywhere(const std::string& ns, const std::string& name) {
  if (const model::Pod* p = cluster_.FindPod(ns, name)) return p;
  for (const std::string& node : snap_.node_names()) {
    for (const model::Pod* p : PodsOn(node)) {
      if (p->namespace_ == ns && p->name == name) return p;
    }
  }
  return nullptr;
}

std::optional<Walker::Owner> Walker::PodByIfindex(const Where& node, int ifindex,
                                                  int peer_ifindex) {
  for (const model::Pod* pod : PodsOn(node.node_name)) {
    if (pod->host_network) continue;
    auto st = snap_.PodNetns(pod->namespace_, pod->name, pod->node_name);
    if (!st.ok()) {
      if (!absl::IsNotFound(st.status())) error_.Update(st.status());
      continue;
    }
    const Interface* i = (*st)->netstack.FindInterfaceByIndex(ifindex);
    if (i == nullptr || i->kind != "veth") continue;
    if (i->link_index && *i->link_index != peer_ifindex) continue;
    Where w;
    w.ns = *st;
    w.node = node.node;
    w.pod = pod;
    w.node_name = node.node_name;
    return Owner{w, i->name};
  }
  return std::nullopt;
}

std::optional<Walker::Owner> Walker::NodeVethPeer(const Where& w, const Interface& oif,
                                                  const net::Ipv4& nexthop) {
  if (!oif.link_index || !oif.link_netnsid || snap_.node_names().size() > 64) return std::nullopt;
  // ifindexes are per netns: the candidates are the other nodes' veths with ifindex ==
  // link_index whose own peer is ours; several are told apart by the next hop's address, then
  // by a shared subnet.
  std::vector<Owner> cands;
  for (const std::string& n : snap_.node_names()) {
    if (n == w.node_name) continue;
    auto nw = NodeWhere(n);
    if (!nw.ok()) {
      error_.Update(nw.status());
      return std::nullopt;
    }
    if (nw->ns == nullptr) continue;
    const Interface* i = nw->ns->netstack.FindInterfaceByIndex(*oif.link_index);
    if (!i || i->kind != "veth" || !i->link_netnsid) continue;
    if (i->link_index && *i->link_index != oif.ifindex) continue;
    cands.push_back(Owner{*nw, i->name});
  }
  if (cands.size() == 1) return cands.front();
  for (const Owner& c : cands) {
    if (c.where.ns->netstack.IsLocalAddress(nexthop)) return c;
  }
  for (const Owner& c : cands) {
    const Interface* i = c.where.ns->netstack.FindInterface(c.ifname);
    for (const auto& a : oif.addresses) {
      for (const auto& b : i->addresses) {
        if (a.prefixlen < 32 && net::Contains(a.Subnet(), b.local)) return c;
      }
    }
  }
  return std::nullopt;
}

bool Walker::AnswersArp(const Where& peer, const Interface& pif, const net::Ipv4& target,
                        const net::Ipv4& sender, std::string* why) {
  std::string scratch;
  if (why == nullptr) why = &scratch;
  if (pif.noarp) {  // arp_rcv drops ARP on IFF_NOARP devices
    *why = absl::StrCat(pif.name, " is NOARP");
    return false;
  }
  const Netstack& ns = peer.ns->netstack;
  const model::Sysctls& sc = ns.sysctls();
  auto conf = [&](absl::string_view dev, absl::string_view key) {
    return sc.GetInt(model::Sysctls::ConfKey(dev, key)).value_or(0);
  };
  if (ns.IsLocalAddress(target)) {
    // IN_DEV_ARP_IGNORE = max(all, dev): 0 any local address, 1 only one configured on the
    // receiving device, 2 that and the sender inside its subnet, 3+ (scope / never) no.
    int64_t ignore = std::max(conf("all", "arp_ignore"), conf(pif.name, "arp_ignore"));
    if (ignore == 0) return true;
    if (ignore > 2) return false;
    for (const auto& a : pif.addresses) {
      if (a.local != target) continue;
      if (ignore == 1 || net::Contains(a.Subnet(), sender)) return true;
    }
    *why = absl::StrCat("arp_ignore ", ignore, " on ", pif.name);
    return false;
  }
  // Proxy ARP (IN_DEV_PROXY_ARP = all OR dev; arp_fwd_proxy): answered when the device forwards
  // and the kernel would route the target out of another device.
  if (conf("all", "proxy_arp") == 0 && conf(pif.name, "proxy_arp") == 0) {
    *why = absl::StrCat("no local address, and proxy_arp is off on ", pif.name);
    return false;
  }
  model::Flow fl;
  fl.dst = target;
  fl.src = sender;
  fl.iif = pif.name;
  model::InputResult in = ns.RouteInput(fl);
  if (in.decision == model::InputDecision::kForward && in.route.type == RouteType::kUnicast &&
      in.route.oif != pif.name) {
    return true;
  }
  *why = absl::StrCat(
      "no local address, and proxy_arp on ", pif.name,
      " answers only for an address it forwards out of another device: ",
      in.decision == model::InputDecision::kForward
          ? absl::StrCat("the route is ", in.route.ToString())
          : absl::StrCat("no forwarding route (",
                         in.detail.empty() ? std::string(model::ToString(in.drop)) : in.detail,
                         ")"));
  return false;
}

bool Walker::CrossVeth(const Where& w, Vertex v, const Interface& oif, const Where& peer,
                       const Interface& pif, const net::Ipv4& nexthop, Flight& f) {
  if (peer.ns == nullptr) return true;
  // Neighbour resolution (not for NOARP devices such as sarena_host, nor for a usable cached
  // entry).
  if (!oif.noarp && w.ns) {
    const model::Neighbor* n = w.ns->netstack.FindNeighbor(nexthop, oif.name);
    bool cached = n && n->Usable();
    std::string why;
    if (!cached && !AnswersArp(peer, pif, nexthop, f.outer ? f.outer->src : f.pkt.src, &why)) {
      std::string where_to =
          peer.in_pod() ? absl::StrCat("pod ", peer.pod->Key()) : absl::StrCat(peer.node_name);
      Drop(v, "neighbor_missing",
           absl::StrCat("nothing answers ARP for next hop ", nexthop.to_string(), " on ", oif.name,
                        " (the other end is ", pif.name, " in ", where_to, ": ", why, "), so ",
                        Tuple(f.pkt), " is never sent",
                        n ? absl::StrCat(" (neighbour entry ", absl::StrJoin(n->state, ","), ")")
                          : std::string()));
      return false;
    }
    // A cached entry is used as is: a static one naming a MAC the peer no longer has is
    // dropped there (model/neigh.h); the finding sits on this hop, which holds the entry. Not
    // into a sarena node: its tc ingress programs take frames before ip_rcv checks the MAC.
    bool bpf_ingress = !peer.in_pod() && peer.node && peer.node->sarena_endpoints.has_value();
    if (cached && !bpf_ingress) {
      model::NeighCheck nc = model::CheckNeighborLladdr(
          *n, pif, peer.in_pod() ? absl::StrCat("pod ", peer.pod->Key()) : peer.node_name);
      if (nc.fit == model::NeighFit::kStaleStatic) {
        Drop(v, "neighbor_stale", absl::StrCat(nc.detail, "; ", Tuple(f.pkt), " is lost"));
        return false;
      }
      if (nc.fit == model::NeighFit::kStaleDynamic) {
        Suspect(v, Level::kWarning, "neighbor_stale", nc.detail);
      }
    }
  }
  // veth_xmit -> __dev_forward_skb: is_skb_forwardable() drops a frame longer than the
  // RECEIVING device's MTU + Ethernet header + VLAN_HLEN, silently (no ICMP, no PMTU signal).
  uint32_t overhead = f.outer ? (f.encap_kind == "vxlan" ? kVxlanOverhead : kIpipOverhead) : 0;
  if (pif.mtu > 0 && pif.mtu + 4 > overhead) {
    auto make = [&]() -> SizeFlag {
      return [this, v, overhead, oname = oif.name, pname = pif.name, omtu = oif.mtu,
              pmtu = pif.mtu](uint32_t size, bool forced, const std::string& tcp) {
      std::string what = overhead ? absl::StrCat(size + overhead, "-byte packets (",
                                                 SizeText(size, tcp), " encapsulated)")
                                  : SizeText(size, tcp);
      Suspect(v, forced ? Level::kFatal : Level::kCritical, "mtu_mismatch",
              absl::StrCat(what, " leave ", oname, " (MTU ", omtu, ") but ", pname,
                           " at the other end of the veth has MTU ", pmtu,
                           ": the veth drops them silently (is_skb_forwardable; no "
                           "fragmentation-needed reaches the sender)"));
        return true;
      };
    };
    if (!CheckSize(v, f, pif.mtu + 4 - overhead, f.outer ? 0 : pif.mtu, make)) return false;
  }
  return true;
}

// ------------------------------------------------------------------------------------------
// Entry points of a netns.

void Walker::Originate(const Where& w, Flight f, Branch br, const Prev& prev) {
  if (!error_.ok()) return;
  Hop h;
  h.kind = w.in_pod() ? HopKind::kPod : HopKind::kNode;
  h.id = HopId(w, f.reply);
  h.node = w.node_name;
  h.action = HopAction::kSend;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  ++br.hops;
  HookPacket hp{f.pkt, f.reply, &br.host_flows};
  if (w.in_pod()) {
    plugin_.CheckPod(pctx_, w, v, hp);
  } else if (w.ns && checked_.insert(w.node_name).second) {
    plugin_.CheckNode(pctx_, w, v);
  }
  if (w.ns == nullptr) {
    if (!w.in_pod()) {
      Suspect(v, Level::kWarning, "snapshot_incomplete",
              absl::StrCat("node ", w.node_name,
                           " has no directory in the snapshot: the path "
                           "from it cannot be checked"));
      return;
    }
    // A pod without its netns files: assume the usual default route to the node.
    Suspect(v, Level::kInfo, "file_missing",
            absl::StrCat("cannot check the pod's own routes: directory nodes/", w.node_name,
                         "/pods/", w.pod->namespace_, "/", w.pod->name, " missing"));
    auto node = NodeWhere(w.node_name);
    if (!node.ok()) {
      error_ = node.status();
      return;
    }
    std::string iif;
    if (node->ns) {
      model::Flow fl;
      fl.dst = *w.pod->pod_ip;
      RouteResult r = node->ns->netstack.Lookup(fl);
      if (r.ok()) iif = r.oif;
      if (const Interface* i = node->ns->netstack.FindInterface(iif); i && !i->master.empty()) {
        iif = i->master;
      }
    }
    graph_.hop(v).oif = "eth0";
    br.request_netns.insert(absl::StrCat("pod:", w.pod->Key()));
    Receive(*node, iif, std::move(f), std::move(br), Prev{v, "veth (assumed)"});
    return;
  }
  if (!f.reply) br.request_netns.insert(w.ns->id);
  SetCtState(w, &f.pkt, f, br);
  OriginateRouted(w, v, std::move(f), std::move(br), /*service_done=*/false);
}

void Walker::OriginateRouted(const Where& w, Vertex v, Flight f, Branch br, bool service_done) {
  const Netstack& ns = w.ns->netstack;
  if (!Need(w, v, NetstackSource::kRoutes, "routing")) {
    if (!w.in_pod()) {
      Suspect(v, Level::kWarning, "snapshot_incomplete",
              absl::StrCat("cannot route ", Tuple(f.pkt), " from ", w.node_name,
                           ": no routes in the snapshot"));
      return;
    }
  }
  model::Flow fl;
  fl.dst = f.pkt.dst;
  if (!f.pkt.src.is_unspecified()) fl.src = f.pkt.src;
  fl.mark = f.pkt.mark;
  fl.proto = f.pkt.proto;
  fl.sport = f.pkt.sport;
  fl.dport = f.pkt.dport;
  RouteResult r = ns.RouteOutput(fl);
  if (!r.ok()) {
    if (r.error == EINVAL && fl.src && !ns.IsLocalAddress(*fl.src)) {
      Drop(v, "route_mismatch",
           absl::StrCat("source ", fl.src->to_string(), " is not an address of ", w.ns->id,
                        ": the kernel refuses to send from it"));
      return;
    }
    ReportRouteError(v, r, f.pkt, "output route to", &w);
    return;
  }
  NotePolicyRoute(v, r);
  if (f.pkt.src.is_unspecified()) {
    if (!r.prefsrc) {
      Drop(v, "no_route",
           absl::StrCat("no source address for ", f.pkt.dst.to_string(), " via ", r.oif));
      return;
    }
    f.pkt.src = *r.prefsrc;
    graph_.hop(v).packet = f.pkt;
  }
  if (!f.reply && (!client_packet_ || client_packet_->src.is_unspecified())) {
    client_packet_ = f.pkt;
  }
  // The ends' SYNs, from the route the socket uses (before OUTPUT, whose TCPMSS rules may clamp
  // them; a Service's DNAT re-routes the packet, not the socket).
  if (f.tcp.active && f.reply && !f.tcp.self_known) {
    // The server's SYN-ACK: its MSS from its route back to the client; its segments are at most
    // the client's MSS (as received) + 40 (set by StartReply) and its own path MTU.
    f.tcp.self = MakeTcpEnd(Who(w), r, ns.FindInterface(r.oif));
    f.tcp.self_known = true;
    f.tcp.syn = f.tcp.self.mss;
    if (f.tcp.self.pmtu && f.tcp.self.pmtu < f.size) f.size = f.tcp.self.pmtu;
    f.tcp.segment = f.size;
  } else if (!f.tcp.active && f.size == 0 && !f.reply && query_.size == 0 &&
             f.pkt.proto == model::kProtoTcp) {
    // A TCP client: its SYN's MSS; the size of its segments waits for the server's MSS.
    f.tcp.active = true;
    f.tcp.self = MakeTcpEnd(Who(w), r, ns.FindInterface(r.oif));
    f.tcp.self_known = true;
    f.tcp.syn = f.tcp.self.mss;
    f.size = f.tcp.self.pmtu;
  }
  // kube-proxy's nat OUTPUT runs for locally generated packets of the node netns.
  if (!w.in_pod() && !f.reply && !service_done && ServiceStage(w, v, "", f, br, true)) return;
  if (!w.in_pod()) {
    NfPass nf = RunHook(w, v, NfHook::kOutput, f.pkt, "", r.oif, r.gateway);
    if (nf.dropped || !error_.ok()) return;
    ClampMss(w, NfHook::kOutput, f.pkt, "", r.oif, f);
    Packet out = nf.accepted.front().packet;
    if (nf.accepted.front().dnat && !(out.dst == f.pkt.dst && out.dport == f.pkt.dport)) {
      br.nat.push_back(NatRecord{w.ns->id, f.pkt, out, true, false});
      f.pkt = out;
      graph_.hop(v).packet = f.pkt;
      OriginateRouted(w, v, std::move(f), std::move(br), true);
      return;
    }
    f.pkt = out;
  }
  if (r.type == RouteType::kLocal || r.oif == "lo") {
    // Addressed to this netns itself.
    graph_.hop(v).oif = "lo";
    if (f.reply) UnDnat(w, &f.pkt, br);
    Serve(w, v, std::move(f), std::move(br));
    return;
  }
  const Interface* out = ns.FindInterface(r.oif);
  if (f.tcp.active) {
    // Sized above (TCP: the path MTU and the MSS).
  } else if (f.size == 0) {
    if (query_.size && !f.reply) {
      f.size = query_.size;
    } else if (out) {
      f.size = out->mtu;
    }
  } else if (f.reply && out && out->mtu && f.size > out->mtu) {
    f.size = out->mtu;  // a TCP server's segments: the client's MSS, capped by its own MTU
  }
  if (!f.reply && client_size_ == 0) client_size_ = f.size;
  if (!w.in_pod()) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.AfterRoute(pctx_, w, v, hp, r);
    std::string dummy;
    if (!HandlePluginAction(w, v, a, f, br, &dummy)) return;
  }
  Transmit(w, v, r, std::move(f), std::move(br));
}

void Walker::Receive(const Where& w, const std::string& iif, Flight f, Branch br,
                     const Prev& prev) {
  if (!error_.ok()) return;
  Hop h;
  h.kind = w.in_pod() ? HopKind::kPod : HopKind::kNode;
  h.id = HopId(w, f.reply);
  h.node = w.node_name;
  h.iif = iif;
  h.action = HopAction::kForward;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  if (++br.hops > opts_.max_hops) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("more than ", opts_.max_hops,
                      " hops: the path loops or is longer than any real "
                      "path; stopped"));
    return;
  }
  HookPacket hp{f.pkt, f.reply, &br.host_flows};
  if (w.in_pod()) {
    plugin_.CheckPod(pctx_, w, v, hp);
  } else if (w.ns && checked_.insert(w.node_name).second) {
    plugin_.CheckNode(pctx_, w, v);
  }
  if (w.ns == nullptr) {
    if (w.in_pod()) {
      Suspect(v, Level::kInfo, "file_missing",
              absl::StrCat("cannot check inside pod ", w.pod->Key(), ": directory nodes/",
                           w.node_name, "/pods/", w.pod->namespace_, "/", w.pod->name, " missing"));
      graph_.hop(v).iif = iif.empty() ? "eth0" : iif;
      if (w.pod->pod_ip && f.pkt.dst == *w.pod->pod_ip) {
        Serve(w, v, std::move(f), std::move(br));
      } else {
        Suspect(v, Level::kWarning, "route_mismatch",
                absl::StrCat("packet for ", f.pkt.dst.to_string(), " delivered to pod ",
                             w.pod->Key(), " which does not own that address"));
      }
      return;
    }
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("node ", w.node_name,
                         " has no directory in the snapshot: the path "
                         "beyond it cannot be checked",
                         f.peer_expectation.empty() ? std::string()
                                                    : absl::StrCat("; there, ", f.peer_expectation)));
    return;
  }
  Ingress(w, v, iif, std::move(f), std::move(br));
}

void Walker::Ingress(const Where& w, Vertex v, std::string iif, Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  f.pkt.mark = 0;  // skb->mark does not survive crossing into another netns / the wire
  if (Need(w, v, NetstackSource::kLinks, "links")) {
    const Interface* in = ns.FindInterface(iif);
    if (in == nullptr) {
      Drop(v, "link_missing",
           absl::StrCat("ingress device '", iif, "' does not exist in ", w.ns->id));
      return;
    }
    if (!in->admin_up || !in->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("ingress device ", iif, " is down (", in->operstate,
                        "): nothing is received on it"));
      return;
    }
  }
  const Packet& seen = f.outer ? *f.outer : f.pkt;
  std::string key = absl::StrCat(w.ns->id, "|", iif, "|", Tuple(seen), "|", f.reply);
  if (!br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("routing loop: ", Tuple(seen), " enters ", w.ns->id, " on ", iif,
                      " again; it circulates until its TTL "
                      "expires"));
    return;
  }
  if (!f.reply) br.request_netns.insert(w.ns->id);
  if (!f.outer && !w.in_pod()) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.OnIngress(pctx_, w, iif, v, hp);
    if (!HandlePluginAction(w, v, a, f, br, &iif)) return;
  }
  ProcessInput(w, v, iif, std::move(f), std::move(br));
}

// Returns false when the action ended this branch (stop or delivered elsewhere).
bool Walker::HandlePluginAction(const Where& w, Vertex v, const PluginAction& a, Flight& f,
                                Branch& br, std::string* iif) {
  if (a.record_host_flow) br.host_flows.push_back(*a.record_host_flow);
  // A forwarding action (decrement_ttl) drops the packet when its TTL would reach 0.
  auto ttl_expires = [&]() {
    if (!a.decrement_ttl) return false;
    if (f.pkt.ttl <= 1) {
      Drop(v, "ttl_exceeded",
           absl::StrCat("TTL ", f.pkt.ttl, " expires at ", w.node_name, " (", a.label, ")"));
      return true;
    }
    --f.pkt.ttl;
    return false;
  };
  switch (a.kind) {
    case PluginAction::Kind::kContinue:
      return true;
    case PluginAction::Kind::kStop:
      graph_.hop(v).action = HopAction::kDrop;
      return false;
    case PluginAction::Kind::kReenterHost:
      *iif = a.iif;
      graph_.hop(v).iif = a.iif;
      return true;
    case PluginAction::Kind::kEncapsulate:
    case PluginAction::Kind::kRedirect: {
      if (ttl_expires()) return false;
      graph_.hop(v).packet = f.pkt;
      if (a.kind == PluginAction::Kind::kEncapsulate) {
        EncapsulateWithKey(w, v, a, std::move(f), std::move(br));
      } else {
        Redirect(w, v, a, std::move(f), std::move(br));
      }
      return false;
    }
    case PluginAction::Kind::kDeliverToPod: {
      if (ttl_expires()) return false;
      graph_.hop(v).packet = f.pkt;
      if (a.pod) {
        auto pw = PodWhere(*a.pod);
        if (!pw.ok()) {
          error_ = pw.status();
          return false;
        }
        const Interface* host = nullptr;
        if (pw->ns) {
          // The host-side device for the hop's oif: the veth whose peer is the pod's ifname.
          const Interface* pi = pw->ns->netstack.FindInterface(a.pod_ifname);
          if (pi && pi->link_index && w.ns)
            host = w.ns->netstack.FindInterfaceByIndex(*pi->link_index);
        }
        if (host) graph_.hop(v).oif = host->name;
      }
      DeliverToPod(*a.pod, a.pod_ifname, f, br, Prev{v, a.label}, a);
      return false;
    }
  }
  return true;
}

void Walker::DeliverToPod(const model::Pod& pod, const std::string& ifname, Flight f, Branch br,
                          const Prev& prev, const PluginAction& action) {
  auto pw = PodWhere(pod);
  if (!pw.ok()) {
    error_ = pw.status();
    return;
  }
  if (action.at_target.empty() && !action.drop_at_target) {
    Receive(*pw, ifname, std::move(f), std::move(br), prev);
    return;
  }
  Hop h;
  h.kind = HopKind::kPod;
  h.id = HopId(*pw, f.reply);
  h.node = pw->node_name;
  h.iif = ifname;
  h.action = HopAction::kForward;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  for (const Suspicion& s : action.at_target) Suspect(v, s.level, s.code, s.message);
  if (action.drop_at_target) {
    graph_.hop(v).action = HopAction::kDrop;
    return;
  }
  if (pw->ns == nullptr) {
    Serve(*pw, v, std::move(f), std::move(br));
    return;
  }
  Ingress(*pw, v, ifname, std::move(f), std::move(br));
}

void Walker::ProcessInput(const Where& w, Vertex v, const std::string& iif, Flight f, Branch br) {
  Packet& pkt = f.outer ? *f.outer : f.pkt;
  SetCtState(w, &pkt, f, br);
  if (f.reply && !f.outer) UnSnat(w, &pkt, br);
  if (!f.outer && !f.reply && !w.in_pod()) {
    if (ServiceStage(w, v, iif, f, br, false)) return;
    if (!error_.ok()) return;
  }
  if (!w.in_pod()) {
    NfPass nf = RunHook(w, v, NfHook::kPrerouting, pkt, iif, "", std::nullopt);
    if (nf.dropped || !error_.ok()) return;
    const NfOutcome& o = nf.accepted.front();
    if (o.dnat && !f.outer) {
      br.nat.push_back(NatRecord{w.ns->id, pkt, o.packet, true, false});
      Suspect(v, Level::kInfo, "dnat",
              absl::StrCat("DNAT ", Tuple(pkt), " -> ", Ep(o.packet.dst, o.packet.dport), " by ",
                           o.decided_by ? o.decided_by->ToString() : "netfilter"));
    }
    pkt = o.packet;
    graph_.hop(v).packet = f.pkt;
  }
  ContinueInput(w, v, iif, std::move(f), std::move(br));
}

void Walker::ContinueInput(const Where& w, Vertex v, const std::string& iif, Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  Packet& pkt = f.outer ? *f.outer : f.pkt;
  if (!Need(w, v, NetstackSource::kRoutes, "routing")) {
    if (w.in_pod() && w.pod->pod_ip && pkt.dst == *w.pod->pod_ip) {
      Serve(w, v, std::move(f), std::move(br));
      return;
    }
    Suspect(
        v, Level::kWarning, "snapshot_incomplete",
        absl::StrCat("cannot route ", Tuple(pkt), " in ", w.ns->id, ": no routes in the snapshot"));
    return;
  }
  bool sysctls = ns.Has(NetstackSource::kSysctls);
  model::Flow fl;
  fl.dst = pkt.dst;
  fl.src = pkt.src;
  fl.iif = iif;
  fl.mark = pkt.mark;
  fl.tos = pkt.tos;
  fl.proto = pkt.proto;
  fl.sport = pkt.sport;
  fl.dport = pkt.dport;
  model::InputResult in = ns.RouteInput(fl);
  bool forward_unknown =
      in.decision == InputDecision::kDrop && in.drop == InputDrop::kForwardingDisabled && !sysctls;
  if (in.decision == InputDecision::kDrop && !forward_unknown) {
    switch (in.drop) {
      case InputDrop::kIngressMissing:
        Drop(v, "link_missing", absl::StrCat("ingress device '", iif, "' does not exist"));
        return;
      case InputDrop::kIngressDown:
        Drop(v, "link_down", absl::StrCat("ingress device ", iif, " is down"));
        return;
      case InputDrop::kNoRoute:
      case InputDrop::kUnreachable:
      case InputDrop::kBlackhole:
      case InputDrop::kProhibit:
        ReportRouteError(v, in.route, pkt, "no usable route to", &w);
        return;
      case InputDrop::kForwardingDisabled:
        if (!sysctls) break;  // unknown: reported below as "cannot check", walked on
        if (in.ip_forward_disabled) {
          Drop(v, "ip_forward_disabled",
               absl::StrCat("net.ipv4.ip_forward = 0 on ", w.ns->id, ": ", Tuple(pkt),
                            " entering on ", iif, " is not forwarded to ", in.route.oif));
        } else {
          Drop(v, "iface_forwarding_disabled",
               absl::StrCat("net.ipv4.conf.", iif, ".forwarding = 0: ", Tuple(pkt), " entering on ",
                            iif, " is not forwarded (the kernel checks the INGRESS device) to ",
                            in.route.oif));
        }
        return;
      case InputDrop::kRpFilter: {
        std::string mode = in.rpf.mode == 1 ? "strict (1)" : "loose (2)";
        Drop(v, "rp_filter_drop",
             absl::StrCat("reverse-path filter ", mode, " on ", iif, " (effective max(all, ", iif,
                          ")) drops ", Tuple(pkt), ": ", model::ToString(in.rpf.failure),
                          "; reverse route: ",
                          in.rpf.reverse.ok() ? in.rpf.reverse.ToString() : std::string("none"),
                          in.rpf.detail.empty() ? "" : absl::StrCat(" (", in.rpf.detail, ")")));
        return;
      }
      case InputDrop::kMartianSource:
        Drop(v, "martian_packet",
             absl::StrCat("martian source: ", Tuple(pkt), " on ", iif, " (", in.detail, ")"));
        return;
      case InputDrop::kMartianDestination:
        Drop(v, "martian_packet",
             absl::StrCat("martian destination: ", Tuple(pkt), " on ", iif, " (", in.detail, ")"));
        return;
      case InputDrop::kNone:
        Drop(v, "no_route", absl::StrCat("input routing drops ", Tuple(pkt), ": ", in.detail));
        return;
    }
  }
  if (!sysctls) {
    std::string file = absl::StrCat(w.ns->dir, "/", model::kSysctlFile);
    InfoOnce(v, absl::StrCat("missing|", file), "file_missing",
             absl::StrCat("cannot check rp_filter and forwarding: file ", file, " missing"));
  }
  if (in.decision == InputDecision::kLocal || in.decision == InputDecision::kBroadcast) {
    NfPass nf = RunHook(w, v, NfHook::kInput, pkt, iif, "", std::nullopt);
    if (nf.dropped && f.outer) TunnelPortBlocked(w, v, f, pkt, "INPUT");
    if (nf.dropped || !error_.ok()) return;
    pkt = nf.accepted.front().packet;
    if (f.outer) {
      Decapsulate(w, v, std::move(f), std::move(br));
      return;
    }
    if (f.reply) UnDnat(w, &f.pkt, br);
    Serve(w, v, std::move(f), std::move(br));
    return;
  }
  // Forward.
  NotePolicyRoute(v, in.route);
  if (pkt.ttl <= 1) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("TTL ", pkt.ttl, " expires at ", w.ns->id, " (forwarding decrements it)"));
    return;
  }
  --pkt.ttl;
  NfPass nf = RunHook(w, v, NfHook::kForward, pkt, iif, in.route.oif, in.route.gateway);
  if (nf.dropped && f.outer) TunnelPortBlocked(w, v, f, pkt, "FORWARD");
  if (nf.dropped || !error_.ok()) return;
  if (!f.outer) ClampMss(w, NfHook::kForward, pkt, iif, in.route.oif, f);
  pkt = nf.accepted.front().packet;
  if (!w.in_pod() && !f.outer) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.AfterRoute(pctx_, w, v, hp, in.route);
    std::string dummy;
    if (!HandlePluginAction(w, v, a, f, br, &dummy)) return;
  }
  Transmit(w, v, in.route, std::move(f), std::move(br));
}

void Walker::Decapsulate(const Where& w, Vertex v, Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  const Packet& outer = *f.outer;
  const Interface* tun = nullptr;
  if (outer.proto == model::kProtoIpip) {
    const Interface* fallback = nullptr;
    for (const Interface& i : ns.interfaces()) {
      if (!i.tunnel || (i.kind != "ipip" && i.tunnel->proto != "ipip")) continue;
      if (i.tunnel->local && *i.tunnel->local != outer.dst) continue;
      if (i.tunnel->remote) {
        if (*i.tunnel->remote == outer.src) {
          tun = &i;
          break;
        }
      } else if (!fallback) {
        fallback = &i;
      }
    }
    if (!tun) tun = fallback;
  } else if (outer.proto == model::kProtoUdp) {
    for (const Interface& i : ns.interfaces()) {
      if (!i.vxlan || i.vxlan->port != outer.dport) continue;
      if (i.vxlan->local && *i.vxlan->local != outer.dst) continue;
      tun = &i;
      break;
    }
    if (!tun && f.encap_kind == "wireguard") {
      for (const Interface& i : ns.interfaces()) {
        if (i.kind == "wireguard") {
          tun = &i;
          break;
        }
      }
    }
  }
  if (!tun) {
    Drop(v, "tunnel_missing",
         absl::StrCat("no ", f.encap_kind, " device on ", w.ns->id, " accepts ", Tuple(outer),
                      ": the encapsulated packet is dropped on arrival"));
    return;
  }
  if (!tun->admin_up || !tun->CanTransmit()) {
    Drop(v, "link_down",
         absl::StrCat("tunnel device ", tun->name, " is down: ", f.encap_kind, " packets from ",
                      outer.src.to_string(), " are dropped"));
    return;
  }
  Suspect(
      v, Level::kInfo, "decap",
      absl::StrCat(f.encap_kind, " decapsulation on ", tun->name, " (outer ", Tuple(outer), ")"));
  Packet arrived = *f.outer;
  std::optional<uint32_t> vni = f.vni;
  f.outer.reset();
  f.vni.reset();
  f.peer_expectation.clear();
  std::string iif = tun->name;
  graph_.hop(v).iif = iif;
  // The inner packet enters the stack again, on the tunnel device.
  std::string key = absl::StrCat(w.ns->id, "|", iif, "|", Tuple(f.pkt), "|", f.reply);
  if (!br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("routing loop: ", Tuple(f.pkt), " decapsulated on ", iif, " again"));
    return;
  }
  HookPacket hp{f.pkt, f.reply, &br.host_flows};
  hp.outer = &arrived;
  hp.vni = vni;
  PluginAction a = plugin_.OnIngress(pctx_, w, iif, v, hp);
  if (!HandlePluginAction(w, v, a, f, br, &iif)) return;
  ProcessInput(w, v, iif, std::move(f), std::move(br));
}

// ------------------------------------------------------------------------------------------
// Egress.

void Walker::Transmit(const Where& w, Vertex v, const RouteResult& route, Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  const Interface* oif = ns.FindInterface(route.oif);
  if (oif == nullptr) {
    if (ns.Has(NetstackSource::kLinks)) {
      Drop(v, "link_missing",
           absl::StrCat("route '", route.ToString(), "' uses device '", route.oif,
                        "' which does not exist"));
    } else {
      Need(w, v, NetstackSource::kLinks, "links");
      Suspect(
          v, Level::kWarning, "snapshot_incomplete",
          absl::StrCat("cannot follow ", Tuple(f.pkt), " out of ", route.oif, ": no link data"));
    }
    return;
  }
  if (!oif->admin_up || !oif->CanTransmit()) {
    Drop(v, "link_down",
         absl::StrCat("egress device ", oif->name, " is down (",
                      oif->operstate.empty() ? "no carrier" : oif->operstate, "): ", Tuple(f.pkt),
                      " cannot leave"));
    return;
  }
  // POSTROUTING: SNAT / MASQUERADE (and the reply's un-DNAT).
  Packet before = f.pkt;
  bool snat_done = false;
  if (!w.in_pod() && f.outer) {
    // A forwarded tunnel packet (a router between nodes): netfilter sees its outer header.
    NfPass nf = RunHook(w, v, NfHook::kPostrouting, *f.outer, graph_.hop(v).iif, oif->name,
                        route.gateway ? route.gateway : std::optional<net::Ipv4>(f.outer->dst));
    if (nf.dropped) TunnelPortBlocked(w, v, f, *f.outer, "POSTROUTING");
    if (nf.dropped || !error_.ok()) return;
    const NfOutcome& o = nf.accepted.front();
    if (o.packet.src != f.outer->src) {
      Suspect(v, Level::kInfo, "snat",
              absl::StrCat("SNAT of the ", f.encap_kind, " outer header: ", f.outer->src.to_string(),
                           " becomes ", o.packet.src.to_string(), " (the receiver sees that source)"));
    }
    *f.outer = o.packet;
  } else if (!w.in_pod()) {
    NfPass nf = RunHook(w, v, NfHook::kPostrouting, f.pkt, graph_.hop(v).iif, oif->name,
                        route.gateway ? route.gateway : std::optional<net::Ipv4>(f.pkt.dst));
    if (nf.dropped || !error_.ok()) return;
    ClampMss(w, NfHook::kPostrouting, f.pkt, graph_.hop(v).iif, oif->name, f);
    const NfOutcome& o = nf.accepted.front();
    if (o.snat && !f.reply) {
      snat_done = true;
      br.nat.push_back(NatRecord{w.ns->id, f.pkt, o.packet, false, true});
      Suspect(v, Level::kInfo, "snat",
              absl::StrCat("SNAT: source ", Ep(f.pkt.src, f.pkt.sport), " becomes ",
                           Ep(o.packet.src, o.packet.sport), " (", Tuple(f.pkt), ") by ",
                           o.decided_by ? o.decided_by->ToString() : "netfilter"));
    }
    f.pkt = o.packet;
  }
  if (f.reply) UnDnat(w, &f.pkt, br);
  if (!w.in_pod()) {
    HookPacket hp{before, f.reply, &br.host_flows};
    PluginAction a = plugin_.AfterPostrouting(pctx_, w, v, hp, &f.pkt, snat_done,
                                              w.ns->netfilter.has_value(), route);
    if (f.pkt.src != before.src && !snat_done && !f.reply) {
      br.nat.push_back(NatRecord{w.ns->id, before, f.pkt, false, true});
    }
    std::string dummy;
    if (!HandlePluginAction(w, v, a, f, br, &dummy)) return;
  }
  Hop& h = graph_.hop(v);
  h.oif = oif->name;
  h.packet = f.pkt;
  if (!w.in_pod()) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.OnEgress(pctx_, w, oif->name, v, hp);
    std::string dummy;
    if (!HandlePluginAction(w, v, a, f, br, &dummy)) return;
  }
  if (oif->mtu > 0) {
    auto make = [&]() -> SizeFlag {
      return [this, v, reply = f.reply, name = oif->name, mtu = oif->mtu](
                 uint32_t size, bool forced, const std::string& tcp) {
      std::string what =
          tcp.empty() ? absl::StrCat(size, "-byte packets (", reply ? "the server's" : "the sender's",
                                     " MTU)")
                      : SizeText(size, tcp);
      Suspect(v, forced ? Level::kFatal : Level::kWarning, "mtu_mismatch",
              absl::StrCat(what, " exceed the MTU ", mtu, " of ", name,
                           forced ? ": dropped (DF set)"
                                  : ": they rely on PMTU discovery (ICMP fragmentation-needed)"));
        return true;
      };
    };
    // After a mismatch: what PMTU discovery settles on.
    if (!CheckSize(v, f, oif->mtu, oif->mtu, make)) return;
  }
  Dispatch(w, v, *oif, route, std::move(f), std::move(br));
}

void Walker::Dispatch(const Where& w, Vertex v, const Interface& oif, const RouteResult& route,
                      Flight f, Branch br) {
  // A forwarded tunnel packet is routed by its outer header.
  net::Ipv4 nexthop = route.gateway.value_or(f.outer ? f.outer->dst : f.pkt.dst);
  const std::string& kind = oif.kind;
  if (kind == "ipip" || kind == "vxlan" || kind == "wireguard" ||
      (oif.tunnel && oif.tunnel->proto == "ipip")) {
    Encapsulate(w, v, oif, route, std::move(f), std::move(br));
    return;
  }
  CheckNeighbor(w, v, oif, route.gateway);
  if (kind == "veth") {
    VethPeer(w, v, oif, nexthop, std::move(f), std::move(br));
    return;
  }
  if (kind == "bridge") {
    BridgePort(w, v, oif, nexthop, std::move(f), std::move(br), "");
    return;
  }
  if (oif.loopback) {
    Serve(w, v, std::move(f), std::move(br));
    return;
  }
  Underlay(w, v, oif, nexthop, std::move(f), std::move(br),
           absl::StrCat(oif.name, route.gateway ? absl::StrCat(" via ", nexthop.to_string())
                                                : std::string()));
}

void Walker::Encapsulate(const Where& w, Vertex v, const Interface& tun, const RouteResult& route,
                         Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  Packet outer;
  outer.ttl = 64;
  uint32_t overhead = 0;
  std::string kind;
  std::optional<net::Ipv4> outer_src;
  std::string label;
  if (tun.kind == "vxlan" && tun.vxlan) {
    kind = "vxlan";
    overhead = kVxlanOverhead;
    net::Ipv4 nh = route.gateway.value_or(f.pkt.dst);
    std::optional<net::Ipv4> vtep;
    if (Need(w, v, NetstackSource::kNeighbors, "VXLAN neighbour entries")) {
      const model::Neighbor* n = ns.FindNeighbor(nh, tun.name);
      if (n == nullptr || !n->Usable() || !n->lladdr) {
        Drop(v, "neighbor_missing",
             absl::StrCat("no usable neighbour entry for ", nh.to_string(), " on ", tun.name,
                          n ? absl::StrCat(" (", absl::StrJoin(n->state, ","), ")") : "",
                          ": the VXLAN device cannot build the inner Ethernet header (the CNI "
                          "programs these entries; ARP does not cross the overlay)"));
        return;
      }
      if (Need(w, v, NetstackSource::kFdb, "VXLAN forwarding entries (bridge fdb)")) {
        for (const model::FdbEntry* e : ns.FindFdb(tun.name, *n->lladdr)) {
          if (e->dst) {
            vtep = e->dst;
            break;
          }
        }
        if (!vtep && tun.vxlan->group) vtep = tun.vxlan->group;
        if (!vtep) {
          Drop(v, "vxlan_fdb_missing",
               absl::StrCat("no bridge fdb entry on ", tun.name, " for ",
                            net::FormatMac(*n->lladdr), " (", nh.to_string(),
                            "): the VXLAN device does not know which VTEP to send to"));
          return;
        }
      }
    }
    if (!vtep) {
      // No neighbour / fdb data: the node owning the overlay next hop.
      const model::Node* k = cluster_.FindNodeByIp(nh);
      if (k && k->PrimaryIp()) vtep = k->PrimaryIp();
    }
    if (!vtep) {
      Suspect(v, Level::kWarning, "snapshot_incomplete",
              absl::StrCat("cannot tell which VTEP ", tun.name, " sends ", nh.to_string(), " to"));
      return;
    }
    outer.dst = *vtep;
    outer.proto = model::kProtoUdp;
    outer.dport = tun.vxlan->port;
    outer.sport = 0;
    outer_src = tun.vxlan->local;
    label = absl::StrCat("vxlan ", tun.name, " vni ", tun.vxlan->vni);
  } else if (tun.kind == "wireguard") {
    kind = "wireguard";
    overhead = kWireguardOverhead;
    const model::Node* k = nullptr;
    if (const model::Pod* p = cluster_.FindPodByIp(f.pkt.dst)) k = cluster_.FindNode(p->node_name);
    if (!k) k = cluster_.FindNodeByIp(route.gateway.value_or(f.pkt.dst));
    if (!k) k = cluster_.FindNodeByPodCidr(f.pkt.dst);
    if (!k || !k->PrimaryIp()) {
      Suspect(v, Level::kWarning, "snapshot_incomplete",
              absl::StrCat("cannot tell which WireGuard peer ", tun.name, " sends ",
                           f.pkt.dst.to_string(), " to (peers are not in the snapshot)"));
      return;
    }
    outer.dst = *k->PrimaryIp();
    outer.proto = model::kProtoUdp;
    outer.dport = 51820;
    label = absl::StrCat("wireguard ", tun.name);
  } else {
    kind = "ipip";
    overhead = kIpipOverhead;
    if (tun.tunnel && tun.tunnel->remote) {
      outer.dst = *tun.tunnel->remote;
    } else if (route.gateway) {
      outer.dst = *route.gateway;
    } else {
      Drop(v, "tunnel_missing",
           absl::StrCat(tun.name, " has no remote and route '",
                        route.route ? route.route->ToString() : route.ToString(),
                        "' has no gateway: the ipip outer destination is unknown"));
      return;
    }
    outer.proto = model::kProtoIpip;
    if (tun.tunnel) outer_src = tun.tunnel->local;
    label = absl::StrCat("ipip ", tun.name);
  }
  CheckSize(v, f, tun.mtu, tun.mtu, [] { return SizeFlag(); });  // PMTU discovery vs the tunnel
  if (kind == "vxlan" && tun.vxlan) f.vni = tun.vxlan->vni;
  bool outer_fragments = kind == "vxlan" && tun.vxlan && tun.vxlan->df == "unset";
  SendOuter(w, v, tun, kind, overhead, outer, outer_src, outer_fragments, std::move(f),
            std::move(br), std::move(label));
}

void Walker::SendOuter(const Where& w, Vertex v, const Interface& tun, const std::string& kind,
                       uint32_t overhead, Packet outer, std::optional<net::Ipv4> outer_src,
                       bool outer_fragments, Flight f, Branch br, std::string label) {
  const Netstack& ns = w.ns->netstack;
  model::Flow fl;
  fl.dst = outer.dst;
  if (outer_src) fl.src = outer_src;
  fl.proto = outer.proto;
  fl.dport = outer.dport;
  RouteResult r = ns.RouteOutput(fl);
  if (!r.ok()) {
    ReportRouteError(v, r, outer, absl::StrCat(kind, " outer route to"), &w);
    return;
  }
  outer.src = outer_src.value_or(r.prefsrc.value_or(net::Ipv4()));
  const Interface* under = ns.FindInterface(r.oif);
  if (under == nullptr) {
    Drop(v, "link_missing",
         absl::StrCat("the ", kind, " outer route uses device '", r.oif, "' which does not exist"));
    return;
  }
  if (under->kind == "ipip" || under->kind == "vxlan" || under->kind == "wireguard") {
    Drop(v, "route_mismatch",
         absl::StrCat("the ", kind, " outer packet to ", outer.dst.to_string(),
                      " is routed into tunnel ", under->name, " again (recursive encapsulation)"));
    return;
  }
  if (!under->admin_up || !under->CanTransmit()) {
    Drop(v, "link_down",
         absl::StrCat("underlay device ", under->name, " of ", tun.name, " is down"));
    return;
  }
  // The tunnel device sends the outer packet with ip_local_out: OUTPUT and POSTROUTING see it.
  if (!w.in_pod()) {
    NfPass nf = RunHook(w, v, NfHook::kOutput, outer, "", under->name, r.gateway);
    if (nf.dropped) {
      f.outer = outer;
      TunnelPortBlocked(w, v, f, outer, "OUTPUT");
    }
    if (nf.dropped || !error_.ok()) return;
    outer = nf.accepted.front().packet;
    nf = RunHook(w, v, NfHook::kPostrouting, outer, "", under->name, r.gateway);
    if (nf.dropped) {
      f.outer = outer;
      TunnelPortBlocked(w, v, f, outer, "POSTROUTING");
    }
    if (nf.dropped || !error_.ok()) return;
    outer = nf.accepted.front().packet;
  }
  if (under->mtu > overhead) {
    auto make = [&]() -> SizeFlag {
      return [this, v, kind, overhead, outer_fragments, tname = tun.name, tmtu = tun.mtu,
              uname = under->name, umtu = under->mtu](uint32_t size, bool forced,
                                                      const std::string& tcp) {
      std::string what =
          tcp.empty() ? absl::StrCat("a ", size, "-byte packet")
                      : absl::StrCat("a ", size, "-byte TCP segment (", tcp, ")");
      std::string head = absl::StrCat(kind, " on ", tname, " (MTU ", tmtu, "): ", what,
                                      " becomes ", size + overhead, " bytes (+", overhead,
                                      ") but ", uname, " has MTU ", umtu);
      if (outer_fragments) {
        // A VXLAN device with df unset (the default) sends the outer packet without DF: the IP
        // layer fragments it, the packet arrives; vxlan_xmit_one (skb_tunnel_check_pmtu) only
        // lowers the inner route's PMTU so that later DF packets get "fragmentation needed".
        Suspect(v, Level::kWarning, "mtu_mismatch",
                absl::StrCat(head,
                             ": the outer packet is fragmented (no DF) and the inner path MTU "
                             "drops to ",
                             umtu - overhead, " for later packets; ", tname, " MTU should be <= ",
                             umtu - overhead));
        return false;
      }
      Suspect(v, forced ? Level::kFatal : Level::kCritical, "mtu_mismatch",
              absl::StrCat(head,
                           ": full-size packets are dropped after encapsulation (no PMTU signal "
                           "reaches the sender); ",
                           tname, " MTU should be <= ", umtu - overhead));
        return true;
      };
    };
    if (!CheckSize(v, f, under->mtu - overhead, 0, make)) return;
  }
  CheckNeighbor(w, v, *under, r.gateway);
  outer.ttl = 64;
  f.outer = outer;
  f.encap_kind = kind;
  absl::StrAppend(&label, ": ", Tuple(outer), " via ", under->name);
  Underlay(w, v, *under, r.gateway.value_or(outer.dst), std::move(f), std::move(br), label);
}

void Walker::EncapsulateWithKey(const Where& w, Vertex v, const PluginAction& a, Flight f,
                                Branch br) {
  const Netstack& ns = w.ns->netstack;
  const Interface* tun = ns.FindInterface(a.tunnel_dev);
  graph_.hop(v).oif = a.tunnel_dev;
  if (tun == nullptr) {
    Drop(v, "link_missing",
         absl::StrCat(a.label, ": tunnel device ", a.tunnel_dev, " does not exist on ",
                      w.node_name));
    return;
  }
  if (!tun->admin_up || !tun->CanTransmit()) {
    Drop(v, "link_down", absl::StrCat("tunnel device ", tun->name, " is down on ", w.node_name,
                                      ": ", a.label, " cannot send"));
    return;
  }
  if (a.check_device_mtu && !CheckSize(v, f, tun->mtu, tun->mtu,
                                       [&] { return DeviceMtuFlag(v, *tun); })) {
    return;
  }
  const PluginAction::TunnelKey& key = *a.tunnel_key;
  Packet outer;
  outer.dst = key.remote;
  outer.proto = model::kProtoUdp;
  outer.dport = tun->vxlan ? tun->vxlan->port : 8472;
  outer.sport = 0;
  outer.ttl = 64;
  f.vni = key.vni;
  f.peer_expectation = a.peer_expectation;
  std::string label = absl::StrCat(a.label, ": vxlan ", tun->name, " vni ", key.vni);
  SendOuter(w, v, *tun, "vxlan", kVxlanOverhead, outer,
            tun->vxlan ? tun->vxlan->local : std::nullopt, !key.dont_fragment, std::move(f),
            std::move(br), std::move(label));
}

void Walker::Redirect(const Where& w, Vertex v, const PluginAction& a, Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  const Interface* oif = ns.FindInterface(a.oif);
  graph_.hop(v).oif = a.oif;
  if (oif == nullptr) {
    Drop(v, "link_missing", absl::StrCat(a.label, ": device ", a.oif, " does not exist"));
    return;
  }
  if (!oif->admin_up || !oif->CanTransmit()) {
    Drop(v, "link_down", absl::StrCat(a.label, ": ", oif->name, " is down"));
    return;
  }
  // bpf_fib_lookup checks the MTU (BPF_FIB_LKUP_RET_FRAG_NEEDED) and the program hands such a
  // packet to the host stack, which sends ICMP fragmentation-needed for DF packets.
  if (!CheckSize(v, f, oif->mtu, oif->mtu, [&] { return DeviceMtuFlag(v, *oif); })) return;
  f.peer_expectation = a.peer_expectation;
  net::Ipv4 nh = a.nexthop.value_or(f.pkt.dst);
  CheckNeighbor(w, v, *oif, a.nexthop);
  Underlay(w, v, *oif, nh, std::move(f), std::move(br),
           absl::StrCat(a.label, ": ", oif->name, " via ", nh.to_string()));
}

void Walker::TunnelPortBlocked(const Where& w, Vertex v, const Flight& f, const Packet& outer,
                               absl::string_view hook) {
  if (outer.proto != model::kProtoUdp) return;
  Suspect(v, Level::kFatal, "tunnel_port_blocked",
          absl::StrCat("netfilter ", hook, " on ", w.node_name, " drops the ",
                       f.encap_kind.empty() ? "tunnel" : f.encap_kind, " packets (UDP ",
                       outer.src.to_string(), " -> ", outer.dst.to_string(), ":", outer.dport,
                       ") that carry ", Tuple(f.pkt), ": the tunnel port ", outer.dport,
                       " must be open on every node and router between the nodes"));
}

void Walker::Underlay(const Where& w, Vertex v, const Interface& oif, const net::Ipv4& nexthop,
                      Flight f, Branch br, const std::string& label) {
  const Packet& seen = f.outer ? *f.outer : f.pkt;
  net::Ipv4 target = seen.dst;
  // A veth cable to another node: the next hop must resolve at its other end, and the frame
  // must fit the receiving device (CrossVeth).
  if (oif.kind == "veth") {
    if (auto peer = NodeVethPeer(w, oif, nexthop)) {
      const Interface* pif = peer->where.ns->netstack.FindInterface(peer->ifname);
      if (pif && !CrossVeth(w, v, oif, peer->where, *pif, nexthop, f)) return;
      Receive(peer->where, peer->ifname, std::move(f), std::move(br),
              Prev{v, absl::StrCat(label, " -> ", peer->ifname, " (", peer->where.node_name, ")")});
      return;
    }
    if (!error_.ok()) return;
  }
  // The next hop is a node?
  if (auto o = OwnerOf(nexthop)) {
    if (!error_.ok()) return;
    Receive(o->where, o->ifname, std::move(f), std::move(br), Prev{v, label});
    return;
  }
  if (!error_.ok()) return;
  bool via_router = nexthop != target;
  if (via_router) {
    if (auto o = OwnerOf(target)) {
      if (!error_.ok()) return;
      Receive(o->where, o->ifname, std::move(f), std::move(br),
              Prev{v, absl::StrCat(label, " (routed by ", nexthop.to_string(), ")")});
      return;
    }
    if (!error_.ok()) return;
  }
  if (!f.peer_expectation.empty()) {
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat(target.to_string(), " is not a node of the snapshot: the path beyond ",
                         w.node_name, " cannot be checked; there, ", f.peer_expectation));
    return;
  }
  if (!f.outer) {
    if (const model::Pod* pod = cluster_.FindPodByIp(target); pod && !pod->host_network) {
      // Pod traffic handed to a router that is not a node: works only if the underlay routes
      // pod addresses (cloud VPC routes, BGP to the fabric).
      Suspect(v, Level::kWarning, "route_mismatch",
              absl::StrCat(
                  target.to_string(), " (pod ", pod->Key(), " on ", pod->node_name, ") leaves ",
                  w.node_name, " via ", oif.name,
                  via_router ? absl::StrCat(" to router ", nexthop.to_string()) : std::string(),
                  ", which is not a node: reachable only if the network routes pod "
                  "addresses"));
      auto pw = NodeWhere(pod->node_name);
      if (!pw.ok()) {
        error_ = pw.status();
        return;
      }
      const Interface* in = PrimaryInterface(*pw);
      Receive(*pw, in ? in->name : "", std::move(f), std::move(br),
              Prev{v, absl::StrCat(label, " (underlay routes pod addresses)")});
      return;
    }
    if (const model::Service* svc = cluster_.FindServiceByIp(target)) {
      Suspect(v, Level::kFatal, "route_mismatch",
              absl::StrCat("Service address ", Ep(target, seen.dport), " (", svc->Key(),
                           ") was not translated on ", w.node_name, " and leaves via ", oif.name,
                           " to ", nexthop.to_string(), ", where nothing answers for it"));
      Hop h;
      h.kind = HopKind::kExternal;
      h.id = absl::StrCat("external:", nexthop.to_string());
      h.action = HopAction::kDrop;
      h.packet = f.pkt;
      h.reply = f.reply;
      AddHop(std::move(h), Prev{v, label});
      return;
    }
  }
  if (f.outer) {
    Drop(v, "route_mismatch",
         absl::StrCat("the ", f.encap_kind, " outer destination ", target.to_string(),
                      " is not a node of the snapshot"));
    return;
  }
  br.egress_node = w.node_name;
  br.egress_iface = oif.name;
  if (f.reply) {
    ExternalReply(target, std::move(f), std::move(br), Prev{v, label});
  } else {
    External(target, std::move(f), std::move(br), Prev{v, label});
  }
}

void Walker::VethPeer(const Where& w, Vertex v, const Interface& oif, const net::Ipv4& nexthop,
                      Flight f, Branch br) {
  const Netstack& ns = w.ns->netstack;
  // Peer in the same netns (sarena_host <-> sarena_net): printed by name.
  if (!oif.link.empty() && !oif.link_netnsid) {
    if (const Interface* peer = ns.FindInterface(oif.link)) {
      if (!CrossVeth(w, v, oif, w, *peer, nexthop, f)) return;
      Receive(w, oif.link, std::move(f), std::move(br),
              Prev{v, absl::StrCat("veth ", oif.name, " -> ", oif.link)});
      return;
    }
  }
  if (w.in_pod()) {
    // Pod -> node: the node-side device is the one with ifindex == our link_index.
    auto node = NodeWhere(w.node_name);
    if (!node.ok()) {
      error_ = node.status();
      return;
    }
    std::string iif;
    if (node->ns && oif.link_index) {
      if (const Interface* hi = node->ns->netstack.FindInterfaceByIndex(*oif.link_index)) {
        iif = hi->name;
        if (hi->master.empty() && !CrossVeth(w, v, oif, *node, *hi, nexthop, f)) return;
        if (!hi->master.empty()) {
          const Interface* br_dev = node->ns->netstack.FindInterface(hi->master);
          if (br_dev && br_dev->kind == "bridge") {
            // Bridged: to the bridge's own address -> L3 on the bridge; to another port's
            // pod -> switched at L2.
            if (!node->ns->netstack.IsLocalAddress(nexthop)) {
              BridgeForward(*node, hi->name, *br_dev, nexthop, std::move(f), std::move(br),
                            Prev{v, absl::StrCat("veth ", oif.name, " -> ", hi->name)});
              return;
            }
          }
          iif = hi->master;
        }
      }
    }
    if (iif.empty() && node->ns) {
      // No link data: the device the node routes the pod's address through.
      model::Flow fl;
      fl.dst = *w.pod->pod_ip;
      RouteResult r = node->ns->netstack.Lookup(fl);
      if (r.ok()) iif = r.oif;
      Suspect(v, Level::kInfo, "file_missing",
              absl::StrCat("cannot match ", oif.name,
                           " to its node-side peer by ifindex; "
                           "assuming ",
                           iif.empty() ? "?" : iif));
    }
    Receive(*node, iif, std::move(f), std::move(br),
            Prev{v, absl::StrCat("veth ", oif.name, " -> ", iif)});
    return;
  }
  // Node -> pod.
  if (oif.link_index) {
    // Fast path: the pod owning the address, when its eth0 is this veth's peer.
    for (const net::Ipv4& ip : {nexthop, f.pkt.dst}) {
      const model::Pod* p = cluster_.FindPodByIp(ip);
      if (!p || p->host_network || p->node_name != w.node_name) continue;
      auto pn = snap_.PodNetns(p->namespace_, p->name, p->node_name);
      if (!pn.ok()) continue;
      const Interface* pi = (*pn)->netstack.FindInterfaceByIndex(*oif.link_index);
      if (!pi || pi->kind != "veth" || (pi->link_index && *pi->link_index != oif.ifindex)) {
        continue;
      }
      auto pw = PodWhere(*p);
      if (!pw.ok()) {
        error_ = pw.status();
        return;
      }
      if (!CrossVeth(w, v, oif, *pw, *pi, nexthop, f)) return;
      Receive(*pw, pi->name, std::move(f), std::move(br),
              Prev{v, absl::StrCat("veth ", oif.name, " -> ", pi->name)});
      return;
    }
    if (auto o = PodByIfindex(w, *oif.link_index, oif.ifindex)) {
      if (const Interface* pi = o->where.ns->netstack.FindInterface(o->ifname)) {
        if (!CrossVeth(w, v, oif, o->where, *pi, nexthop, f)) return;
      }
      Receive(o->where, o->ifname, std::move(f), std::move(br),
              Prev{v, absl::StrCat("veth ", oif.name, " -> ", o->ifname)});
      return;
    }
    if (!error_.ok()) return;
    // A veth cable to another node (nodes simulated as namespaces joined by veths); the next
    // hop must resolve there (CrossVeth).
    if (auto peer = NodeVethPeer(w, oif, nexthop)) {
      const Interface* pif = peer->where.ns->netstack.FindInterface(peer->ifname);
      if (pif && !CrossVeth(w, v, oif, peer->where, *pif, nexthop, f)) return;
      Receive(peer->where, peer->ifname, std::move(f), std::move(br),
              Prev{v, absl::StrCat("veth ", oif.name, " -> ", peer->ifname, " (",
                                   peer->where.node_name, ")")});
      return;
    }
    if (!error_.ok()) return;
  }
  const model::Pod* pod = cluster_.FindPodByIp(nexthop);
  if (!pod) pod = cluster_.FindPodByIp(f.pkt.dst);
  if (pod && !pod->host_network && pod->node_name == w.node_name) {
    auto pw = PodWhere(*pod);
    if (!pw.ok()) {
      error_ = pw.status();
      return;
    }
    Receive(*pw, "eth0", std::move(f), std::move(br),
            Prev{v, absl::StrCat("veth ", oif.name, " (peer by address)")});
    return;
  }
  // The peer netns is not in the snapshot, but the next hop (or, for a tunnel's outer packet,
  // its destination) is a host of the snapshot: the veth is a cable into an L2 segment the
  // snapshot does not hold (e.g. an underlay bridge namespace); follow the address.
  {
    bool known = OwnerOf(nexthop).has_value();
    if (!error_.ok()) return;
    if (!known && f.outer) known = OwnerOf(f.outer->dst).has_value();
    if (!error_.ok()) return;
    if (known) {
      std::string label = absl::StrCat(oif.name, " (underlay segment not in the snapshot)");
      Underlay(w, v, oif, nexthop, std::move(f), std::move(br), label);
      return;
    }
  }
  // A veth's peer always exists (the pair dies together): what is missing is its netns in the
  // snapshot.
  Suspect(v, Level::kWarning, "snapshot_incomplete",
          absl::StrCat("veth ", oif.name,
                       " leads to a network namespace the snapshot does not "
                       "hold (peer ifindex ",
                       oif.link_index ? absl::StrCat(*oif.link_index) : std::string("?"), "), and ",
                       f.pkt.dst.to_string(), " is not a known pod on ", w.node_name,
                       ": the path beyond cannot be checked"));
}

std::optional<Walker::PortTarget> Walker::FindBridgePort(const Where& w, const Interface& bridge,
                                                         const net::Ipv4& nexthop) {
  const Netstack& ns = w.ns->netstack;
  for (const Interface& port : ns.interfaces()) {
    if (port.master != bridge.name || port.kind != "veth" || !port.link_index) continue;
    auto o = PodByIfindex(w, *port.link_index, port.ifindex);
    if (!error_.ok()) return std::nullopt;
    if (!o || !o->where.ns) continue;
    if (!o->where.ns->netstack.IsLocalAddress(nexthop)) continue;
    return PortTarget{&port, o->where, o->ifname};
  }
  const model::Pod* pod = cluster_.FindPodByIp(nexthop);
  if (pod && !pod->host_network && pod->node_name == w.node_name) {
    auto pw = PodWhere(*pod);
    if (!pw.ok()) {
      error_ = pw.status();
      return std::nullopt;
    }
    return PortTarget{nullptr, *pw, "eth0"};
  }
  return std::nullopt;
}

void Walker::BridgePort(const Where& w, Vertex v, const Interface& bridge, const net::Ipv4& nexthop,
                        Flight f, Branch br, const std::string& label) {
  std::optional<PortTarget> t = FindBridgePort(w, bridge, nexthop);
  if (!error_.ok()) return;
  if (!t) {
    Drop(v, "neighbor_missing",
         absl::StrCat("no port of bridge ", bridge.name, " leads to ", nexthop.to_string(),
                      " (no pod netns on ", w.node_name, " owns it)"));
    return;
  }
  std::string l = label.empty() ? absl::StrCat("bridge ", bridge.name) : label;
  if (t->port) {
    absl::StrAppend(&l, " -> ", t->port->name);
    if (!t->port->admin_up || !t->port->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("bridge port ", t->port->name, " towards ", t->where->pod->Key(),
                        " is down"));
      return;
    }
  } else {
    absl::StrAppend(&l, " (port found by address)");
  }
  Receive(*t->where, t->ifname, std::move(f), std::move(br), Prev{v, l});
}

// A frame switched between two ports of a Linux bridge (pod to pod on the same bridge). With
// br_netfilter (net.bridge.bridge-nf-call-iptables=1, which kube-proxy requires) it still passes
// iptables and conntrack — that is what reverses a Service DNAT for a reply between two pods of
// one bridge; without it the reply keeps the backend's address.
void Walker::BridgeForward(const Where& node, const std::string& in_port, const Interface& bridge,
                           const net::Ipv4& nexthop, Flight f, Branch br, const Prev& prev) {
  Hop h;
  h.kind = HopKind::kNode;
  h.id = HopId(node, f.reply);
  h.node = node.node_name;
  h.iif = in_port;
  h.action = HopAction::kForward;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  if (++br.hops > opts_.max_hops) {
    Drop(v, "ttl_exceeded", "too many hops: the path loops");
    return;
  }
  if (checked_.insert(node.node_name).second) plugin_.CheckNode(pctx_, node, v);
  std::string key = absl::StrCat(node.ns->id, "|", in_port, "|", Tuple(f.pkt), "|", f.reply);
  if (!br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("bridging loop: ", Tuple(f.pkt), " enters ", bridge.name, " on ", in_port,
                      " again"));
    return;
  }
  if (!f.reply) br.request_netns.insert(node.ns->id);
  std::optional<PortTarget> t = FindBridgePort(node, bridge, nexthop);
  if (!error_.ok()) return;
  if (!t) {
    Drop(v, "neighbor_missing",
         absl::StrCat("no port of bridge ", bridge.name, " leads to ", nexthop.to_string(),
                      " (no pod netns on ", node.node_name, " owns it)"));
    return;
  }
  if (t->port) graph_.hop(v).oif = t->port->name;
  const Netstack& ns = node.ns->netstack;
  std::optional<int64_t> call = ns.sysctls().GetInt("net.bridge.bridge-nf-call-iptables");
  bool nf_on = call ? *call != 0 : true;
  if (!call && ns.Has(NetstackSource::kSysctls)) {
    InfoOnce(v, absl::StrCat("brnf|", node.ns->id), "bridge_netfilter",
             absl::StrCat("net.bridge.bridge-nf-call-iptables is not in ", node.ns->dir,
                          "/sysctl.txt: assuming 1 (br_netfilter, which kube-proxy requires)"));
  }
  if (!nf_on) {
    Suspect(v, Level::kInfo, "bridge_netfilter",
            absl::StrCat("net.bridge.bridge-nf-call-iptables = 0: traffic bridged on ", bridge.name,
                         " bypasses iptables and conntrack (no Service NAT "
                         "reversal, no filter rules)"));
  } else if (node.ns->netfilter) {
    SetCtState(node, &f.pkt, f, br);
    if (f.reply) UnSnat(node, &f.pkt, br);
    for (NfHook hook : {NfHook::kPrerouting, NfHook::kForward, NfHook::kPostrouting}) {
      NfPass nf = RunHook(node, v, hook, f.pkt, bridge.name,
                          hook == NfHook::kPrerouting ? "" : bridge.name, std::nullopt);
      if (nf.dropped || !error_.ok()) return;
      f.pkt = nf.accepted.front().packet;
    }
    if (f.reply) UnDnat(node, &f.pkt, br);
  }
  graph_.hop(v).packet = f.pkt;
  std::string l = absl::StrCat("bridged on ", bridge.name);
  if (t->port) {
    absl::StrAppend(&l, " -> ", t->port->name);
    if (!t->port->admin_up || !t->port->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("bridge port ", t->port->name, " towards ", t->where->pod->Key(),
                        " is down"));
      return;
    }
  }
  Receive(*t->where, t->ifname, std::move(f), std::move(br), Prev{v, l});
}

// ------------------------------------------------------------------------------------------
// Ends of the path.

void Walker::Serve(const Where& w, Vertex v, Flight f, Branch br) {
  Hop& h = graph_.hop(v);
  h.action = HopAction::kServe;
  h.packet = f.pkt;
  if (f.reply) {
    // The SYN-ACK reached the client: the server's MSS (after the clamps on the way back) sizes
    // the client's segments.
    if (f.tcp.active && f.tcp.request) {
      ResolveRequest(f.tcp.request, f.tcp.self_known ? &f.tcp.self : nullptr, f.tcp.syn,
                     f.tcp.clamps);
    }
    // The reply reached the client: conntrack there matches it against the request it sent.
    if (client_where_.ns && w.ns && client_where_.ns != w.ns) {
      Drop(v, "route_mismatch",
           absl::StrCat("the reply to ", f.pkt.dst.to_string(), " is delivered to ", w.ns->id,
                        ", not to the client ", client_where_.ns->id));
      return;
    }
    if (client_packet_) {
      const Packet& c = *client_packet_;
      if (f.pkt.src != c.dst || (c.dport && f.pkt.sport != c.dport)) {
        Drop(v, "asymmetric_return",
             absl::StrCat("the reply arrives from ", Ep(f.pkt.src, f.pkt.sport),
                          " but the client sent to ", Ep(c.dst, c.dport),
                          ": the NAT of the request was not reversed on the way back (the reply "
                          "bypassed the node that translated it); the client drops it"));
      }
    }
    return;
  }
  // The request is delivered to a socket here.
  if (w.in_pod()) {
    const model::Pod& pod = *w.pod;
    if (f.pkt.proto == model::kProtoTcp || f.pkt.proto == model::kProtoUdp ||
        f.pkt.proto == model::kProtoSctp) {
      if (pod.ports.empty()) {
        Suspect(v, Level::kInfo, "not_listening",
                absl::StrCat("pod ", pod.Key(),
                             " declares no containerPorts: cannot check that "
                             "something listens on ",
                             f.pkt.dport, "/", model::ProtoName(f.pkt.proto)));
      } else {
        bool found = false;
        for (const auto& p : pod.ports) {
          if (p.container_port == f.pkt.dport && p.proto == f.pkt.proto) found = true;
        }
        if (!found) {
          std::vector<std::string> ports;
          for (const auto& p : pod.ports) {
            ports.push_back(absl::StrCat(p.container_port, "/", model::ProtoName(p.proto)));
          }
          Suspect(v, Level::kWarning, "not_listening",
                  absl::StrCat("pod ", pod.Key(), " declares containerPorts ",
                               absl::StrJoin(ports, ", "), " but not ", f.pkt.dport, "/",
                               model::ProtoName(f.pkt.proto),
                               ": nothing may listen there (ports need not be declared)"));
        }
      }
    }
  } else if (w.ns) {
    // Local delivery on a node: a hostNetwork pod or a node service. A Service node port that
    // reaches here was not translated.
    if (const model::Service* svc = cluster_.FindServiceByNodePort(f.pkt.dport, f.pkt.proto)) {
      (void)svc;
    }
  }
  if (opts_.reply) StartReply(w, v, f, std::move(br));
}

void Walker::StartReply(const Where& w, Vertex v, const Flight& f, Branch br) {
  Flight rf;
  rf.pkt = f.pkt.Reversed();
  rf.pkt.ct_state = CtState::kEstablished;
  rf.pkt.ttl = 64;
  rf.pkt.mark = 0;
  rf.pkt.length = 0;
  rf.reply = true;
  // TCP: the server's segments are at most the client's MSS (its MTU - 40, announced in the
  // SYN), so the reply is no larger than the client's own packets. Other protocols: unknown,
  // full-size (the server's MTU).
  if (f.tcp.active) {
    rf.tcp.active = true;
    rf.tcp.peer = f.tcp.self;
    rf.tcp.peer_syn = f.tcp.syn;
    rf.tcp.peer_clamps = f.tcp.clamps;
    rf.tcp.request = f.tcp.pending;
    rf.size = f.tcp.syn ? f.tcp.syn + kTcpIpHeaders : client_size_;
    // Until the server's route is known (OriginateRouted): its own path MTU unknown.
    rf.tcp.self.who = Who(w);
    rf.tcp.segment = rf.size;
  } else if (rf.pkt.proto == model::kProtoTcp && query_.size == 0) {
    rf.size = client_size_;
  }
  Originate(w, std::move(rf), std::move(br), Prev{v, "reply"});
}

void Walker::External(const net::Ipv4& ip, Flight f, Branch br, const Prev& prev) {
  // A server outside the snapshot: its MSS is unknown, the client's own path MTU bounds it.
  if (f.tcp.active && !f.reply) ResolveRequest(f.tcp.pending, nullptr, 0, "");
  Hop h;
  h.kind = HopKind::kExternal;
  h.id = absl::StrCat("external:", ip.to_string());
  h.action = HopAction::kServe;
  h.packet = f.pkt;
  Vertex v = AddHop(std::move(h), prev);
  if (!opts_.reply) return;
  Flight rf;
  rf.pkt = f.pkt.Reversed();
  rf.pkt.ct_state = CtState::kEstablished;
  rf.reply = true;
  Hop r;
  r.kind = HopKind::kExternal;
  r.id = absl::StrCat("external:", ip.to_string(), "@reply");
  r.action = HopAction::kSend;
  r.packet = rf.pkt;
  r.reply = true;
  Vertex rv = AddHop(std::move(r), Prev{v, "reply"});
  // The reply comes back to whoever owns its destination; else to where the request left.
  if (auto o = OwnerOf(rf.pkt.dst)) {
    if (!error_.ok()) return;
    Receive(o->where, o->ifname, std::move(rf), std::move(br), Prev{rv, "underlay"});
    return;
  }
  if (!error_.ok()) return;
  auto node = NodeWhere(br.egress_node);
  if (!node.ok()) {
    error_ = node.status();
    return;
  }
  if (const model::Pod* pod = cluster_.FindPodByIp(rf.pkt.dst); pod && !pod->host_network) {
    Suspect(rv, Level::kWarning, "route_mismatch",
            absl::StrCat("the reply is addressed to pod ", pod->Key(), " (", rf.pkt.dst.to_string(),
                         "): the network outside the cluster must route "
                         "pod addresses back (no SNAT was applied)"));
  }
  std::string iif = br.egress_iface;
  Receive(*node, iif, std::move(rf), std::move(br), Prev{rv, "underlay (return)"});
}

void Walker::ExternalReply(const net::Ipv4& ip, Flight f, Branch br, const Prev& prev) {
  Hop h;
  h.kind = HopKind::kExternal;
  h.id = absl::StrCat("external:", ip.to_string(), "@reply");
  h.action = HopAction::kServe;
  h.packet = f.pkt;
  h.reply = true;
  Vertex v = AddHop(std::move(h), prev);
  if (client_external_ && client_packet_) {
    const Packet& c = *client_packet_;
    if (f.pkt.src != c.dst || (c.dport && f.pkt.sport != c.dport)) {
      Drop(v, "asymmetric_return",
           absl::StrCat("the reply reaches ", ip.to_string(), " from ", Ep(f.pkt.src, f.pkt.sport),
                        " but the client sent to ", Ep(c.dst, c.dport),
                        ": the request's NAT was not reversed (asymmetric return)"));
    }
  }
}

// ------------------------------------------------------------------------------------------
// Services.

bool Walker::ServiceStage(const Where& w, Vertex v, const std::string& iif, Flight f, Branch br,
                          bool originated) {
  const Packet& pkt = f.pkt;
  const model::Service* svc = cluster_.FindServiceByIp(pkt.dst);
  const model::ServicePort* port = nullptr;
  enum class Via { kClusterIp, kExternal, kNodePort } via = Via::kClusterIp;
  if (svc) {
    bool is_cluster_ip = std::find(svc->cluster_ips.begin(), svc->cluster_ips.end(), pkt.dst) !=
                         svc->cluster_ips.end();
    via = is_cluster_ip ? Via::kClusterIp : Via::kExternal;
    port = svc->FindPort(pkt.dport, pkt.proto);
  } else if (w.ns && w.ns->netstack.IsLocalAddress(pkt.dst)) {
    svc = cluster_.FindServiceByNodePort(pkt.dport, pkt.proto);
    if (svc) {
      port = svc->FindNodePort(pkt.dport, pkt.proto);
      via = Via::kNodePort;
    }
  }
  if (!svc) return false;

  Hop h;
  h.kind = HopKind::kService;
  h.id = absl::StrCat(w.node_name, "/svc:", svc->Key());
  h.node = w.node_name;
  h.iif = iif;
  h.action = HopAction::kService;
  h.packet = pkt;
  Vertex s = AddHop(h, Prev{v, via == Via::kNodePort ? "nodePort" : "service address"});
  graph_.hop(v).action = originated ? HopAction::kSend : HopAction::kForward;

  if (svc->headless) {
    Drop(s, "service_no_endpoints", absl::StrCat("Service ", svc->Key(), " is headless"));
    return true;
  }
  if (!port) {
    Drop(s, "service_no_endpoints",
         absl::StrCat("Service ", svc->Key(), " has no port ", pkt.dport, "/",
                      model::ProtoName(pkt.proto), " on ", pkt.dst.to_string(),
                      ": nothing translates this destination"));
    return true;
  }
  std::vector<model::Backend> all = cluster_.BackendsFor(*svc, *port);
  std::vector<model::Backend> ready;
  for (const auto& b : all) {
    if (b.ready) ready.push_back(b);
  }
  bool src_is_pod = cluster_.FindPodByIp(pkt.src) != nullptr;
  bool src_is_node =
      cluster_.FindNodeByIp(pkt.src) != nullptr || (w.ns && w.ns->netstack.IsLocalAddress(pkt.src));
  bool external_src = !src_is_pod && !src_is_node && !originated;
  if (ready.empty()) {
    std::string why;
    if (svc->selector.empty()) {
      why = "it has no selector and no manual endpoints";
    } else {
      std::vector<std::string> sel;
      for (const auto& [k, val] : svc->selector) sel.push_back(absl::StrCat(k, "=", val));
      size_t matching = 0, matching_ready = 0;
      for (const model::Pod& p : cluster_.pods()) {
        if (p.namespace_ != svc->namespace_) continue;
        bool ok = true;
        for (const auto& [k, val] : svc->selector) {
          const std::string* lv = model::FindLabel(p.labels, k);
          if (!lv || *lv != val) ok = false;
        }
        if (ok) {
          ++matching;
          if (p.ready) ++matching_ready;
        }
      }
      why = absl::StrCat("selector ", absl::StrJoin(sel, ","), " matches ", matching,
                         " pod(s) in namespace ", svc->namespace_, ", ", matching_ready, " ready");
    }
    Drop(s, "service_no_endpoints",
         absl::StrCat("Service ", svc->Key(), " port ", port->port, "/",
                      model::ProtoName(port->proto), " has no ready endpoints (", why,
                      all.empty() ? "" : absl::StrCat("; ", all.size(), " not ready"),
                      "): connections to ", Ep(pkt.dst, pkt.dport), " fail"));
    // How it fails (refused vs hang) depends on whether a rule rejects the untranslated packet
    // on this path: kube-proxy's REJECT sat only in filter OUTPUT/INPUT for years
    // (kubernetes/kubernetes#60124), so forwarded pod traffic was not rejected.
    if (w.ns && w.ns->netfilter) ExplainNoEndpoints(w, s, iif, pkt, originated);
    return true;
  }
  if (via == Via::kExternal &&
      std::find(svc->load_balancer_ips.begin(), svc->load_balancer_ips.end(), pkt.dst) !=
          svc->load_balancer_ips.end() &&
      !svc->load_balancer_source_ranges.empty()) {
    bool allowed = false;
    for (const auto& r : svc->load_balancer_source_ranges) {
      if (net::Contains(r, pkt.src)) allowed = true;
    }
    if (!allowed) {
      std::vector<std::string> rs;
      for (const auto& r : svc->load_balancer_source_ranges) rs.push_back(r.to_string());
      Drop(s, "source_range_denied",
           absl::StrCat("Service ", svc->Key(), " loadBalancerSourceRanges [",
                        absl::StrJoin(rs, ", "), "] do not allow source ", pkt.src.to_string(),
                        ": kube-proxy drops it"));
      return true;
    }
  }
  std::vector<model::Backend> eligible = ready;
  if ((via == Via::kExternal || via == Via::kNodePort) && svc->external_traffic_policy_local &&
      external_src) {
    std::vector<model::Backend> local;
    for (const auto& b : ready) {
      if (b.node_name == w.node_name) local.push_back(b);
    }
    if (local.empty()) {
      Drop(s, "external_traffic_policy_local_drop",
           absl::StrCat("Service ", svc->Key(),
                        " has externalTrafficPolicy Local and no ready "
                        "endpoint on node ",
                        w.node_name, " (", ready.size(),
                        " elsewhere): external traffic arriving here is dropped"));
      return true;
    }
    eligible = local;
  } else if (via == Via::kClusterIp && svc->internal_traffic_policy_local) {
    std::vector<model::Backend> local;
    for (const auto& b : ready) {
      if (b.node_name == w.node_name) local.push_back(b);
    }
    if (local.empty()) {
      Drop(s, "service_no_endpoints",
           absl::StrCat("Service ", svc->Key(),
                        " has internalTrafficPolicy Local and no ready "
                        "endpoint on node ",
                        w.node_name));
      return true;
    }
    eligible = local;
  }

  // The translation kube-proxy installed (netfilter), else the endpoints themselves.
  struct Target {
    Packet pkt;
    double probability = 1;
    std::string by;
  };
  std::vector<Target> targets;
  bool from_rules = false;
  if (w.ns && w.ns->netfilter) {
    NfPass nf = RunHook(w, s, originated ? NfHook::kOutput : NfHook::kPrerouting, pkt, iif, "",
                        std::nullopt);
    if (nf.dropped || !error_.ok()) return true;
    for (const NfOutcome& o : nf.accepted) {
      if (!o.dnat) continue;
      bool dup = false;
      for (auto& t : targets) {
        if (t.pkt.dst == o.packet.dst && t.pkt.dport == o.packet.dport) {
          t.probability += o.probability;
          dup = true;
        }
      }
      if (!dup) {
        targets.push_back(
            Target{o.packet, o.probability, o.decided_by ? o.decided_by->ToString() : "netfilter"});
      }
    }
    from_rules = !targets.empty();
    if (targets.empty()) {
      bool kube_proxy = false;
      for (const std::string& c : w.ns->netfilter->Chains(model::NfTable::kNat)) {
        if (absl::StartsWith(c, "KUBE-SVC-") || absl::StartsWith(c, "KUBE-SEP-")) {
          kube_proxy = true;
        }
      }
      if (kube_proxy) {
        Drop(s, "service_not_programmed",
             absl::StrCat("kube-proxy's rules on ", w.node_name, " do not translate ",
                          Ep(pkt.dst, pkt.dport), " (", svc->Key(), " has ", ready.size(),
                          " ready endpoint(s)): the packet keeps the Service address"));
        return true;
      }
      InfoOnce(s, absl::StrCat("nokp|", w.node_name), "service_not_programmed",
               absl::StrCat("no kube-proxy iptables rules on ", w.node_name,
                            " (IPVS or an eBPF service proxy?): backends taken from the "
                            "Service's endpoints"));
    } else {
      // Compare with the endpoints Kubernetes lists.
      for (const Target& t : targets) {
        bool known = false;
        for (const auto& b : eligible) {
          if (b.ip == t.pkt.dst && b.port == t.pkt.dport) known = true;
        }
        if (!known) {
          Suspect(s, Level::kWarning, "service_backend_mismatch",
                  absl::StrCat("kube-proxy translates to ", Ep(t.pkt.dst, t.pkt.dport),
                               " which is not a ready endpoint of ", svc->Key(), " (stale rules)"));
        }
      }
    }
  } else if (w.ns) {
    std::string file = absl::StrCat(w.ns->dir, "/", model::kIptablesFile);
    InfoOnce(s, absl::StrCat("missing|", file), "file_missing",
             absl::StrCat("cannot check kube-proxy rules: file ", file,
                          " missing; backends taken from the Service's endpoints"));
  }
  if (!from_rules) {
    for (const auto& b : eligible) {
      Packet p = pkt;
      p.dst = b.ip;
      p.dport = b.port;
      targets.push_back(Target{p, 1.0 / eligible.size(), "endpoints"});
    }
  }
  if (targets.size() > opts_.max_backends) {
    Suspect(s, Level::kInfo, "service_backends",
            absl::StrCat(targets.size(), " backends; walking the first ", opts_.max_backends));
    targets.resize(opts_.max_backends);
  }
  std::vector<std::function<void()>> branches;
  bool many = targets.size() > 1;
  for (const Target& t : targets) {
    branches.push_back([&, t]() {
      Hop bh = h;
      if (many) bh.id = absl::StrCat(h.id, "@", Ep(t.pkt.dst, t.pkt.dport));
      bh.packet = t.pkt;
      Vertex b = s;
      if (many) {
        b = AddHop(bh, Prev{s, absl::StrFormat("DNAT -> %s (p=%.2f)", Ep(t.pkt.dst, t.pkt.dport),
                                               t.probability)});
      } else {
        graph_.hop(s).packet = t.pkt;
      }
      Suspect(b, Level::kInfo, "dnat",
              absl::StrCat("DNAT ", Ep(pkt.dst, pkt.dport), " -> ", Ep(t.pkt.dst, t.pkt.dport),
                           " by ", t.by));
      Branch cb = br;
      Packet after = t.pkt;
      cb.nat.push_back(NatRecord{w.ns ? w.ns->id : "", pkt, after, true, false});
      Flight cf = f;
      cf.pkt = after;
      if (originated) {
        OriginateRouted(w, b, std::move(cf), std::move(cb), true);
      } else {
        ContinueInput(w, b, iif, std::move(cf), std::move(cb));
      }
    });
  }
  WalkBranches(s, std::move(branches));
  return true;
}

void Walker::ExplainNoEndpoints(const Where& w, Vertex s, const std::string& iif, const Packet& pkt,
                                bool originated) {
  const model::Netfilter& nf = *w.ns->netfilter;
  model::NfContext ctx;
  ctx.netstack = &w.ns->netstack;
  ctx.iif = iif;
  std::vector<NfOutcome> outs =
      nf.EvaluateHook(originated ? NfHook::kOutput : NfHook::kPrerouting, pkt, ctx);
  const NfOutcome* stop = nullptr;
  for (const NfOutcome& o : outs) {
    if (o.verdict == NfVerdict::kDrop || o.verdict == NfVerdict::kReject) stop = &o;
  }
  std::string route_text;
  if (!stop && !originated) {
    model::Flow fl;
    fl.dst = pkt.dst;
    fl.src = pkt.src;
    fl.iif = iif;
    model::InputResult in = w.ns->netstack.RouteInput(fl);
    if (in.decision == InputDecision::kForward) {
      route_text = in.route.ToString();
      ctx.oif = in.route.oif;
      for (const NfOutcome& o : nf.EvaluateHook(NfHook::kForward, pkt, ctx)) {
        if (o.verdict == NfVerdict::kDrop || o.verdict == NfVerdict::kReject) stop = &o;
      }
    }
  }
  if (stop) {
    Suspect(s, Level::kInfo, "netfilter_drop",
            absl::StrCat("the untranslated packet is ",
                         stop->verdict == NfVerdict::kReject ? "rejected (the client sees "
                                                               "'connection refused')"
                                                             : "dropped (the client hangs)",
                         " by ", stop->decided_by ? stop->decided_by->ToString() : "policy"));
  } else if (!route_text.empty()) {
    Suspect(s, Level::kInfo, "netfilter_drop",
            absl::StrCat("no rule on the ", originated ? "OUTPUT" : "FORWARD",
                         " path rejects the untranslated packet: it follows '", route_text,
                         "' and is lost, so the client hangs instead of being refused"));
  }
}

// ------------------------------------------------------------------------------------------
// Run.

absl::Status Walker::Run() {
  const Query& q = query_;
  // Destination.
  net::Ipv4 dst;
  uint16_t dport = q.dport;
  switch (q.dst.kind) {
    case EndpointSpec::Kind::kPod: {
      const model::Pod* p = FindPodAnywhere(q.dst.namespace_, q.dst.name);
      if (!p) {
        return absl::NotFoundError(absl::StrCat("unknown destination pod ", q.dst.namespace_, "/",
                                                q.dst.name, " (not in cluster/pods.json)"));
      }
      if (!p->pod_ip) {
        return absl::InvalidArgumentError(absl::StrCat(
            "destination pod ", p->Key(), " has no IP (status.podIP empty: not running?)"));
      }
      dst = *p->pod_ip;
      break;
    }
    case EndpointSpec::Kind::kNode: {
      const model::Node* n = cluster_.FindNode(q.dst.name);
      std::optional<net::Ipv4> ip = n ? n->PrimaryIp() : std::nullopt;
      if (!ip && snap_.HasNodeDir(q.dst.name)) {
        SARENA_ASSIGN_OR_RETURN(Where w, NodeWhere(q.dst.name));
        if (const Interface* i = PrimaryInterface(w); i && i->PrimaryAddress()) {
          ip = i->PrimaryAddress()->local;
        }
        // No Node object and no default route (a live collect of a node whose only address
        // is on a host device, e.g. sarena_host): its first global address.
        for (size_t k = 0; !ip && w.ns && k < w.ns->netstack.interfaces().size(); ++k) {
          const Interface& i = w.ns->netstack.interfaces()[k];
          const auto* a = i.loopback ? nullptr : i.PrimaryAddress();
          if (a && a->scope == model::Scope::kUniverse) ip = a->local;
        }
      }
      if (!ip) {
        return absl::NotFoundError(absl::StrCat("unknown destination node ", q.dst.name,
                                                " (no address in cluster/nodes.json)"));
      }
      dst = *ip;
      break;
    }
    case EndpointSpec::Kind::kService: {
      const model::Service* s = cluster_.FindService(q.dst.namespace_, q.dst.name);
      if (!s) {
        return absl::NotFoundError(absl::StrCat("unknown Service ", q.dst.namespace_, "/",
                                                q.dst.name, " (not in cluster/services.json)"));
      }
      if (s->headless || s->cluster_ips.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Service ", s->Key(), " is headless (no cluster IP): trace one of its pods instead"));
      }
      if (!s->FindPort(q.dport, q.proto)) {
        std::vector<std::string> ports;
        for (const auto& p : s->ports) {
          ports.push_back(absl::StrCat(p.port, "/", model::ProtoName(p.proto)));
        }
        return absl::InvalidArgumentError(
            absl::StrCat("Service ", s->Key(), " has no port ", q.dport, "/",
                         model::ProtoName(q.proto), " (ports: ", absl::StrJoin(ports, ", "), ")"));
      }
      dst = s->cluster_ips.front();
      break;
    }
    case EndpointSpec::Kind::kIp:
      dst = q.dst.ip;
      break;
  }

  Flight f;
  f.pkt.dst = dst;
  f.pkt.dport = dport;
  f.pkt.sport = q.sport;
  f.pkt.proto = q.proto;
  f.pkt.ttl = q.ttl;
  f.pkt.ct_state = CtState::kNew;
  Branch br;

  // Source.
  auto from_node = [&](absl::string_view name) -> absl::Status {
    if (!snap_.HasNodeDir(name)) {
      return absl::NotFoundError(absl::StrCat("source node ", name, " has no directory nodes/",
                                              name, " in the snapshot: nothing to trace from"));
    }
    SARENA_ASSIGN_OR_RETURN(Where w, NodeWhere(name));
    client_where_ = w;
    Originate(w, f, br, Prev{});
    return error_;
  };
  switch (q.src.kind) {
    case EndpointSpec::Kind::kPod: {
      const model::Pod* p = FindPodAnywhere(q.src.namespace_, q.src.name);
      if (!p) {
        return absl::NotFoundError(absl::StrCat("unknown source pod ", q.src.namespace_, "/",
                                                q.src.name, " (not in cluster/pods.json)"));
      }
      if (p->node_name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("source pod ", p->Key(), " is not scheduled (spec.nodeName empty)"));
      }
      if (p->host_network) {
        if (p->host_ip) f.pkt.src = *p->host_ip;
        return from_node(p->node_name);
      }
      if (!p->pod_ip) {
        return absl::InvalidArgumentError(
            absl::StrCat("source pod ", p->Key(), " has no IP (status.podIP empty: not running?)"));
      }
      if (!snap_.HasNodeDir(p->node_name)) {
        return absl::NotFoundError(absl::StrCat("node ", p->node_name, " of source pod ", p->Key(),
                                                " has no directory nodes/", p->node_name,
                                                " in the snapshot"));
      }
      f.pkt.src = *p->pod_ip;
      client_packet_ = f.pkt;
      SARENA_ASSIGN_OR_RETURN(Where w, PodWhere(*p));
      client_where_ = w;
      Originate(w, f, br, Prev{});
      return error_;
    }
    case EndpointSpec::Kind::kNode: {
      if (!cluster_.FindNode(q.src.name) && !snap_.HasNodeDir(q.src.name)) {
        return absl::NotFoundError(absl::StrCat("unknown source node ", q.src.name));
      }
      return from_node(q.src.name);
    }
    case EndpointSpec::Kind::kService:
      return absl::InvalidArgumentError("a Service cannot be the source of a trace");
    case EndpointSpec::Kind::kIp: {
      const net::Ipv4 ip = q.src.ip;
      if (const model::Pod* p = cluster_.FindPodByIp(ip); p && !p->host_network) {
        if (!snap_.HasNodeDir(p->node_name)) {
          return absl::NotFoundError(absl::StrCat("node ", p->node_name, " of source pod ",
                                                  p->Key(), " has no directory in the snapshot"));
        }
        f.pkt.src = ip;
        client_packet_ = f.pkt;
        SARENA_ASSIGN_OR_RETURN(Where w, PodWhere(*p));
        client_where_ = w;
        Originate(w, f, br, Prev{});
        return error_;
      }
      if (auto o = OwnerOf(ip)) {
        SARENA_RETURN_IF_ERROR(error_);
        if (!o->where.ns) {
          return absl::NotFoundError(absl::StrCat("source ", ip.to_string(), " is node ",
                                                  o->where.node_name,
                                                  " which has no directory in the snapshot"));
        }
        f.pkt.src = ip;
        client_packet_ = f.pkt;
        client_where_ = o->where;
        Originate(o->where, f, br, Prev{});
        return error_;
      }
      SARENA_RETURN_IF_ERROR(error_);
      // A client outside the cluster: it enters where the destination lives.
      f.pkt.src = ip;
      client_packet_ = f.pkt;
      client_external_ = true;
      std::optional<Owner> entry = OwnerOf(dst);
      SARENA_RETURN_IF_ERROR(error_);
      std::string note;
      if (!entry) {
        if (const model::Pod* p = cluster_.FindPodByIp(dst); p && !p->host_network) {
          SARENA_ASSIGN_OR_RETURN(Where w, NodeWhere(p->node_name));
          const Interface* i = PrimaryInterface(w);
          entry = Owner{w, i ? i->name : ""};
          note = absl::StrCat("assumed: the network routes pod ", p->Key(), " to its node ",
                              p->node_name);
        } else if (const model::Service* svc = cluster_.FindServiceByIp(dst)) {
          // A load balancer sends to any node, or (externalTrafficPolicy Local) only to nodes
          // whose health check reports a local endpoint.
          std::vector<std::string> candidates;
          if (svc->external_traffic_policy_local) {
            if (const model::ServicePort* sp = svc->FindPort(dport, q.proto)) {
              for (const auto& b : cluster_.BackendsFor(*svc, *sp)) {
                if (b.ready && !b.node_name.empty()) candidates.push_back(b.node_name);
              }
            }
          }
          for (const std::string& n : snap_.node_names()) candidates.push_back(n);
          for (const std::string& n : candidates) {
            if (!snap_.HasNodeDir(n)) continue;
            SARENA_ASSIGN_OR_RETURN(Where w, NodeWhere(n));
            if (!w.ns) continue;
            const Interface* i = PrimaryInterface(w);
            entry = Owner{w, i ? i->name : ""};
            note = absl::StrCat("assumed: traffic for Service address ", dst.to_string(),
                                " arrives on node ", n);
            break;
          }
          bool cluster_ip = std::find(svc->cluster_ips.begin(), svc->cluster_ips.end(), dst) !=
                            svc->cluster_ips.end();
          if (cluster_ip) {
            absl::StrAppend(&note,
                            "; a cluster IP is normally not routed from outside the "
                            "cluster");
          }
        }
      }
      if (!entry || !entry->where.ns) {
        return absl::InvalidArgumentError(absl::StrCat("cannot place source ", ip.to_string(),
                                                       ": it is neither a pod nor a node, and the "
                                                       "destination ",
                                                       dst.to_string(), " is not in the cluster"));
      }
      Hop h;
      h.kind = HopKind::kExternal;
      h.id = absl::StrCat("external:", ip.to_string());
      h.action = HopAction::kSend;
      h.packet = f.pkt;
      Vertex v = AddHop(std::move(h), Prev{});
      if (!note.empty()) Suspect(v, Level::kInfo, "external_source", note);
      Receive(entry->where, entry->ifname, f, br, Prev{v, "underlay"});
      return error_;
    }
  }
  return error_;
}

}  // namespace sarena::diag::internal

namespace sarena::diag {

absl::StatusOr<TraceResult> Trace(const model::Snapshot& snapshot, const Query& query,
                                  Plugin& plugin, const TraceOptions& options) {
  internal::Walker w(snapshot, query, plugin, options);
  SARENA_RETURN_IF_ERROR(w.Run());
  SARENA_RETURN_IF_ERROR(plugin.error());
  w.Finish();
  TraceResult r;
  r.graph = w.TakeGraph();
  r.plugin = std::string(plugin.name());
  return r;
}

}  // namespace sarena::diag
