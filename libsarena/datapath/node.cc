#include "libsarena/datapath/node.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/datapath/naming.h"

namespace sarena::datapath {

absl::StatusOr<std::unique_ptr<Node>> Node::Create(const NodeOptions& o) {
  SARENA_ASSIGN_OR_RETURN(nl::Socket sock, nl::Socket::Open());
  SARENA_ASSIGN_OR_RETURN(HostDevice host,
                          SetupHostDevice(sock, {.node_ip = o.node_ip,
                                                 .pod_cidr = o.pod_cidr,
                                                 .mtu = o.mtu,
                                                 .ip_forward = o.ip_forward}));
  SARENA_LOG(Info, "host device ", kHostDevice, " (ifindex ", host.host.ifindex, ") ",
             o.node_ip.to_string(), "/32, route ", o.pod_cidr.to_string(), " via ",
             o.node_ip.to_string());
  SARENA_ASSIGN_OR_RETURN(std::unique_ptr<Datapath> dp,
                          Datapath::Open(o.datapath, host, o.node_ip, o.pod_cidr));
  return std::unique_ptr<Node>(new Node(o, std::move(sock), std::move(host), std::move(dp)));
}

absl::StatusOr<EndpointState> Node::Create(const EndpointSpec& spec) {
  return CreateEndpoint(*dp_, sock_, spec, options_.tcx_after_reply ? jobs_.get() : nullptr);
}

absl::Status Node::Delete(const std::string& host_ifname, const std::optional<net::Ipv4>& ip,
                          const std::optional<std::string>& expected_owner,
                          const std::string& netns) {
  return DeleteEndpoint(*dp_, sock_, host_ifname, ip, expected_owner, netns, jobs_.get());
}

absl::Status Node::Check(const EndpointSpec& spec) { return CheckEndpoint(*dp_, sock_, spec); }

absl::Status Node::Restore(const RecordedEndpoint& e) {
  absl::StatusOr<nl::Link> host = sock_.GetLink(e.host_ifname);
  if (!host.ok()) {
    return absl::NotFoundError(absl::StrCat("host veth '", e.host_ifname, "' is gone"));
  }
  SARENA_RETURN_IF_ERROR(dp_->maps().endpoints.Put(
      e.ip,
      MakeEndpoint(static_cast<uint32_t>(host->ifindex), e.pod_mac, host->mac, e.endpoint_id)));
  SARENA_RETURN_IF_ERROR(dp_->Attach(Program::kFromContainer, e.host_ifname, host->ifindex,
                                     bpf::Direction::kIngress));
  // A tc copy left by an ADD whose move to TCX never ran (the daemon stopped first): the TCX
  // link is in place now, so the copy goes (EndpointJobs).
  if (dp_->attach_mode() == bpf::AttachMode::kTcx) {
    SARENA_RETURN_IF_ERROR(dp_->RemoveTcCopy(Program::kFromContainer, host->ifindex, sock_));
  }
  if (host->up) {  // a route through a down device is refused; CHECK reports the device
    SARENA_RETURN_IF_ERROR(
        sock_.ReplaceRoute(EndpointRoute(e.ip, options_.node_ip, host->ifindex)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Node::PruneOrphans(const std::set<net::Ipv4>& live_ips,
                                       const std::set<std::string>& live_host_ifnames) {
  int removed = 0;
  SARENA_ASSIGN_OR_RETURN(std::vector<net::Ipv4> ips, dp_->maps().endpoints.Addresses());
  for (const net::Ipv4& ip : ips) {
    if (live_ips.count(ip)) continue;
    SARENA_LOG(Warning, "removing orphan endpoint-map entry ", ip.to_string());
    SARENA_ASSIGN_OR_RETURN(bool gone, dp_->maps().endpoints.RemoveIfOwner(ip, 0));
    removed += gone ? 1 : 0;
  }
  SARENA_ASSIGN_OR_RETURN(int pins, dp_->RemoveLinkPinsExcept("lxc", live_host_ifnames));
  return removed + pins;
}

absl::StatusOr<EndpointCounters> Node::Counters(uint32_t endpoint_id) {
  return dp_->maps().ep_counters.Read(endpoint_id);
}

}  // namespace sarena::datapath
