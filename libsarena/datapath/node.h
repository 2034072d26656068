// One node's datapath as the endpoint life cycle needs it: the sarena_host device, the loaded BPF
// datapath and a netlink socket in the node's namespace, behind one interface with the verbs of
// an endpoint's life — create, delete, check, restore after a restart, prune what no endpoint
// owns, read counters. The daemon's EndpointManager holds an EndpointDatapath; tests give it a
// fake (tests/lib/fake_endpoint_datapath.h) to unit-test rollback and reconcile.
// Pin names (<bpffs>/links/<ifname>_<direction>) are Datapath::LinkPinPath's alone.
#ifndef LIBSARENA_DATAPATH_NODE_H_
#define LIBSARENA_DATAPATH_NODE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/bpf/link.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/datapath.h"
#include "libsarena/datapath/endpoint.h"
#include "libsarena/datapath/host_device.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/socket.h"

namespace sarena::datapath {

/// An endpoint as the daemon recorded it, to be restored after a restart.
struct RecordedEndpoint {
  std::string host_ifname;   // the recorded host-side veth ("lxc...")
  net::Ipv4 ip;              // pod IP
  net::Mac pod_mac{};        // CNI_IFNAME's MAC inside the pod
  uint32_t endpoint_id = 0;  // counter index, < SARENA_MAX_ENDPOINTS
};

/// The verbs of an endpoint's life on one node. Implementations: Node (the kernel), and a fake
/// in tests/lib. Not thread-safe; the daemon calls it one request at a time.
class EndpointDatapath {
 public:
  virtual ~EndpointDatapath() = default;

  /// CreateEndpoint (endpoint.h): everything or nothing.
  virtual absl::StatusOr<EndpointState> Create(const EndpointSpec& spec) = 0;
  /// DeleteEndpoint (endpoint.h): idempotent; `expected_owner` guards a delete by derived name;
  /// `netns` is the pod's (CNI_NETNS or the recorded path; may be empty).
  virtual absl::Status Delete(const std::string& host_ifname, const std::optional<net::Ipv4>& ip,
                              const std::optional<std::string>& expected_owner,
                              const std::string& netns) = 0;
  /// CheckEndpoint (endpoint.h).
  virtual absl::Status Check(const EndpointSpec& spec) = 0;
  /// Brings one recorded endpoint back after a restart without interrupting it: rewrites its
  /// endpoint-map entry from the live veth, re-attaches from_container (bpf_link_update of the
  /// pinned link; with TCX, a tc copy an ADD left because its move to TCX never ran is replaced by
  /// the link and its filter removed) and re-installs its endpoint route when the veth is up.
  /// Errors: kNotFound when the host veth is gone (pod netns deleted without DEL); BPF/netlink
  /// errors otherwise.
  virtual absl::Status Restore(const RecordedEndpoint& endpoint) = 0;
  /// Removes endpoint-map entries whose IPv4 address is not in `live_ips` and from_container
  /// link pins of "lxc" devices not in `live_host_ifnames` (a crash between a datapath write and
  /// the record). Returns how many were removed. Errors: BPF errors reading the map.
  virtual absl::StatusOr<int> PruneOrphans(const std::set<net::Ipv4>& live_ips,
                                           const std::set<std::string>& live_host_ifnames) = 0;
  /// Per-endpoint counters summed over CPUs. kInvalidArgument when endpoint_id is out of range.
  virtual absl::StatusOr<EndpointCounters> Counters(uint32_t endpoint_id) = 0;
  /// kTcx or kTc.
  virtual bpf::AttachMode attach_mode() const = 0;
};

/// How to bring a node's datapath up (the daemon's flags).
struct NodeOptions {
  net::Ipv4 node_ip;            // --node-ip
  net::Ipv4Prefix pod_cidr;     // --pod-cidr
  uint32_t mtu = 1500;          // --mtu, bytes
  bool ip_forward = true;       // --ip-forward
  DatapathOptions datapath;     // --bpffs, --attach-mode, --redirect-peer
  /// --tcx-after-reply. With TCX: ADD guards a new host veth with a tc copy of from_container
  /// and EndpointJobs moves it to the TCX link after the reply, keeping TCX's RCU grace period
  /// (~10 ms with the RTNL lock held) off the ADD. false: ADD attaches the TCX link itself. Turn
  /// it off when a chained plugin adds an `ingress` qdisc to the host veth right after ADD (the
  /// CNI bandwidth plugin with an egress rate): the tc copy's clsact qdisc excludes it until
  /// the move. DEL hands the deletion to EndpointJobs either way.
  bool tcx_after_reply = true;
};

/// The kernel implementation: sarena_host (SetupHostDevice), the BPF datapath (Datapath::Open)
/// and a netlink socket, all in the calling thread's network namespace.
class Node final : public EndpointDatapath {
 public:
  /// SetupHostDevice then Datapath::Open. Errors: theirs.
  static absl::StatusOr<std::unique_ptr<Node>> Create(const NodeOptions& options);

  absl::StatusOr<EndpointState> Create(const EndpointSpec& spec) override;
  absl::Status Delete(const std::string& host_ifname, const std::optional<net::Ipv4>& ip,
                      const std::optional<std::string>& expected_owner,
                      const std::string& netns) override;
  absl::Status Check(const EndpointSpec& spec) override;
  absl::Status Restore(const RecordedEndpoint& endpoint) override;
  absl::StatusOr<int> PruneOrphans(const std::set<net::Ipv4>& live_ips,
                                   const std::set<std::string>& live_host_ifnames) override;
  absl::StatusOr<EndpointCounters> Counters(uint32_t endpoint_id) override;
  bpf::AttachMode attach_mode() const override { return dp_->attach_mode(); }

  const HostDevice& host() const { return host_; }
  Datapath& datapath() { return *dp_; }

 private:
  Node(NodeOptions options, nl::Socket sock, HostDevice host, std::unique_ptr<Datapath> dp)
      : options_(std::move(options)),
        sock_(std::move(sock)),
        host_(std::move(host)),
        dp_(std::move(dp)),
        jobs_(dp_->attach_mode() == bpf::AttachMode::kTcx ? std::make_unique<EndpointJobs>(*dp_)
                                                          : nullptr) {}

  NodeOptions options_;
  nl::Socket sock_;
  HostDevice host_;
  std::unique_ptr<Datapath> dp_;
  /// TCX upgrades of new endpoints (TCX mode only); declared after dp_, so it finishes its
  /// queue and stops before the datapath goes.
  std::unique_ptr<EndpointJobs> jobs_;
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_NODE_H_
