// Pod endpoints: the veth pair joining a pod's network namespace to the node, the pod-side
// addressing and routes, the endpoint-map entry and the from_container attachment.
// docs/architecture.md "The node datapath", pod side: veth CNI_IFNAME in the pod netns with the pod
// IP /32, an on-link route to the gateway (--node-ip) and a default route via it; host side "lxc" +
// 11 hex of sha256(containerID + ifname), no address; the gateway's ARP is answered by
// from_container.
#ifndef LIBSARENA_DATAPATH_ENDPOINT_H_
#define LIBSARENA_DATAPATH_ENDPOINT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/datapath/datapath.h"
#include "libsarena/datapath/endpoint_jobs.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/socket.h"

namespace sarena::datapath {

/// What was created.
struct EndpointState {
  std::string host_ifname;  // lxc...
  int host_ifindex = 0;     // in the node netns
  net::Mac host_mac{};      // the pod's gateway MAC
  net::Mac pod_mac{};       // CNI_IFNAME's MAC inside the pod
  int pod_ifindex = 0;      // CNI_IFNAME's ifindex inside the pod netns
};

/// What to create for one attachment.
struct EndpointSpec {
  std::string container_id;  // CNI_CONTAINERID (already validated)
  std::string ifname;        // CNI_IFNAME, the pod-side name (already validated)
  std::string netns;         // CNI_NETNS: path (or name under /var/run/netns) of the pod netns
  net::Ipv4 ip;              // the pod IP (installed as /32)
  net::Ipv4 gateway;         // --node-ip
  uint32_t mtu = 1500;       // bytes, both veth ends
  uint32_t endpoint_id = 0;  // counter index, < SARENA_MAX_ENDPOINTS
  /// Host-side veth name; empty = HostVethName(container_id, ifname). CHECK passes the recorded
  /// name, so endpoints created under an earlier naming scheme stay checkable.
  std::string host_ifname;
  /// Optional, Create only: the caller's commit point (sarenad writes the durable endpoint
  /// record here). Called once on the calling thread with the created names, ifindexes and MACs,
  /// after from_container is attached and the pod side is configured, while the host side is
  /// still down. A non-OK return aborts Create (every step
  /// undone) with that error. If Create fails after the hook returned OK, undoing the hook's
  /// work is the caller's (Create reports no flag; the hook records that it ran).
  std::function<absl::Status(const EndpointState&)> commit;
};

/// Creates the endpoint in this order, so no pod packet ever meets a half-built datapath:
/// veth pair (both ends down; the peer created directly in the pod netns), the owner mark
/// (IFLA_IFALIAS = VethOwnerAlias) on the host side, endpoint-map entry and zeroed counters;
/// from_container on the host side's ingress; the pod side (address, link up, on-link route to
/// the gateway, default route); spec.commit; then the host side goes up and gets the endpoint
/// route (EndpointRoute). With `jobs` and TCX, from_container is first a tc copy
/// (Datapath::AttachTc: no RCU grace period on the reply path) and `jobs` replaces it with the
/// pinned TCX link after Create returns (EndpointJobs explains why and why no packet is missed
/// or handled twice); without `jobs`, the mode's own attach (Datapath::Attach: a TCX link waits
/// for a grace period with the RTNL lock held, ~10 ms). Until the host side is up the pair has no
/// carrier and the kernel refuses to forward anything the pod sends to a down peer
/// (is_skb_forwardable), so no packet reaches the node before from_container checks it.
/// Any failure undoes every step already done (veth deleted, map entry removed, link unpinned)
/// and returns the first error.
/// Errors: kNotFound when the netns does not exist; kAlreadyExists when CNI_IFNAME exists in
/// the pod netns or the host-side name is taken; netlink/BPF errors with errno and extack.
absl::StatusOr<EndpointState> CreateEndpoint(Datapath& dp, nl::Socket& node,
                                             const EndpointSpec& spec,
                                             EndpointJobs* jobs = nullptr);

/// Removes the endpoint of `ip` whose host side is `host_ifname`, in this order: the
/// endpoint-map entry (only when it still points at that ifindex), the veth pair (with
/// from_container still attached: no moment without the program), the from_container link pin.
/// Idempotent:
/// everything already gone is fine (CNI DEL). `ip` may be nullopt when unknown.
/// `expected_owner` (a VethOwnerAlias value) is for deletes without a record: a veth of that
/// name whose alias names another attachment is left alone (it is not ours; a warning is
/// logged) and only this attachment's IP is cleaned; a veth without an alias (a crash between
/// creating it and marking it) is taken as ours, the name being derived from the key.
/// With `jobs` (TCX), a TCX move still queued for `host_ifname` is dropped (one running finishes
/// first), and the pair is not deleted here: it is taken out of service (both ends down, both ends
/// renamed to EndpointJobs::RetiredName, so CNI_IFNAME is gone from `netns` and the host name is
/// free when this returns; link pin removed) and deleted by `jobs`, because deleting a device
/// with a TCX program waits for an RCU grace period with the RTNL lock held (EndpointJobs). That
/// needs `netns` (CNI_NETNS, or the recorded one; may be empty) to hold the host veth's peer;
/// otherwise, and without `jobs`, the pair is deleted here.
/// Errors: netlink/BPF errors other than kNotFound.
absl::Status DeleteEndpoint(Datapath& dp, nl::Socket& node, absl::string_view host_ifname,
                            const std::optional<net::Ipv4>& ip,
                            const std::optional<std::string>& expected_owner = std::nullopt,
                            absl::string_view netns = {}, EndpointJobs* jobs = nullptr);

/// Verifies an endpoint is intact, i.e. everything ADD created and put in the CNI result (CNI
/// spec, CHECK: "the plugin must verify the interfaces, addresses and routes"): host veth
/// present, up, with the ADD's MTU; peer CNI_IFNAME in the pod netns, up, with the MTU and
/// exactly the IP as /32 (a changed prefix or a second address from the pool fails); the pod's
/// on-link route to the gateway and its default route via the gateway out of CNI_IFNAME; map
/// entry equal to the live ifindex and MACs; the endpoint route in place (the kernel routes
/// the pod IP through the host veth); from_container attached.
/// Errors: kFailedPrecondition / kNotFound naming the first thing that differs.
absl::Status CheckEndpoint(Datapath& dp, nl::Socket& node, const EndpointSpec& spec);

/// The endpoint route of a pod: `<ip>/32 dev <host veth> scope link proto static src <node_ip>`
/// in the main table. Host-stack traffic to the pod (node -> pod, kube-proxy DNAT, replies) is
/// routed straight to the pod's veth, and strict rp_filter (RFC 3704 section 2.2, kernel
/// ip-sysctl.rst rp_filter) accepts the pod's packets entering the host on that veth; `src` makes
/// node -> pod traffic leave with the node IP. Cilium calls this "endpoint routes".
nl::Route EndpointRoute(const net::Ipv4& ip, const net::Ipv4& node_ip, int host_ifindex);

/// Host-side veth name of an attachment (re-exported from naming.h for callers).
std::string EndpointHostIfname(absl::string_view container_id, absl::string_view ifname);

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_ENDPOINT_H_
