#include "libsarena/daemon/cluster_node.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/cni/error.h"
#include "libsarena/datapath/node.h"
#include "libsarena/netlink/socket.h"
#include "libsarena/rpc/client.h"

namespace sarena::daemon {

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Create(const ClusterOptions& o) {
  if (o.node_name.empty()) return absl::InvalidArgumentError("--node-name is empty");
  if (o.pod_cidr && (!net::Contains(o.cluster_cidr, o.pod_cidr->network()) ||
                     o.pod_cidr->prefix_length() < o.cluster_cidr.prefix_length())) {
    return absl::InvalidArgumentError(absl::StrCat("--pod-cidr '", o.pod_cidr->to_string(),
                                                   "' is outside --cluster-cidr '",
                                                   o.cluster_cidr.to_string(), "'"));
  }
  std::unique_ptr<ClusterNode> c(new ClusterNode(o));
  SARENA_ASSIGN_OR_RETURN(nl::Socket sock, nl::Socket::Open());
  SARENA_ASSIGN_OR_RETURN(c->uplink_, datapath::FindUplink(sock, o.uplink));
  const uint32_t max_mtu = datapath::MaxPodMtu(o.mode, c->uplink_.link.mtu);
  if (o.mtu && *o.mtu > max_mtu) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mtu ", *o.mtu, " does not fit --uplink '", o.uplink, "' (MTU ",
                     c->uplink_.link.mtu, ", ", datapath::ToString(o.mode),
                     " mode: at most ", max_mtu, ")"));
  }
  cluster::AgentOptions ao;
  ao.endpoints = o.etcd_endpoints;
  ao.node_name = o.node_name;
  ao.cluster_cidr = o.cluster_cidr;
  ao.node_mask_len = o.node_mask_len;
  ao.pod_cidr = o.pod_cidr;
  ao.underlay = c->uplink_.address.address();
  ao.tunnel_port = o.tunnel_port;
  ao.mtu = c->uplink_.link.mtu;
  ao.vni = o.vni;
  ao.routing_mode = std::string(datapath::ToString(o.mode));
  ao.peer_grace = o.peer_grace;
  ao.lease_ttl = o.lease_ttl;
  ClusterNode* self = c.get();
  SARENA_ASSIGN_OR_RETURN(c->agent_,
                          cluster::Agent::Create(ao, [self](const cluster::PeerTable& t) {
                            return self->Apply(t);
                          }));
  return c;
}

absl::Status ClusterNode::Register(absl::Duration timeout) {
  SARENA_ASSIGN_OR_RETURN(cluster::Registration reg, agent_->Register(timeout));
  std::lock_guard<std::mutex> lock(mu_);
  registration_ = reg;
  SARENA_LOG(Info, "registered as node '", options_.node_name, "' (id ", reg.node_id,
             "), pod CIDR ", reg.pod_cidr.to_string(), ", underlay ",
             uplink_.address.to_string());
  return absl::OkStatus();
}

net::Ipv4Prefix ClusterNode::pod_cidr() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registration_ ? registration_->pod_cidr : net::Ipv4Prefix();
}

net::Ipv4 ClusterNode::node_ip() const {
  // The first address of the pod CIDR (Cilium's router IP); IPAM never hands it to a pod.
  return net::Ipv4(pod_cidr().network().to_uint() + 1);
}

uint32_t ClusterNode::pod_mtu() const {
  const uint32_t max_mtu = datapath::MaxPodMtu(options_.mode, uplink_.link.mtu);
  return options_.mtu ? std::min(*options_.mtu, max_mtu) : max_mtu;
}

absl::Status ClusterNode::StartDatapath(datapath::Datapath& dp) {
  cluster::Registration reg;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!registration_) return absl::FailedPreconditionError("StartDatapath before Register");
    reg = *registration_;
  }
  datapath::OverlayOptions oo;
  oo.mode = options_.mode;
  oo.uplink = options_.uplink;
  oo.vni = options_.vni;
  oo.tunnel_port = options_.tunnel_port;
  oo.cluster_cidr = options_.cluster_cidr;
  oo.node_ip = node_ip();
  oo.node_id = reg.node_id;
  oo.pod_cidr = reg.pod_cidr;
  SARENA_ASSIGN_OR_RETURN(overlay_, datapath::Overlay::Setup(oo, dp));
  std::lock_guard<std::mutex> lock(start_mu_);
  if (stopping_) return absl::CancelledError("sarenad is stopping: the cluster agent is not started");
  agent_->Start();
  return absl::OkStatus();
}

absl::Status ClusterNode::Apply(const cluster::PeerTable& table) {
  if (!overlay_) return absl::FailedPreconditionError("cluster datapath not set up yet");
  std::vector<datapath::PeerRoute> peers;
  peers.reserve(table.peers.size());
  for (const auto& [name, p] : table.peers) {
    if (name == options_.node_name) continue;
    peers.push_back({.name = p.name,
                     .node_id = p.node_id,
                     .underlay = p.underlay,
                     .pod_cidrs = p.pod_cidrs});
  }
  const absl::Time started = absl::Now();
  absl::StatusOr<datapath::SyncStats> st = overlay_->Sync(peers);
  std::lock_guard<std::mutex> lock(mu_);
  last_sync_ = absl::Now();
  last_sync_duration_ = last_sync_ - started;
  if (!st.ok()) {
    last_sync_error_ = std::string(st.status().message());
    return st.status();
  }
  last_sync_error_ = st->problems.empty() ? "" : st->problems.front();
  if (st->tunnels_written + st->tunnels_removed + st->routes_written + st->routes_removed +
          st->peers_written + st->peers_removed >
      0) {
    SARENA_LOG(Info, "peers applied (", peers.size(), " peers, revision ", table.revision,
               "): tunnels +", st->tunnels_written, "/-", st->tunnels_removed, ", peers +",
               st->peers_written, "/-", st->peers_removed, ", routes +", st->routes_written,
               "/-", st->routes_removed);
  }
  applied_ = true;
  return absl::OkStatus();
}

absl::Status ClusterNode::BringUp(DaemonOptions o) {
  SARENA_RETURN_IF_ERROR(Register(absl::InfiniteDuration()));
  o.pod_cidr = pod_cidr();
  o.node_ip = node_ip();
  o.mtu = pod_mtu();
  o.max_mtu = datapath::MaxPodMtu(options_.mode, uplink_.link.mtu);
  SARENA_LOG(Info, "node datapath: pod CIDR ", o.pod_cidr.to_string(), ", node IP ",
             o.node_ip.to_string(), ", pod MTU ", o.mtu);
  SARENA_ASSIGN_OR_RETURN(
      manager_,
      EndpointManager::CreateWith(
          o, [this, &o]() -> absl::StatusOr<std::unique_ptr<datapath::EndpointDatapath>> {
            SARENA_ASSIGN_OR_RETURN(
                std::unique_ptr<datapath::Node> node,
                datapath::Node::Create({.node_ip = o.node_ip,
                                        .pod_cidr = o.pod_cidr,
                                        .mtu = o.mtu,
                                        .ip_forward = o.ip_forward,
                                        .datapath = {.bpffs = o.bpffs,
                                                     .attach_mode = o.attach_mode,
                                                     .redirect_peer = o.redirect_peer},
                                        .tcx_after_reply = o.tcx_after_reply}));
            SARENA_RETURN_IF_ERROR(StartDatapath(node->datapath()));
            return std::unique_ptr<datapath::EndpointDatapath>(std::move(node));
          }));
  ready_manager_ = manager_.get();
  return absl::OkStatus();
}

rpc::v1::Response ClusterNode::Handle(const rpc::v1::Request& req, const PeerCred& peer) {
  EndpointManager* m = ready_manager_.load();
  rpc::v1::Response resp;
  if (m != nullptr) {
    resp = m->Handle(req, peer);
  } else if (req.has_status()) {
    rpc::v1::StatusResponse* s = resp.mutable_status();
    s->set_ready(false);
  } else {
    *resp.mutable_error() = rpc::ProtoErrorFromStatus(cni::MakeCniError(
        cni::ErrorCode::kTryAgainLater, absl::StatusCode::kUnavailable,
        absl::StrCat("sarenad is still joining the cluster (", options_.etcd_endpoints,
                     "); try again later")));
    return resp;
  }
  if (req.has_status() && resp.has_status()) FillStatus(resp.mutable_status());
  return resp;
}

void ClusterNode::Stop() {
  std::lock_guard<std::mutex> lock(start_mu_);
  stopping_ = true;
  if (agent_) agent_->Stop();
}

void ClusterNode::FillStatus(rpc::v1::StatusResponse* out) const {
  cluster::AgentStatus as = agent_->status();
  rpc::v1::ClusterStatus* c = out->mutable_cluster();
  c->set_node_name(options_.node_name);
  c->set_routing_mode(std::string(datapath::ToString(options_.mode)));
  c->set_uplink(options_.uplink);
  c->set_underlay(uplink_.address.to_string());
  c->set_vni(options_.vni);
  c->set_tunnel_port(options_.tunnel_port);
  c->set_cluster_cidr(options_.cluster_cidr.to_string());
  c->set_etcd_endpoints(options_.etcd_endpoints);
  c->set_etcd_connected(as.connected);
  c->set_registered(as.registered);
  c->set_synced(as.synced && applied_);
  c->set_revision(as.revision);
  c->set_last_contact_unix(absl::ToUnixSeconds(as.last_contact));
  if (as.registration) c->set_node_id(as.registration->node_id);
  std::string sync_error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sync_error = last_sync_error_;
    if (last_sync_ != absl::Time()) {
      c->set_last_apply_unix(absl::ToUnixSeconds(last_sync_));
      c->set_last_apply_duration_seconds(absl::ToDoubleSeconds(last_sync_duration_));
    }
  }
  c->set_last_error(!as.last_error.empty() ? as.last_error : sync_error);
  for (const auto& [name, p] : as.peers.peers) {
    if (name == options_.node_name) continue;
    rpc::v1::PeerStatus* ps = c->add_peers();
    ps->set_name(p.name);
    ps->set_node_id(p.node_id);
    ps->set_underlay(p.underlay.to_string());
    for (const net::Ipv4Prefix& cidr : p.pod_cidrs) ps->add_pod_cidrs(cidr.to_string());
    ps->set_mode(datapath::PeerMode(options_.mode, uplink_.address, p.underlay) ==
                         SARENA_MODE_NATIVE
                     ? "native"
                     : "tunnel");
    ps->set_last_update_unix(absl::ToUnixSeconds(p.last_update));
    ps->set_lost(p.lost);
    if (applied_.load() && overlay_) {  // applied_ is set after overlay_ (Apply runs after StartDatapath)
      if (absl::StatusOr<datapath::NodeCounters> n = overlay_->Counters(p.node_id); n.ok()) {
        ps->set_tx_packets(n->tx_packets);
        ps->set_tx_bytes(n->tx_bytes);
        ps->set_rx_packets(n->rx_packets);
        ps->set_rx_bytes(n->rx_bytes);
      }
    }
    if (p.lost) ps->set_lost_since_unix(absl::ToUnixSeconds(p.lost_since));
  }
  std::string reason;
  std::optional<cluster::Registration> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine = registration_;
  }
  if (mine && as.registration && as.registration->pod_cidr != mine->pod_cidr) {
    // The agent re-registered after its lease and claims were lost (e.g. `sarena node delete`
    // of a running node) and got another pod CIDR: this node's pods and routes use the old one.
    reason = absl::StrCat("the pod CIDR claimed in etcd changed from ", mine->pod_cidr.to_string(),
                          " to ", as.registration->pod_cidr.to_string(),
                          " after a re-registration; restart sarenad on this node");
  } else if (!as.registered) {
    reason = absl::StrCat("not registered with etcd at ", options_.etcd_endpoints,
                          as.last_error.empty() ? "" : ": ", as.last_error);
  } else if (!c->synced()) {
    reason = absl::StrCat("the first full peer list from etcd is not applied yet",
                          c->last_error().empty() ? "" : ": ", c->last_error());
  }
  if (!reason.empty()) {
    out->set_ready(false);
    out->set_not_ready_reason(reason);
  }
}

}  // namespace sarena::daemon
