// Blocking client of sarenad's unix socket, used by the CNI plugin (tools/sarena-cni), the
// `sarena` CLI and tests. One connection, one request at a time (the protocol answers requests
// in order, one Response per Request).
#ifndef LIBSARENA_RPC_CLIENT_H_
#define LIBSARENA_RPC_CLIENT_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::rpc {

/// Default timeouts of the client. ADD may create a veth pair, program routes and attach BPF,
/// so calls get a generous deadline; connecting to a local unix socket is immediate or fails.
inline constexpr absl::Duration kDefaultConnectTimeout = absl::Seconds(5);
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(60);

/// A connection to sarenad. Move-only; closes the socket on destruction.
class Client {
 public:
  /// Connects to the daemon's unix stream socket at `socket_path` (e.g.
  /// "/run/sarena/sarenad.sock"), waiting at most `timeout` (a full listen backlog is retried
  /// until then).
  /// Errors: kUnavailable "connect to sarenad socket '<path>': <strerror> (errno N)" when
  /// nothing listens there (ENOENT, ECONNREFUSED, EACCES, ...) or on timeout (ETIMEDOUT);
  /// kInvalidArgument when the path is empty or longer than a sockaddr_un allows (107 bytes).
  static absl::StatusOr<Client> Connect(absl::string_view socket_path,
                                        absl::Duration timeout = kDefaultConnectTimeout);

  /// Connect for the CNI plugin, which must not hand pod data to, or take a result from,
  /// whatever happens to listen on daemonSocket (issue 10, defect 7): CheckSocketDirectory
  /// first, then Connect, then VerifyPeer(TrustedDaemonUids()). Errors: those of the three;
  /// the directory and peer refusals carry CNI code 106 (kUntrustedDaemon; CNI spec "Error
  /// codes": 100 and above are the plugin's own) and name the path.
  static absl::StatusOr<Client> ConnectTrusted(absl::string_view socket_path,
                                               absl::Duration timeout = kDefaultConnectTimeout);

  /// Checks the credentials of the process that listens on the other end (SO_PEERCRED: the
  /// listener's uid at listen() time) against `allowed_uids`.
  /// Errors: kPermissionDenied, CNI code 106, "refusing sarenad socket '<path>': it is served by
  /// uid U (pid P), want uid 0"; kInternal when getsockopt fails.
  absl::Status VerifyPeer(const std::vector<uid_t>& allowed_uids) const;

  Client(Client&&) = default;
  Client& operator=(Client&&) = default;

  /// Sends `request` and waits (at most `timeout`, for write and read together) for its
  /// Response. A daemon-side failure is NOT an error here: it comes back as an OK StatusOr whose
  /// Response has `error` set (with the CNI code the daemon chose) — see CallChecked.
  /// Errors: kInvalidArgument (CNI code 100) when a string field of `request` is not UTF-8 —
  /// see CheckRequestUtf8; nothing is sent and the client stays usable. Transport errors:
  /// kUnavailable when the daemon closed or reset the connection;
  /// kDeadlineExceeded on timeout; kDataLoss when the reply is truncated or does not parse;
  /// kResourceExhausted when a frame exceeds kMaxFrameBytes; kFailedPrecondition when an
  /// earlier Call on this client failed mid-exchange (the stream is then out of step; reconnect).
  absl::StatusOr<v1::Response> Call(const v1::Request& request,
                                    absl::Duration timeout = kDefaultCallTimeout);

  /// Like Call, but a Response carrying `error` becomes a Status: its code is
  /// `error.code` (an absl::StatusCode value; kUnknown when out of range), its message
  /// `error.message`, and `error.cni_code` (when non-zero) is attached as the CNI error code
  /// payload (read it back with sarena::cni::CniCodeOf). Also checks that the Response's kind
  /// matches the Request's (see CheckResponseKind).
  absl::StatusOr<v1::Response> CallChecked(const v1::Request& request,
                                           absl::Duration timeout = kDefaultCallTimeout);

  /// The socket path given to Connect.
  const std::string& socket_path() const { return socket_path_; }
  /// The connected descriptor (for tests / poll loops); owned by the Client.
  int fd() const { return fd_.get(); }

 private:
  Client(UniqueFd fd, std::string socket_path)
      : fd_(std::move(fd)), socket_path_(std::move(socket_path)) {}

  UniqueFd fd_;
  std::string socket_path_;
  bool broken_ = false;
};

/// The uids whose daemon the plugin trusts: {0}, plus the caller's effective uid when it is not
/// root (a test or a rootless setup running plugin and daemon as one user). A root plugin trusts
/// only root.
std::vector<uid_t> TrustedDaemonUids();

/// The plugin side of "the socket's directory must not be writable by others": the directory
/// holding `socket_path` (stat, following symlinks) must be a directory owned by a uid in
/// `allowed_owners` (default TrustedDaemonUids()) with neither group nor other write permission —
/// otherwise another user could have replaced the socket. When the socket file exists it must be
/// a socket. Ancestors are not checked (a sticky /tmp above a 0700 root directory is fine).
/// Errors: kPermissionDenied, CNI code 106, "refusing sarenad socket '<path>': its directory
/// '<dir>' is writable by group and others (mode 0777)" / "... is owned by uid U, want uid 0" /
/// "... is not a socket"; kUnavailable (as Connect) when the directory does not exist.
absl::Status CheckSocketDirectory(absl::string_view socket_path);
absl::Status CheckSocketDirectory(absl::string_view socket_path,
                                  const std::vector<uid_t>& allowed_owners);

/// Checks that every string field of `request` (recursively) is valid UTF-8, as proto3 requires
/// of `string` fields and sarenad's parser enforces. sarena-cni validates its input earlier
/// (CNI code 4 for the environment, 6 for the config); this is the safety net before sending.
/// Errors: kInvalidArgument, CNI code 100 (a caller's bug), "request field
/// 'endpoint_add.pod_name' is not valid UTF-8 (offset N): ...".
absl::Status CheckRequestUtf8(const v1::Request& request);

/// Checks that `response` answers `request`: it carries `error`, or the kind of the request
/// (endpoint_add for endpoint_add, ...). Errors: kInternal, CNI code 105 (kProtocolError),
/// "sarenad at '<socket_path>' answered <kind> to <kind>" ("nothing" for an empty Response).
absl::Status CheckResponseKind(const v1::Request& request, const v1::Response& response,
                               absl::string_view socket_path);

/// Converts a daemon-reported v1::Error into an absl::Status (never OK): code from `error.code`
/// (kUnknown when it is 0/OK or out of range), message `error.message`, CNI code payload from
/// `error.cni_code` when non-zero.
absl::Status StatusFromError(const v1::Error& error);

/// Fills a v1::Error from a non-OK `status`: code, message, and cni_code =
/// sarena::cni::CniCodeOf(status) (the payload when present, else the default mapping of the
/// status code). Used by the daemon to answer a failed request.
v1::Error ProtoErrorFromStatus(const absl::Status& status);

}  // namespace sarena::rpc

#endif  // LIBSARENA_RPC_CLIENT_H_
