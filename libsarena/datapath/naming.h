// Interface naming for the datapath.
#ifndef LIBSARENA_DATAPATH_NAMING_H_
#define LIBSARENA_DATAPATH_NAMING_H_

#include <string>

#include "absl/strings/string_view.h"

namespace sarena::datapath {

/// Name of the node-side veth pair's host end (carries --node-ip/32, the pods' gateway).
inline constexpr char kHostDevice[] = "sarena_host";
/// Name of the other end of that pair (from_container sends host-bound traffic into it).
inline constexpr char kNetDevice[] = "sarena_net";

/// Host-side veth name of one pod attachment: "lxc" + the first 11 hex digits of
/// SHA-256(container_id + "/" + ifname) — 14 characters, under IFNAMSIZ (16 incl. NUL).
/// Deterministic, so DEL and CHECK find the veth from the CNI arguments alone (CNI spec:
/// CNI_CONTAINERID and CNI_IFNAME identify an attachment). The separator can occur in neither
/// part, so distinct attachments hash distinct inputs; the 44-bit truncation can still collide
/// (about 2^-44 per pair), which is why ADD refuses an existing name and a DEL without a record
/// checks the owner mark (VethOwnerAlias) before deleting.
std::string HostVethName(absl::string_view container_id, absl::string_view ifname);

/// Owner mark set as IFLA_IFALIAS on the host-side veth at ADD: "sarena:" + container_id + "/" +
/// ifname (at most IFALIASZ-1 = 255 bytes; longer container IDs are cut to fit, which keeps the
/// prefix unique enough for a mismatch check). `ip link show` prints it as "alias".
std::string VethOwnerAlias(absl::string_view container_id, absl::string_view ifname);

/// True when `alias` is an owner mark as VethOwnerAlias makes them (the "sarena:" prefix).
bool IsVethOwnerAlias(absl::string_view alias);

/// The prefix of RetiredVethName.
inline constexpr absl::string_view kRetiredVethPrefix = "sgone";
/// Name of a veth pair DEL took out of service, both ends (EndpointJobs deletes it after the
/// reply): "sgone" + `n` in hex (n < 2^40), at most 15 characters (IFNAMSIZ - 1). At start a
/// device is deleted as a leftover only with this prefix *and* an owner mark (IsVethOwnerAlias),
/// never by name alone.
std::string RetiredVethName(uint64_t n);

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_NAMING_H_
