#include "libsarena/model/service_match.h"

#include <algorithm>

namespace sarena::model {

std::optional<ServiceMatch> MatchService(const Cluster& cluster, const Netstack* ns,
                                         const Packet& pkt) {
  ServiceMatch m;
  m.svc = cluster.FindServiceByIp(pkt.dst);
  if (m.svc) {
    bool is_cluster_ip = std::find(m.svc->cluster_ips.begin(), m.svc->cluster_ips.end(),
                                   pkt.dst) != m.svc->cluster_ips.end();
    m.via = is_cluster_ip ? ServiceVia::kClusterIp : ServiceVia::kExternal;
    m.port = m.svc->FindPort(pkt.dport, pkt.proto);
  } else if (ns && ns->IsLocalAddress(pkt.dst)) {
    m.svc = cluster.FindServiceByNodePort(pkt.dport, pkt.proto);
    if (m.svc) {
      m.port = m.svc->FindNodePort(pkt.dport, pkt.proto);
      m.via = ServiceVia::kNodePort;
    }
  }
  if (!m.svc) return std::nullopt;
  return m;
}

PolicyResult ApplyTrafficPolicy(const Cluster& cluster, const ServiceMatch& m, const Packet& pkt,
                                absl::string_view node_name, const Netstack* ns,
                                const std::vector<Backend>& ready, bool originated) {
  const Service& svc = *m.svc;
  PolicyResult out;
  if (m.via == ServiceVia::kExternal &&
      std::find(svc.load_balancer_ips.begin(), svc.load_balancer_ips.end(), pkt.dst) !=
          svc.load_balancer_ips.end() &&
      !svc.load_balancer_source_ranges.empty()) {
    bool allowed = false;
    for (const auto& r : svc.load_balancer_source_ranges) {
      if (net::Contains(r, pkt.src)) allowed = true;
    }
    if (!allowed) {
      out.denied = PolicyResult::Denied::kSourceRange;
      return out;
    }
  }
  auto on_this_node = [&] {
    std::vector<Backend> local;
    for (const auto& b : ready) {
      if (b.node_name == node_name) local.push_back(b);
    }
    return local;
  };
  bool src_is_pod = cluster.FindPodByIp(pkt.src) != nullptr;
  bool src_is_node =
      cluster.FindNodeByIp(pkt.src) != nullptr || (ns && ns->IsLocalAddress(pkt.src));
  bool external_src = !src_is_pod && !src_is_node && !originated;
  if ((m.via == ServiceVia::kExternal || m.via == ServiceVia::kNodePort) &&
      svc.external_traffic_policy_local && external_src) {
    out.backends = on_this_node();
    if (out.backends.empty()) out.denied = PolicyResult::Denied::kExternalTrafficPolicyLocal;
    return out;
  }
  if (m.via == ServiceVia::kClusterIp && svc.internal_traffic_policy_local) {
    out.backends = on_this_node();
    if (out.backends.empty()) out.denied = PolicyResult::Denied::kInternalTrafficPolicyLocal;
    return out;
  }
  out.backends = ready;
  return out;
}

}  // namespace sarena::model
