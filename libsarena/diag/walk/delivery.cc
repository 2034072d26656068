// Ends of the path: a served request (Serve), the reply (StartReply), an external
// destination and its reply (External, ExternalReply).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Ends of the path.

absl::StatusOr<Next> Walker::Serve(LocalStep& s) {
  Hop& h = graph_.hop(s.v);
  h.action = HopAction::kServe;
  h.packet = s.f.pkt;
  if (s.f.reply) {
    // The SYN-ACK reached the client: the server's MSS (after the clamps on the way back) sizes
    // the client's segments.
    if (s.f.tcp.active && s.f.tcp.request) {
      ResolveRequest(s.f.tcp.request, s.f.tcp.self_known ? &s.f.tcp.self : nullptr, s.f.tcp.syn,
                     s.f.tcp.clamps);
    }
    // The reply reached the client: conntrack there matches it against the request it sent.
    if (client_where_.ns && s.w.ns && client_where_.ns != s.w.ns) {
      Drop(s.v, "route_mismatch",
           absl::StrCat("the reply to ", s.f.pkt.dst.to_string(), " is delivered to ", s.w.ns->id,
                        ", not to the client ", client_where_.ns->id));
      return Done();
    }
    if (client_packet_) {
      const Packet& c = *client_packet_;
      if (s.f.pkt.src != c.dst || (c.dport && s.f.pkt.sport != c.dport)) {
        Drop(s.v, "asymmetric_return",
             absl::StrCat("the reply arrives from ", Ep(s.f.pkt.src, s.f.pkt.sport),
                          " but the client sent to ", Ep(c.dst, c.dport),
                          ": the NAT of the request was not reversed on the way back (the reply "
                          "bypassed the node that translated it); the client drops it"));
      }
    }
    return Done();
  }
  // The request is delivered to a socket here.
  if (s.w.in_pod()) {
    const model::Pod& pod = *s.w.pod;
    if (s.f.pkt.proto == model::kProtoTcp || s.f.pkt.proto == model::kProtoUdp ||
        s.f.pkt.proto == model::kProtoSctp) {
      if (pod.ports.empty()) {
        Suspect(s.v, Level::kInfo, "not_listening",
                absl::StrCat("pod ", pod.Key(),
                             " declares no containerPorts: cannot check that "
                             "something listens on ",
                             s.f.pkt.dport, "/", model::ProtoName(s.f.pkt.proto)));
      } else {
        bool found = false;
        for (const auto& p : pod.ports) {
          if (p.container_port == s.f.pkt.dport && p.proto == s.f.pkt.proto) found = true;
        }
        if (!found) {
          std::vector<std::string> ports;
          for (const auto& p : pod.ports) {
            ports.push_back(absl::StrCat(p.container_port, "/", model::ProtoName(p.proto)));
          }
          Suspect(s.v, Level::kWarning, "not_listening",
                  absl::StrCat("pod ", pod.Key(), " declares containerPorts ",
                               absl::StrJoin(ports, ", "), " but not ", s.f.pkt.dport, "/",
                               model::ProtoName(s.f.pkt.proto),
                               ": nothing may listen there (ports need not be declared)"));
        }
      }
    }
  } else if (s.w.ns) {
    // Local delivery on a node: a hostNetwork pod or a node service. A Service node port that
    // reaches here was not translated.
    if (const model::Service* svc = cluster_.FindServiceByNodePort(s.f.pkt.dport, s.f.pkt.proto)) {
      (void)svc;
    }
  }
  if (opts_.reply)
    return Then(LocalStep{LocalStep::Stage::kStartReply, s.w, s.v, s.f, std::move(s.br)});
  return Done();
}

absl::StatusOr<Next> Walker::StartReply(LocalStep& s) {
  Flight rf;
  rf.pkt = s.f.pkt.Reversed();
  rf.pkt.ct_state = CtState::kEstablished;
  rf.pkt.ttl = 64;
  rf.pkt.mark = 0;
  rf.pkt.length = 0;
  rf.reply = true;
  // TCP: the server's segments are at most the client's MSS (its MTU - 40, announced in the
  // SYN), so the reply is no larger than the client's own packets. Other protocols: unknown,
  // full-size (the server's MTU).
  if (s.f.tcp.active) {
    rf.tcp.active = true;
    rf.tcp.peer = s.f.tcp.self;
    rf.tcp.peer_syn = s.f.tcp.syn;
    rf.tcp.peer_clamps = s.f.tcp.clamps;
    rf.tcp.request = s.f.tcp.pending;
    rf.size = s.f.tcp.syn ? s.f.tcp.syn + kTcpIpHeaders : client_size_;
    // Until the server's route is known (OriginateRouted): its own path MTU unknown.
    rf.tcp.self.who = Who(s.w);
    rf.tcp.segment = rf.size;
  } else if (rf.pkt.proto == model::kProtoTcp && query_.size == 0) {
    rf.size = client_size_;
  }
  return Then(OriginateStep{s.w, std::move(rf), std::move(s.br), Prev{s.v, "reply"}});
}

absl::StatusOr<Next> Walker::External(ExternalStep& s) {
  // A server outside the snapshot: its MSS is unknown, the client's own path MTU bounds it.
  if (s.f.tcp.active && !s.f.reply) ResolveRequest(s.f.tcp.pending, nullptr, 0, "");
  Hop h;
  h.kind = HopKind::kExternal;
  h.id = absl::StrCat("external:", s.ip.to_string());
  h.action = HopAction::kServe;
  h.packet = s.f.pkt;
  Vertex v = AddHop(std::move(h), s.prev);
  if (!opts_.reply) return Done();
  Flight rf;
  rf.pkt = s.f.pkt.Reversed();
  rf.pkt.ct_state = CtState::kEstablished;
  rf.reply = true;
  Hop r;
  r.kind = HopKind::kExternal;
  r.id = absl::StrCat("external:", s.ip.to_string(), "@reply");
  r.action = HopAction::kSend;
  r.packet = rf.pkt;
  r.reply = true;
  Vertex rv = AddHop(std::move(r), Prev{v, "reply"});
  // The reply comes back to whoever owns its destination; else to where the request left.
  SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> o, topo_.OwnerOf(rf.pkt.dst));
  if (o) {
    return Then(
        ReceiveStep{o->netns, o->ifname, std::move(rf), std::move(s.br), Prev{rv, "underlay"}});
  }
  SARENA_ASSIGN_OR_RETURN(Where node, topo_.NodeRef(s.br.egress_node));
  if (const model::Pod* pod = cluster_.FindPodByIp(rf.pkt.dst); pod && !pod->host_network) {
    Suspect(rv, Level::kWarning, "route_mismatch",
            absl::StrCat("the reply is addressed to pod ", pod->Key(), " (", rf.pkt.dst.to_string(),
                         "): the network outside the cluster must route "
                         "pod addresses back (no SNAT was applied)"));
  }
  std::string iif = s.br.egress_iface;
  return Then(
      ReceiveStep{node, iif, std::move(rf), std::move(s.br), Prev{rv, "underlay (return)"}});
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

}  // namespace sarena::diag::internal
