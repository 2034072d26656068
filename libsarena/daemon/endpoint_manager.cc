#include "libsarena/daemon/endpoint_manager.h"


#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/cli.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/cni/error.h"
#include "libsarena/rpc/client.h"
#include "libsarena/datapath/endpoint.h"
#include "libsarena/datapath/naming.h"

namespace sarena::daemon {
namespace {

using cni::ErrorCode;

datapath::EndpointSpec SpecOf(const v1::Endpoint& e) {
  datapath::EndpointSpec s;
  s.container_id = e.ref().container_id();
  s.ifname = e.ref().ifname();
  s.netns = e.netns();
  s.ip = net::ParseIpv4(e.ip()).value_or(net::Ipv4());
  s.gateway = net::ParseIpv4(e.gateway()).value_or(net::Ipv4());
  s.mtu = e.mtu();
  s.endpoint_id = e.endpoint_id();
  s.host_ifname = e.host_ifname();
  return s;
}

absl::Status RequireRef(const v1::EndpointRef& ref) {
  return cni::WithCniCode(ValidateEndpointKey(EndpointKey::FromProto(ref)),
                          ErrorCode::kInvalidEnvironment);
}

}  // namespace

absl::StatusOr<int> CrossCheckState(Ipam& ipam, const EndpointStore& store) {
  std::vector<std::string> problems;
  std::map<uint32_t, EndpointKey> record_ips;
  std::map<std::string, EndpointKey> record_ifnames;
  std::map<uint32_t, EndpointKey> record_ids;
  std::vector<std::pair<EndpointKey, net::Ipv4>> to_claim;
  const std::string ipam_dir = ipam.dir();
  for (const v1::Endpoint& rec : store.List()) {
    const EndpointKey key = EndpointKey::FromProto(rec.ref());
    const std::string file = store.PathOf(key);
    absl::StatusOr<net::Ipv4> ip = net::ParseIpv4(rec.ip(), "ip");
    if (!ip.ok()) {
      problems.push_back(absl::StrCat("endpoint record '", file, "': ", ip.status().message()));
      continue;
    }
    // One owner per address, host veth and endpoint_id: a second would lose its pod to one DEL.
    auto unique = [&](auto& owners, const auto& value, absl::string_view what) {
      auto [it, inserted] = owners.emplace(value, key);
      if (!inserted) {
        problems.push_back(absl::StrCat("endpoint records '", file, "' and '",
                                        store.PathOf(it->second), "' both ", what));
      }
      return inserted;
    };
    if (!unique(record_ips, ip->to_uint(), absl::StrCat("hold ", rec.ip())) ||
        !unique(record_ifnames, rec.host_ifname(), absl::StrCat("own veth ", rec.host_ifname())) ||
        !unique(record_ids, rec.endpoint_id(), absl::StrCat("use endpoint_id ", rec.endpoint_id()))) {
      continue;
    }
    std::optional<net::Ipv4> held = ipam.Lookup(key);
    if (held && *held != *ip) {
      problems.push_back(absl::StrCat("endpoint record '", file, "' says ", rec.ip(),
                                      " but allocation '", ipam_dir, "/", held->to_string(),
                                      "' gives ", key.ToString(), " ", held->to_string()));
      continue;
    }
    if (!held) to_claim.emplace_back(key, *ip);
  }
  // Check every claim against the allocations first, so a refused start changes nothing.
  std::map<uint32_t, EndpointKey> alloc_by_ip;
  for (const IpamAllocation& a : ipam.List()) alloc_by_ip.emplace(a.ip.to_uint(), a.key);
  for (const auto& [key, ip] : to_claim) {
    if (auto it = alloc_by_ip.find(ip.to_uint()); it != alloc_by_ip.end()) {
      problems.push_back(absl::StrCat("endpoint record '", store.PathOf(key), "' holds ",
                                      ip.to_string(), " but allocation '", ipam_dir, "/",
                                      ip.to_string(), "' gives it to ", it->second.ToString()));
    } else if (!ipam.IsAllocatable(ip)) {
      problems.push_back(absl::StrCat("endpoint record '", store.PathOf(key), "' holds ",
                                      ip.to_string(), ", not allocatable in pod CIDR ",
                                      ipam.pod_cidr().to_string()));
    }
  }
  if (!problems.empty()) {
    return absl::DataLossError(absl::StrCat(
        "state in '", ipam_dir, "' and the endpoint records disagree (left untouched; fix or ",
        "remove the files by hand): ", absl::StrJoin(problems, "; ")));
  }
  // The record is the allocation's durable copy (ADD writes no allocation file): adopt it.
  for (const auto& [key, ip] : to_claim) SARENA_RETURN_IF_ERROR(ipam.Adopt(key, ip));
  for (const IpamAllocation& a : ipam.List()) {
    if (!store.Get(a.key)) {
      SARENA_LOG(Warning, "IPAM: ", a.ip.to_string(), " is allocated to ", a.key.ToString(),
                 " without an endpoint record (an interrupted ADD of an older sarenad); kept ",
                 "until its DEL or GC");
    }
  }
  return static_cast<int>(to_claim.size());
}

EndpointManager::EndpointManager(DaemonOptions options,
                                 std::unique_ptr<datapath::EndpointDatapath> node,
                                 std::unique_ptr<Ipam> ipam, std::unique_ptr<EndpointStore> store)
    : options_(std::move(options)),
      node_(std::move(node)),
      ipam_(std::move(ipam)),
      store_(std::move(store)) {}

absl::StatusOr<std::unique_ptr<EndpointManager>> EndpointManager::Create(
    const DaemonOptions& o) {
  return CreateWith(o, [&o]() -> absl::StatusOr<std::unique_ptr<datapath::EndpointDatapath>> {
    SARENA_ASSIGN_OR_RETURN(std::unique_ptr<datapath::Node> node,
                            datapath::Node::Create({.node_ip = o.node_ip,
                                                    .pod_cidr = o.pod_cidr,
                                                    .mtu = o.mtu,
                                                    .ip_forward = o.ip_forward,
                                                    .datapath = {.bpffs = o.bpffs,
                                                                 .attach_mode = o.attach_mode,
                                                                 .redirect_peer =
                                                                     o.redirect_peer},
                                                    .tcx_after_reply = o.tcx_after_reply}));
    return std::unique_ptr<datapath::EndpointDatapath>(std::move(node));
  });
}

absl::StatusOr<std::unique_ptr<EndpointManager>> EndpointManager::CreateWith(
    const DaemonOptions& o, const DatapathFactory& make_datapath) {
  if (o.pod_cidr.canonical() != o.pod_cidr) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --pod-cidr '", o.pod_cidr.to_string(),
                                                   "': host bits set (did you mean ",
                                                   o.pod_cidr.canonical().to_string(), "?)"));
  }
  if (o.pod_cidr.prefix_length() > 30) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid --pod-cidr '", o.pod_cidr.to_string(), "': at most /30 (room for pods)"));
  }
  if (o.mtu < 68 || o.mtu > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --mtu '", o.mtu, "': 68..65535"));
  }
  if (o.node_ip == o.pod_cidr.network() || o.node_ip == o.pod_cidr.broadcast()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --node-ip '", o.node_ip.to_string(),
                                                   "': the network or broadcast address of ",
                                                   o.pod_cidr.to_string()));
  }
  // State first: a refused start (corrupt or inconsistent state, e.g. a changed --pod-cidr) must
  // not touch the node's devices, routes or pinned maps.
  SARENA_ASSIGN_OR_RETURN(
      std::unique_ptr<Ipam> ipam,
      Ipam::Open({.state_dir = o.state_dir, .pod_cidr = o.pod_cidr, .gateway = o.node_ip}));
  SARENA_ASSIGN_OR_RETURN(std::unique_ptr<EndpointStore> store,
                          EndpointStore::Open({.state_dir = o.state_dir}));
  SARENA_RETURN_IF_ERROR(CrossCheckState(*ipam, *store).status());
  SARENA_ASSIGN_OR_RETURN(std::unique_ptr<datapath::EndpointDatapath> node, make_datapath());
  std::unique_ptr<EndpointManager> m(
      new EndpointManager(o, std::move(node), std::move(ipam), std::move(store)));
  SARENA_ASSIGN_OR_RETURN(int restored, m->Reconcile());
  SARENA_LOG(Info, "ready: ", restored, " endpoint(s) restored, ", m->ipam_->FreeCount(),
             " of ", m->ipam_->capacity(), " pod IPs free");
  return m;
}

absl::StatusOr<int> EndpointManager::Reconcile() {
  int restored = 0;
  std::set<std::string> live_ifnames;
  std::set<net::Ipv4> live_ips;
  for (const v1::Endpoint& rec : store_->List()) {
    // Fields were validated when the store loaded (ValidateEndpointRecord).
    datapath::RecordedEndpoint e{.host_ifname = rec.host_ifname(),
                                 .ip = net::ParseIpv4(rec.ip()).value_or(net::Ipv4()),
                                 .pod_mac = net::ParseMac(rec.pod_mac()).value_or(net::Mac{}),
                                 .endpoint_id = rec.endpoint_id()};
    absl::Status st = node_->Restore(e);
    if (absl::IsNotFound(st)) {
      SARENA_LOG(Warning, "endpoint ", rec.ref().container_id(), "/", rec.ref().ifname(), ": ",
                 st.message(), " (pod netns deleted without DEL?); its IP ", rec.ip(),
                 " stays allocated until DEL or GC");
      continue;
    }
    SARENA_RETURN_IF_ERROR(st);
    live_ifnames.insert(e.host_ifname);
    live_ips.insert(e.ip);
    ++restored;
  }
  SARENA_RETURN_IF_ERROR(node_->PruneOrphans(live_ips, live_ifnames).status());
  return restored;
}

absl::StatusOr<uint32_t> EndpointManager::FreeEndpointId() const {
  std::set<uint32_t> used;
  for (const v1::Endpoint& e : store_->List()) used.insert(e.endpoint_id());
  for (uint32_t id = 1; id < SARENA_MAX_ENDPOINTS; ++id) {
    if (!used.count(id)) return id;
  }
  return cni::WithCniCode(absl::ResourceExhaustedError("no free endpoint id"),
                          ErrorCode::kIpamExhausted);
}

absl::StatusOr<v1::EndpointAddResponse> EndpointManager::Add(const v1::EndpointAddRequest& req) {
  SARENA_RETURN_IF_ERROR(RequireRef(req.ref()));
  const EndpointKey key = EndpointKey::FromProto(req.ref());
  if (req.netns().empty()) {
    return cni::MakeCniError(ErrorCode::kInvalidEnvironment,
                             absl::StatusCode::kInvalidArgument,
                             "invalid CNI_NETNS '': required for ADD");
  }
  const uint32_t mtu = req.mtu() ? req.mtu() : options_.mtu;
  if (mtu < 68 || mtu > 65535) {
    return cni::MakeCniError(ErrorCode::kInvalidNetworkConfig, absl::StatusCode::kInvalidArgument,
                             absl::StrCat("invalid mtu '", mtu, "': must be 68..65535"));
  }
  if (options_.max_mtu != 0 && mtu > options_.max_mtu) {
    return cni::MakeCniError(
        ErrorCode::kInvalidNetworkConfig, absl::StatusCode::kInvalidArgument,
        absl::StrCat("invalid mtu '", mtu, "': this node's pods fit at most ", options_.max_mtu,
                     " (the uplink's MTU minus the VXLAN overhead in tunnel mode)"));
  }
  if (std::optional<v1::Endpoint> existing = store_->Get(key)) {
    // A repeated ADD of a healthy attachment returns it (the runtime retried after a timeout).
    absl::Status check = node_->Check(SpecOf(*existing));
    if (check.ok() && existing->netns() == req.netns()) {
      v1::EndpointAddResponse resp;
      *resp.mutable_endpoint() = *existing;
      return resp;
    }
    return cni::MakeCniError(
        ErrorCode::kInterfaceExists, absl::StatusCode::kAlreadyExists,
        absl::StrCat("endpoint '", key.ToString(), "' already exists (netns '", existing->netns(),
                     "'); DEL it first"));
  }

  SARENA_ASSIGN_OR_RETURN(uint32_t endpoint_id, FreeEndpointId());
  // In memory only: the endpoint record written below carries the address and is the one
  // durable write of this ADD; until it is on disk nothing has been replied.
  absl::StatusOr<net::Ipv4> ip = ipam_->Reserve(key);
  if (!ip.ok()) {
    return absl::IsResourceExhausted(ip.status())
               ? cni::WithCniCode(ip.status(), ErrorCode::kIpamExhausted)
               : ip.status();
  }
  auto release = [&] {
    absl::StatusOr<std::optional<net::Ipv4>> r = ipam_->Release(key);
    if (!r.ok()) SARENA_LOG(Error, "rollback: release ", ip->to_string(), ": ", r.status().message());
  };

  // The endpoint record (which carries the address) is this ADD's one durable write. The
  // datapath runs it as its commit hook, on this thread while the program attach waits for its
  // grace period on another and before the host side is up; it is on disk before the reply.
  v1::Endpoint rec;
  bool recorded = false, record_failed = false;
  auto commit = [&](const datapath::EndpointState& state) -> absl::Status {
    *rec.mutable_ref() = req.ref();
    rec.set_netns(req.netns());
    rec.set_ip(ip->to_string());
    rec.set_prefix_len(32);
    rec.set_gateway(options_.node_ip.to_string());
    rec.set_pod_mac(net::FormatMac(state.pod_mac));
    rec.set_host_ifname(state.host_ifname);
    rec.set_host_ifindex(static_cast<uint32_t>(state.host_ifindex));
    rec.set_host_mac(net::FormatMac(state.host_mac));
    rec.set_endpoint_id(endpoint_id);
    rec.set_mtu(mtu);
    rec.set_pod_namespace(req.pod_namespace());
    rec.set_pod_name(req.pod_name());
    rec.set_network_name(req.network_name());
    absl::Status put = store_->Put(rec);
    recorded = put.ok();
    record_failed = !put.ok();
    return put;
  };
  datapath::EndpointSpec spec{.container_id = key.container_id,
                              .ifname = key.ifname,
                              .netns = req.netns(),
                              .ip = *ip,
                              .gateway = options_.node_ip,
                              .mtu = mtu,
                              .endpoint_id = endpoint_id,
                              .commit = commit};
  absl::StatusOr<datapath::EndpointState> state = node_->Create(spec);
  if (!state.ok()) {
    if (recorded) {  // the datapath failed after the record: unwrite it before the release
      absl::StatusOr<bool> gone = store_->Delete(key);
      if (!gone.ok()) {
        SARENA_LOG(Error, "rollback: remove endpoint record of ", key.ToString(), ": ",
                   gone.status().message());
        // The record still holds the address on disk: keep it reserved too.
        return cni::WithCniCode(state.status(), ErrorCode::kDatapathFailure);
      }
    }
    release();
    absl::Status st = state.status();
    if (record_failed) return cni::WithCniCode(st, ErrorCode::kInternal);
    if (absl::IsAlreadyExists(st)) return cni::WithCniCode(st, ErrorCode::kInterfaceExists);
    if (absl::IsNotFound(st)) return cni::WithCniCode(st, ErrorCode::kUnknownContainer);
    return cni::WithCniCode(st, ErrorCode::kDatapathFailure);
  }
  if (!recorded) {  // a datapath that does not run the hook: commit after it
    if (absl::Status st = commit(*state); !st.ok()) {
      (void)node_->Delete(state->host_ifname, *ip, std::nullopt, req.netns());
      release();
      return cni::WithCniCode(st, ErrorCode::kInternal);
    }
  }
  SARENA_LOG(Info, "ADD ", key.ToString(), " -> ", rec.ip(), " on ", rec.host_ifname(),
             req.pod_name().empty() ? "" : absl::StrCat(" (pod ", req.pod_namespace(), "/",
                                                        req.pod_name(), ")"));
  v1::EndpointAddResponse resp;
  *resp.mutable_endpoint() = std::move(rec);
  return resp;
}

absl::Status EndpointManager::RemoveEndpoint(const v1::Endpoint& rec) {
  const EndpointKey key = EndpointKey::FromProto(rec.ref());
  std::optional<net::Ipv4> ip = ipam_->Lookup(key);
  if (!ip && !rec.ip().empty()) {
    if (absl::StatusOr<net::Ipv4> p = net::ParseIpv4(rec.ip()); p.ok()) ip = *p;
  }
  // Without a recorded veth name (no record: never added, or a crash before the record) the
  // name is derived from the key, and the veth's owner mark must not name someone else.
  const bool by_name = rec.host_ifname().empty();
  const std::string host_ifname =
      by_name ? datapath::HostVethName(key.container_id, key.ifname) : rec.host_ifname();
  std::optional<std::string> owner;
  if (by_name) owner = datapath::VethOwnerAlias(key.container_id, key.ifname);
  SARENA_RETURN_IF_ERROR(
      cni::WithCniCode(node_->Delete(host_ifname, ip, owner, rec.netns()),
                       ErrorCode::kDatapathFailure));
  SARENA_RETURN_IF_ERROR(store_->Delete(key).status());
  SARENA_RETURN_IF_ERROR(ipam_->Release(key).status());
  return absl::OkStatus();
}

absl::StatusOr<v1::EndpointDelResponse> EndpointManager::Del(const v1::EndpointDelRequest& req) {
  SARENA_RETURN_IF_ERROR(RequireRef(req.ref()));
  const EndpointKey key = EndpointKey::FromProto(req.ref());
  v1::EndpointDelResponse resp;
  std::optional<v1::Endpoint> rec = store_->Get(key);
  // Without a record (never added, already deleted, or a crash before the record was written)
  // still clean up what a partial ADD could have left: the veth by its deterministic name and
  // the IP held by this key.
  v1::Endpoint target;
  if (rec) target = *rec;
  *target.mutable_ref() = req.ref();
  // The runtime's CNI_NETNS names the pod side now; the recorded path is the fallback.
  if (!req.netns().empty()) target.set_netns(req.netns());
  SARENA_RETURN_IF_ERROR(RemoveEndpoint(target));
  resp.set_existed(rec.has_value());
  SARENA_LOG(Info, "DEL ", key.ToString(), rec ? absl::StrCat(" (released ", rec->ip(), ")")
                                               : std::string(" (nothing to delete)"));
  return resp;
}

absl::Status EndpointManager::Check(const v1::EndpointCheckRequest& req) {
  SARENA_RETURN_IF_ERROR(RequireRef(req.ref()));
  const EndpointKey key = EndpointKey::FromProto(req.ref());
  std::optional<v1::Endpoint> rec = store_->Get(key);
  if (!rec) {
    return cni::MakeCniError(ErrorCode::kUnknownContainer, absl::StatusCode::kNotFound,
                             absl::StrCat("check endpoint '", key.ToString(),
                                          "': no such endpoint"));
  }
  datapath::EndpointSpec spec = SpecOf(*rec);
  if (!req.netns().empty()) spec.netns = req.netns();
  return cni::WithCniCode(node_->Check(spec), ErrorCode::kCheckFailed);
}

absl::StatusOr<v1::EndpointListResponse> EndpointManager::List() {
  v1::EndpointListResponse resp;
  for (v1::Endpoint& e : store_->List()) {
    absl::StatusOr<datapath::EndpointCounters> c = node_->Counters(e.endpoint_id());
    if (c.ok()) {
      v1::Counters* out = e.mutable_counters();
      out->set_rx_packets(c->rx_packets);
      out->set_rx_bytes(c->rx_bytes);
      out->set_tx_packets(c->tx_packets);
      out->set_tx_bytes(c->tx_bytes);
    }
    *resp.add_endpoints() = std::move(e);
  }
  return resp;
}

v1::StatusResponse EndpointManager::Status() {
  v1::StatusResponse s;
  s.set_ready(true);
  s.set_pod_cidr(options_.pod_cidr.to_string());
  s.set_node_ip(options_.node_ip.to_string());
  s.set_endpoints(static_cast<uint32_t>(store_->size()));
  s.set_ips_free(ipam_->FreeCount());
  s.set_ips_used(ipam_->InUse());
  s.set_attach_mode(std::string(bpf::ToString(node_->attach_mode())));
  s.set_version(ProjectVersion());
  return s;
}

absl::StatusOr<v1::GcResponse> EndpointManager::Gc(const v1::GcRequest& req) {
  if (req.network_name().empty()) {
    return cni::MakeCniError(ErrorCode::kInvalidNetworkConfig, absl::StatusCode::kInvalidArgument,
                             "GC without a network name: GC is per network (CNI spec 1.1, GC)");
  }
  std::set<EndpointKey> valid;
  for (const v1::EndpointRef& r : req.valid()) valid.insert(EndpointKey::FromProto(r));
  v1::GcResponse resp;
  absl::Status first;
  for (const v1::Endpoint& rec : store_->List()) {
    const EndpointKey key = EndpointKey::FromProto(rec.ref());
    if (valid.count(key)) continue;
    // Only this network's attachments: another network's valid list is not in this request.
    // A record without a network name (written before GC was per network) belongs to an
    // unknown network: kept, its runtime's DEL removes it.
    if (rec.network_name() != req.network_name()) continue;
    absl::Status st = RemoveEndpoint(rec);
    if (st.ok()) {
      *resp.add_removed() = rec.ref();
      SARENA_LOG(Info, "GC removed ", key.ToString(), " (", rec.ip(), ")");
    } else if (first.ok()) {
      first = st;
    }
  }
  // An allocation without a record (a crash between IPAM and record in ADD, or a record removed
  // by hand) cannot be attributed to a network: GC of this network leaves it, and its veth, to
  // that attachment's DEL (the runtime retries DEL of a failed ADD).
  for (const IpamAllocation& a : ipam_->List()) {
    if (!valid.count(a.key) && !store_->Get(a.key)) {
      SARENA_LOG(Warning, "GC ", req.network_name(), ": ", a.ip.to_string(), " is allocated to ",
                 a.key.ToString(), " without an endpoint record (network unknown); left for its DEL");
    }
  }
  if (!first.ok()) return first;
  return resp;
}

v1::Response EndpointManager::Handle(const v1::Request& request, const PeerCred& peer) {
  v1::Response resp;
  absl::Status st;
  switch (request.kind_case()) {
    case v1::Request::kEndpointAdd: {
      auto r = Add(request.endpoint_add());
      if (r.ok()) *resp.mutable_endpoint_add() = *std::move(r); else st = r.status();
      break;
    }
    case v1::Request::kEndpointDel: {
      auto r = Del(request.endpoint_del());
      if (r.ok()) *resp.mutable_endpoint_del() = *std::move(r); else st = r.status();
      break;
    }
    case v1::Request::kEndpointCheck:
      st = Check(request.endpoint_check());
      if (st.ok()) resp.mutable_endpoint_check();
      break;
    case v1::Request::kEndpointList: {
      auto r = List();
      if (r.ok()) *resp.mutable_endpoint_list() = *std::move(r); else st = r.status();
      break;
    }
    case v1::Request::kStatus:
      *resp.mutable_status() = Status();
      break;
    case v1::Request::kGc: {
      auto r = Gc(request.gc());
      if (r.ok()) *resp.mutable_gc() = *std::move(r); else st = r.status();
      break;
    }
    case v1::Request::KIND_NOT_SET:
      st = cni::MakeCniError(ErrorCode::kProtocolError, absl::StatusCode::kInvalidArgument,
                             "request has no kind");
      break;
  }
  if (!st.ok()) {
    SARENA_LOG(Warning, "request from pid ", peer.pid, " failed: ", st.message());
    v1::Response err;
    *err.mutable_error() = rpc::ProtoErrorFromStatus(st);
    return err;
  }
  return resp;
}

}  // namespace sarena::daemon
