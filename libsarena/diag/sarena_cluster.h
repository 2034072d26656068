// The cluster half of the sarena plugin (plugin.h, sarena_plugin.cc): how the walk models the
// multi-node datapath of bpf/lib/overlay.h, bpf/to_overlay.bpf.c, bpf/from_overlay.bpf.c and
// bpf/from_netdev.bpf.c from a node's nodes/<node>/sarena-cluster.json
// (model/sarena_cluster.h), and the findings only a multi-node path has.
//
//   from_container, destination not local, not a host-flow reply, overlay config set, tunnel-map
//   hit: tunnel mode -> tunnel key (remote = the entry's underlay, VNI, no DF) + redirect to
//   sarena_vxlan (kEncapsulate); native mode -> bpf_fib_lookup through the uplink: a route via
//   the uplink -> redirect (kRedirect), unreachable / blackhole / prohibit / no route -> drop
//   FIB_LOOKUP_FAILED, a route onto sarena_vxlan -> to_overlay encapsulates it by the same entry.
//   to_overlay (sarena_vxlan egress, host-stack traffic): tunnel-map miss -> drop
//   NO_TUNNEL_ENDPOINT; else the tunnel key from the entry.
//   from_overlay (sarena_vxlan ingress): outer source not in the peer map -> UNKNOWN_PEER; VNI
//   not the config's -> WRONG_VNI; inner source neither the peer's underlay nor in a tunnel-map
//   CIDR of the same node id -> OVERLAY_SOURCE_MISMATCH; else local endpoint -> local_delivery,
//   the rest -> host stack on sarena_vxlan.
//   from_netdev (uplink ingress, native flag): local endpoint, source in a tunnel-map CIDR, not a
//   host-flow reply -> local_delivery; else host stack.
//
// Suspicion codes (stable; docs/architecture.md "The diagnoser across nodes"):
//   tunnel_entry_missing   a remote pod address with a route but no tunnel-map entry
//   remote_cidr_misrouted  a remote pod CIDR's route is not the one its entry's mode needs
//                          (tunnel: dev sarena_vxlan; native: via <underlay> dev <uplink>), or is
//                          missing so the cluster CIDR's unreachable route answers
//   stale_underlay         the entry's underlay is not the peer node's current underlay address,
//                          or no underlay route reaches it
//   overlay_mtu_too_big    pod MTU + 50 > uplink MTU in tunnel mode
//   unknown_peer, wrong_vni, overlay_source_mismatch, fib_lookup_failed   the drop reasons
//   tunnel_port_blocked    (the generic walk) netfilter drops the outer UDP packets
#ifndef LIBSARENA_DIAG_SARENA_CLUSTER_H_
#define LIBSARENA_DIAG_SARENA_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/model/sarena_cluster.h"
#include "libsarena/model/tunnel.h"

namespace sarena::diag::sarena_cluster {

/// Name of the collect-metadata VXLAN device (libsarena/datapath/overlay.h kVxlanDevice).
inline constexpr absl::string_view kVxlanDev = "sarena_vxlan";
/// Bytes VXLAN over IPv4 adds to an inner IP packet (RFC 7348 section 5; model/tunnel.h).
inline constexpr uint32_t kVxlanOverhead = *model::TunnelOverheadOf("vxlan");

/// Whether a program is attached (from sarena-programs.json; kUnknown when the file is absent).
enum class Attach { kYes, kNo, kUnknown };
/// Asks the sarena plugin: is `prog` attached to `ifname` in `direction` ("ingress"/"egress")?
using AttachedFn = std::function<Attach(const Where& w, absl::string_view ifname,
                                        absl::string_view direction, absl::string_view prog)>;

/// What a cluster hook decided.
struct Outcome {
  enum class Kind {
    kNotMine,  // not a cross-node packet (or one-node mode): the one-node logic applies
    kAction,   // `action` is the verdict (encapsulate, redirect, stop)
    kAccept,   // from_overlay / from_netdev accepted the packet: the caller delivers it locally
               // when its destination is a local endpoint that is not a host-flow reply, else
               // passes it to the host stack
  };
  Kind kind = Kind::kNotMine;
  PluginAction action;
};

/// The node's cluster state from the snapshot, or null (file absent).
const model::SarenaCluster* ClusterOf(const Where& w);
/// The overlay config if the node runs in cluster mode (flags != 0), else null.
const model::SarenaOverlay* OverlayOf(const Where& w);

/// from_container's cross-node branch. `pod_mtu`: the sending pod's interface MTU (0 unknown).
Outcome FromContainer(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                      const HookPacket& p, uint32_t pod_mtu);
/// to_overlay: the host stack routed `p` onto sarena_vxlan.
Outcome ToOverlay(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                  const HookPacket& p, const AttachedFn& attached);
/// from_overlay: `p` was decapsulated on sarena_vxlan (p.outer, p.vni set).
Outcome FromOverlay(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                    const HookPacket& p, const AttachedFn& attached);
/// from_netdev on the uplink `iif`.
Outcome FromNetdev(const PluginContext& ctx, const Where& w, absl::string_view iif,
                   PathGraph::Vertex hop, const HookPacket& p);
/// The host stack routed `p` (a remote pod address): the route must match the entry's mode.
void CheckRemoteRoute(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                      const HookPacket& p, const model::RouteResult& route);
/// The route lookup for `p` failed: names the missing route / entry / stale underlay.
void ExplainRouteFailure(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                         const HookPacket& p, const model::RouteResult& route);
/// Node-wide: sarena_vxlan present, up, collect-metadata, MTU, programs on it and the uplink.
void CheckNode(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
               const AttachedFn& attached);

}  // namespace sarena::diag::sarena_cluster

#endif  // LIBSARENA_DIAG_SARENA_CLUSTER_H_
