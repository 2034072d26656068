// The HTTP endpoint of sarenad's metrics (--metrics-address): GET /metrics answered with the
// text exposition format (metrics.h), through Boost.Beast on the daemon's own io_context, the
// page rendered on the daemon's worker thread (serialized with CNI requests, as the handler
// requires).
//
// Bounded, so a scraper cannot wedge sarenad:
//   * one request per connection (the response says "Connection: close" and the connection is
//     closed after it); a request is at most max_request_bytes (header and body) — more is
//     answered 431/413 and closed;
//   * a connection is closed `timeout` after it was accepted, whatever it is doing (a silent or
//     slow peer costs one socket for that long);
//   * at most max_connections are open; one beyond is accepted and closed at once (counted);
//   * at most one rendering is queued on the worker: scrapes that arrive while one is pending
//     wait for it and get the same page; a rendering not done within collect_timeout (the worker
//     is busy with a long request) is answered 503.
// Other paths answer 404, methods other than GET/HEAD 405.
#ifndef LIBSARENA_DAEMON_METRICS_SERVER_H_
#define LIBSARENA_DAEMON_METRICS_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "libsarena/daemon/server.h"

namespace sarena::daemon {

/// Parses a listen address: "IPv4:port" (127.0.0.1:9964), "[IPv6]:port" ([::1]:9964) or ":port"
/// (every address: [::] dual-stack, see MetricsServer::Create). IP literals only, port 1..65535.
/// Errors: kInvalidArgument "invalid <flag> '<text>': <why>".
absl::StatusOr<boost::asio::ip::tcp::endpoint> ParseListenAddress(absl::string_view text,
                                                                  absl::string_view flag);

struct MetricsServerOptions {
  /// Where to listen (ParseListenAddress). Port 0 = any free port (tests; see local_endpoint()).
  /// The unspecified IPv6 address [::] listens dual-stack (IPV6_V6ONLY off), falling back to
  /// 0.0.0.0 when the host has no IPv6.
  boost::asio::ip::tcp::endpoint address;
  /// Open connections at most; more are accepted and closed at once.
  uint32_t max_connections = 16;
  /// A connection is closed this long after it was accepted, finished or not.
  absl::Duration timeout = absl::Seconds(10);
  /// A scrape whose page is not rendered within this is answered 503 (must be < timeout).
  absl::Duration collect_timeout = absl::Seconds(5);
  /// Largest request (request line, headers and body), bytes.
  uint32_t max_request_bytes = 8192;
};

/// Renders the page (MetricsServer calls it on the Server's worker thread). An error is
/// answered 500 with its message.
using MetricsRenderer = std::function<absl::StatusOr<std::string>()>;

/// Counters for tests and logs. All monotonic except active.
struct MetricsServerStats {
  uint64_t accepted = 0;       // connections accepted (the refused included)
  uint64_t refused = 0;        // closed at once: max_connections open
  uint64_t served = 0;         // 200 responses written
  uint64_t rejected = 0;       // 4xx written (bad path, method, oversized request, bad syntax)
  uint64_t unavailable = 0;    // 503: rendering not done in collect_timeout (or server stopped)
  uint64_t timed_out = 0;      // connections closed by `timeout`
  uint64_t renders = 0;        // renderings run on the worker
  uint64_t active = 0;         // open now
};

class MetricsServer {
 public:
  /// Binds and listens on options.address and serves on server.io_context(), rendering with
  /// `render` through server.PostToWorker. Call from the thread that created `server`, before
  /// or while it runs. Errors: kInvalidArgument for an empty renderer or collect_timeout >=
  /// timeout; ErrnoStatus-style codes for open/bind/listen failures, naming the address
  /// ("listen on metrics address 127.0.0.1:9964: Address already in use").
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Create(Server& server,
                                                               MetricsServerOptions options,
                                                               MetricsRenderer render);
  /// Closes the listener and every connection. Destroy before `server`, while its io_context
  /// is not running or on its I/O thread (sarenad: after Server::Run returned).
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The bound address (the real port when options.address had port 0).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  MetricsServerStats stats() const;

  class Impl;

 private:
  explicit MetricsServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

/// Opens, binds and listens on `address` as MetricsServer::Create does, then closes it again:
/// sarenad calls it before it touches the node, so a taken port stops it with nothing changed
/// (Create binds for real later, once the Server exists). Errors: Create's open/bind/listen
/// errors ("bind metrics address 127.0.0.1:9964: Address already in use (errno 98)").
absl::Status CheckListenAddress(const boost::asio::ip::tcp::endpoint& address);

/// "127.0.0.1:9964", "[::1]:9964".
std::string FormatEndpoint(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_METRICS_SERVER_H_
