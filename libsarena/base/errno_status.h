// Conversion of kernel errno values into absl::Status, keeping the errno in the message.
#ifndef LIBSARENA_BASE_ERRNO_STATUS_H_
#define LIBSARENA_BASE_ERRNO_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace sarena {

/// Maps a positive errno (e.g. EEXIST, ENOENT, EPERM) to the closest absl::StatusCode:
/// ENOENT/ENODEV/ESRCH/ENXIO -> kNotFound, EEXIST -> kAlreadyExists, EPERM/EACCES ->
/// kPermissionDenied, EINVAL/ERANGE/E2BIG -> kInvalidArgument, ENOSPC/ENOMEM/ENOBUFS ->
/// kResourceExhausted, EBUSY/EAGAIN -> kUnavailable, EOPNOTSUPP/ENOTSUP/ENOSYS -> kUnimplemented,
/// ETIMEDOUT -> kDeadlineExceeded, everything else -> kInternal.
absl::StatusCode ErrnoToStatusCode(int err);

/// Builds "<what>: <strerror(err)> (errno <err>)[: <detail>]" with the code from ErrnoToStatusCode.
/// `what` follows the library convention "<verb> <object> '<name>'". `detail` carries e.g. the
/// netlink extended-ack text or the libbpf verifier hint; empty means none.
absl::Status ErrnoStatus(int err, absl::string_view what, absl::string_view detail = {});

}  // namespace sarena

#endif  // LIBSARENA_BASE_ERRNO_STATUS_H_
