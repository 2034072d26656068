// The identity of one endpoint (CNI: CNI_CONTAINERID + CNI_IFNAME) as a hashable value type, with
// the validation the daemon applies before either string reaches a file name.
#ifndef LIBSARENA_DAEMON_ENDPOINT_KEY_H_
#define LIBSARENA_DAEMON_ENDPOINT_KEY_H_

#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::daemon {

/// The protocol's messages (libsarena/rpc/proto/sarenad.proto).
namespace v1 = ::sarena::rpc::v1;

/// One attachment of one container to the network: the CNI (containerID, ifname) pair, the key
/// of both the IPAM allocations and the endpoint records (CNI spec 1.1.0, "Parameters":
/// CNI_CONTAINERID, CNI_IFNAME; host-local keys its allocations the same way).
struct EndpointKey {
  std::string container_id;  // CNI_CONTAINERID
  std::string ifname;        // CNI_IFNAME inside the container, e.g. "eth0"

  static EndpointKey FromProto(const v1::EndpointRef& ref) {
    return EndpointKey{ref.container_id(), ref.ifname()};
  }
  v1::EndpointRef ToProto() const {
    v1::EndpointRef ref;
    ref.set_container_id(container_id);
    ref.set_ifname(ifname);
    return ref;
  }
  /// "<container_id>/<ifname>" for log and error messages.
  std::string ToString() const { return container_id + "/" + ifname; }

  friend bool operator==(const EndpointKey& a, const EndpointKey& b) {
    return a.container_id == b.container_id && a.ifname == b.ifname;
  }
  friend bool operator<(const EndpointKey& a, const EndpointKey& b) {
    return std::tie(a.container_id, a.ifname) < std::tie(b.container_id, b.ifname);
  }
  template <typename H>
  friend H AbslHashValue(H h, const EndpointKey& k) {
    return H::combine(std::move(h), k.container_id, k.ifname);
  }
};

/// Checks both fields with the CNI spec's rules (CNI spec 1.1.0 "Parameters", the same rules the
/// reference plugins' ValidateContainerID / ValidateInterfaceName apply):
///   container_id: non-empty, matches ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$;
///   ifname: 1..15 bytes (IFNAMSIZ - 1), no '/', ':' or whitespace, not "." or "..".
/// Either string ends up in a file name under --state-dir, so this is also the path-traversal
/// guard. Errors: kInvalidArgument "invalid container_id '<v>': <why>" / "invalid ifname '<v>':
/// ...".
absl::Status ValidateEndpointKey(const EndpointKey& key);

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_ENDPOINT_KEY_H_
