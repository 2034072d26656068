#include "libsarena/datapath/overlay.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/sysctl.h"

namespace sarena::datapath {
namespace {

template <typename V>
using PrefixMap = std::map<net::Ipv4Prefix, V, Ipv4PrefixLess>;

bool SameRoute(const nl::Route& have, const nl::Route& want) {
  return have.type == want.type && have.oif == want.oif && have.gateway == want.gateway &&
         have.prefsrc == want.prefsrc;
}

absl::Status SetConf(absl::string_view dev, absl::string_view knob, absl::string_view value) {
  return nl::SetSysctl(absl::StrCat("net/ipv4/conf/", dev, "/", knob), value);
}

}  // namespace

absl::string_view ToString(RoutingMode mode) {
  switch (mode) {
    case RoutingMode::kTunnel:
      return "tunnel";
    case RoutingMode::kNative:
      return "native";
    case RoutingMode::kHybrid:
      return "hybrid";
  }
  return "?";
}

absl::StatusOr<RoutingMode> ParseRoutingMode(absl::string_view text, absl::string_view field) {
  if (text == "tunnel") return RoutingMode::kTunnel;
  if (text == "native") return RoutingMode::kNative;
  if (text == "hybrid") return RoutingMode::kHybrid;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", field, " '", text, "': tunnel, native or hybrid"));
}

uint8_t PeerMode(RoutingMode mode, const net::Ipv4Prefix& uplink_subnet, const net::Ipv4& peer) {
  switch (mode) {
    case RoutingMode::kTunnel:
      return SARENA_MODE_TUNNEL;
    case RoutingMode::kNative:
      return SARENA_MODE_NATIVE;
    case RoutingMode::kHybrid:
      return net::Contains(uplink_subnet.canonical(), peer) ? SARENA_MODE_NATIVE
                                                            : SARENA_MODE_TUNNEL;
  }
  return SARENA_MODE_TUNNEL;
}

absl::StatusOr<Uplink> FindUplink(nl::Socket& sock, absl::string_view ifname) {
  absl::StatusOr<nl::Link> link = sock.GetLink(ifname);
  if (!link.ok()) {
    return absl::NotFoundError(absl::StrCat("--uplink '", ifname, "': no such device"));
  }
  if (!link->up) {
    return absl::FailedPreconditionError(absl::StrCat("--uplink '", ifname, "' is down"));
  }
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Address> addrs, sock.ListAddresses(link->ifindex));
  for (const nl::Address& a : addrs) {
    if (a.scope == nl::Scope::kUniverse) return Uplink{*link, a.prefix};
  }
  return absl::FailedPreconditionError(
      absl::StrCat("--uplink '", ifname, "' has no global IPv4 address (the underlay address)"));
}

absl::StatusOr<std::unique_ptr<Overlay>> Overlay::Setup(const OverlayOptions& o, Datapath& dp) {
  if (o.vni == 0 || o.vni >= (1u << 24)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --vni '", o.vni, "': 1..16777215"));
  }
  if (o.node_id >= SARENA_MAX_PEERS) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id ", o.node_id, " out of range (< ", SARENA_MAX_PEERS, ")"));
  }
  if (!net::Contains(o.cluster_cidr, o.node_ip)) {
    return absl::InvalidArgumentError(absl::StrCat("node IP ", o.node_ip.to_string(),
                                                   " is outside --cluster-cidr '",
                                                   o.cluster_cidr.to_string(), "'"));
  }
  SARENA_ASSIGN_OR_RETURN(nl::Socket sock, nl::Socket::Open());
  SARENA_ASSIGN_OR_RETURN(Uplink uplink, FindUplink(sock, o.uplink));
  const bool tunnel = o.mode != RoutingMode::kNative;
  int vxlan_ifindex = 0;
  net::Mac vxlan_mac{};
  if (tunnel) {
    if (uplink.link.mtu < 68 + kVxlanOverhead) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--uplink '", o.uplink, "' MTU ", uplink.link.mtu, " leaves no room for VXLAN"));
    }
    const uint32_t mtu = uplink.link.mtu - kVxlanOverhead;
    absl::StatusOr<nl::Link> vx = sock.GetLink(kVxlanDevice);
    if (vx.ok()) {
      if (vx->kind != "vxlan" || !vx->vxlan || !vx->vxlan->collect_metadata ||
          vx->vxlan->port != o.tunnel_port || vx->vxlan->vni != 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "a device named ", kVxlanDevice, " exists but is not a collect-metadata VXLAN on UDP ",
            o.tunnel_port, " (kind '", vx->kind, "'): not ours, left alone"));
      }
      if (vx->mtu != mtu) SARENA_RETURN_IF_ERROR(sock.SetMtu(vx->ifindex, mtu));
    } else if (absl::IsNotFound(vx.status())) {
      vx = sock.CreateVxlan({.name = std::string(kVxlanDevice),
                             .vni = o.vni,
                             .port = o.tunnel_port,
                             .learning = false,
                             .collect_metadata = true,
                             .udp_csum = false,
                             .mtu = mtu});
      if (!vx.ok()) return vx.status();
      SARENA_LOG(Info, "created ", kVxlanDevice, " (ifindex ", vx->ifindex, ", UDP ",
                 o.tunnel_port, ", MTU ", mtu, ")");
    } else {
      return vx.status();
    }
    SARENA_RETURN_IF_ERROR(sock.SetArp(vx->ifindex, false));
    SARENA_RETURN_IF_ERROR(SetConf(kVxlanDevice, "forwarding", "1"));
    SARENA_RETURN_IF_ERROR(SetConf(kVxlanDevice, "rp_filter", "0"));  // defence in depth only
    SARENA_RETURN_IF_ERROR(sock.SetLinkUp(vx->ifindex));
    SARENA_ASSIGN_OR_RETURN(nl::Link up, sock.GetLink(vx->ifindex));
    vxlan_ifindex = up.ifindex;
    vxlan_mac = up.mac;
    SARENA_RETURN_IF_ERROR(
        dp.Attach(Program::kFromOverlay, kVxlanDevice, vxlan_ifindex, bpf::Direction::kIngress));
    SARENA_RETURN_IF_ERROR(
        dp.Attach(Program::kToOverlay, kVxlanDevice, vxlan_ifindex, bpf::Direction::kEgress));
  }
  SARENA_RETURN_IF_ERROR(SetConf(o.uplink, "forwarding", "1"));
  SARENA_RETURN_IF_ERROR(
      dp.Attach(Program::kFromNetdev, o.uplink, uplink.link.ifindex, bpf::Direction::kIngress));

  OverlayConfig cfg{};
  cfg.flags = (tunnel ? SARENA_OVL_F_TUNNEL : 0u) |
              (o.mode != RoutingMode::kTunnel ? SARENA_OVL_F_NATIVE : 0u);
  cfg.vni = o.vni;
  cfg.vxlan_ifindex = static_cast<uint32_t>(vxlan_ifindex);
  cfg.uplink_ifindex = static_cast<uint32_t>(uplink.link.ifindex);
  cfg.node_id = o.node_id;
  std::copy(vxlan_mac.begin(), vxlan_mac.end(), cfg.vxlan_mac);
  std::copy(uplink.link.mac.begin(), uplink.link.mac.end(), cfg.uplink_mac);
  const uint32_t underlay_be = net::ToBe32(uplink.address.address());
  std::memcpy(cfg.underlay, &underlay_be, 4);
  cfg.underlay_family = SARENA_FAMILY_IPV4;
  cfg.cluster_cidr_be = net::ToBe32(o.cluster_cidr.network());
  cfg.cluster_cidr_len = static_cast<uint32_t>(o.cluster_cidr.prefix_length());
  SARENA_RETURN_IF_ERROR(dp.maps().overlay_config.Write(cfg));

  nl::Route unreachable;
  unreachable.dst = o.cluster_cidr;
  unreachable.type = nl::RouteType::kUnreachable;
  unreachable.protocol = nl::RouteProtocol::kSarena;
  SARENA_RETURN_IF_ERROR(sock.ReplaceRoute(unreachable));

  SARENA_ASSIGN_OR_RETURN(Maps maps, Maps::FromPinRoot(dp.bpffs()));
  SARENA_LOG(Info, "cluster datapath: mode ", ToString(o.mode), ", uplink ", o.uplink, " ",
             uplink.address.to_string(), ", VNI ", o.vni, ", node id ", o.node_id,
             ", unreachable ", o.cluster_cidr.to_string());
  return std::unique_ptr<Overlay>(
      new Overlay(o, std::move(sock), std::move(uplink), vxlan_ifindex, std::move(maps)));
}

uint32_t Overlay::pod_mtu() const { return MaxPodMtu(options_.mode, uplink_.link.mtu); }

nl::Route Overlay::PeerCidrRoute(const net::Ipv4Prefix& cidr, uint8_t mode,
                                 const net::Ipv4& underlay) const {
  nl::Route r;
  r.dst = cidr;
  r.protocol = nl::RouteProtocol::kSarena;
  r.prefsrc = options_.node_ip;
  if (mode == SARENA_MODE_NATIVE) {
    r.gateway = underlay;
    r.oif = uplink_.link.ifindex;
  } else {
    r.oif = vxlan_ifindex_;
    r.scope = nl::Scope::kLink;
  }
  return r;
}

absl::StatusOr<SyncStats> Overlay::Sync(const std::vector<PeerRoute>& peers) {
  SyncStats stats;
  std::vector<std::string>& problems = stats.problems;
  // What the kernel holds: read back on the first Sync (a restarted daemon adopts its pins),
  // after a Sync whose kernel writes failed, and every resync_interval (repairs out-of-band
  // edits); otherwise what the last Sync applied, so a change costs O(changes) syscalls, not a
  // re-read of every entry (30,000 bpf(2) calls per change at 5,000 peers, docs/benchmarks.md).
  const bool full = !applied_.valid || absl::Now() - applied_.read_at >= options_.resync_interval;
  stats.full_read = full;
  if (full) {
    Applied fresh;
    SARENA_ASSIGN_OR_RETURN(auto have_peers, maps_.peers.Entries());
    for (const auto& [ip, peer] : have_peers) fresh.peers[ip] = peer.node_id;
    SARENA_ASSIGN_OR_RETURN(auto have_tunnels, maps_.tunnels.Entries());
    fresh.tunnels.insert(have_tunnels.begin(), have_tunnels.end());
    // Routes: ours are protocol kSarena in the main table; the unreachable cluster route stays.
    SARENA_ASSIGN_OR_RETURN(std::vector<nl::Route> routes, sock_.ListRoutes());
    for (const nl::Route& r : routes) {
      if (r.protocol != nl::RouteProtocol::kSarena) continue;
      if (r.type == nl::RouteType::kUnreachable && r.dst == options_.cluster_cidr) continue;
      fresh.routes[r.dst] = r;
    }
    fresh.read_at = absl::Now();
    applied_ = std::move(fresh);
  }
  // Desired state.
  struct Candidate {
    net::Ipv4Prefix cidr;
    const PeerRoute* peer;
    uint8_t mode;
    const PeerRoute* rival = nullptr;  // another peer claiming an overlapping CIDR
  };
  std::vector<Candidate> candidates;
  PrefixMap<Tunnel> want_tunnels;
  std::map<net::Ipv4, uint32_t> want_peers;
  PrefixMap<nl::Route> want_routes;
  for (const PeerRoute& p : peers) {
    if (p.node_id >= SARENA_MAX_PEERS) {
      problems.push_back(absl::StrCat("peer '", p.name, "': node id ", p.node_id, " >= ",
                                      SARENA_MAX_PEERS));
      continue;
    }
    if (p.underlay == uplink_.address.address()) {
      // A record claiming this node's own underlay address: a peer entry for it would accept
      // our own packets as a peer's, a /32 tunnel entry would encapsulate pod -> this node.
      problems.push_back(absl::StrCat("peer '", p.name, "': underlay address ",
                                      p.underlay.to_string(), " is this node's own"));
      continue;
    }
    const uint8_t mode = PeerMode(options_.mode, uplink_.address, p.underlay);
    if (mode == SARENA_MODE_TUNNEL && vxlan_ifindex_ == 0) {
      problems.push_back(absl::StrCat("peer '", p.name, "': needs a tunnel in native mode"));
      continue;
    }
    want_peers[p.underlay] = p.node_id;
    if (mode == SARENA_MODE_TUNNEL) {  // SARENA_TUN_F_NODE (sarena/abi.h): no route for it
      Tunnel node = MakeTunnel(p.underlay, p.node_id, mode);
      node.flags = SARENA_TUN_F_NODE;
      want_tunnels[net::Ipv4Prefix(p.underlay, 32)] = node;
    }
    for (const net::Ipv4Prefix& raw : p.pod_cidrs) {
      const net::Ipv4Prefix cidr = raw.canonical();
      if (!net::Contains(options_.cluster_cidr, cidr.network()) ||
          cidr.prefix_length() < options_.cluster_cidr.prefix_length()) {
        problems.push_back(absl::StrCat("peer '", p.name, "': pod CIDR ", cidr.to_string(),
                                        " is outside the cluster CIDR ",
                                        options_.cluster_cidr.to_string()));
        continue;
      }
      if (options_.pod_cidr) {
        const net::Ipv4Prefix mine = options_.pod_cidr->canonical();
        if (net::Contains(mine, cidr.network()) || net::Contains(cidr, mine.network())) {
          problems.push_back(absl::StrCat("peer '", p.name, "': pod CIDR ", cidr.to_string(),
                                          " overlaps this node's pod CIDR ", mine.to_string()));
          continue;
        }
      }
      candidates.push_back({cidr, &p, mode});
    }
  }
  // Two peers claiming one pod CIDR (or nested ones) is a corrupt or hostile registry: the
  // claim transaction lets only one node own a CIDR. Whoever this node already routes the CIDR
  // to keeps it; a contested CIDR nobody holds yet goes to no one until the dispute ends, so a
  // record can never take over another node's pods (it could only deny a new CIDR).
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return Ipv4PrefixLess()(a.cidr, b.cidr);
  });
  std::vector<Candidate*> open;  // candidates whose range covers the current network
  for (Candidate& c : candidates) {
    while (!open.empty() &&
           open.back()->cidr.broadcast().to_uint() < c.cidr.network().to_uint()) {
      open.pop_back();
    }
    for (Candidate* o : open) {
      if (o->peer == c.peer) continue;
      o->rival = c.peer;
      c.rival = o->peer;
    }
    open.push_back(&c);
  }
  for (const Candidate& c : candidates) {
    if (c.rival != nullptr) {
      auto held = applied_.tunnels.find(c.cidr);
      const bool incumbent = held != applied_.tunnels.end() && held->second.flags == 0 &&
                             held->second.node_id == c.peer->node_id;
      if (!incumbent) {
        problems.push_back(absl::StrCat("peer '", c.peer->name, "': pod CIDR ", c.cidr.to_string(),
                                        " is also claimed by peer '", c.rival->name,
                                        "'; not routed to '", c.peer->name, "'"));
        continue;
      }
    }
    want_tunnels[c.cidr] = MakeTunnel(c.peer->underlay, c.peer->node_id, c.mode);
    want_routes[c.cidr] = PeerCidrRoute(c.cidr, c.mode, c.peer->underlay);
  }
  applied_.valid = false;  // until this Sync's kernel writes all succeed
  bool write_failed = false;
  // Order: peers first (a decapsulated packet from a new peer is accepted before its CIDR is
  // routed to it), then tunnels, then routes; removals in the reverse order.
  for (const auto& [ip, id] : want_peers) {
    auto it = applied_.peers.find(ip);
    if (it != applied_.peers.end() && it->second == id) continue;
    if (absl::Status st = maps_.peers.Put(ip, id); !st.ok()) {
      problems.push_back(absl::StrCat("peer map ", ip.to_string(), ": ", st.message()));
      write_failed = true;
      continue;
    }
    applied_.peers[ip] = id;
    ++stats.peers_written;
  }
  for (const auto& [cidr, t] : want_tunnels) {
    auto it = applied_.tunnels.find(cidr);
    if (it != applied_.tunnels.end() && Equal(it->second, t)) continue;
    if (absl::Status st = maps_.tunnels.Put(cidr, t); !st.ok()) {
      problems.push_back(absl::StrCat("tunnel map ", cidr.to_string(), ": ", st.message()));
      write_failed = true;
      continue;
    }
    applied_.tunnels[cidr] = t;
    ++stats.tunnels_written;
  }
  for (const auto& [cidr, r] : want_routes) {
    auto it = applied_.routes.find(cidr);
    if (it != applied_.routes.end() && SameRoute(it->second, r)) continue;
    if (absl::Status st = sock_.ReplaceRoute(r); !st.ok()) {
      problems.push_back(absl::StrCat("route ", cidr.to_string(), ": ", st.message()));
      write_failed = true;
      continue;
    }
    applied_.routes[cidr] = r;
    ++stats.routes_written;
  }
  for (auto it = applied_.routes.begin(); it != applied_.routes.end();) {
    if (want_routes.count(it->first)) { ++it; continue; }
    absl::Status st = sock_.DeleteRoute(it->second);
    if (!st.ok() && !absl::IsNotFound(st)) {
      problems.push_back(absl::StrCat("remove route ", it->first.to_string(), ": ", st.message()));
      write_failed = true;
      ++it;
      continue;
    }
    ++stats.routes_removed;
    it = applied_.routes.erase(it);
  }
  for (auto it = applied_.tunnels.begin(); it != applied_.tunnels.end();) {
    if (want_tunnels.count(it->first)) { ++it; continue; }
    absl::StatusOr<bool> rm = maps_.tunnels.Remove(it->first);
    if (!rm.ok()) {
      problems.push_back(absl::StrCat("remove tunnel ", it->first.to_string(), ": ",
                                      rm.status().message()));
      write_failed = true;
      ++it;
      continue;
    }
    if (*rm) ++stats.tunnels_removed;
    it = applied_.tunnels.erase(it);
  }
  for (auto it = applied_.peers.begin(); it != applied_.peers.end();) {
    if (want_peers.count(it->first)) { ++it; continue; }
    absl::StatusOr<bool> rm = maps_.peers.Remove(it->first);
    if (!rm.ok()) {
      problems.push_back(absl::StrCat("remove peer ", it->first.to_string(), ": ",
                                      rm.status().message()));
      write_failed = true;
      ++it;
      continue;
    }
    if (*rm) ++stats.peers_removed;
    it = applied_.peers.erase(it);
  }
  applied_.valid = !write_failed;
  for (const std::string& p : problems) SARENA_LOG(Warning, "peer sync: ", p);
  return stats;
}

}  // namespace sarena::datapath
