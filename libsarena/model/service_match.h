// Kubernetes Service semantics for one packet, as kube-proxy implements them: which Service a
// destination names (a ClusterIP, an external / load-balancer IP, or a node's address and a
// nodePort) and which of its ready endpoints the connection may reach under
// loadBalancerSourceRanges, externalTrafficPolicy and internalTrafficPolicy. Source: Kubernetes
// "Service" and "Service Internal Traffic Policy" docs; kube-proxy's KUBE-SERVICES,
// KUBE-NODEPORTS, KUBE-EXT-* and KUBE-FW-* chains (pkg/proxy/iptables/proxier.go).
#ifndef LIBSARENA_MODEL_SERVICE_MATCH_H_
#define LIBSARENA_MODEL_SERVICE_MATCH_H_

#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/packet.h"

namespace sarena::model {

/// How a packet's destination names a Service.
enum class ServiceVia {
  kClusterIp,  // one of spec.clusterIPs
  kExternal,   // spec.externalIPs or status.loadBalancer.ingress[].ip
  kNodePort,   // a local address of the node and one of the Service's nodePorts
};

/// The Service a packet reaches and by which address.
struct ServiceMatch {
  const Service* svc = nullptr;
  const ServicePort* port = nullptr;  // null: the Service has no such port (nothing translates)
  ServiceVia via = ServiceVia::kClusterIp;
};

/// The Service `pkt` (destination address, port and protocol) reaches, or nullopt. `ns`: the
/// network namespace the packet is in (a nodePort matches only a destination that is one of its
/// local addresses); nullptr when the snapshot lacks it (then no nodePort matches).
std::optional<ServiceMatch> MatchService(const Cluster& cluster, const Netstack* ns,
                                         const Packet& pkt);

/// Which ready endpoints a connection may reach (ApplyTrafficPolicy), or why none.
struct PolicyResult {
  enum class Denied {
    kNone,
    /// Sent to a load-balancer IP from outside spec.loadBalancerSourceRanges (kube-proxy drops).
    kSourceRange,
    /// externalTrafficPolicy Local, an external client, and no ready endpoint on this node.
    kExternalTrafficPolicyLocal,
    /// internalTrafficPolicy Local (a ClusterIP) and no ready endpoint on this node.
    kInternalTrafficPolicyLocal,
  };
  Denied denied = Denied::kNone;
  /// The endpoints the connection may reach (empty when denied).
  std::vector<Backend> backends;
};

/// Applies loadBalancerSourceRanges and the traffic policies to `ready` (the Service's ready
/// endpoints) for `pkt` arriving at node `node_name` (whose namespace is `ns`, nullptr when
/// absent). `originated`: the packet was sent by this node or one of its pods (never an
/// external client). A source is external when it is neither a pod, nor a node (by the cluster's
/// node addresses or `ns`'s local addresses), nor originated here.
PolicyResult ApplyTrafficPolicy(const Cluster& cluster, const ServiceMatch& m, const Packet& pkt,
                                absl::string_view node_name, const Netstack* ns,
                                const std::vector<Backend>& ready, bool originated);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_SERVICE_MATCH_H_
