// Cluster's semantics: label selectors, the objects' helpers, the lookup index (Finalize), Service
// resolution (ports, node ports, endpoints and the backends of a Service port) and the pods a
// Service selects. Parsing and loading live in the k8s_*.cc files named in k8s_internal.h.
#include "libsarena/model/k8s.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace sarena::model {

const std::string* FindLabel(const Labels& labels, absl::string_view key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& kv, absl::string_view k) { return kv.first < k; });
  if (it != labels.end() && it->first == key) return &it->second;
  return nullptr;
}

bool SelectorMatches(const Labels& selector, const Labels& labels) {
  for (const auto& [k, v] : selector) {
    const std::string* lv = FindLabel(labels, k);
    if (!lv || *lv != v) return false;
  }
  return true;
}

std::string Pod::Key() const { return absl::StrCat(namespace_, "/", name); }

const ContainerPort* Pod::FindPort(absl::string_view port_name, uint8_t proto) const {
  for (const auto& p : ports) {
    if (p.name == port_name && p.proto == proto) return &p;
  }
  return nullptr;
}

std::optional<net::Ipv4> Node::PrimaryIp() const {
  if (!internal_ips.empty()) return internal_ips.front();
  if (!external_ips.empty()) return external_ips.front();
  if (calico_ipv4_address) return calico_ipv4_address->address();
  return std::nullopt;
}

absl::string_view ToString(ServiceType type) {
  switch (type) {
    case ServiceType::kClusterIP: return "ClusterIP";
    case ServiceType::kNodePort: return "NodePort";
    case ServiceType::kLoadBalancer: return "LoadBalancer";
    case ServiceType::kExternalName: return "ExternalName";
  }
  return "?";
}

std::string Service::Key() const { return absl::StrCat(namespace_, "/", name); }

const ServicePort* Service::FindPort(uint16_t port, uint8_t proto) const {
  for (const auto& p : ports) {
    if (p.port == port && p.proto == proto) return &p;
  }
  return nullptr;
}

const ServicePort* Service::FindNodePort(uint16_t node_port, uint8_t proto) const {
  for (const auto& p : ports) {
    if (p.node_port != 0 && p.node_port == node_port && p.proto == proto) return &p;
  }
  return nullptr;
}

namespace {

using PairKey = std::pair<absl::string_view, absl::string_view>;

}  // namespace

struct Cluster::Index {
  absl::flat_hash_map<PairKey, uint32_t> pod_by_key;
  absl::flat_hash_map<uint32_t, uint32_t> pod_by_ip;
  // Addresses more than one live (Running / Pending / no phase) non-hostNetwork pod claims.
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> live_pods_by_shared_ip;
  absl::flat_hash_map<absl::string_view, std::vector<uint32_t>> pods_by_node;
  absl::flat_hash_map<absl::string_view, uint32_t> node_by_name;
  absl::flat_hash_map<uint32_t, uint32_t> node_by_ip;
  std::vector<uint8_t> cidr_lens;  // longest first
  absl::flat_hash_map<uint64_t, uint32_t> node_by_cidr;
  absl::flat_hash_map<PairKey, uint32_t> svc_by_key;
  absl::flat_hash_map<uint32_t, uint32_t> svc_by_ip;
  absl::flat_hash_map<uint32_t, uint32_t> svc_by_nodeport;  // (proto << 16) | port
};

Cluster::Cluster() : index_(std::make_unique<Index>()) {}
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

void Cluster::AddPod(Pod pod) { pods_.push_back(std::move(pod)); }
void Cluster::AddNode(Node node) { nodes_.push_back(std::move(node)); }
void Cluster::AddService(Service service) { services_.push_back(std::move(service)); }
void Cluster::SetEndpoints(absl::string_view namespace_, absl::string_view service,
                           std::vector<EndpointGroup> groups) {
  endpoints_[absl::StrCat(namespace_, "/", service)] = std::move(groups);
}
void Cluster::AddIpPool(IpPool pool) {
  ip_pools_.push_back(std::move(pool));
  has_ip_pools_ = true;
}

void Cluster::Finalize() {
  auto ix = std::make_unique<Index>();
  ix->pod_by_key.reserve(pods_.size());
  ix->pod_by_ip.reserve(pods_.size());
  absl::flat_hash_map<uint32_t, uint32_t> first_live_by_ip;
  auto live = [](const Pod& p) {
    return p.phase == "Running" || p.phase == "Pending" || p.phase.empty();
  };
  for (uint32_t i = 0; i < pods_.size(); ++i) {
    const Pod& p = pods_[i];
    ix->pod_by_key.emplace(PairKey(p.namespace_, p.name), i);
    if (!p.node_name.empty()) ix->pods_by_node[p.node_name].push_back(i);
    if (p.host_network) continue;
    for (const net::Ipv4& ip : p.pod_ips) {
      if (live(p)) {
        auto [first, fresh] = first_live_by_ip.emplace(ip.to_uint(), i);
        if (!fresh && first->second != i) {
          std::vector<uint32_t>& shared = ix->live_pods_by_shared_ip[ip.to_uint()];
          if (shared.empty()) shared.push_back(first->second);
          if (shared.back() != i) shared.push_back(i);
        }
      }
      auto [it, inserted] = ix->pod_by_ip.emplace(ip.to_uint(), i);
      if (!inserted) {
        // Prefer a running pod over finished ones that kept their IP in status.
        const Pod& old = pods_[it->second];
        bool old_live = live(old);
        bool new_live = live(p);
        if (new_live && !old_live) it->second = i;
      }
    }
  }
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    ix->node_by_name.emplace(n.name, i);
    for (const auto& ip : n.internal_ips) ix->node_by_ip.emplace(ip.to_uint(), i);
    for (const auto& ip : n.external_ips) ix->node_by_ip.emplace(ip.to_uint(), i);
    if (n.calico_ipv4_address) ix->node_by_ip.emplace(n.calico_ipv4_address->address().to_uint(), i);
    for (const auto* ip : {&n.calico_ipip_tunnel_addr, &n.calico_vxlan_tunnel_addr,
                           &n.calico_wireguard_addr}) {
      if (*ip) ix->node_by_ip.emplace((*ip)->to_uint(), i);
    }
    for (const auto& c : n.pod_cidrs) {
      uint8_t len = static_cast<uint8_t>(c.prefix_length());
      ix->node_by_cidr.emplace((static_cast<uint64_t>(len) << 32) | c.network().to_uint(), i);
      if (std::find(ix->cidr_lens.begin(), ix->cidr_lens.end(), len) == ix->cidr_lens.end()) {
        ix->cidr_lens.push_back(len);
      }
    }
  }
  std::sort(ix->cidr_lens.begin(), ix->cidr_lens.end(), std::greater<uint8_t>());
  for (uint32_t i = 0; i < services_.size(); ++i) {
    const Service& s = services_[i];
    ix->svc_by_key.emplace(PairKey(s.namespace_, s.name), i);
    for (const auto& ip : s.cluster_ips) ix->svc_by_ip.emplace(ip.to_uint(), i);
    for (const auto& ip : s.load_balancer_ips) ix->svc_by_ip.emplace(ip.to_uint(), i);
    for (const auto& ip : s.external_ips) ix->svc_by_ip.emplace(ip.to_uint(), i);
    for (const auto& p : s.ports) {
      if (p.node_port != 0) {
        ix->svc_by_nodeport.emplace((static_cast<uint32_t>(p.proto) << 16) | p.node_port, i);
      }
    }
  }
  index_ = std::move(ix);
}

const Pod* Cluster::FindPod(absl::string_view namespace_, absl::string_view name) const {
  auto it = index_->pod_by_key.find(PairKey(namespace_, name));
  return it == index_->pod_by_key.end() ? nullptr : &pods_[it->second];
}

const Pod* Cluster::FindPodByIp(const net::Ipv4& ip) const {
  auto it = index_->pod_by_ip.find(ip.to_uint());
  return it == index_->pod_by_ip.end() ? nullptr : &pods_[it->second];
}

std::vector<const Pod*> Cluster::LivePodsSharingIp(const net::Ipv4& ip) const {
  std::vector<const Pod*> out;
  auto it = index_->live_pods_by_shared_ip.find(ip.to_uint());
  if (it == index_->live_pods_by_shared_ip.end()) return out;
  out.reserve(it->second.size());
  for (uint32_t i : it->second) out.push_back(&pods_[i]);
  return out;
}

std::vector<const Pod*> Cluster::PodsOnNode(absl::string_view node) const {
  std::vector<const Pod*> out;
  auto it = index_->pods_by_node.find(node);
  if (it == index_->pods_by_node.end()) return out;
  out.reserve(it->second.size());
  for (uint32_t i : it->second) out.push_back(&pods_[i]);
  return out;
}

const Node* Cluster::FindNode(absl::string_view name) const {
  auto it = index_->node_by_name.find(name);
  return it == index_->node_by_name.end() ? nullptr : &nodes_[it->second];
}

const Node* Cluster::FindNodeByIp(const net::Ipv4& ip) const {
  auto it = index_->node_by_ip.find(ip.to_uint());
  return it == index_->node_by_ip.end() ? nullptr : &nodes_[it->second];
}

const Node* Cluster::FindNodeByPodCidr(const net::Ipv4& ip) const {
  uint32_t a = ip.to_uint();
  for (uint8_t len : index_->cidr_lens) {
    uint32_t mask = len == 0 ? 0 : (0xffffffffu << (32 - len));
    auto it = index_->node_by_cidr.find((static_cast<uint64_t>(len) << 32) | (a & mask));
    if (it != index_->node_by_cidr.end()) return &nodes_[it->second];
  }
  return nullptr;
}

const Service* Cluster::FindService(absl::string_view namespace_, absl::string_view name) const {
  auto it = index_->svc_by_key.find(PairKey(namespace_, name));
  return it == index_->svc_by_key.end() ? nullptr : &services_[it->second];
}

const Service* Cluster::FindServiceByIp(const net::Ipv4& ip) const {
  auto it = index_->svc_by_ip.find(ip.to_uint());
  return it == index_->svc_by_ip.end() ? nullptr : &services_[it->second];
}

const Service* Cluster::FindServiceByNodePort(uint16_t node_port, uint8_t proto) const {
  auto it = index_->svc_by_nodeport.find((static_cast<uint32_t>(proto) << 16) | node_port);
  return it == index_->svc_by_nodeport.end() ? nullptr : &services_[it->second];
}

const std::vector<EndpointGroup>* Cluster::FindEndpoints(absl::string_view namespace_,
                                                         absl::string_view name) const {
  // Keys are "ns/name"; build it on the stack to avoid a heap allocation for short names.
  char buf[320];
  std::string heap;
  absl::string_view key;
  if (namespace_.size() + name.size() + 1 <= sizeof(buf)) {
    std::memcpy(buf, namespace_.data(), namespace_.size());
    buf[namespace_.size()] = '/';
    std::memcpy(buf + namespace_.size() + 1, name.data(), name.size());
    key = absl::string_view(buf, namespace_.size() + 1 + name.size());
  } else {
    heap = absl::StrCat(namespace_, "/", name);
    key = heap;
  }
  auto it = endpoints_.find(key);
  return it == endpoints_.end() ? nullptr : &it->second;
}

std::vector<Backend> Cluster::BackendsFor(const Service& service, const ServicePort& port) const {
  std::vector<Backend> out;
  const std::vector<EndpointGroup>* groups = FindEndpoints(service.namespace_, service.name);
  if (groups == nullptr) return out;
  for (const EndpointGroup& g : *groups) {
    const EndpointGroup::Port* gp = nullptr;
    for (const auto& candidate : g.ports) {
      if (candidate.proto != port.proto) continue;
      if (candidate.name == port.name) {
        gp = &candidate;
        break;
      }
    }
    if (gp == nullptr && port.name.empty() && g.ports.size() == 1 && g.ports[0].proto == port.proto) {
      gp = &g.ports[0];
    }
    if (gp == nullptr) continue;
    for (const Backend& b : g.addresses) {
      Backend x = b;
      x.port = gp->port;
      x.proto = gp->proto;
      out.push_back(std::move(x));
    }
  }
  return out;
}

const IpPool* Cluster::FindIpPool(const net::Ipv4& ip) const {
  return sarena::model::FindIpPool(ip_pools_, ip);
}

Cluster::SelectedPods Cluster::CountSelectedPods(const Service& service) const {
  SelectedPods n;
  if (service.selector.empty()) return n;
  for (const Pod& p : pods_) {
    if (p.namespace_ != service.namespace_ || !SelectorMatches(service.selector, p.labels)) {
      continue;
    }
    ++n.pods;
    if (p.ready) ++n.ready;
  }
  return n;
}

}  // namespace sarena::model
