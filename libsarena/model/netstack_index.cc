// Netstack::Finalize (the lookup index over the parsed vectors, the kernel's default policy
// rules, route alias order) and the inventory lookups it serves.
#include <algorithm>
#include <functional>

#include "libsarena/model/netstack.h"
#include "libsarena/model/netstack_internal.h"

namespace sarena::model {

namespace {

using internal::U32;

uint64_t MacKey(const net::Mac& mac) {
  uint64_t k = 0;
  for (uint8_t b : mac) k = (k << 8) | b;
  return k;
}

}  // namespace

void Netstack::Finalize() {
  Index& ix = *index_;
  ix.by_name.clear();
  ix.by_ifindex.clear();
  ix.local_addrs.clear();
  ix.neigh_by_ip.clear();
  ix.fdb_by_mac.clear();
  for (size_t i = 0; i < neighbors_.size(); ++i) {
    ix.neigh_by_ip[U32(neighbors_[i].dst)].push_back(static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < fdb_.size(); ++i) {
    ix.fdb_by_mac[MacKey(fdb_[i].mac)].push_back(static_cast<uint32_t>(i));
  }
  ix.indexed_neighbors = neighbors_.size();
  ix.indexed_fdb = fdb_.size();
  for (size_t i = 0; i < interfaces_.size(); ++i) {
    ix.by_name.emplace(interfaces_[i].name, i);
    if (interfaces_[i].ifindex > 0) ix.by_ifindex.emplace(interfaces_[i].ifindex, i);
    for (const auto& a : interfaces_[i].addresses) ix.local_addrs.emplace(U32(a.local), i);
  }
  // Without ip-rule.json the kernel's defaults apply.
  if (!Has(NetstackSource::kRules) && rules_.empty()) {
    Rule local;
    local.priority = 0;
    local.table = kTableLocal;
    Rule main;
    main.priority = 32766;
    main.table = kTableMain;
    Rule def;
    def.priority = 32767;
    def.table = kTableDefault;
    rules_ = {local, main, def};
    for (size_t i = 0; i < rules_.size(); ++i) rules_[i].index = static_cast<int>(i);
  }
  std::stable_sort(rules_.begin(), rules_.end(),
                   [](const Rule& a, const Rule& b) { return a.priority < b.priority; });
  ix.rule_by_priority.clear();
  for (size_t i = 0; i < rules_.size(); ++i) ix.rule_by_priority.emplace(rules_[i].priority, i);
  // Custom rules: anything beyond the three defaults (fib4_has_custom_rules).
  custom_rules_ = false;
  for (const Rule& r : rules_) {
    bool is_default = !r.invert && !r.src && !r.dst && r.iif.empty() && r.oif.empty() &&
                      !r.fwmark && r.tos == 0 && r.action == RuleAction::kToTable &&
                      ((r.priority == 0 && r.table == kTableLocal) ||
                       (r.priority == 32766 && r.table == kTableMain) ||
                       (r.priority == 32767 && r.table == kTableDefault));
    if (!is_default) custom_rules_ = true;
  }
  ix.tables.clear();
  ix.custom_local_routes = false;
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route& r = routes_[i];
    if (r.type == RouteType::kLocal && (r.table != kTableLocal || r.protocol != RouteProtocol::kKernel)) {
      ix.custom_local_routes = true;
    }
    auto& t = ix.tables[r.table];
    uint8_t len = static_cast<uint8_t>(r.dst.prefix_length());
    uint64_t key = (static_cast<uint64_t>(len) << 32) | r.dst.address().to_uint();
    t.by_prefix[key].push_back(static_cast<uint32_t>(i));
    if (std::find(t.lens.begin(), t.lens.end(), len) == t.lens.end()) t.lens.push_back(len);
  }
  for (auto& [id, t] : ix.tables) {
    std::sort(t.lens.begin(), t.lens.end(), std::greater<uint8_t>());
    for (auto& [k, v] : t.by_prefix) {
      // Kernel alias order: TOS-specific first (descending TOS), then metric ascending; stable.
      std::stable_sort(v.begin(), v.end(), [this](uint32_t a, uint32_t b) {
        const Route& ra = routes_[a];
        const Route& rb = routes_[b];
        if (ra.tos != rb.tos) return ra.tos > rb.tos;
        return ra.metric < rb.metric;
      });
    }
  }
  ix.finalized = true;
}

// ---------------------------------------------------------------------------------------------
// Inventory.

const Interface* Netstack::FindInterface(absl::string_view name) const {
  auto it = index_->by_name.find(name);
  return it == index_->by_name.end() ? nullptr : &interfaces_[it->second];
}

const Interface* Netstack::FindInterfaceByIndex(int ifindex) const {
  auto it = index_->by_ifindex.find(ifindex);
  return it == index_->by_ifindex.end() ? nullptr : &interfaces_[it->second];
}

const Interface* Netstack::InterfaceWithAddress(const net::Ipv4& ip) const {
  auto it = index_->local_addrs.find(U32(ip));
  return it == index_->local_addrs.end() ? nullptr : &interfaces_[it->second];
}

bool Netstack::IsLocalAddress(const net::Ipv4& ip) const {
  return index_->local_addrs.contains(U32(ip));
}

const Neighbor* Netstack::FindNeighbor(const net::Ipv4& ip, absl::string_view dev) const {
  const Index& ix = *index_;
  if (ix.indexed_neighbors == neighbors_.size()) {
    auto it = ix.neigh_by_ip.find(U32(ip));
    if (it == ix.neigh_by_ip.end()) return nullptr;
    for (uint32_t i : it->second) {
      const Neighbor& n = neighbors_[i];
      if (dev.empty() || n.dev == dev) return &n;
    }
    return nullptr;
  }
  for (const Neighbor& n : neighbors_) {
    if (n.dst == ip && (dev.empty() || n.dev == dev)) return &n;
  }
  return nullptr;
}

std::vector<const FdbEntry*> Netstack::FindFdb(absl::string_view dev, const net::Mac& mac) const {
  std::vector<const FdbEntry*> out;
  static const net::Mac kZero{};
  const Index& ix = *index_;
  if (ix.indexed_fdb == fdb_.size()) {
    auto collect = [&](const net::Mac& m) {
      auto it = ix.fdb_by_mac.find(MacKey(m));
      if (it == ix.fdb_by_mac.end()) return;
      for (uint32_t i : it->second) {
        if (fdb_[i].dev == dev) out.push_back(&fdb_[i]);
      }
    };
    collect(mac);
    if (out.empty() && mac != kZero) collect(kZero);
    return out;
  }
  for (const FdbEntry& e : fdb_) {
    if (e.dev == dev && e.mac == mac) out.push_back(&e);
  }
  if (out.empty() && mac != kZero) {
    for (const FdbEntry& e : fdb_) {
      if (e.dev == dev && e.mac == kZero) out.push_back(&e);
    }
  }
  return out;
}

std::vector<const Route*> Netstack::TableRoutes(uint32_t table) const {
  std::vector<const Route*> out;
  for (const Route& r : routes_) {
    if (r.table == table) out.push_back(&r);
  }
  return out;
}

const Interface* Netstack::OifInterface(const Route& route) const {
  const Nexthop* nh = route.first();
  return nh == nullptr ? nullptr : FindInterface(nh->dev);
}

}  // namespace sarena::model
