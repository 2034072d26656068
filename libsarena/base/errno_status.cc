#include "libsarena/base/errno_status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sarena {

absl::StatusCode ErrnoToStatusCode(int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ESRCH:
    case ENXIO:
      return absl::StatusCode::kNotFound;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EPERM:
    case EACCES:
      return absl::StatusCode::kPermissionDenied;
    case EINVAL:
    case ERANGE:
    case E2BIG:
    case ENAMETOOLONG:
      return absl::StatusCode::kInvalidArgument;
    case ENOSPC:
    case ENOMEM:
    case ENOBUFS:
      return absl::StatusCode::kResourceExhausted;
    case EBUSY:
    case EAGAIN:
      return absl::StatusCode::kUnavailable;
    case EOPNOTSUPP:
    case ENOSYS:
      return absl::StatusCode::kUnimplemented;
    case ETIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoStatus(int err, absl::string_view what, absl::string_view detail) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err), " (errno ", err, ")");
  if (!detail.empty()) absl::StrAppend(&msg, ": ", detail);
  return absl::Status(ErrnoToStatusCode(err), msg);
}

}  // namespace sarena
