// The daemon's endpoint lifecycle: one object that owns the node's datapath, IPAM and endpoint
// records and executes the protocol's requests (EndpointAdd/Del/Check/List, Status, GC).
// Requests are executed one at a time (the Server serializes handlers).
#ifndef LIBSARENA_DAEMON_ENDPOINT_MANAGER_H_
#define LIBSARENA_DAEMON_ENDPOINT_MANAGER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/daemon/ipam.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "libsarena/daemon/server.h"
#include "libsarena/daemon/state_store.h"
#include "libsarena/datapath/node.h"

namespace sarena::daemon {

/// The protocol's messages (libsarena/rpc/proto/sarenad.proto).
namespace v1 = ::sarena::rpc::v1;

/// sarenad's configuration (its command-line contract: docs/architecture.md "sarenad's command-line
/// contract").
struct DaemonOptions {
  net::Ipv4Prefix pod_cidr;                    // --pod-cidr (required)
  net::Ipv4 node_ip;                           // --node-ip (required)
  std::string state_dir = "/var/lib/sarena";   // --state-dir
  std::string bpffs = "/sys/fs/bpf/sarena";    // --bpffs
  uint32_t mtu = 1500;                         // --mtu, bytes
  bpf::AttachMode attach_mode = bpf::AttachMode::kAuto;  // --attach-mode
  bool redirect_peer = true;                   // --redirect-peer
  bool tcx_after_reply = true;                 // --tcx-after-reply (NodeOptions)
  bool ip_forward = true;                      // --ip-forward
  /// Largest pod MTU an ADD may ask for (the conflist's "mtu"), bytes; 0 = 65535. In a cluster:
  /// the uplink MTU, minus 50 with a tunnel (a bigger pod MTU would be dropped on the underlay).
  uint32_t max_mtu = 0;
};

/// Cross-checks the IPAM allocations against the endpoint records at start, before anything
/// touches the kernel (issue: "never a second pod on a live pod's IP"):
/// - a record without an allocation file (every ADD since issue 9 item 3: the record is the
///   allocation's one durable copy; or a file removed by hand) gives its address to its key in
///   memory (Ipam::Adopt);
/// - a record whose key holds a different address, whose address is allocated to another key,
///   that shares its address, its host veth or its endpoint_id with another record (one DEL would
///   take the other pod's veth or counters), or whose address is not allocatable in the
///   pod CIDR refuses the start: kDataLoss naming the record file(s) and the allocation file,
///   nothing changed (an operator must look);
/// - an allocation file without a record (an older sarenad's crash between allocation and record
///   in ADD) stays: its network is unknown, so only the runtime's DEL of that attachment
///   releases it (logged).
/// Returns the number of addresses adopted from records.
absl::StatusOr<int> CrossCheckState(Ipam& ipam, const EndpointStore& store);

class EndpointManager {
 public:
  /// Brings the node up: host device, BPF datapath (pins reused), IPAM and endpoint records
  /// loaded and cross-checked (CrossCheckState), then Reconcile(). Never interrupts forwarding
  /// of endpoints that already exist.
  /// Errors: kInvalidArgument for inconsistent options (node IP inside the pod CIDR's network or
  /// broadcast address, MTU outside 68..65535); kDataLoss for corrupt or inconsistent state
  /// files (named); kernel errors otherwise.
  static absl::StatusOr<std::unique_ptr<EndpointManager>> Create(const DaemonOptions& options);

  /// Makes the node's datapath once the state has loaded and passed its cross-check.
  using DatapathFactory =
      std::function<absl::StatusOr<std::unique_ptr<datapath::EndpointDatapath>>()>;
  /// Create with another datapath (tests: a fake). Option checks, state loading, cross-check and
  /// Reconcile as Create; `make_datapath` is called only after the state loaded. Errors: as
  /// Create, plus those of `make_datapath`.
  static absl::StatusOr<std::unique_ptr<EndpointManager>> CreateWith(
      const DaemonOptions& options, const DatapathFactory& make_datapath);

  /// Executes one request; failures become Response.error with a CNI code.
  v1::Response Handle(const v1::Request& request, const PeerCred& peer);

  /// Brings the datapath in line with the records: re-attaches (updates) from_container on
  /// every live endpoint, rewrites its endpoint-map entry, removes map entries and link pins
  /// that belong to no record, and reports records whose veth vanished (their IP stays
  /// allocated until the runtime's DEL or GC). Returns the number of endpoints restored.
  absl::StatusOr<int> Reconcile();

 private:
  EndpointManager(DaemonOptions options, std::unique_ptr<datapath::EndpointDatapath> node,
                  std::unique_ptr<Ipam> ipam, std::unique_ptr<EndpointStore> store);

  absl::StatusOr<v1::EndpointAddResponse> Add(const v1::EndpointAddRequest& req);
  absl::StatusOr<v1::EndpointDelResponse> Del(const v1::EndpointDelRequest& req);
  absl::Status Check(const v1::EndpointCheckRequest& req);
  absl::StatusOr<v1::EndpointListResponse> List();
  v1::StatusResponse Status();
  absl::StatusOr<v1::GcResponse> Gc(const v1::GcRequest& req);
  absl::Status RemoveEndpoint(const v1::Endpoint& record);
  absl::StatusOr<uint32_t> FreeEndpointId() const;

  DaemonOptions options_;
  std::unique_ptr<datapath::EndpointDatapath> node_;
  std::unique_ptr<Ipam> ipam_;
  std::unique_ptr<EndpointStore> store_;
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_ENDPOINT_MANAGER_H_
