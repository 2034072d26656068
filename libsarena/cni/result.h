// The CNI "Success" result (CNI spec, "Result Types": interfaces, ips, routes, dns), its JSON
// for each supported cniVersion, and building it from what sarenad reports for an endpoint.
//
// Shapes by version:
//   0.3.0 / 0.3.1 / 0.4.0: ips[] carry "version": "4" | "6".
//   1.0.0:                  no "version" in ips[].
//   1.1.0:                  interfaces[] may carry "mtu".
#ifndef LIBSARENA_CNI_RESULT_H_
#define LIBSARENA_CNI_RESULT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/cni/json.h"

namespace sarena::cni {

/// interfaces[]: a host-side interface has an empty `sandbox`; a container-side one carries
/// the netns path.
struct Interface {
  std::string name;
  std::string mac;      // "aa:bb:cc:dd:ee:ff", may be empty
  std::string sandbox;  // CNI_NETNS for container interfaces
  std::optional<uint32_t> mtu;  // emitted for cniVersion >= 1.1.0 only
  bool operator==(const Interface&) const = default;
};

/// ips[]: an address in CIDR form on interfaces[interface].
struct IpConfig {
  std::string address;               // "10.244.1.5/32"
  std::string gateway;               // "10.244.1.1", may be empty
  std::optional<uint32_t> interface; // index into interfaces
  bool operator==(const IpConfig&) const = default;
};

/// routes[]
struct Route {
  std::string dst;  // "0.0.0.0/0"
  std::string gw;   // may be empty (on-link)
  bool operator==(const Route&) const = default;
};

/// dns: copied from the network config's "dns" when present.
struct Dns {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search;
  std::vector<std::string> options;
  bool operator==(const Dns&) const = default;
};

struct Result {
  std::string cni_version;  // as parsed; ResultToJson takes the output version explicitly
  std::vector<Interface> interfaces;
  std::vector<IpConfig> ips;
  std::vector<Route> routes;
  Dns dns;
  bool operator==(const Result&) const = default;
};

/// Serializes `result` in the shape of `cni_version` (one of kSupportedVersions), always with
/// "cniVersion", "interfaces", "ips", "routes" and "dns" keys.
std::string ResultToJson(const Result& result, absl::string_view cni_version);
/// The same as a JsonObject.
JsonObject ResultToJsonObject(const Result& result, absl::string_view cni_version);

/// Parses a result object of any supported version (e.g. the config's prevResult). Checks
/// types, that every ips[].address is an IPv4/IPv6 CIDR, every gateway an address, every
/// interface index in range. Errors: kInvalidArgument naming the field by its path (prefixed with
/// `obj.path()`, e.g. "prevResult.ips[0].address") and the value; no CNI code attached (the
/// caller decides: 7 for a config's prevResult).
absl::StatusOr<Result> ParseResult(const JsonObject& obj);
/// Parses result JSON text (as another plugin printed it).
absl::StatusOr<Result> ParseResultJson(absl::string_view json);

/// What sarenad reports for one endpoint (mirrors sarena.rpc.v1.Endpoint without depending
/// on the daemon layer).
struct EndpointInfo {
  std::string container_id;
  std::string ifname;       // CNI_IFNAME, the container-side interface
  std::string netns;        // CNI_NETNS
  std::string ip;           // "10.244.1.5"
  uint32_t prefix_len = 32;
  std::string gateway;      // the node's --node-ip
  std::string pod_mac;      // container-side MAC
  std::string host_ifname;  // "lxc" + 11 hex
  std::string host_mac;
  uint32_t mtu = 0;         // 0 = unknown
};

/// The ADD result for `ep`: interfaces [host veth, container `ifname` with sandbox],
/// ips [ip/prefix_len via gateway on interface 1], routes [gateway/32 on-link, 0.0.0.0/0 via
/// gateway], and `dns`.
Result BuildResult(const EndpointInfo& ep, const Dns& dns = {});

/// ADD with a prevResult (sarena-cni chained after another plugin; spec: a plugin given a
/// prevResult must pass it on, possibly modified): `prev` followed by `ours` — interfaces
/// appended (ours' ips[].interface indexes shifted accordingly), ips and routes appended, dns
/// from `ours` when it has any nameserver, else from `prev`.
Result MergeResults(const Result& prev, const Result& ours);

/// CHECK: verifies that `prev` (the config's prevResult) describes `live` — the container
/// interface named live.ifname exists with sandbox live.netns and MAC live.pod_mac, some ips[]
/// entry has live.ip/prefix_len (and gateway live.gateway when given), and a host interface
/// (no sandbox), when listed, is live.host_ifname. Routes are not compared (chained plugins may
/// change them; spec, CHECK). Errors: CNI code 104 (kCheckFailed), kFailedPrecondition, naming
/// the prevResult field, its value and sarenad's value.
absl::Status CheckPrevResult(const Result& prev, const EndpointInfo& live);

}  // namespace sarena::cni

#endif  // LIBSARENA_CNI_RESULT_H_
