// The node side of the datapath: the sarena_host <-> sarena_net veth pair that gives the pods a
// gateway and the host stack a route to the pod CIDR (docs/architecture.md "The node datapath").
#ifndef LIBSARENA_DATAPATH_HOST_DEVICE_H_
#define LIBSARENA_DATAPATH_HOST_DEVICE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/socket.h"

namespace sarena::datapath {

struct HostDeviceOptions {
  /// --node-ip: put on sarena_host as /32; the pods' gateway and the pod-CIDR route's nexthop.
  net::Ipv4 node_ip;
  /// --pod-cidr: routed via node_ip on sarena_host.
  net::Ipv4Prefix pod_cidr;
  /// MTU of both ends and of the pod-CIDR route, bytes (--mtu).
  uint32_t mtu = 1500;
  /// Also set net.ipv4.ip_forward=1 (conf.all.forwarding) for the namespace. When false only
  /// conf.sarena_host.forwarding is set: pods reach each other and the host, and
  /// pod -> ClusterIP (which the kernel forwards in and out of sarena_host) still works, but
  /// nothing is forwarded between other interfaces.
  bool ip_forward = true;
};

/// The two ends as the kernel reports them after setup.
struct HostDevice {
  nl::Link host;  // sarena_host: carries node_ip/32; from_host runs on its TCX egress
  nl::Link net;   // sarena_net: from_container redirects host-bound pod traffic into it
};

/// Creates (or adopts, after a daemon restart, without disturbing traffic) the sarena_host /
/// sarena_net veth pair in the namespace of `sock`, idempotently:
///   1. the pair with `mtu` (kept when it exists; MTU corrected), both ends up;
///   2. node_ip/32 on sarena_host;
///   3. a permanent neighbour node_ip -> sarena_net's MAC on sarena_host (the nexthop of the
///      pod-CIDR route resolves without ARP, whatever arp_ignore says);
///   4. `pod_cidr via node_ip dev sarena_host src node_ip mtu MTU proto static` (replace);
///   5. sysctls: conf.sarena_host.forwarding=1 (forwarding is decided by the ingress device),
///      conf.all.forwarding=1 when ip_forward, rp_filter=0 and send_redirects=0 on both ends.
///      rp_filter=0 here is defence in depth only: the kernel uses max(all, dev), so the
///      datapath never relies on it (host-bound pod traffic enters on sarena_host, whose route
///      matches the pod's source, so strict reverse-path checks pass).
/// Errors: kFailedPrecondition when a link named sarena_host exists but is not a veth whose
/// peer is sarena_net; netlink/sysctl errors (ErrnoStatus with the extack text) otherwise.
absl::StatusOr<HostDevice> SetupHostDevice(nl::Socket& sock, const HostDeviceOptions& options);

/// Deletes the pair (and with it the address, neighbour and route). kNotFound when absent.
absl::Status TeardownHostDevice(nl::Socket& sock);

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_HOST_DEVICE_H_
