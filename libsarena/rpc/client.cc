#include "libsarena/rpc/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"
#include "libsarena/cni/env.h"
#include "libsarena/cni/error.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/kind.h"

namespace sarena::rpc {
namespace {

absl::Status ConnectError(absl::string_view path, int err) {
  return absl::UnavailableError(absl::StrCat("connect to sarenad socket '", path,
                                             "': ", strerror(err), " (errno ", err, ")"));
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

namespace {

// The dotted path of the first string field (recursively) of `msg` that is not UTF-8, and the
// offending offset; "" when all are valid.
std::string FindInvalidUtf8Field(const google::protobuf::Message& msg, const std::string& prefix,
                                 size_t* offset) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* refl = msg.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  refl->ListFields(msg, &fields);
  for (const FieldDescriptor* f : fields) {
    std::string path = prefix.empty() ? f->name() : absl::StrCat(prefix, ".", f->name());
    if (f->type() == FieldDescriptor::TYPE_STRING) {
      int n = f->is_repeated() ? refl->FieldSize(msg, f) : 1;
      for (int i = 0; i < n; ++i) {
        std::string v = f->is_repeated() ? refl->GetRepeatedString(msg, f, i)
                                         : refl->GetString(msg, f);
        if (std::optional<size_t> bad = cni::FirstInvalidUtf8(v)) {
          *offset = *bad;
          return f->is_repeated() ? absl::StrCat(path, "[", i, "]") : path;
        }
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      int n = f->is_repeated() ? refl->FieldSize(msg, f) : 1;
      for (int i = 0; i < n; ++i) {
        const google::protobuf::Message& sub = f->is_repeated()
                                                   ? refl->GetRepeatedMessage(msg, f, i)
                                                   : refl->GetMessage(msg, f);
        std::string p = f->is_repeated() ? absl::StrCat(path, "[", i, "]") : path;
        std::string found = FindInvalidUtf8Field(sub, p, offset);
        if (!found.empty()) return found;
      }
    }
  }
  return "";
}

}  // namespace

absl::Status CheckRequestUtf8(const v1::Request& request) {
  size_t offset = 0;
  std::string field = FindInvalidUtf8Field(request, "", &offset);
  if (field.empty()) return absl::OkStatus();
  return cni::MakeCniError(
      cni::ErrorCode::kInternal, absl::StatusCode::kInvalidArgument,
      absl::StrCat("request field '", field, "' is not valid UTF-8 (offset ", offset,
                   "): sarenad could not decode it; nothing was sent"));
}

std::vector<uid_t> TrustedDaemonUids() {
  std::vector<uid_t> uids = {0};
  if (::geteuid() != 0) uids.push_back(::geteuid());
  return uids;
}

namespace {

absl::Status Untrusted(absl::string_view path, absl::string_view why) {
  return cni::MakeCniError(
      cni::ErrorCode::kUntrustedDaemon, absl::StatusCode::kPermissionDenied,
      absl::StrCat("refusing sarenad socket '", path, "': ", why));
}

std::string WantUids(const std::vector<uid_t>& allowed) {
  return absl::StrCat(allowed.size() > 1 ? "want one of uids " : "want uid ",
                      absl::StrJoin(allowed, ", "));
}

bool Allowed(const std::vector<uid_t>& allowed, uid_t uid) {
  return std::find(allowed.begin(), allowed.end(), uid) != allowed.end();
}

}  // namespace

absl::Status CheckSocketDirectory(absl::string_view socket_path) {
  return CheckSocketDirectory(socket_path, TrustedDaemonUids());
}

absl::Status CheckSocketDirectory(absl::string_view socket_path,
                                  const std::vector<uid_t>& allowed_owners) {
  std::string path(socket_path);
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return ConnectError(socket_path, errno);
  if (!S_ISDIR(st.st_mode)) {
    return Untrusted(socket_path, absl::StrCat("'", dir, "' is not a directory"));
  }
  if (!Allowed(allowed_owners, st.st_uid)) {
    return Untrusted(socket_path, absl::StrCat("its directory '", dir, "' is owned by uid ",
                                               st.st_uid, ", ", WantUids(allowed_owners)));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    absl::string_view who = (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "group and others"
                            : (st.st_mode & S_IWGRP)                        ? "its group"
                                                                            : "others";
    char mode[16];
    std::snprintf(mode, sizeof mode, "0%o", static_cast<unsigned>(st.st_mode & 07777));
    return Untrusted(socket_path, absl::StrCat("its directory '", dir, "' is writable by ", who,
                                               " (mode ", mode, ")"));
  }
  struct stat sock {};
  if (::lstat(path.c_str(), &sock) == 0 && !S_ISSOCK(sock.st_mode)) {
    return Untrusted(socket_path, "it is not a socket");
  }
  return absl::OkStatus();
}

absl::StatusOr<Client> Client::ConnectTrusted(absl::string_view socket_path,
                                              absl::Duration timeout) {
  if (absl::Status s = CheckSocketDirectory(socket_path); !s.ok()) return s;
  absl::StatusOr<Client> client = Connect(socket_path, timeout);
  if (!client.ok()) return client.status();
  if (absl::Status s = client->VerifyPeer(TrustedDaemonUids()); !s.ok()) return s;
  return client;
}

absl::Status Client::VerifyPeer(const std::vector<uid_t>& allowed_uids) const {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    int err = errno;
    return absl::InternalError(absl::StrCat("sarenad socket '", socket_path_,
                                            "': SO_PEERCRED: ", strerror(err), " (errno ", err,
                                            ")"));
  }
  if (Allowed(allowed_uids, cred.uid)) return absl::OkStatus();
  return Untrusted(socket_path_, absl::StrCat("it is served by uid ", cred.uid, " (pid ",
                                              cred.pid, "), ", WantUids(allowed_uids)));
}

absl::Status CheckResponseKind(const v1::Request& request, const v1::Response& response,
                               absl::string_view socket_path) {
  if (response.has_error() || KindsMatch(request.kind_case(), response.kind_case())) {
    return absl::OkStatus();
  }
  return cni::MakeCniError(
      cni::ErrorCode::kProtocolError, absl::StatusCode::kInternal,
      absl::StrCat("sarenad at '", socket_path, "' answered ", ResponseKindName(response.kind_case()),
                   " to ", RequestKindName(request.kind_case())));
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
  // proto3 strings must be UTF-8: the daemon refuses to parse anything else, which would look
  // like a transport failure ("try again later") forever. Callers validate their input first.
  if (absl::Status bad = CheckRequestUtf8(request); !bad.ok()) return bad;
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status s = WriteFrame(fd_.get(), request, timeout);
  if (!s.ok()) {
    broken_ = true;
    return absl::Status(s.code(), absl::StrCat("send ", RequestKindName(request.kind_case()),
                                               " request to sarenad at '", socket_path_,
                                               "': ", s.message()));
  }
  v1::Response response;
  s = ReadFrame(fd_.get(), &response, std::max(absl::ZeroDuration(), deadline - absl::Now()));
  if (!s.ok()) {
    broken_ = true;
    return absl::Status(s.code(), absl::StrCat("receive ", RequestKindName(request.kind_case()),
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
  if (absl::Status s = CheckResponseKind(request, *response, socket_path_); !s.ok()) return s;
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

}  // namespace sarena::rpc
