#include "libsarena/datapath/host_device.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/datapath/naming.h"
#include "libsarena/netlink/sysctl.h"

namespace sarena::datapath {
namespace {

absl::Status SetConf(absl::string_view dev, absl::string_view knob, absl::string_view value) {
  return nl::SetSysctl(absl::StrCat("net/ipv4/conf/", dev, "/", knob), value);
}

}  // namespace

absl::StatusOr<HostDevice> SetupHostDevice(nl::Socket& sock, const HostDeviceOptions& o) {
  absl::StatusOr<nl::Link> host = sock.GetLink(kHostDevice);
  if (absl::IsNotFound(host.status())) {
    SARENA_LOG(Info, "creating ", kHostDevice, " <-> ", kNetDevice, " mtu ", o.mtu);
    host = sock.CreateVeth({.name = kHostDevice, .peer_name = kNetDevice, .mtu = o.mtu});
  }
  if (!host.ok()) return host.status();
  if (host->kind != "veth") {
    return absl::FailedPreconditionError(absl::StrCat(
        "set up host device '", kHostDevice, "': exists with kind '", host->kind,
        "', expected a veth paired with ", kNetDevice));
  }
  SARENA_ASSIGN_OR_RETURN(nl::Link net, sock.GetLink(kNetDevice));
  if (net.ifindex != host->link) {
    return absl::FailedPreconditionError(absl::StrCat("set up host device '", kHostDevice,
                                                      "': its veth peer is not ", kNetDevice));
  }
  for (const nl::Link* l : {&*host, &net}) {
    if (l->mtu != o.mtu) SARENA_RETURN_IF_ERROR(sock.SetMtu(l->ifindex, o.mtu));
  }
  SARENA_RETURN_IF_ERROR(sock.AddAddress(host->ifindex, net::Ipv4Prefix(o.node_ip, 32),
                                         nl::AddressOptions{.replace = true}));
  // ARP off on sarena_host: the pod-CIDR route's nexthop is sarena_host's own address, so the
  // kernel would otherwise ARP for every pod IP on it (nobody answers). With NOARP the
  // neighbour resolves to sarena_host's own MAC and from_host rewrites the frame anyway
  // (Cilium does the same on cilium_host).
  SARENA_RETURN_IF_ERROR(sock.SetArp(host->ifindex, false));
  SARENA_RETURN_IF_ERROR(sock.SetLinkUp(net.ifindex));
  SARENA_RETURN_IF_ERROR(sock.SetLinkUp(host->ifindex));

  // Sysctls before the route: a forwarded packet must never see a half-configured device.
  SARENA_RETURN_IF_ERROR(SetConf(kHostDevice, "forwarding", "1"));
  if (o.ip_forward) SARENA_RETURN_IF_ERROR(nl::SetSysctl("net.ipv4.ip_forward", "1"));
  for (absl::string_view dev : {kHostDevice, kNetDevice}) {
    SARENA_RETURN_IF_ERROR(SetConf(dev, "rp_filter", "0"));
    SARENA_RETURN_IF_ERROR(SetConf(dev, "send_redirects", "0"));
  }

  nl::Route route{.dst = o.pod_cidr.canonical(),
                  .protocol = nl::RouteProtocol::kStatic,
                  .gateway = o.node_ip,
                  .oif = host->ifindex,
                  .prefsrc = o.node_ip,
                  .mtu = o.mtu};
  SARENA_RETURN_IF_ERROR(sock.ReplaceRoute(route));

  // A changed --node-ip / --pod-cidr leaves the previous address and route behind: remove them.
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Address> addrs, sock.ListAddresses(host->ifindex));
  for (const nl::Address& a : addrs) {
    if (a.prefix.address() != o.node_ip || a.prefix.prefix_length() != 32) {
      SARENA_LOG(Info, "removing stale address ", a.prefix.to_string(), " from ", kHostDevice);
      (void)sock.DeleteAddress(host->ifindex, a.prefix);
    }
  }
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Route> routes,
                          sock.ListRoutes({.table = nl::kTableMain, .oif = host->ifindex}));
  for (const nl::Route& r : routes) {
    if (r.protocol == nl::RouteProtocol::kStatic && r.dst != o.pod_cidr.canonical()) {
      SARENA_LOG(Info, "removing stale route ", r.dst.to_string(), " from ", kHostDevice);
      (void)sock.DeleteRoute(r);
    }
  }

  SARENA_ASSIGN_OR_RETURN(nl::Link host_now, sock.GetLink(kHostDevice));
  SARENA_ASSIGN_OR_RETURN(nl::Link net_now, sock.GetLink(kNetDevice));
  return HostDevice{.host = std::move(host_now), .net = std::move(net_now)};
}

absl::Status TeardownHostDevice(nl::Socket& sock) { return sock.DeleteLink(kHostDevice); }

}  // namespace sarena::datapath
