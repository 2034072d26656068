// One class per sarena map (sarena/abi.h SARENA_MAP_*), each with its domain verbs, the way
// Cilium keeps one package per map: the endpoint map by pod address with ownership, the node and
// cluster configs, the endpoint and node counters, the drop counters, the host-flow LRU, and the
// cluster maps (tunnel map by remote pod CIDR, peer map by underlay address). Each is still the
// typed bpf::Map it wraps (tests and benchmarks write raw entries through the base class); the
// generic bpf/ layer knows none of them. OpenPinnedMap opens one by its pin name, read-only for
// readers.
#ifndef LIBSARENA_DATAPATH_MAPS_H_
#define LIBSARENA_DATAPATH_MAPS_H_

#include <cstring>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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
  using Base = bpf::Map<TunnelKey, Tunnel>;
  static constexpr const char* kPinName = SARENA_MAP_TUNNELS;
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
  using Base = bpf::Map<PeerKey, Peer>;
  static constexpr const char* kPinName = SARENA_MAP_PEERS;
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

/// Opens the map pinned as <pin_root>/<M::kPinName> as the class `M` of this file (checking key
/// and value sizes against sarena/abi.h). bpf::PinAccess::kReadOnly opens the fd with
/// BPF_F_RDONLY: lookups and iteration work, every write fails with kPermissionDenied (EPERM)
/// in the kernel. Errors: kNotFound naming the missing pin, kFailedPrecondition on a layout
/// mismatch, ErrnoStatus otherwise.
template <typename M>
absl::StatusOr<M> OpenPinnedMap(absl::string_view pin_root, bpf::PinAccess access) {
  SARENA_ASSIGN_OR_RETURN(typename M::Base map,
                          M::Base::FromPin(absl::StrCat(pin_root, "/", M::kPinName), access));
  return M(std::move(map));
}

/// A map of one entry (array of 1, key 0): the node config and the cluster datapath config.
template <typename V>
class SingletonMap : public bpf::Map<uint32_t, V> {
 public:
  using Base = bpf::Map<uint32_t, V>;
  explicit SingletonMap(Base map) : Base(std::move(map)) {}

  /// Writes the entry (key 0). Errors: the map update's (ErrnoStatus).
  absl::Status Write(const V& value) const { return this->Update(0, value); }
  /// Reads the entry (all zero when never written). Errors: map errors.
  absl::StatusOr<V> Read() const { return this->Lookup(0); }
};

/// SARENA_MAP_CONFIG (`sarena_cfg`, array of 1): the node config. The datapath treats it as
/// absent while net_ifindex == 0.
class ConfigMap : public SingletonMap<Config> {
 public:
  static constexpr const char* kPinName = SARENA_MAP_CONFIG;
  using SingletonMap<Config>::SingletonMap;
};

/// SARENA_MAP_OVERLAY_CONFIG (`sarena_ovl`, array of 1): the cluster datapath config.
/// flags == 0 turns every cross-node branch off (one-node mode; from_overlay / to_overlay /
/// from_netdev pass everything).
class OverlayConfigMap : public SingletonMap<OverlayConfig> {
 public:
  static constexpr const char* kPinName = SARENA_MAP_OVERLAY_CONFIG;
  using SingletonMap<OverlayConfig>::SingletonMap;
};

/// Per-CPU counters indexed by an id below `limit` (an endpoint id or a peer node id).
template <typename V>
class CounterMap : public bpf::PerCpuMap<uint32_t, V> {
 public:
  using Base = bpf::PerCpuMap<uint32_t, V>;
  /// `noun` names the id in errors ("endpoint", "node").
  CounterMap(Base map, uint32_t limit, absl::string_view noun)
      : Base(std::move(map)), limit_(limit), noun_(noun) {}

  /// The counters of `id`, summed over CPUs. kInvalidArgument when id >= the limit.
  absl::StatusOr<V> Read(uint32_t id) const {
    SARENA_RETURN_IF_ERROR(CheckId("read", id));
    SARENA_ASSIGN_OR_RETURN(std::vector<V> per_cpu, this->Lookup(id));
    return SumCounters(per_cpu);
  }
  /// Zeroes the counters of `id` on every CPU (call when an id is (re)assigned).
  /// kInvalidArgument when id >= the limit; map errors otherwise.
  absl::Status Reset(uint32_t id) const {
    SARENA_RETURN_IF_ERROR(CheckId("reset", id));
    V zero = {};
    return this->UpdateAll(id, zero);
  }

 private:
  absl::Status CheckId(absl::string_view verb, uint32_t id) const {
    if (id < limit_) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(verb, " counters of ", noun_, " id ", id, ": must be < ", limit_));
  }

  uint32_t limit_;
  absl::string_view noun_;
};

/// SARENA_MAP_EP_COUNTERS (`sarena_ep_ctr`, per-CPU array): counters by endpoint_id
/// (< SARENA_MAX_ENDPOINTS).
class EndpointCounterMap : public CounterMap<EndpointCounters> {
 public:
  static constexpr const char* kPinName = SARENA_MAP_EP_COUNTERS;
  explicit EndpointCounterMap(Base map)
      : CounterMap(std::move(map), SARENA_MAX_ENDPOINTS, "endpoint") {}
};

/// SARENA_MAP_NODE_COUNTERS (`sarena_node_ctr`, per-CPU array): counters by peer node_id
/// (< SARENA_MAX_PEERS).
class NodeCounterMap : public CounterMap<NodeCounters> {
 public:
  static constexpr const char* kPinName = SARENA_MAP_NODE_COUNTERS;
  explicit NodeCounterMap(Base map) : CounterMap(std::move(map), SARENA_MAX_PEERS, "node") {}
};

/// SARENA_MAP_DROPS (`sarena_drops`, per-CPU array): drop counters by enum sarena_drop_reason.
class DropMap : public bpf::PerCpuMap<uint32_t, DropCounter> {
 public:
  using Base = bpf::PerCpuMap<uint32_t, DropCounter>;
  static constexpr const char* kPinName = SARENA_MAP_DROPS;
  explicit DropMap(Base map) : Base(std::move(map)) {}

  /// Every reason's counters summed over CPUs; index = enum sarena_drop_reason, size
  /// SARENA_DROP_REASON_MAX (index 0, "none", is not a drop). Errors: map errors.
  absl::StatusOr<std::vector<DropCounter>> ReadAll() const {
    std::vector<DropCounter> out(SARENA_DROP_REASON_MAX);
    for (uint32_t reason = 0; reason < SARENA_DROP_REASON_MAX; ++reason) {
      SARENA_ASSIGN_OR_RETURN(std::vector<DropCounter> per_cpu, Lookup(reason));
      out[reason] = SumCounters(per_cpu);
    }
    return out;
  }
};

/// SARENA_MAP_HOST_FLOWS (`sarena_flows`, LRU hash): flows a local pod opened toward the host
/// (FlowKey: pod address, source port, protocol) -> first-seen time, ns (bpf_ktime_get_ns).
/// from_container lets a reply from another pod through only when it matches one.
class HostFlowMap : public bpf::Map<FlowKey, uint64_t> {
 public:
  using Base = bpf::Map<FlowKey, uint64_t>;
  static constexpr const char* kPinName = SARENA_MAP_HOST_FLOWS;
  explicit HostFlowMap(Base map) : Base(std::move(map)) {}

  /// The pod addresses that have at least one recorded flow, each once, ascending.
  /// Errors: map errors.
  absl::StatusOr<std::vector<net::Ipv4>> Openers() const {
    SARENA_ASSIGN_OR_RETURN(auto flows, LookupBatch());
    std::set<net::Ipv4> addrs;
    for (const auto& [key, first_seen] : flows) {
      (void)first_seen;
      addrs.insert(net::FromBe32(key.addr_be));
    }
    return std::vector<net::Ipv4>(addrs.begin(), addrs.end());
  }
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_MAPS_H_
