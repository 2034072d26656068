#include "libsarena/daemon/metrics_server.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/log.h"
#include "libsarena/base/numbers.h"
#include "libsarena/daemon/metrics.h"

namespace sarena::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

absl::StatusOr<tcp::endpoint> ParseListenAddress(absl::string_view text, absl::string_view flag) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ", flag, " '", text, "': ", why));
  };
  absl::string_view host;
  absl::string_view port_text;
  bool bracketed = false;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("]:");
    if (close == absl::string_view::npos) return bad("expected [IPv6]:PORT, e.g. [::1]:9964");
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    bracketed = true;
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) {
      return bad("expected IPv4:PORT, [IPv6]:PORT or :PORT, e.g. 127.0.0.1:9964");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != absl::string_view::npos) {
      return bad("an IPv6 address goes in brackets, e.g. [::1]:9964");
    }
  }
  const uint64_t port = ParseCanonicalUint(port_text, 65535).value_or(0);
  if (port == 0) {
    return bad("the port is not a number in 1..65535");
  }
  if (host.empty()) {
    if (bracketed) return bad("empty IPv6 address in brackets");
    return tcp::endpoint(asio::ip::address_v6::any(), static_cast<uint16_t>(port));
  }
  boost::system::error_code ec;
  asio::ip::address addr = asio::ip::make_address(std::string(host), ec);
  if (ec || (bracketed && !addr.is_v6()) || (!bracketed && !addr.is_v4())) {
    return bad(absl::StrCat("'", host, "' is not an ", bracketed ? "IPv6" : "IPv4",
                            " address (IP literals only, no host names)"));
  }
  return tcp::endpoint(addr, static_cast<uint16_t>(port));
}

std::string FormatEndpoint(const tcp::endpoint& endpoint) {
  const asio::ip::address a = endpoint.address();
  return a.is_v6() ? absl::StrCat("[", a.to_string(), "]:", endpoint.port())
                   : absl::StrCat(a.to_string(), ":", endpoint.port());
}

namespace {
class MetricsConnection;
}  // namespace

class MetricsServer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(Server& server, MetricsServerOptions options, MetricsRenderer render)
      : server_(server),
        io_(server.io_context()),
        options_(std::move(options)),
        render_(std::move(render)),
        acceptor_(io_) {}

  absl::Status Listen();
  void Accept();
  // I/O thread: `conn` wants the page; it gets it through Deliver.
  void RequestPage(const std::shared_ptr<MetricsConnection>& conn);
  void Closed(const std::shared_ptr<MetricsConnection>& conn);
  void Close();

  template <typename F>
  void Count(F f) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    f(stats_);
  }
  MetricsServerStats stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

  Server& server_;
  asio::io_context& io_;
  const MetricsServerOptions options_;
  const MetricsRenderer render_;
  tcp::acceptor acceptor_;
  tcp::endpoint local_;
  std::atomic<bool> closed_{false};
  // I/O thread only:
  std::set<std::shared_ptr<MetricsConnection>> connections_;
  bool rendering_ = false;  // a rendering is queued on / running in the worker
  std::vector<std::weak_ptr<MetricsConnection>> waiters_;
  std::chrono::steady_clock::time_point refusal_logged_{};  // last "connection refused" line
  uint64_t refusals_unlogged_ = 0;                          // refusals since, not logged

  mutable std::mutex stats_mu_;
  MetricsServerStats stats_;
};

namespace {

class MetricsConnection : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(std::shared_ptr<MetricsServer::Impl> server, tcp::socket socket)
      : server_(std::move(server)),
        socket_(std::move(socket)),
        deadline_(server_->io_),
        collect_timer_(server_->io_),
        buffer_(server_->options_.max_request_bytes) {}

  void Start() {
    deadline_.expires_after(absl::ToChronoNanoseconds(server_->options_.timeout));
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      self->server_->Count([](MetricsServerStats& s) { ++s.timed_out; });
      SARENA_LOG(Debug, "metrics: connection from ", self->peer_, " timed out");
      self->Close();
    });
    boost::system::error_code ignored;
    tcp::endpoint peer = socket_.remote_endpoint(ignored);
    peer_ = FormatEndpoint(peer);
    parser_.emplace();
    parser_->header_limit(server_->options_.max_request_bytes);
    parser_->body_limit(server_->options_.max_request_bytes);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                       self->OnRead(ec);
                     });
  }

  // The rendered page (or the renderer's error) for a connection waiting for it.
  void Deliver(const absl::StatusOr<std::string>& page) {
    if (closed_ || !waiting_) return;
    waiting_ = false;
    collect_timer_.cancel();
    if (!page.ok()) {
      SARENA_LOG(Error, "metrics: rendering failed: ", page.status().message());
      Respond(http::status::internal_server_error,
              absl::StrCat("rendering the metrics failed: ", page.status().message(), "\n"));
      return;
    }
    server_->Count([](MetricsServerStats& s) { ++s.served; });
    Respond(http::status::ok, *page, kExpositionContentType);
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    deadline_.cancel();
    collect_timer_.cancel();
    server_->Closed(shared_from_this());
  }

 private:
  void OnRead(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) {
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        Reject(http::status::request_header_fields_too_large, "request header too large\n");
      } else if (ec == http::error::body_limit) {
        Reject(http::status::payload_too_large, "request body too large\n");
      } else if (ec == http::error::end_of_stream || ec == asio::error::eof ||
                 ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
        Close();
      } else {
        Reject(http::status::bad_request, absl::StrCat("bad request: ", ec.message(), "\n"));
      }
      return;
    }
    const http::request<http::string_body>& req = parser_->get();
    version_ = req.version();
    absl::string_view target(req.target().data(), req.target().size());
    target = target.substr(0, target.find('?'));
    // HEAD: GET's status and headers (Content-Length of the page), no body (RFC 9110 9.3.2).
    head_ = req.method() == http::verb::head;
    if (req.method() != http::verb::get && !head_) {
      Reject(http::status::method_not_allowed, "only GET and HEAD are served\n");
      return;
    }
    if (target != "/metrics") {
      Reject(http::status::not_found, "not found: sarenad serves GET /metrics only\n");
      return;
    }
    waiting_ = true;
    collect_timer_.expires_after(absl::ToChronoNanoseconds(server_->options_.collect_timeout));
    collect_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
      if (e || self->closed_ || !self->waiting_) return;
      self->waiting_ = false;
      self->server_->Count([](MetricsServerStats& s) { ++s.unavailable; });
      SARENA_LOG(Warning, "metrics: scrape from ", self->peer_, " answered 503: the page was not "
                 "rendered within ", absl::FormatDuration(self->server_->options_.collect_timeout),
                 " (sarenad's worker is busy with a request)");
      self->Respond(http::status::service_unavailable,
                    "sarenad is busy with a request; try again\n");
    });
    server_->RequestPage(shared_from_this());
  }

  void Reject(http::status status, std::string body) {
    server_->Count([](MetricsServerStats& s) { ++s.rejected; });
    Respond(status, std::move(body));
  }

  void Respond(http::status status, std::string body,
               absl::string_view content_type = "text/plain; charset=utf-8") {
    res_.result(status);
    res_.version(version_);
    res_.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
    if (status == http::status::method_not_allowed) res_.set(http::field::allow, "GET, HEAD");
    res_.keep_alive(false);
    res_.body() = std::move(body);
    res_.prepare_payload();
    if (head_) {
      serializer_.emplace(res_);
      http::async_write_header(socket_, *serializer_,
                               [self = shared_from_this()](const boost::system::error_code&,
                                                           size_t) { self->Close(); });
      return;
    }
    http::async_write(socket_, res_,
                      [self = shared_from_this()](const boost::system::error_code&, size_t) {
                        self->Close();
                      });
  }

  std::shared_ptr<MetricsServer::Impl> server_;
  tcp::socket socket_;
  asio::steady_timer deadline_;
  asio::steady_timer collect_timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::optional<http::response_serializer<http::string_body>> serializer_;  // HEAD only
  unsigned version_ = 11;
  std::string peer_;
  bool closed_ = false;
  bool waiting_ = false;  // a valid GET /metrics waits for the page
  bool head_ = false;     // the request is HEAD: the response's header only
};

// Opens, binds and listens `acceptor` on `address` ([::] dual-stack, 0.0.0.0 without IPv6);
// `*local` is the bound address. Errors as MetricsServer::Create's, naming the address.
absl::Status OpenListener(tcp::acceptor& acceptor, const tcp::endpoint& address,
                          tcp::endpoint* local) {
  tcp::endpoint at = address;
  boost::system::error_code ec;
  acceptor.open(at.protocol(), ec);
  if (ec && at.address().is_v6() && at.address().is_unspecified() &&
      ec == asio::error::address_family_not_supported) {
    at = tcp::endpoint(asio::ip::address_v4::any(), at.port());  // no IPv6 here: 0.0.0.0
    acceptor.open(at.protocol(), ec);
  }
  const std::string where = FormatEndpoint(address);
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("open metrics socket for ", where));
  if (at.address().is_v6() && at.address().is_unspecified()) {
    acceptor.set_option(asio::ip::v6_only(false), ec);  // [::] also takes IPv4
  }
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  acceptor.bind(at, ec);
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("bind metrics address ", where));
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("listen on metrics address ", where));
  *local = acceptor.local_endpoint(ec);
  return absl::OkStatus();
}

}  // namespace

absl::Status MetricsServer::Impl::Listen() {
  return OpenListener(acceptor_, options_.address, &local_);
}

absl::Status CheckListenAddress(const tcp::endpoint& address) {
  asio::io_context io;
  tcp::acceptor acceptor(io);
  tcp::endpoint local;
  return OpenListener(acceptor, address, &local);  // closed again when `acceptor` goes
}

void MetricsServer::Impl::Accept() {
  acceptor_.async_accept([self = shared_from_this()](const boost::system::error_code& ec,
                                                     tcp::socket socket) {
    if (ec == asio::error::operation_aborted || self->closed_) return;
    if (ec) {
      SARENA_LOG(Error, "metrics: accept on ", FormatEndpoint(self->local_), ": ", ec.message());
      auto delay = std::make_shared<asio::steady_timer>(self->io_, std::chrono::milliseconds(100));
      delay->async_wait([self, delay](const boost::system::error_code& e) {
        if (!e && !self->closed_) self->Accept();
      });
      return;
    }
    self->Count([](MetricsServerStats& s) { ++s.accepted; });
    if (self->connections_.size() >= self->options_.max_connections) {
      self->Count([](MetricsServerStats& s) { ++s.refused; });
      // One line per 10 s at most: a connection flood must not flood the journal as well (it
      // would rate-limit sarenad's other messages away).
      const auto now = std::chrono::steady_clock::now();
      if (self->refusal_logged_ == std::chrono::steady_clock::time_point{} ||
          now - self->refusal_logged_ >= std::chrono::seconds(10)) {
        SARENA_LOG(Warning, "metrics: connection refused: ", self->connections_.size(),
                   " open (at most ", self->options_.max_connections, ")",
                   self->refusals_unlogged_ > 0
                       ? absl::StrCat("; ", self->refusals_unlogged_,
                                      " more refused since the last such line")
                       : "");
        self->refusal_logged_ = now;
        self->refusals_unlogged_ = 0;
      } else {
        ++self->refusals_unlogged_;
      }
      boost::system::error_code ignored;
      socket.close(ignored);
    } else {
      auto conn = std::make_shared<MetricsConnection>(self, std::move(socket));
      self->connections_.insert(conn);
      self->Count([](MetricsServerStats& s) { ++s.active; });
      conn->Start();
    }
    self->Accept();
  });
}

void MetricsServer::Impl::RequestPage(const std::shared_ptr<MetricsConnection>& conn) {
  std::erase_if(waiters_, [](const std::weak_ptr<MetricsConnection>& w) { return w.expired(); });
  waiters_.push_back(conn);
  if (rendering_) return;  // the pending rendering serves this one too
  rendering_ = true;
  Count([](MetricsServerStats& s) { ++s.renders; });
  server_.PostToWorker([self = shared_from_this()] {
    if (self->closed_) return;
    absl::StatusOr<std::string> page = self->render_();
    asio::post(self->io_, [self, page = std::move(page)] {
      self->rendering_ = false;
      std::vector<std::weak_ptr<MetricsConnection>> waiters = std::move(self->waiters_);
      self->waiters_.clear();
      for (const auto& w : waiters) {
        if (std::shared_ptr<MetricsConnection> c = w.lock()) c->Deliver(page);
      }
    });
  });
}

void MetricsServer::Impl::Closed(const std::shared_ptr<MetricsConnection>& conn) {
  if (connections_.erase(conn) > 0) Count([](MetricsServerStats& s) { --s.active; });
}

void MetricsServer::Impl::Close() {
  closed_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  for (const auto& conn : std::set<std::shared_ptr<MetricsConnection>>(connections_)) {
    conn->Close();
  }
  waiters_.clear();
}

MetricsServer::MetricsServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
MetricsServer::~MetricsServer() { impl_->Close(); }

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Create(
    Server& server, MetricsServerOptions options, MetricsRenderer render) {
  if (!render) return absl::InvalidArgumentError("metrics server: the renderer is empty");
  if (options.collect_timeout >= options.timeout) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics server: collect_timeout ", absl::FormatDuration(options.collect_timeout),
        " must be shorter than timeout ", absl::FormatDuration(options.timeout)));
  }
  auto impl = std::make_shared<Impl>(server, std::move(options), std::move(render));
  if (absl::Status st = impl->Listen(); !st.ok()) return st;
  impl->Accept();
  SARENA_LOG(Info, "metrics: serving GET /metrics on http://", FormatEndpoint(impl->local_));
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

tcp::endpoint MetricsServer::local_endpoint() const { return impl_->local_; }
MetricsServerStats MetricsServer::stats() const { return impl_->stats(); }

}  // namespace sarena::daemon
