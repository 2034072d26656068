// The network namespaces of this machine as `sarena-diag trace --live` sees them: the caller's
// (the live node) and every named namespace under /var/run/netns (ip-netns(8)), each with its
// nsfs inode and IPv4 addresses; and which named namespaces are the node's pods (a veth whose
// peer is in the caller's namespace: IFLA_LINK_NETNSID resolved with RTM_GETNSID).
// Source: ip-netns(8), rtnetlink(7), include/uapi/linux/net_namespace.h.
#ifndef LIBSARENA_LIVE_NETNS_SCAN_H_
#define LIBSARENA_LIVE_NETNS_SCAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"

namespace sarena::live {

/// One network namespace.
struct NetnsInfo {
  /// "/proc/self/ns/net" for the caller's, "/var/run/netns/<name>" for a named one.
  std::string path;
  /// The iproute2 name ("" for the caller's namespace when it has none).
  std::string name;
  /// nsfs inode (`readlink /proc/PID/ns/net` shows net:[INODE]).
  uint64_t inode = 0;
  /// The caller's own namespace (the live node).
  bool current = false;
  /// Every IPv4 address configured in it (any device, loopback excluded).
  std::vector<net::Ipv4> addrs;
};

/// The caller's namespace first, then every named namespace under /var/run/netns (sorted by
/// name; one that is the caller's own is merged into the first entry's name). A named namespace
/// that cannot be entered is left out. Errors: kPermissionDenied / kInternal when the caller's
/// own namespace cannot be read.
absl::StatusOr<std::vector<NetnsInfo>> ScanNetns();

/// Names of the named namespaces (ip-netns(8): the entries of /var/run/netns), sorted; none
/// when the directory is absent (no named namespace yet) or unreadable.
std::vector<std::string> NamedNetns();

/// Names (under /var/run/netns) of the namespaces that hold the peer of a veth of the caller's
/// namespace: the pods of the live node (and routers or other namespaces wired to it), sorted.
/// Errors: netlink failures of the caller's namespace (kInternal with the errno text).
absl::StatusOr<std::vector<std::string>> VethPeerNetnsNames();

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_NETNS_SCAN_H_
