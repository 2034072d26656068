// Kernel parameters through /proc/sys (what sysctl(8) does), optionally inside another network
// namespace. /proc/sys/net/* reflects the network namespace of the thread that opens the file,
// so the netns variants open it on a RunIn helper thread; the root namespace is never touched.
// Source: proc(5) "/proc/sys", sysctl(8), Documentation/networking/ip-sysctl.rst.
#ifndef LIBSARENA_NETLINK_SYSCTL_H_
#define LIBSARENA_NETLINK_SYSCTL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/netlink/netns.h"

namespace sarena::nl {

/// Maps a sysctl key to its file: "net.ipv4.conf.all.rp_filter" (dotted, sysctl(8) form) or
/// "net/ipv4/conf/all/rp_filter" (slash form, needed when a component has a dot, e.g. the
/// interface "eth0.100") -> "/proc/sys/net/ipv4/conf/all/rp_filter". A key containing '/' is
/// taken as the slash form (a leading "/proc/sys/" is accepted and kept).
/// Errors: kInvalidArgument for an empty key, an empty component, or a "." / ".." component.
absl::StatusOr<std::string> SysctlPath(absl::string_view key);

/// Reads a sysctl in the calling thread's namespace. Returns the file content without the
/// trailing newline ("1", "32768\t60999").
/// Errors: kNotFound "read sysctl '<key>': ..." when the key does not exist,
/// kPermissionDenied, kInvalidArgument for a bad key.
absl::StatusOr<std::string> GetSysctl(absl::string_view key);

/// Writes `value` (a newline is appended) to a sysctl in the calling thread's namespace.
/// Errors: kNotFound "write sysctl '<key>': ..." when the key does not exist, kInvalidArgument
/// when the kernel rejects the value (EINVAL) or the key is bad, kPermissionDenied.
absl::Status SetSysctl(absl::string_view key, absl::string_view value);

/// GetSysctl inside `ns` (via RunIn). Same errors plus those of entering the namespace.
absl::StatusOr<std::string> GetSysctl(const Netns& ns, absl::string_view key);

/// SetSysctl inside `ns` (via RunIn): only that namespace's value changes.
absl::Status SetSysctl(const Netns& ns, absl::string_view key, absl::string_view value);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_SYSCTL_H_
