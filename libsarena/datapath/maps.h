// Domain views of the sarena maps: the endpoint map with the verbs the endpoint life cycle
// needs (by pod address, with ownership), and the cluster maps (tunnel map by remote pod CIDR,
// peer map by underlay address), each on top of the typed bpf::Map it still is (tests and
// benchmarks write raw entries through the base class).
#ifndef LIBSARENA_DATAPATH_MAPS_H_
#define LIBSARENA_DATAPATH_MAPS_H_

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/bpf/map.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/net/ip.h"

namespace sarena::datapath {

/// SARENA_MAP_ENDPOINTS (`sarena_lxc`): pod address -> endpoint (host veth ifindex, MACs, id).
/// Keys are built with MakeEndpointKey (16-byte address + family + cluster id, sarena/abi.h).
///
/// With `slots` (SARENA_MAP_ENDPOINT_SLOTS, `sarena_lxc4`) the verbs below also keep the
/// programs' fast path in step: an IPv4 entry of cluster 0 is copied to its slot
/// (EndpointSlotIndex) after the hash write, and the slot is cleared before the hash delete; a
/// slot holding another address is left alone (that endpoint is then found through the hash).
/// Writes through the base class (tests, benchmarks) touch only the hash, which the programs
/// consult whenever the slot does not hold the address — correct, just not the fast path.
class EndpointMap : public bpf::Map<EndpointKey, Endpoint> {
 public:
  using SlotMap = bpf::Map<uint32_t, EndpointSlot>;

  explicit EndpointMap(bpf::Map<EndpointKey, Endpoint> map,
                       std::optional<SlotMap> slots = std::nullopt)
      : bpf::Map<EndpointKey, Endpoint>(std::move(map)), slots_(std::move(slots)) {}

  /// The slot map, when this view has one.
  const std::optional<SlotMap>& slots() const { return slots_; }

  /// Creates or replaces the entry of `ip` (then its slot). Errors: the map update's
  /// (ErrnoStatus).
  absl::Status Put(const net::Ipv4& ip, const Endpoint& endpoint) const {
    SARENA_RETURN_IF_ERROR(Update(MakeEndpointKey(ip), endpoint));
    return PutSlot(ip, endpoint);
  }
  /// Replaces the existing entry of `key` (bpf::UpdateFlags::kExist: kNotFound when absent),
  /// then the slot of its address (IPv4, cluster 0). Used for flag changes (SARENA_EP_F_TRACE).
  absl::Status Replace(const EndpointKey& key, const Endpoint& endpoint) const {
    SARENA_RETURN_IF_ERROR(Update(key, endpoint, bpf::UpdateFlags::kExist));
    std::optional<net::Ipv4> ip = EndpointKeyIpv4(key);
    if (!ip || key.cluster_id != 0) return absl::OkStatus();
    return PutSlot(*ip, endpoint);
  }
  /// The entry of `ip`. Errors: kNotFound when absent.
  absl::StatusOr<Endpoint> Get(const net::Ipv4& ip) const { return Lookup(MakeEndpointKey(ip)); }

  /// The slot copy of `ip` when its slot holds exactly `ip` (what the programs use before the
  /// hash, bpf/lib/common.h sarena_lookup_ipv4), else nullopt (also without a slot map). For
  /// readers that must see what the programs see (sarena-diag collect). Errors: map errors.
  absl::StatusOr<std::optional<Endpoint>> SlotCopy(const net::Ipv4& ip) const {
    if (!slots_) return std::optional<Endpoint>();
    SARENA_ASSIGN_OR_RETURN(EndpointSlot cur, slots_->Lookup(EndpointSlotIndex(ip)));
    if (cur.addr_be == 0 || cur.addr_be != net::ToBe32(ip)) return std::optional<Endpoint>();
    return std::optional<Endpoint>(cur.ep);
  }
  /// Removes the entry of `ip` only when it still points at `owner_ifindex` (0 = whoever owns
  /// it): an endpoint never deletes the entry another endpoint took over. Returns whether an
  /// entry was removed; absent is not an error (CNI DEL is idempotent). Errors: map errors.
  absl::StatusOr<bool> RemoveIfOwner(const net::Ipv4& ip, uint32_t owner_ifindex) const {
    absl::StatusOr<Endpoint> ep = Get(ip);
    if (absl::IsNotFound(ep.status())) return false;
    if (!ep.ok()) return ep.status();
    if (owner_ifindex != 0 && ep->ifindex != owner_ifindex) return false;
    SARENA_RETURN_IF_ERROR(ClearSlot(ip));
    absl::Status st = Delete(MakeEndpointKey(ip));
    if (absl::IsNotFound(st)) return false;
    if (!st.ok()) return st;
    return true;
  }
  /// Makes the slots exactly the copies the verbs above would have written from the current hash:
  /// every IPv4 (cluster 0) entry in its slot (a slot already holding a still-present address
  /// keeps it), every other slot empty. For a start over pins another writer may have changed
  /// (an upgrade that created the slot map, a downgrade that left it stale). Returns the number
  /// of slots rewritten. Errors: map errors.
  absl::StatusOr<int> ReconcileSlots() const {
    if (!slots_) return 0;
    SARENA_ASSIGN_OR_RETURN(auto entries, LookupBatch());
    SARENA_ASSIGN_OR_RETURN(auto current, slots_->LookupBatch());
    std::vector<EndpointSlot> want(SARENA_ENDPOINT_SLOTS);  // zero = empty
    std::vector<EndpointSlot> have(SARENA_ENDPOINT_SLOTS);
    for (const auto& [idx, cur] : current) {
      if (idx < SARENA_ENDPOINT_SLOTS) have[idx] = cur;
    }
    for (const auto& [key, ep] : entries) {
      std::optional<net::Ipv4> ip = EndpointKeyIpv4(key);
      if (!ip || key.cluster_id != 0) continue;
      const uint32_t idx = EndpointSlotIndex(*ip);
      const uint32_t be = net::ToBe32(*ip);
      // First address wins a shared slot, except that the current holder keeps it.
      if (want[idx].addr_be != 0 && have[idx].addr_be != be) continue;
      want[idx].addr_be = be;
      want[idx].ep = ep;
    }
    int rewritten = 0;
    for (uint32_t idx = 0; idx < SARENA_ENDPOINT_SLOTS; ++idx) {
      if (std::memcmp(&want[idx], &have[idx], sizeof(EndpointSlot)) == 0) continue;
      SARENA_RETURN_IF_ERROR(slots_->Update(idx, want[idx]));
      ++rewritten;
    }
    return rewritten;
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

 private:
  // Writes the slot of `ip` unless another address holds it.
  absl::Status PutSlot(const net::Ipv4& ip, const Endpoint& endpoint) const {
    if (!slots_) return absl::OkStatus();
    const uint32_t idx = EndpointSlotIndex(ip);
    SARENA_ASSIGN_OR_RETURN(EndpointSlot cur, slots_->Lookup(idx));
    const uint32_t be = net::ToBe32(ip);
    if (cur.addr_be != 0 && cur.addr_be != be) return absl::OkStatus();
    EndpointSlot slot = {};
    slot.addr_be = be;
    slot.ep = endpoint;
    return slots_->Update(idx, slot);
  }
  // Empties the slot of `ip` when it holds `ip`.
  absl::Status ClearSlot(const net::Ipv4& ip) const {
    if (!slots_) return absl::OkStatus();
    const uint32_t idx = EndpointSlotIndex(ip);
    SARENA_ASSIGN_OR_RETURN(EndpointSlot cur, slots_->Lookup(idx));
    if (cur.addr_be != net::ToBe32(ip)) return absl::OkStatus();
    EndpointSlot empty = {};
    return slots_->Update(idx, empty);
  }

  std::optional<SlotMap> slots_;
};

/// SARENA_MAP_TUNNELS (`sarena_tun`, LPM trie): remote pod CIDR -> the peer node owning it.
/// Keys are built with MakeTunnelKey (sarena/abi.h: prefixlen = 32 + CIDR length). Iteration
/// (Entries) uses BPF_MAP_GET_NEXT_KEY, which LPM tries support since Linux 4.16.
class TunnelMap : public bpf::Map<TunnelKey, Tunnel> {
 public:
  explicit TunnelMap(bpf::Map<TunnelKey, Tunnel> map) : bpf::Map<TunnelKey, Tunnel>(std::move(map)) {}

  /// Creates or replaces the entry of `prefix` (host bits are ignored: the canonical network is
  /// the key). Errors: the map update's (ErrnoStatus; E2BIG when SARENA_MAX_TUNNELS are used).
  absl::Status Put(const net::Ipv4Prefix& prefix, const Tunnel& tunnel) const {
    return Update(MakeTunnelKey(prefix), tunnel);
  }
  /// The entry of exactly `prefix`. Errors: kNotFound when absent.
  absl::StatusOr<Tunnel> Get(const net::Ipv4Prefix& prefix) const {
    return Lookup(MakeTunnelKey(prefix));
  }
  /// The longest-prefix entry containing `ip` (what the programs see). kNotFound when none.
  absl::StatusOr<Tunnel> Match(const net::Ipv4& ip) const { return Lookup(MakeTunnelLookupKey(ip)); }
  /// Removes the entry of exactly `prefix`; returns whether one existed. Errors: map errors.
  absl::StatusOr<bool> Remove(const net::Ipv4Prefix& prefix) const {
    absl::Status st = Delete(MakeTunnelKey(prefix));
    if (absl::IsNotFound(st)) return false;
    if (!st.ok()) return st;
    return true;
  }
  /// Every IPv4 entry as (canonical CIDR, value); entries of other families are skipped.
  absl::StatusOr<std::vector<std::pair<net::Ipv4Prefix, Tunnel>>> Entries() const {
    std::vector<std::pair<net::Ipv4Prefix, Tunnel>> out;
    absl::Status st = ForEach([&](const TunnelKey& k, const Tunnel& v) {
      if (std::optional<net::Ipv4Prefix> p = TunnelKeyIpv4(k)) out.emplace_back(*p, v);
      return true;
    });
    if (!st.ok()) return st;
    return out;
  }
};

/// SARENA_MAP_PEERS (`sarena_peers`, hash): underlay address of a member node -> its node id.
/// from_overlay accepts VXLAN only from these addresses.
class PeerMap : public bpf::Map<PeerKey, Peer> {
 public:
  explicit PeerMap(bpf::Map<PeerKey, Peer> map) : bpf::Map<PeerKey, Peer>(std::move(map)) {}

  /// Creates or replaces the entry of `underlay`. `node_id` must be < SARENA_MAX_PEERS (it
  /// indexes the node counters): kInvalidArgument otherwise. Errors: map update errors.
  absl::Status Put(const net::Ipv4& underlay, uint32_t node_id) const {
    if (node_id >= SARENA_MAX_PEERS) {
      return absl::InvalidArgumentError(absl::StrCat("peer ", underlay.to_string(), ": node_id ",
                                                     node_id, " must be < ", SARENA_MAX_PEERS));
    }
    Peer peer = {};
    peer.node_id = node_id;
    return Update(MakePeerKey(underlay), peer);
  }
  /// The entry of `underlay`. Errors: kNotFound when absent.
  absl::StatusOr<Peer> Get(const net::Ipv4& underlay) const { return Lookup(MakePeerKey(underlay)); }
  /// Removes the entry of `underlay`; returns whether one existed. Errors: map errors.
  absl::StatusOr<bool> Remove(const net::Ipv4& underlay) const {
    absl::Status st = Delete(MakePeerKey(underlay));
    if (absl::IsNotFound(st)) return false;
    if (!st.ok()) return st;
    return true;
  }
  /// Every IPv4 entry as (underlay address, value); entries of other families are skipped.
  absl::StatusOr<std::vector<std::pair<net::Ipv4, Peer>>> Entries() const {
    std::vector<std::pair<net::Ipv4, Peer>> out;
    absl::Status st = ForEach([&](const PeerKey& k, const Peer& v) {
      if (std::optional<net::Ipv4> ip = PeerKeyIpv4(k)) out.emplace_back(*ip, v);
      return true;
    });
    if (!st.ok()) return st;
    return out;
  }
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_MAPS_H_
