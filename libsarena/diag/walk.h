// The path walk: from a query's source to its destination and back along the reply path, over
// the netstack / netfilter / Kubernetes model of a snapshot, building the path graph and its
// suspicions. The walk itself needs no CNI knowledge; a Plugin (plugin.h) adds the CNI's.
//
// At every hop it checks what the kernel checks, in the kernel's order:
//   ingress link present and up; netfilter PREROUTING (DNAT, drops); Service semantics (endpoints,
//   loadBalancerSourceRanges, externalTrafficPolicy Local); input routing (policy rules, route
//   type, per-ingress-device forwarding, rp_filter with max(all, dev)); INPUT / FORWARD filter;
//   TTL; output routing (source selection); POSTROUTING (SNAT/MASQUERADE); egress link state and
//   MTU; the gateway's neighbour entry; then where the egress device leads: a veth peer (found
//   from link_index / link_netnsid, not from names), a bridge port, an ipip / vxlan tunnel (outer
//   header, FDB, decapsulation on the far node), or the underlay (the node owning the next hop, or
//   an external router). Replies are walked back from where the request was served, un-NATed by
//   conntrack at the nodes that NATed the request, with conntrack state INVALID where the reply
//   meets a node the request never crossed (asymmetric return).
//
// Loop safety: a hop limit per branch and a visited set (netns, ingress device, packet); a
// revisit is a routing loop (ttl_exceeded). A Service's backends (kube-proxy statistic branches,
// else its EndpointSlices) are separate branches; a FATAL in some but not all branches is reported
// as CRITICAL (some connections fail).
#ifndef LIBSARENA_DIAG_WALK_H_
#define LIBSARENA_DIAG_WALK_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/model/snapshot.h"

namespace sarena::diag {

struct TraceOptions {
  /// Maximum hops per branch before the walk calls it a loop.
  int max_hops = 64;
  /// Maximum Service backends walked (the rest are listed in an INFO).
  size_t max_backends = 32;
  /// Walk the reply direction too.
  bool reply = true;
};

/// Result of a trace.
struct TraceResult {
  PathGraph graph;
  std::string plugin;  // name of the plugin used
};

/// Traces `query` through `snapshot` with `plugin`.
/// Errors (bad input, sarena-diag exits 2): kNotFound for an unknown pod / node / Service, or a
/// source whose node has no directory in the snapshot; kInvalidArgument for a query the
/// snapshot cannot answer (a pod without IP, a Service without that port, a Service as source)
/// and for malformed snapshot files met on the way (the message names the file and field).
absl::StatusOr<TraceResult> Trace(const model::Snapshot& snapshot, const Query& query,
                                  Plugin& plugin, const TraceOptions& options = {});

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_WALK_H_
