// Private to model/ (not installed: it declares sarena::model::internal): what the pieces of
// Netstack share. The public API is netstack.h; its implementation is split by concern:
//   * netstack.cc        the objects' helpers and text forms, Add*, the source bits,
//   * netstack_index.cc  Finalize (the lookup index, the kernel's default rules) and the
//                        inventory lookups (interfaces, local addresses, neighbours, FDB),
//   * iproute2 `ip -j` / `bridge -j` JSON parsing: netstack_ip_json.cc (the field readers below,
//     ip-neigh.json, bridge-fdb.json), netstack_ip_link.cc (ip-link.json, ip-addr.json),
//     netstack_ip_route.cc (ip-route.json, ip-rule.json); sysctl.txt is sysctl.cc's,
//   * kernel semantics: netstack_fib.cc (policy rules, table lookup, source address selection,
//     address type), netstack_input.cc (forwarding, reverse-path filtering, input and output
//     routing).
#ifndef LIBSARENA_MODEL_NETSTACK_INTERNAL_H_
#define LIBSARENA_MODEL_NETSTACK_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/json.h"
#include "libsarena/model/netstack.h"

namespace sarena::model {

// The lookup index Finalize() builds over a Netstack's vectors.
struct Netstack::Index {
  absl::flat_hash_map<std::string, size_t> by_name;
  absl::flat_hash_map<int, size_t> by_ifindex;
  absl::flat_hash_map<uint32_t, size_t> local_addrs;  // address -> interface index
  struct Table {
    // Prefix lengths present, longest first.
    std::vector<uint8_t> lens;
    // (len << 32 | network) -> route indexes in kernel alias order.
    absl::flat_hash_map<uint64_t, std::vector<uint32_t>> by_prefix;
  };
  absl::flat_hash_map<uint32_t, Table> tables;
  absl::flat_hash_map<uint32_t, size_t> rule_by_priority;  // first rule with a priority
  // Neighbour entries by address and FDB entries by MAC (a VXLAN node has one per remote VTEP),
  // indexes in file order; valid while the vectors keep the sizes they had at Finalize().
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> neigh_by_ip;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> fdb_by_mac;
  size_t indexed_neighbors = 0, indexed_fdb = 0;
  bool custom_local_routes = false;
  bool finalized = false;
};

}  // namespace sarena::model

namespace sarena::model::internal {

// ---------------------------------------------------------------------------------------------
// IPv4 prefix arithmetic (host-order uint32 addresses).

inline uint32_t U32(const net::Ipv4& ip) { return ip.to_uint(); }

inline uint32_t MaskOf(uint8_t len) { return len == 0 ? 0u : (0xffffffffu << (32 - len)); }

inline bool InPrefix(const net::Ipv4Prefix& p, uint32_t ip) {
  uint32_t m = MaskOf(static_cast<uint8_t>(p.prefix_length()));
  return (ip & m) == (p.address().to_uint() & m);
}

// The prefix with its host bits cleared.
inline net::Ipv4Prefix MakePrefix(uint32_t addr, uint8_t len) {
  return net::Ipv4Prefix(net::Ipv4(addr & MaskOf(len)), len);
}

bool Contains(const std::vector<std::string>& v, absl::string_view s);

// ---------------------------------------------------------------------------------------------
// iproute2 JSON field readers (netstack_ip_json.cc). Errors are JsonFieldError's
// (InvalidArgument naming the file and the field's path).

inline bool IsIpv6Text(absl::string_view s) { return s.find(':') != absl::string_view::npos; }

// The path of list item i (and of one of its fields).
std::string Path(absl::string_view prefix, size_t i, absl::string_view field = {});

// Parses "a.b.c.d" or "a.b.c.d/len" or "default"/"all" (0/0).
absl::StatusOr<net::Ipv4Prefix> ParseDst(absl::string_view s, absl::string_view file,
                                         absl::string_view path);

// A JSON number or numeric string ("0x10", "16") as uint32; nullopt when absent.
absl::StatusOr<std::optional<uint32_t>> GetU32Flexible(const JsonValue& obj, absl::string_view key,
                                                       absl::string_view file,
                                                       absl::string_view path);

// An array of strings (or one string, as some iproute2 versions print it); empty when absent.
absl::StatusOr<std::vector<std::string>> GetStringArray(const JsonValue& obj, absl::string_view key,
                                                        absl::string_view file,
                                                        absl::string_view path);

// A 6-byte MAC; nullopt when absent or not 17 characters long (an address of another link type).
absl::StatusOr<std::optional<net::Mac>> GetMac(const JsonValue& obj, absl::string_view key,
                                               absl::string_view file, absl::string_view path);

}  // namespace sarena::model::internal

#endif  // LIBSARENA_MODEL_NETSTACK_INTERNAL_H_
