// kubectl JSON: Pods and Nodes into a Cluster.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/k8s_internal.h"

namespace sarena::model {

namespace internal {

// One item of a pod list (`p` its JSON path, for errors).
absl::Status ParsePodItem(const JsonValue& it, absl::string_view file, const std::string& p,
                          Pod* pod) {
  SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
  pod->name = std::move(m.name);
  pod->namespace_ = std::move(m.namespace_);
  pod->uid = std::move(m.uid);
  if (const JsonValue* meta = it.Find("metadata")) {
    std::string mp = Sub(p, "metadata");
    SARENA_ASSIGN_OR_RETURN(pod->labels, GetLabels(*meta, "labels", file, mp));
    SARENA_ASSIGN_OR_RETURN(pod->annotations, GetLabels(*meta, "annotations", file, mp));
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* spec, GetObject(it, "spec", file, p));
  if (spec != nullptr) {
    std::string sp = Sub(p, "spec");
    SARENA_ASSIGN_OR_RETURN(pod->node_name, GetStr(*spec, "nodeName", file, sp));
    SARENA_ASSIGN_OR_RETURN(auto hn, JsonGetBool(*spec, "hostNetwork", file, sp));
    pod->host_network = hn.value_or(false);
    SARENA_ASSIGN_OR_RETURN(const JsonValue* containers, GetArray(*spec, "containers", file, sp));
    if (containers != nullptr) {
      for (size_t c = 0; c < containers->size(); ++c) {
        const JsonValue& ct = (*containers)[c];
        std::string cp = JsonIndexPath(Sub(sp, "containers"), c);
        if (!ct.is_object()) return JsonFieldError(file, cp, "expected an object");
        SARENA_ASSIGN_OR_RETURN(const JsonValue* ports, GetArray(ct, "ports", file, cp));
        if (ports == nullptr) continue;
        for (size_t k = 0; k < ports->size(); ++k) {
          const JsonValue& pt = (*ports)[k];
          std::string pp = JsonIndexPath(Sub(cp, "ports"), k);
          if (!pt.is_object()) return JsonFieldError(file, pp, "expected an object");
          ContainerPort port;
          SARENA_ASSIGN_OR_RETURN(port.name, GetStr(pt, "name", file, pp));
          SARENA_ASSIGN_OR_RETURN(port.container_port, GetPort(pt, "containerPort", file, pp));
          SARENA_ASSIGN_OR_RETURN(port.host_port, GetPort(pt, "hostPort", file, pp));
          SARENA_ASSIGN_OR_RETURN(port.proto, GetProtocol(pt, file, pp));
          pod->ports.push_back(std::move(port));
        }
      }
    }
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* status, GetObject(it, "status", file, p));
  if (status != nullptr) {
    std::string sp = Sub(p, "status");
    SARENA_ASSIGN_OR_RETURN(pod->phase, GetStr(*status, "phase", file, sp));
    SARENA_ASSIGN_OR_RETURN(pod->pod_ip, JsonGetIpv4(*status, "podIP", file, sp));
    SARENA_ASSIGN_OR_RETURN(pod->host_ip, JsonGetIpv4(*status, "hostIP", file, sp));
    SARENA_ASSIGN_OR_RETURN(const JsonValue* ips, GetArray(*status, "podIPs", file, sp));
    if (ips != nullptr) {
      for (size_t k = 0; k < ips->size(); ++k) {
        const JsonValue& e = (*ips)[k];
        std::string ep = JsonIndexPath(Sub(sp, "podIPs"), k);
        if (!e.is_object()) return JsonFieldError(file, ep, "expected an object");
        SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(e, "ip", file, ep));
        if (ip) pod->pod_ips.push_back(*ip);
      }
    }
    if (pod->pod_ips.empty() && pod->pod_ip) pod->pod_ips.push_back(*pod->pod_ip);
    if (!pod->pod_ip && !pod->pod_ips.empty()) pod->pod_ip = pod->pod_ips.front();
    SARENA_ASSIGN_OR_RETURN(pod->ready, ReadyCondition(*status, file, sp));
  }
  return absl::OkStatus();
}

}  // namespace internal

using internal::AnnotationIpv4;
using internal::GetArray;
using internal::GetLabels;
using internal::GetMeta;
using internal::GetObject;
using internal::GetStr;
using internal::Items;
using internal::Meta;
using internal::ParsePodItem;
using internal::ReadyCondition;
using internal::Sub;

absl::Status Cluster::ParsePods(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  pods_.reserve(pods_.size() + items.size());
  for (const auto& [itp, p] : items) {
    Pod pod;
    SARENA_RETURN_IF_ERROR(ParsePodItem(*itp, file, p, &pod));
    pods_.push_back(std::move(pod));
  }
  return absl::OkStatus();
}

namespace {

// A node's spec: podCIDRs (or the older podCIDR), unschedulable.
absl::Status NodeSpec(const JsonValue& spec, absl::string_view file, const std::string& sp,
                      Node* node) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* cidrs, GetArray(spec, "podCIDRs", file, sp));
  std::vector<std::pair<std::string, std::string>> texts;
  if (cidrs != nullptr) {
    for (size_t k = 0; k < cidrs->size(); ++k) {
      if (!(*cidrs)[k].is_string()) {
        return JsonFieldError(file, JsonIndexPath(Sub(sp, "podCIDRs"), k), "expected a string");
      }
      texts.emplace_back(std::string((*cidrs)[k].str()), JsonIndexPath(Sub(sp, "podCIDRs"), k));
    }
  }
  if (texts.empty()) {
    SARENA_ASSIGN_OR_RETURN(auto c, JsonGetString(spec, "podCIDR", file, sp));
    if (c && !c->empty()) texts.emplace_back(std::string(*c), Sub(sp, "podCIDR"));
  }
  for (const auto& [t, tp] : texts) {
    if (t.find(':') != std::string::npos) continue;
    auto pfx = net::ParseIpv4Prefix(t, tp);
    if (!pfx.ok()) return JsonFieldError(file, tp, absl::StrCat("invalid CIDR '", t, "'"));
    node->pod_cidrs.push_back(pfx->canonical());
  }
  SARENA_ASSIGN_OR_RETURN(auto un, JsonGetBool(spec, "unschedulable", file, sp));
  node->unschedulable = un.value_or(false);
  return absl::OkStatus();
}

// A node's status: addresses (InternalIP, ExternalIP, Hostname) and the Ready condition.
absl::Status NodeStatus(const JsonValue& status, absl::string_view file, const std::string& sp,
                        Node* node) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* addrs, GetArray(status, "addresses", file, sp));
  if (addrs != nullptr) {
    for (size_t k = 0; k < addrs->size(); ++k) {
      const JsonValue& a = (*addrs)[k];
      std::string ap = JsonIndexPath(Sub(sp, "addresses"), k);
      if (!a.is_object()) return JsonFieldError(file, ap, "expected an object");
      SARENA_ASSIGN_OR_RETURN(std::string type, GetStr(a, "type", file, ap));
      if (type == "Hostname") {
        SARENA_ASSIGN_OR_RETURN(node->hostname, GetStr(a, "address", file, ap));
        continue;
      }
      if (type != "InternalIP" && type != "ExternalIP") continue;
      SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(a, "address", file, ap));
      if (!ip) continue;
      (type == "InternalIP" ? node->internal_ips : node->external_ips).push_back(*ip);
    }
  }
  SARENA_ASSIGN_OR_RETURN(node->ready, ReadyCondition(status, file, sp));
  return absl::OkStatus();
}

// One item of a node list (`p` its JSON path, for errors): metadata with Calico's annotations,
// spec, status.
absl::Status ParseNodeItem(const JsonValue& it, absl::string_view file, const std::string& p,
                           Node* node) {
  SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, false));
  node->name = std::move(m.name);
  if (const JsonValue* meta = it.Find("metadata")) {
    std::string mp = Sub(p, "metadata");
    SARENA_ASSIGN_OR_RETURN(node->labels, GetLabels(*meta, "labels", file, mp));
    SARENA_ASSIGN_OR_RETURN(node->annotations, GetLabels(*meta, "annotations", file, mp));
  }
  if (const std::string* a = FindLabel(node->annotations, "projectcalico.org/IPv4Address");
      a != nullptr && !a->empty()) {
    auto pfx = net::ParseIpv4Prefix(*a);
    if (!pfx.ok()) {
      return JsonFieldError(
          file, absl::StrCat(p, ".metadata.annotations[\"projectcalico.org/IPv4Address\"]"),
          absl::StrCat("invalid IPv4 address/prefix '", *a, "'"));
    }
    node->calico_ipv4_address = *pfx;
  }
  SARENA_ASSIGN_OR_RETURN(node->calico_ipip_tunnel_addr,
                          AnnotationIpv4(node->annotations, "projectcalico.org/IPv4IPIPTunnelAddr", file, p));
  SARENA_ASSIGN_OR_RETURN(node->calico_vxlan_tunnel_addr,
                          AnnotationIpv4(node->annotations, "projectcalico.org/IPv4VXLANTunnelAddr", file, p));
  SARENA_ASSIGN_OR_RETURN(node->calico_wireguard_addr,
                          AnnotationIpv4(node->annotations, "projectcalico.org/IPv4WireguardInterfaceAddr", file, p));
  SARENA_ASSIGN_OR_RETURN(const JsonValue* spec, GetObject(it, "spec", file, p));
  if (spec != nullptr) SARENA_RETURN_IF_ERROR(NodeSpec(*spec, file, Sub(p, "spec"), node));
  SARENA_ASSIGN_OR_RETURN(const JsonValue* status, GetObject(it, "status", file, p));
  if (status != nullptr) SARENA_RETURN_IF_ERROR(NodeStatus(*status, file, Sub(p, "status"), node));
  return absl::OkStatus();
}

}  // namespace

absl::Status Cluster::ParseNodes(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  nodes_.reserve(nodes_.size() + items.size());
  for (const auto& [itp, p] : items) {
    Node node;
    SARENA_RETURN_IF_ERROR(ParseNodeItem(*itp, file, p, &node));
    nodes_.push_back(std::move(node));
  }
  return absl::OkStatus();
}

}  // namespace sarena::model
