// sarenad's unix-socket server: accepts many clients at once, reads length-prefixed protobuf
// Requests (libsarena/rpc/proto/sarenad.proto; framing in libsarena/rpc/framing.h: 4-byte
// big-endian length + body, at most 4 MiB), hands each to a Handler and writes its Response back.
//
// Concurrency model (Boost.Asio):
//   * all socket I/O runs asynchronously on one io_context, driven by Run() on the caller's thread
//     (or by Start() on a background thread) — a slow, stuck or dead client only ever occupies its
//     own connection;
//   * handlers run one at a time, in arrival order, on a single worker thread (endpoint
//     operations must be serialized), never on the I/O thread, so accepting and reading continue
//     while a request executes;
//   * per connection: read one request, execute it, write its response, then read the next (one
//     Response per Request, in order, as the protocol says).
// A client that sends a frame longer than the maximum, a body that is not a Request, closes the
// connection mid-frame or stays silent mid-frame past `io_timeout` is disconnected and logged; no
// other client notices.
//
// Resource bounds (issue 10 defect 6): a frame body is allocated as its bytes arrive (in chunks
// of at most 64 KiB; never the announced length up front), so a peer announcing 4 MiB and
// sending 4 bytes costs about 64 KiB; connections are bounded in total, per non-root uid and
// with a reserve only uid 0 may use (ServerOptions); idle peers are reaped after idle_timeout
// and a frame must complete within io_timeout.
//
// The socket's parent directory is created 0755 when missing; an existing one must be owned by
// the daemon's euid and not group- or other-writable (else Create fails, see there).
//
// Access control: the socket file gets `mode` (default 0600, owner = the daemon's uid) and every
// accepted connection's SO_PEERCRED uid (socket(7), unix(7)) must be in `allowed_uids`; a peer
// that is not gets one Response carrying Error{code = kPermissionDenied} to its first request
// (its handler is never called), then the connection is closed and the rejection logged.
#ifndef LIBSARENA_DAEMON_SERVER_H_
#define LIBSARENA_DAEMON_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace sarena::daemon {

/// The protocol's messages (libsarena/rpc/proto/sarenad.proto).
namespace v1 = ::sarena::rpc::v1;

/// Credentials of the connected peer process, from getsockopt(SO_PEERCRED) at accept time
/// (the values of the peer when it called connect(2); unix(7)).
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

/// Executes one request. Called on the server's single worker thread, one request at a time, so
/// a handler needs no locking against other requests. It must always return a Response: failures
/// go into Response.error (see ErrorResponse), never into an exception.
using Handler = std::function<v1::Response(const v1::Request& request, const PeerCred& peer)>;

/// Told about every request the Handler executed, on the worker thread right after the
/// Handler returned: the request, its response and `elapsed` = the time from the request being
/// received whole (decoded, queued for the worker) to its response being ready — queueing
/// behind earlier requests included, as the client sees it. For metrics (metrics_node.h).
using RequestObserver = std::function<void(const v1::Request& request,
                                           const v1::Response& response, absl::Duration elapsed)>;

struct ServerOptions {
  /// Path of the unix socket (--socket). Its parent directory is created (mode 0755) if missing.
  std::string socket_path = "/run/sarena/sarenad.sock";
  /// Permission bits of the socket file (chmod(2) after bind, before listen).
  mode_t mode = 0600;
  /// SO_PEERCRED uids allowed to talk to the daemon. Empty = everyone who can open the socket.
  std::vector<uid_t> allowed_uids = {0};
  /// A connection that is in the middle of a frame (request being received, or response being
  /// sent) longer than this is closed. Idle connections between requests are not timed out
  /// by this; see idle_timeout. Zero = no limit.
  absl::Duration io_timeout = absl::Seconds(30);
  /// A connection that sends nothing for this long between requests is closed (the CNI plugin
  /// opens one connection per invocation, so a long-idle peer is reaped). Zero = no limit.
  absl::Duration idle_timeout = absl::Minutes(2);
  /// Total open connections. A connection beyond this is accepted and immediately closed
  /// (logged, counted in rejected_overload).
  uint32_t max_connections = 1024;
  /// Open connections per SO_PEERCRED uid other than 0. A non-root peer beyond this is accepted
  /// and closed at once. Zero = no per-uid limit. uid 0 (the CNI plugin) is bounded only by
  /// max_connections.
  uint32_t max_connections_per_uid = 32;
  /// Of max_connections, this many can only be used by uid 0: non-root peers are refused once
  /// max_connections - reserved_root_connections connections are open, so no non-root client
  /// can lock the CNI plugin out. Clamped to max_connections.
  uint32_t reserved_root_connections = 128;
  /// Called after each executed request (see RequestObserver). Empty = none.
  RequestObserver observe;
};

/// Counters for logs, `sarenad` status output and tests. All monotonic except active_connections.
struct ServerStats {
  uint64_t accepted = 0;            // connections accepted (including later rejected ones)
  uint64_t rejected_peer = 0;       // closed because the SO_PEERCRED uid was not allowed
  uint64_t rejected_overload = 0;   // closed by a connection limit (total, per uid, root reserve)
  uint64_t protocol_errors = 0;     // closed for an oversized frame or an unparseable body
  uint64_t aborted = 0;             // peer vanished or timed out in the middle of a frame
  uint64_t requests = 0;            // requests handed to the Handler
  uint64_t active_connections = 0;  // currently open
};

class Server {
 public:
  /// Creates the socket's parent directory, binds and listens (so a client may connect as soon
  /// as this returns; requests are served once Run/Start runs). A leftover socket file is
  /// removed only when nothing answers on it (connect(2) fails with ECONNREFUSED).
  /// Errors:
  ///   kInvalidArgument    empty handler, empty/too long socket_path (sun_path is 108 bytes);
  ///   kAlreadyExists      "another sarenad is listening on '<path>'" (a live server answered);
  ///   kFailedPrecondition the path exists and is not a socket (never removed); or the socket's
  ///                       directory is writable by group/others or not owned by the daemon's
  ///                       euid ("socket directory '<dir>' ...", nothing is created in it);
  ///   ErrnoStatus codes   mkdir/bind/chmod/listen failures, naming the path.
  static absl::StatusOr<std::unique_ptr<Server>> Create(ServerOptions options, Handler handler);

  /// Stops (if running), waits for the request in progress, closes every connection and removes
  /// the socket file if it is still the one this server created.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Serves on the calling thread until Stop(). Returns at once if Stop() was already called.
  /// Call at most once, and not together with Start().
  void Run();

  /// Serves on a background thread (for tests and for embedding); Stop() or the destructor
  /// joins it. Errors: kFailedPrecondition when already running or stopped.
  absl::Status Start();

  /// Graceful stop, callable from any thread (not from a signal handler: use a
  /// boost::asio::signal_set on io_context(), as sarenad does), idempotent: stops accepting,
  /// lets the request currently executing finish and its response be written (bounded by
  /// io_timeout), closes all connections, and makes Run() return / joins the Start() thread.
  /// Requests received but not yet started are dropped (their clients see the connection close).
  /// Called from a Handler / PostToWorker function or from the I/O thread it only initiates the
  /// stop (it cannot wait for itself); from any other thread it also joins the Start() thread.
  /// Run() returns after the grace period even if a handler never returns, but the destructor
  /// still waits for that handler (it may use the handler's objects): a process that must exit
  /// regardless bounds that itself (sarenad _Exit()s after the grace period plus 5 s).
  void Stop();

  /// Queues `fn` on the worker that runs handlers, serialized with requests (e.g. the daemon's
  /// periodic reconcile). Dropped after Stop().
  void PostToWorker(std::function<void()> fn);

  /// The I/O loop, e.g. for a signal_set or timers (handlers run on the I/O thread: keep short).
  boost::asio::io_context& io_context();

  const std::string& socket_path() const;
  ServerStats stats() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A Response with only `error` set: code = status.code() (an absl::StatusCode value), message =
/// status.message(), cni_code as given (CNI spec 1.1.0 "Error" codes 1-7, 11, 50, 51; 100+ sarena;
/// 0 = let the plugin map the code). `status` must not be OK.
v1::Response ErrorResponse(const absl::Status& status, uint32_t cni_code = 0);

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_SERVER_H_
