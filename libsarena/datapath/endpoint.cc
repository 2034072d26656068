#include "libsarena/datapath/endpoint.h"

#include <cstring>
#include <functional>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/endpoint_jobs.h"
#include "libsarena/datapath/naming.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/sysctl.h"

namespace sarena::datapath {
namespace {

/// Undo actions run in reverse order unless Commit() was called.
class Rollback {
 public:
  ~Rollback() {
    if (committed_) return;
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  }
  void Add(std::function<void()> fn) { undo_.push_back(std::move(fn)); }
  void Commit() { committed_ = true; }

 private:
  std::vector<std::function<void()>> undo_;
  bool committed_ = false;
};

// DEL's reply path with a job thread (EndpointJobs): the endpoint leaves service here — host
// side down (the kernel drops its endpoint route), pod side down (and its routes), both ends renamed
// to a retired name (the host name and CNI_IFNAME are free at once), the link pin removed with
// the link held — and the job thread deletes the pair, whose TCX program makes the kernel wait
// for an RCU grace period. Every check comes before the first change: the pod side must be the
// host veth's peer (a veth whose IFLA_LINK is the host side's ifindex) in `netns`. A failure
// after the first change leaves what the caller's synchronous delete (by ifindex) removes.
absl::Status RetireEndpoint(Datapath& dp, nl::Socket& node, const nl::Link& host,
                            absl::string_view host_ifname, absl::string_view netns,
                            EndpointJobs& jobs) {
  if (netns.empty()) return absl::FailedPreconditionError("no CNI_NETNS to find the pod side in");
  SARENA_ASSIGN_OR_RETURN(nl::Netns pod_ns, nl::Netns::Open(netns));
  SARENA_ASSIGN_OR_RETURN(nl::Socket pod, nl::Socket::OpenIn(pod_ns));
  SARENA_ASSIGN_OR_RETURN(nl::Link peer, pod.GetLink(host.link));
  if (peer.kind != "veth" || peer.link != host.ifindex || !peer.link_netnsid) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ifindex ", host.link, " ('", peer.name, "') in netns '", netns,
        "' is not the peer of veth '", host_ifname, "' (ifindex ", host.ifindex, ")"));
  }
  SARENA_RETURN_IF_ERROR(node.SetLinkDown(host.ifindex));
  const std::string retired = jobs.RetiredName();
  SARENA_RETURN_IF_ERROR(node.Rename(host.ifindex, retired));
  // Down first: the kernel then drops the pod's routes through it (NETDEV_DOWN), so an ADD into
  // the same netns can install them again before the pair is deleted.
  SARENA_RETURN_IF_ERROR(pod.SetLinkDown(peer.ifindex));
  SARENA_RETURN_IF_ERROR(pod.Rename(peer.ifindex, retired));
  SARENA_ASSIGN_OR_RETURN(std::optional<bpf::Link> link,
                          dp.TakeLinkPin(host_ifname, bpf::Direction::kIngress));
  jobs.Retire(retired, std::move(link));
  return absl::OkStatus();
}

}  // namespace

nl::Route EndpointRoute(const net::Ipv4& ip, const net::Ipv4& node_ip, int host_ifindex) {
  return nl::Route{.dst = net::Ipv4Prefix(ip, 32),
                   .scope = nl::Scope::kLink,
                   .protocol = nl::RouteProtocol::kStatic,
                   .oif = host_ifindex,
                   .prefsrc = node_ip};
}

std::string EndpointHostIfname(absl::string_view container_id, absl::string_view ifname) {
  return HostVethName(container_id, ifname);
}

absl::StatusOr<EndpointState> CreateEndpoint(Datapath& dp, nl::Socket& node,
                                             const EndpointSpec& spec, EndpointJobs* jobs) {
  EndpointState st;
  st.host_ifname = HostVethName(spec.container_id, spec.ifname);
  SARENA_ASSIGN_OR_RETURN(nl::Netns pod_ns, nl::Netns::Open(spec.netns));
  SARENA_ASSIGN_OR_RETURN(nl::Socket pod, nl::Socket::OpenIn(pod_ns));

  if (pod.GetLink(spec.ifname).ok()) {
    return absl::AlreadyExistsError(absl::StrCat("create endpoint '", spec.container_id, "/",
                                                 spec.ifname, "': interface '", spec.ifname,
                                                 "' already exists in netns '", spec.netns, "'"));
  }
  // A TCX upgrade still queued for a device of this name (an earlier ADD of the same
  // attachment, since deleted) finishes first: it must not land on the device made below.
  if (jobs) jobs->WaitFor(st.host_ifname);
  Rollback rollback;

  SARENA_ASSIGN_OR_RETURN(nl::Link host,
                          node.CreateVeth({.name = st.host_ifname,
                                           .peer_name = spec.ifname,
                                           .peer_netns = &pod_ns,
                                           .mtu = spec.mtu}));
  rollback.Add([&node, name = st.host_ifname] { (void)node.DeleteLink(name); });
  // Owner mark first: a DEL without a record checks it before deleting a veth by name.
  SARENA_RETURN_IF_ERROR(
      node.SetAlias(host.ifindex, VethOwnerAlias(spec.container_id, spec.ifname)));
  st.host_ifindex = host.ifindex;
  st.host_mac = host.mac;
  SARENA_ASSIGN_OR_RETURN(nl::Link peer, pod.GetLink(spec.ifname));
  st.pod_mac = peer.mac;
  st.pod_ifindex = peer.ifindex;

  // Endpoint-map entry and counters before the program, the program before the link is up.
  const datapath::Maps& maps = dp.maps();
  SARENA_RETURN_IF_ERROR(maps.ep_counters.Reset(spec.endpoint_id));
  SARENA_RETURN_IF_ERROR(maps.endpoints.Put(
      spec.ip, MakeEndpoint(static_cast<uint32_t>(host.ifindex), st.pod_mac, st.host_mac,
                            spec.endpoint_id)));
  rollback.Add([&maps, ip = spec.ip, idx = static_cast<uint32_t>(host.ifindex)] {
    (void)maps.endpoints.RemoveIfOwner(ip, idx);
  });
  // from_container on the host side's ingress. With TCX and a job thread: a tc copy now (no RCU
  // grace period) and the TCX link after the reply (EndpointJobs explains why). Otherwise the
  // mode's own attach, here: a TCX link (pinned) or the tc filter. The veth's deletion (the
  // first undo, run last) takes either program with it; the undo below removes the pin.
  const bool tc_first = jobs != nullptr && dp.attach_mode() == bpf::AttachMode::kTcx;
  rollback.Add([&dp, name = st.host_ifname, idx = host.ifindex] {
    (void)dp.Detach(name, idx, bpf::Direction::kIngress);
  });
  if (tc_first) {
    SARENA_RETURN_IF_ERROR(
        dp.AttachTc(datapath::Program::kFromContainer, host.ifindex, bpf::Direction::kIngress));
  } else {
    SARENA_RETURN_IF_ERROR(dp.Attach(datapath::Program::kFromContainer, st.host_ifname,
                                     host.ifindex, bpf::Direction::kIngress));
  }

  // Pod side, while the host side is down: the pair has no carrier and whatever the pod sends
  // is dropped at the down peer (is_skb_forwardable).
  SARENA_RETURN_IF_ERROR(pod.SetLinkUp("lo"));
  SARENA_RETURN_IF_ERROR(pod.AddAddress(peer.ifindex, net::Ipv4Prefix(spec.ip, 32)));
  SARENA_RETURN_IF_ERROR(pod.SetLinkUp(peer.ifindex));
  SARENA_RETURN_IF_ERROR(pod.AddRoute({.dst = net::Ipv4Prefix(spec.gateway, 32),
                                       .scope = nl::Scope::kLink,
                                       .oif = peer.ifindex,
                                       .prefsrc = spec.ip}));
  SARENA_RETURN_IF_ERROR(pod.AddRoute({.dst = net::Ipv4Prefix(net::Ipv4::any(), 0),
                                       .gateway = spec.gateway,
                                       .oif = peer.ifindex,
                                       .prefsrc = spec.ip}));
  // Pod traffic for the host stack enters through this device; the endpoint route below makes
  // strict rp_filter accept it. 0 here only matters where all.rp_filter is 0 too (the kernel
  // takes max(all, dev)).
  (void)nl::SetSysctl(absl::StrCat("net/ipv4/conf/", st.host_ifname, "/rp_filter"), "0");
  if (spec.commit) SARENA_RETURN_IF_ERROR(spec.commit(st));

  // Only now can the pod's packets reach the node: from_container is on the host side's ingress.
  SARENA_RETURN_IF_ERROR(node.SetLinkUp(host.ifindex));
  // The endpoint route; removed by the kernel with the veth (rollback and DEL).
  SARENA_RETURN_IF_ERROR(node.ReplaceRoute(EndpointRoute(spec.ip, spec.gateway, host.ifindex)));
  rollback.Commit();
  if (tc_first) jobs->Upgrade(st.host_ifname, host.ifindex);
  SARENA_LOG(Info, "endpoint ", spec.container_id, "/", spec.ifname, " ip ", spec.ip.to_string(),
             " host ", st.host_ifname, " (ifindex ", st.host_ifindex, ") pod mac ",
             net::FormatMac(st.pod_mac));
  return st;
}

absl::Status DeleteEndpoint(Datapath& dp, nl::Socket& node, absl::string_view host_ifname,
                            const std::optional<net::Ipv4>& ip,
                            const std::optional<std::string>& expected_owner,
                            absl::string_view netns, EndpointJobs* jobs) {
  // No TCX move lands on a device being deleted: a queued one is dropped (the tc copy guards the
  // endpoint until its deletion), a running one finishes first.
  if (jobs) jobs->CancelUpgrade(host_ifname);
  int ifindex = 0;
  absl::StatusOr<nl::Link> host = node.GetLink(host_ifname);
  if (host.ok() && expected_owner && !host->alias.empty() && host->alias != *expected_owner) {
    SARENA_LOG(Warning, "delete endpoint: veth '", host_ifname, "' belongs to '", host->alias,
               "', not '", *expected_owner, "'; left alone");
    host = absl::NotFoundError("not ours");
  }
  if (host.ok()) ifindex = host->ifindex;
  if (ip.has_value()) {
    // Only the entry that still belongs to this endpoint's veth (any, when the veth is gone).
    SARENA_RETURN_IF_ERROR(
        dp.maps().endpoints.RemoveIfOwner(*ip, static_cast<uint32_t>(ifindex)).status());
  }
  if (host.ok() && jobs) {
    absl::Status retired = RetireEndpoint(dp, node, *host, host_ifname, netns, *jobs);
    if (retired.ok()) return absl::OkStatus();
    SARENA_LOG(Warning, "delete endpoint ", host_ifname, ": ", retired.message(),
               "; deleting it now");
  }
  // The veth goes with from_container still attached, so there is no moment where the pod's
  // side is up and its packets meet no program; the link pin is removed after (releasing the
  // link of a deleted device detaches nothing).
  if (host.ok()) {
    absl::Status st = node.DeleteLink(host->ifindex);
    if (!st.ok() && !absl::IsNotFound(st)) return st;
  }
  if (host.ok() || !expected_owner) {
    SARENA_RETURN_IF_ERROR(dp.Detach(host_ifname, ifindex, bpf::Direction::kIngress));
  }
  return absl::OkStatus();
}

absl::Status CheckEndpoint(Datapath& dp, nl::Socket& node, const EndpointSpec& spec) {
  const std::string host_ifname = spec.host_ifname.empty()
                                      ? HostVethName(spec.container_id, spec.ifname)
                                      : spec.host_ifname;
  const std::string what = absl::StrCat("check endpoint '", spec.container_id, "/", spec.ifname,
                                        "': ");
  absl::StatusOr<nl::Link> host = node.GetLink(host_ifname);
  if (!host.ok()) {
    return absl::NotFoundError(absl::StrCat(what, "host veth '", host_ifname, "' is missing"));
  }
  if (!host->up) {
    return absl::FailedPreconditionError(absl::StrCat(what, "host veth '", host_ifname,
                                                      "' is down"));
  }
  SARENA_ASSIGN_OR_RETURN(nl::Netns pod_ns, nl::Netns::Open(spec.netns));
  SARENA_ASSIGN_OR_RETURN(nl::Socket pod, nl::Socket::OpenIn(pod_ns));
  absl::StatusOr<nl::Link> peer = pod.GetLink(spec.ifname);
  if (!peer.ok()) {
    return absl::NotFoundError(absl::StrCat(what, "interface '", spec.ifname,
                                            "' is missing in netns '", spec.netns, "'"));
  }
  if (!peer->up) {
    return absl::FailedPreconditionError(absl::StrCat(what, "interface '", spec.ifname,
                                                      "' is down"));
  }
  if (host->mtu != spec.mtu || peer->mtu != spec.mtu) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, "mtu ", spec.mtu, " expected, host veth '", host_ifname, "' has ", host->mtu,
        ", '", spec.ifname, "' has ", peer->mtu));
  }
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Address> addrs, pod.ListAddresses(peer->ifindex));
  const net::Ipv4Prefix want_addr(spec.ip, 32);
  bool has_ip = false;
  for (const nl::Address& a : addrs) {
    if (a.prefix.address() == spec.ip && a.prefix.prefix_length() == 32) {
      has_ip = true;
    } else if (a.prefix.address() == spec.ip) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, "interface '", spec.ifname, "' has ", a.prefix.to_string(), ", ADD set ",
          want_addr.to_string()));
    }
  }
  if (!has_ip) {
    return absl::FailedPreconditionError(absl::StrCat(what, "interface '", spec.ifname,
                                                      "' lacks address ", want_addr.to_string()));
  }
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Route> routes, pod.ListRoutes({.oif = peer->ifindex}));
  bool gw_route = false, default_route = false;
  for (const nl::Route& r : routes) {
    if (r.type != nl::RouteType::kUnicast) continue;
    gw_route |= r.dst == net::Ipv4Prefix(spec.gateway, 32) && !r.gateway;
    default_route |= r.dst.prefix_length() == 0 && r.gateway == spec.gateway;
  }
  if (!gw_route) {
    return absl::FailedPreconditionError(absl::StrCat(what, "route ", spec.gateway.to_string(),
                                                      "/32 dev ", spec.ifname,
                                                      " is missing in netns '", spec.netns, "'"));
  }
  if (!default_route) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, "default route via ", spec.gateway.to_string(), " dev ", spec.ifname,
                     " is missing in netns '", spec.netns, "'"));
  }
  absl::StatusOr<Endpoint> ep = dp.maps().endpoints.Get(spec.ip);
  if (!ep.ok()) {
    return absl::NotFoundError(absl::StrCat(what, "no endpoint-map entry for ",
                                            spec.ip.to_string()));
  }
  const datapath::Endpoint want = datapath::MakeEndpoint(static_cast<uint32_t>(host->ifindex), peer->mac,
                                               host->mac, ep->endpoint_id, ep->flags);
  if (!datapath::Equal(*ep, want)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, "endpoint-map entry {", datapath::FormatEndpoint(*ep), "} differs from the live veth {",
        datapath::FormatEndpoint(want), "}"));
  }
  absl::StatusOr<nl::Route> route = node.GetRoute(spec.ip);
  if (!route.ok() || route->oif != host->ifindex) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, "no endpoint route ", spec.ip.to_string(), "/32 dev ", host_ifname, " (",
        route.ok() ? absl::StrCat("routed via ifindex ", route->oif) : route.status().ToString(),
        ")"));
  }
  SARENA_ASSIGN_OR_RETURN(bool attached, dp.IsAttached(datapath::Program::kFromContainer,
                                                       host->ifindex, bpf::Direction::kIngress));
  if (!attached) {
    return absl::FailedPreconditionError(absl::StrCat(what, "from_container is not attached to ",
                                                      host_ifname, " ingress"));
  }
  return absl::OkStatus();
}

}  // namespace sarena::datapath
