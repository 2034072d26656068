// kubectl JSON: Services, EndpointSlices (discovery.k8s.io/v1), Endpoints (core/v1, when the
// slices are absent) and Calico IPPools into a Cluster.
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/k8s_internal.h"

namespace sarena::model {

using internal::GetArray;
using internal::GetLabels;
using internal::GetMeta;
using internal::GetObject;
using internal::GetPort;
using internal::GetProtocol;
using internal::GetStr;
using internal::Items;
using internal::Meta;
using internal::Sub;

namespace {

// spec.clusterIPs (or the older spec.clusterIP); "None" is a headless Service.
absl::Status ServiceClusterIps(const JsonValue& spec, absl::string_view file, const std::string& sp,
                               Service* svc) {
  std::vector<std::pair<std::string, std::string>> ips;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* cips, GetArray(spec, "clusterIPs", file, sp));
  if (cips != nullptr) {
    for (size_t k = 0; k < cips->size(); ++k) {
      if (!(*cips)[k].is_string()) {
        return JsonFieldError(file, JsonIndexPath(Sub(sp, "clusterIPs"), k), "expected a string");
      }
      ips.emplace_back(std::string((*cips)[k].str()), JsonIndexPath(Sub(sp, "clusterIPs"), k));
    }
  }
  if (ips.empty()) {
    SARENA_ASSIGN_OR_RETURN(std::string cip, GetStr(spec, "clusterIP", file, sp));
    if (!cip.empty()) ips.emplace_back(cip, Sub(sp, "clusterIP"));
  }
  for (const auto& [t, tp] : ips) {
    if (t == "None") {
      svc->headless = true;
      continue;
    }
    if (t.empty() || t.find(':') != std::string::npos) continue;
    auto ip = net::ParseIpv4(t);
    if (!ip.ok()) return JsonFieldError(file, tp, absl::StrCat("invalid IPv4 address '", t, "'"));
    svc->cluster_ips.push_back(*ip);
  }
  return absl::OkStatus();
}

// spec.ports, with targetPort an IntOrString (the port itself when unset).
absl::Status ServicePorts(const JsonValue& spec, absl::string_view file, const std::string& sp,
                          Service* svc) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ports, GetArray(spec, "ports", file, sp));
  if (ports != nullptr) {
    for (size_t k = 0; k < ports->size(); ++k) {
      const JsonValue& pt = (*ports)[k];
      std::string pp = JsonIndexPath(Sub(sp, "ports"), k);
      if (!pt.is_object()) return JsonFieldError(file, pp, "expected an object");
      ServicePort port;
      SARENA_ASSIGN_OR_RETURN(port.name, GetStr(pt, "name", file, pp));
      SARENA_ASSIGN_OR_RETURN(port.proto, GetProtocol(pt, file, pp));
      SARENA_ASSIGN_OR_RETURN(port.port, GetPort(pt, "port", file, pp));
      SARENA_ASSIGN_OR_RETURN(port.node_port, GetPort(pt, "nodePort", file, pp));
      if (const JsonValue* tp = pt.Find("targetPort"); tp != nullptr) {
        if (tp->is_number()) {
          auto n = tp->AsInt();
          if (!n || *n < 0 || *n > 65535) {
            return JsonFieldError(file, Sub(pp, "targetPort"), "port out of range");
          }
          port.target_port.number = static_cast<uint16_t>(*n);
        } else if (tp->is_string()) {
          // IntOrString: a numeric string is a number.
          auto n = tp->AsInt(/*allow_string=*/true);
          if (n && *n >= 0 && *n <= 65535) port.target_port.number = static_cast<uint16_t>(*n);
          else port.target_port.name = std::string(tp->str());
        } else {
          return JsonFieldError(file, Sub(pp, "targetPort"), "expected a number or a string");
        }
      }
      if (port.target_port.name.empty() && port.target_port.number == 0) {
        port.target_port.number = port.port;
      }
      svc->ports.push_back(std::move(port));
    }
  }
  return absl::OkStatus();
}

// spec.loadBalancerSourceRanges, or the legacy annotation when the field is absent (`p` the
// item's path, for the annotation's).
absl::Status ServiceSourceRanges(const JsonValue& spec, const Labels& annotations,
                                 absl::string_view file, const std::string& p,
                                 const std::string& sp, Service* svc) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ranges,
                          GetArray(spec, "loadBalancerSourceRanges", file, sp));
  std::vector<std::pair<std::string, std::string>> range_texts;
  if (ranges != nullptr) {
    for (size_t k = 0; k < ranges->size(); ++k) {
      std::string rp = JsonIndexPath(Sub(sp, "loadBalancerSourceRanges"), k);
      if (!(*ranges)[k].is_string()) return JsonFieldError(file, rp, "expected a string");
      range_texts.emplace_back(std::string((*ranges)[k].str()), rp);
    }
  } else if (const std::string* a = FindLabel(
                 annotations, "service.beta.kubernetes.io/load-balancer-source-ranges");
             a != nullptr) {
    // The legacy annotation, honoured when the field is absent.
    for (absl::string_view part : absl::StrSplit(*a, ',', absl::SkipWhitespace())) {
      range_texts.emplace_back(std::string(absl::StripAsciiWhitespace(part)),
                               absl::StrCat(p, ".metadata.annotations[\"service.beta.kubernetes.io/"
                                               "load-balancer-source-ranges\"]"));
    }
  }
  for (const auto& [t, rp] : range_texts) {
    if (t.find(':') != std::string::npos) continue;
    auto pfx = net::ParseIpv4Prefix(t, rp);
    if (!pfx.ok()) return JsonFieldError(file, rp, absl::StrCat("invalid CIDR '", t, "'"));
    svc->load_balancer_source_ranges.push_back(pfx->canonical());
  }
  return absl::OkStatus();
}

// spec.externalIPs (IPv6 entries are skipped).
absl::Status ServiceExternalIps(const JsonValue& spec, absl::string_view file,
                                const std::string& sp, Service* svc) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* eips, GetArray(spec, "externalIPs", file, sp));
  if (eips != nullptr) {
    for (size_t k = 0; k < eips->size(); ++k) {
      std::string ep = JsonIndexPath(Sub(sp, "externalIPs"), k);
      if (!(*eips)[k].is_string()) return JsonFieldError(file, ep, "expected a string");
      absl::string_view t = (*eips)[k].str();
      if (t.find(':') != absl::string_view::npos) continue;
      auto ip = net::ParseIpv4(t);
      if (!ip.ok()) return JsonFieldError(file, ep, absl::StrCat("invalid IPv4 address '", t, "'"));
      svc->external_ips.push_back(*ip);
    }
  }
  return absl::OkStatus();
}

// status.loadBalancer.ingress[].ip.
absl::Status ServiceLoadBalancerStatus(const JsonValue& status, absl::string_view file,
                                       const std::string& stp, Service* svc) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* lb, GetObject(status, "loadBalancer", file, stp));
  if (lb != nullptr) {
    std::string lp = Sub(stp, "loadBalancer");
    SARENA_ASSIGN_OR_RETURN(const JsonValue* ing, GetArray(*lb, "ingress", file, lp));
    if (ing != nullptr) {
      for (size_t k = 0; k < ing->size(); ++k) {
        std::string ip_path = JsonIndexPath(Sub(lp, "ingress"), k);
        if (!(*ing)[k].is_object()) return JsonFieldError(file, ip_path, "expected an object");
        SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4((*ing)[k], "ip", file, ip_path));
        if (ip) svc->load_balancer_ips.push_back(*ip);
      }
    }
  }
  return absl::OkStatus();
}

// A Service's spec (`p` the item's path, `sp` the spec's).
absl::Status ParseServiceSpec(const JsonValue& spec, const Labels& annotations,
                              absl::string_view file, const std::string& p, const std::string& sp,
                              Service* svc) {
  SARENA_ASSIGN_OR_RETURN(std::string type, GetStr(spec, "type", file, sp));
  if (type.empty() || type == "ClusterIP") svc->type = ServiceType::kClusterIP;
  else if (type == "NodePort") svc->type = ServiceType::kNodePort;
  else if (type == "LoadBalancer") svc->type = ServiceType::kLoadBalancer;
  else if (type == "ExternalName") svc->type = ServiceType::kExternalName;
  else return JsonFieldError(file, Sub(sp, "type"), absl::StrCat("unknown Service type '", type, "'"));
  SARENA_RETURN_IF_ERROR(ServiceClusterIps(spec, file, sp, svc));
  SARENA_RETURN_IF_ERROR(ServicePorts(spec, file, sp, svc));
  SARENA_ASSIGN_OR_RETURN(svc->selector, GetLabels(spec, "selector", file, sp));
  SARENA_ASSIGN_OR_RETURN(std::string etp, GetStr(spec, "externalTrafficPolicy", file, sp));
  svc->external_traffic_policy_local = etp == "Local";
  SARENA_ASSIGN_OR_RETURN(std::string itpol, GetStr(spec, "internalTrafficPolicy", file, sp));
  svc->internal_traffic_policy_local = itpol == "Local";
  SARENA_RETURN_IF_ERROR(ServiceSourceRanges(spec, annotations, file, p, sp, svc));
  SARENA_RETURN_IF_ERROR(ServiceExternalIps(spec, file, sp, svc));
  SARENA_ASSIGN_OR_RETURN(svc->health_check_node_port, GetPort(spec, "healthCheckNodePort", file, sp));
  SARENA_ASSIGN_OR_RETURN(std::string aff, GetStr(spec, "sessionAffinity", file, sp));
  svc->session_affinity_client_ip = aff == "ClientIP";
  SARENA_ASSIGN_OR_RETURN(svc->external_name, GetStr(spec, "externalName", file, sp));
  return absl::OkStatus();
}

// One item of a Service list (`p` its JSON path, for errors).
absl::Status ParseServiceItem(const JsonValue& it, absl::string_view file, const std::string& p,
                              Service* svc) {
  SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
  svc->name = std::move(m.name);
  svc->namespace_ = std::move(m.namespace_);
  Labels annotations;
  if (const JsonValue* meta = it.Find("metadata")) {
    SARENA_ASSIGN_OR_RETURN(annotations, GetLabels(*meta, "annotations", file, Sub(p, "metadata")));
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* spec, GetObject(it, "spec", file, p));
  if (spec == nullptr) return JsonFieldError(file, Sub(p, "spec"), "missing");
  std::string sp = Sub(p, "spec");
  SARENA_RETURN_IF_ERROR(ParseServiceSpec(*spec, annotations, file, p, sp, svc));
  SARENA_ASSIGN_OR_RETURN(const JsonValue* status, GetObject(it, "status", file, p));
  if (status != nullptr) {
    SARENA_RETURN_IF_ERROR(ServiceLoadBalancerStatus(*status, file, Sub(p, "status"), svc));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Cluster::ParseServices(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  services_.reserve(services_.size() + items.size());
  for (const auto& [itp, p] : items) {
    Service svc;
    SARENA_RETURN_IF_ERROR(ParseServiceItem(*itp, file, p, &svc));
    services_.push_back(std::move(svc));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<std::vector<EndpointGroup::Port>> GroupPorts(const JsonValue& obj,
                                                            absl::string_view file,
                                                            absl::string_view path) {
  std::vector<EndpointGroup::Port> out;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ports, GetArray(obj, "ports", file, path));
  if (ports == nullptr) return out;
  for (size_t k = 0; k < ports->size(); ++k) {
    const JsonValue& pt = (*ports)[k];
    std::string pp = JsonIndexPath(Sub(path, "ports"), k);
    if (!pt.is_object()) return JsonFieldError(file, pp, "expected an object");
    EndpointGroup::Port port;
    SARENA_ASSIGN_OR_RETURN(port.name, GetStr(pt, "name", file, pp));
    SARENA_ASSIGN_OR_RETURN(port.port, GetPort(pt, "port", file, pp));
    SARENA_ASSIGN_OR_RETURN(port.proto, GetProtocol(pt, file, pp));
    out.push_back(std::move(port));
  }
  return out;
}

absl::Status TargetRef(const JsonValue& obj, absl::string_view file, absl::string_view path,
                       Backend* b) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ref, GetObject(obj, "targetRef", file, path));
  if (ref == nullptr) return absl::OkStatus();
  std::string rp = Sub(path, "targetRef");
  SARENA_ASSIGN_OR_RETURN(std::string kind, GetStr(*ref, "kind", file, rp));
  if (!kind.empty() && kind != "Pod") return absl::OkStatus();
  SARENA_ASSIGN_OR_RETURN(b->pod_name, GetStr(*ref, "name", file, rp));
  SARENA_ASSIGN_OR_RETURN(b->pod_namespace, GetStr(*ref, "namespace", file, rp));
  return absl::OkStatus();
}

}  // namespace

absl::Status Cluster::ParseEndpointSlices(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  endpoints_.clear();
  files_.endpoint_slices = true;
  for (const auto& [itp, p] : items) {
    const JsonValue& it = *itp;
    SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
    Labels labels;
    if (const JsonValue* meta = it.Find("metadata")) {
      SARENA_ASSIGN_OR_RETURN(labels, GetLabels(*meta, "labels", file, Sub(p, "metadata")));
    }
    const std::string* svc = FindLabel(labels, "kubernetes.io/service-name");
    if (svc == nullptr || svc->empty()) continue;  // not owned by a Service
    SARENA_ASSIGN_OR_RETURN(std::string at, GetStr(it, "addressType", file, p));
    if (!at.empty() && at != "IPv4") continue;
    EndpointGroup g;
    SARENA_ASSIGN_OR_RETURN(g.ports, GroupPorts(it, file, p));
    SARENA_ASSIGN_OR_RETURN(const JsonValue* eps, GetArray(it, "endpoints", file, p));
    if (eps != nullptr) {
      for (size_t k = 0; k < eps->size(); ++k) {
        const JsonValue& e = (*eps)[k];
        std::string ep = JsonIndexPath(Sub(p, "endpoints"), k);
        if (!e.is_object()) return JsonFieldError(file, ep, "expected an object");
        Backend base;
        SARENA_ASSIGN_OR_RETURN(base.node_name, GetStr(e, "nodeName", file, ep));
        SARENA_RETURN_IF_ERROR(TargetRef(e, file, ep, &base));
        SARENA_ASSIGN_OR_RETURN(const JsonValue* cond, GetObject(e, "conditions", file, ep));
        if (cond != nullptr) {
          std::string cp = Sub(ep, "conditions");
          SARENA_ASSIGN_OR_RETURN(auto ready, JsonGetBool(*cond, "ready", file, cp));
          SARENA_ASSIGN_OR_RETURN(auto serving, JsonGetBool(*cond, "serving", file, cp));
          SARENA_ASSIGN_OR_RETURN(auto term, JsonGetBool(*cond, "terminating", file, cp));
          base.ready = ready.value_or(true);
          base.serving = serving.value_or(base.ready);
          base.terminating = term.value_or(false);
        }
        SARENA_ASSIGN_OR_RETURN(const JsonValue* addrs, GetArray(e, "addresses", file, ep));
        if (addrs == nullptr) continue;
        for (size_t a = 0; a < addrs->size(); ++a) {
          std::string ap = JsonIndexPath(Sub(ep, "addresses"), a);
          if (!(*addrs)[a].is_string()) return JsonFieldError(file, ap, "expected a string");
          absl::string_view t = (*addrs)[a].str();
          if (t.find(':') != absl::string_view::npos) continue;
          auto ip = net::ParseIpv4(t);
          if (!ip.ok()) return JsonFieldError(file, ap, absl::StrCat("invalid IPv4 address '", t, "'"));
          Backend b = base;
          b.ip = *ip;
          g.addresses.push_back(std::move(b));
        }
      }
    }
    endpoints_[absl::StrCat(m.namespace_, "/", *svc)].push_back(std::move(g));
  }
  return absl::OkStatus();
}

absl::Status Cluster::ParseEndpoints(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  endpoints_.clear();
  files_.endpoint_slices = false;
  for (const auto& [itp, p] : items) {
    const JsonValue& it = *itp;
    SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
    std::vector<EndpointGroup>& groups = endpoints_[absl::StrCat(m.namespace_, "/", m.name)];
    SARENA_ASSIGN_OR_RETURN(const JsonValue* subsets, GetArray(it, "subsets", file, p));
    if (subsets == nullptr) continue;
    for (size_t s = 0; s < subsets->size(); ++s) {
      const JsonValue& ss = (*subsets)[s];
      std::string spath = JsonIndexPath(Sub(p, "subsets"), s);
      if (!ss.is_object()) return JsonFieldError(file, spath, "expected an object");
      EndpointGroup g;
      SARENA_ASSIGN_OR_RETURN(g.ports, GroupPorts(ss, file, spath));
      for (const char* key : {"addresses", "notReadyAddresses"}) {
        bool ready = absl::string_view(key) == "addresses";
        SARENA_ASSIGN_OR_RETURN(const JsonValue* addrs, GetArray(ss, key, file, spath));
        if (addrs == nullptr) continue;
        for (size_t a = 0; a < addrs->size(); ++a) {
          const JsonValue& ad = (*addrs)[a];
          std::string ap = JsonIndexPath(Sub(spath, key), a);
          if (!ad.is_object()) return JsonFieldError(file, ap, "expected an object");
          SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(ad, "ip", file, ap));
          if (!ip) continue;
          Backend b;
          b.ip = *ip;
          b.ready = ready;
          b.serving = ready;
          SARENA_ASSIGN_OR_RETURN(b.node_name, GetStr(ad, "nodeName", file, ap));
          SARENA_RETURN_IF_ERROR(TargetRef(ad, file, ap, &b));
          g.addresses.push_back(std::move(b));
        }
      }
      groups.push_back(std::move(g));
    }
  }
  return absl::OkStatus();
}

absl::Status Cluster::ParseIpPools(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(ip_pools_, sarena::model::ParseIpPools(json, file));
  has_ip_pools_ = true;
  return absl::OkStatus();
}

}  // namespace sarena::model
