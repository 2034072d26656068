// Domain views of the sarena maps: the endpoint map with the verbs the endpoint life cycle
// needs (by pod address, with ownership), on top of the typed bpf::Map it still is (tests and
// benchmarks write raw entries through the base class).
#ifndef LIBSARENA_DATAPATH_MAPS_H_
#define LIBSARENA_DATAPATH_MAPS_H_

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/bpf/map.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/net/ip.h"

namespace sarena::datapath {

/// SARENA_MAP_ENDPOINTS (`sarena_lxc`): pod address -> endpoint (host veth ifindex, MACs, id).
/// Keys are built with MakeEndpointKey (16-byte address + family + cluster id, sarena/abi.h).
class EndpointMap : public bpf::Map<EndpointKey, Endpoint> {
 public:
  explicit EndpointMap(bpf::Map<EndpointKey, Endpoint> map)
      : bpf::Map<EndpointKey, Endpoint>(std::move(map)) {}

  /// Creates or replaces the entry of `ip`. Errors: the map update's (ErrnoStatus).
  absl::Status Put(const net::Ipv4& ip, const Endpoint& endpoint) const {
    return Update(MakeEndpointKey(ip), endpoint);
  }
  /// The entry of `ip`. Errors: kNotFound when absent.
  absl::StatusOr<Endpoint> Get(const net::Ipv4& ip) const { return Lookup(MakeEndpointKey(ip)); }
  /// Removes the entry of `ip` only when it still points at `owner_ifindex` (0 = whoever owns
  /// it): an endpoint never deletes the entry another endpoint took over. Returns whether an
  /// entry was removed; absent is not an error (CNI DEL is idempotent). Errors: map errors.
  absl::StatusOr<bool> RemoveIfOwner(const net::Ipv4& ip, uint32_t owner_ifindex) const {
    absl::StatusOr<Endpoint> ep = Get(ip);
    if (absl::IsNotFound(ep.status())) return false;
    if (!ep.ok()) return ep.status();
    if (owner_ifindex != 0 && ep->ifindex != owner_ifindex) return false;
    absl::Status st = Delete(MakeEndpointKey(ip));
    if (absl::IsNotFound(st)) return false;
    if (!st.ok()) return st;
    return true;
  }
  /// The IPv4 addresses that have an entry (entries of other families are skipped).
  absl::StatusOr<std::vector<net::Ipv4>> Addresses() const {
    absl::StatusOr<std::vector<EndpointKey>> keys = Keys();
    if (!keys.ok()) return keys.status();
    std::vector<net::Ipv4> out;
    for (const EndpointKey& k : *keys) {
      if (std::optional<net::Ipv4> ip = EndpointKeyIpv4(k)) out.push_back(*ip);
    }
    return out;
  }
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_MAPS_H_
