// Calico IP pools (IPPool resources) from `calicoctl get ippools -o json` (projectcalico.org/v3)
// or `kubectl get ippools.crd.projectcalico.org -o json` (crd.projectcalico.org/v1), following
// Calico's IPPool reference (docs.tigera.io, "IP pool" resource): spec.cidr, ipipMode,
// vxlanMode (Always | CrossSubnet | Never), natOutgoing, disabled, blockSize, nodeSelector.
#ifndef LIBSARENA_MODEL_IPPOOL_H_
#define LIBSARENA_MODEL_IPPOOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// Encapsulation mode of a pool. kCrossSubnet encapsulates only towards nodes outside the local
/// node's subnet (the subnet of its projectcalico.org/IPv4Address).
enum class EncapMode : uint8_t { kNever, kAlways, kCrossSubnet };
/// "Never", "Always", "CrossSubnet" (the v3 spelling).
absl::string_view ToString(EncapMode mode);
/// Accepts the v3 names, any case, and the old v1 forms "always", "cross-subnet", "off", "";
/// empty means kNever. kInvalidArgument otherwise.
absl::StatusOr<EncapMode> ParseEncapMode(absl::string_view text, absl::string_view field = "mode");

struct IpPool {
  std::string name;
  std::string api_version;          // "projectcalico.org/v3" | "crd.projectcalico.org/v1" | ""
  net::Ipv4Prefix cidr;             // canonical
  EncapMode ipip_mode = EncapMode::kNever;
  EncapMode vxlan_mode = EncapMode::kNever;
  bool nat_outgoing = false;
  bool disabled = false;
  uint8_t block_size = 26;          // Calico default for IPv4
  std::string node_selector;        // Calico selector expression, kept as text ("all()" default)
};

/// Parses an IPPool list: {"kind":"IPPoolList","items":[...]}, any {"items":[...]} list
/// (kubectl), a bare JSON array of pools, or a single pool object. Per pool the encapsulation is
/// read from spec.ipipMode / spec.vxlanMode, or from the legacy v1 form
/// spec.ipip: {"enabled": bool, "mode": "always" | "cross-subnet"} (enabled without mode means
/// Always). IPv6 pools are skipped. Errors: kInvalidArgument "parse <file_name>:
/// items[3].spec.cidr: ..." naming the field.
absl::StatusOr<std::vector<IpPool>> ParseIpPools(absl::string_view json,
                                                 absl::string_view file_name = "ippools.json");

/// The enabled pool containing `ip` with the longest prefix (most specific), or nullptr.
/// Disabled pools still match when `include_disabled` (allocations made before disabling).
const IpPool* FindIpPool(const std::vector<IpPool>& pools, const net::Ipv4& ip,
                         bool include_disabled = true);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_IPPOOL_H_
