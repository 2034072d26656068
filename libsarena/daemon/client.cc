#include "libsarena/daemon/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "libsarena/cni/error.h"
#include "libsarena/daemon/framing.h"

namespace sarena::daemon {
namespace {

absl::Status ConnectError(absl::string_view path, int err) {
  return absl::UnavailableError(absl::StrCat("connect to sarenad socket '", path,
                                             "': ", strerror(err), " (errno ", err, ")"));
}

absl::string_view KindName(v1::Request::KindCase k) {
  switch (k) {
    case v1::Request::kEndpointAdd:
      return "endpoint_add";
    case v1::Request::kEndpointDel:
      return "endpoint_del";
    case v1::Request::kEndpointCheck:
      return "endpoint_check";
    case v1::Request::kEndpointList:
      return "endpoint_list";
    case v1::Request::kStatus:
      return "status";
    case v1::Request::kGc:
      return "gc";
    case v1::Request::KIND_NOT_SET:
      return "nothing";
  }
  return "?";
}

absl::string_view KindName(v1::Response::KindCase k) {
  switch (k) {
    case v1::Response::kEndpointAdd:
      return "endpoint_add";
    case v1::Response::kEndpointDel:
      return "endpoint_del";
    case v1::Response::kEndpointCheck:
      return "endpoint_check";
    case v1::Response::kEndpointList:
      return "endpoint_list";
    case v1::Response::kStatus:
      return "status";
    case v1::Response::kGc:
      return "gc";
    case v1::Response::KIND_NOT_SET:
      return "nothing";
  }
  return "?";
}

// Request and Response share field numbers 1..6 <-> 2..7 for the same kinds.
bool KindsMatch(v1::Request::KindCase req, v1::Response::KindCase resp) {
  return static_cast<int>(resp) == static_cast<int>(req) + 1;
}

}  // namespace

absl::StatusOr<Client> Client::Connect(absl::string_view socket_path, absl::Duration timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty()) {
    return absl::InvalidArgumentError("connect to sarenad: socket path is empty");
  }
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect to sarenad socket '", socket_path, "': path is ",
                     socket_path.size(), " bytes, a unix socket path has at most ",
                     sizeof(addr.sun_path) - 1));
  }
  std::copy(socket_path.begin(), socket_path.end(), addr.sun_path);

  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return ConnectError(socket_path, errno);

  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) break;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN) {
      // Unix sockets report a full listen backlog as EAGAIN: retry until the deadline.
      if (absl::Now() >= deadline) return ConnectError(socket_path, ETIMEDOUT);
      absl::SleepFor(absl::Milliseconds(10));
      continue;
    }
    if (err == EINPROGRESS) {
      int64_t ms = std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now()));
      pollfd p{fd.get(), POLLOUT, 0};
      int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
      if (rc == 0) return ConnectError(socket_path, ETIMEDOUT);
      if (rc < 0) return ConnectError(socket_path, errno);
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) return ConnectError(socket_path, so_error);
      break;
    }
    return ConnectError(socket_path, err);
  }
  return Client(std::move(fd), std::string(socket_path));
}

absl::StatusOr<v1::Response> Client::Call(const v1::Request& request, absl::Duration timeout) {
  if (broken_) {
    return absl::FailedPreconditionError(
        absl::StrCat("call sarenad at '", socket_path_,
                     "': an earlier call failed mid-exchange; reconnect"));
  }
  if (!fd_) {
    return absl::FailedPreconditionError("call sarenad: client is not connected");
  }
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status s = WriteFrame(fd_.get(), request, timeout);
  if (!s.ok()) {
    broken_ = true;
    return absl::Status(s.code(), absl::StrCat("send ", KindName(request.kind_case()),
                                               " request to sarenad at '", socket_path_,
                                               "': ", s.message()));
  }
  v1::Response response;
  s = ReadFrame(fd_.get(), &response, std::max(absl::ZeroDuration(), deadline - absl::Now()));
  if (!s.ok()) {
    broken_ = true;
    return absl::Status(s.code(), absl::StrCat("receive ", KindName(request.kind_case()),
                                               " reply from sarenad at '", socket_path_,
                                               "': ", s.message()));
  }
  return response;
}

absl::StatusOr<v1::Response> Client::CallChecked(const v1::Request& request,
                                                 absl::Duration timeout) {
  absl::StatusOr<v1::Response> response = Call(request, timeout);
  if (!response.ok()) return response.status();
  if (response->has_error()) return StatusFromError(response->error());
  if (!KindsMatch(request.kind_case(), response->kind_case())) {
    return cni::MakeCniError(
        cni::ErrorCode::kProtocolError, absl::StatusCode::kInternal,
        absl::StrCat("sarenad answered ", KindName(response->kind_case()), " to ",
                     KindName(request.kind_case())));
  }
  return response;
}

absl::Status StatusFromError(const v1::Error& error) {
  absl::StatusCode code = absl::StatusCode::kUnknown;
  if (error.code() > 0 && error.code() <= static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    code = static_cast<absl::StatusCode>(error.code());
  }
  std::string message = error.message().empty() ? "sarenad reported an error without a message"
                                                : error.message();
  return cni::MakeCniError(error.cni_code(), code, message);
}

v1::Error ProtoErrorFromStatus(const absl::Status& status) {
  v1::Error e;
  e.set_code(static_cast<int32_t>(status.code()));
  e.set_message(std::string(status.message()));
  e.set_cni_code(cni::CniCodeOf(status));
  return e;
}

}  // namespace sarena::daemon
