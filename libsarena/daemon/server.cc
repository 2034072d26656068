#include "libsarena/daemon/server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/kind.h"

namespace sarena::daemon {

using rpc::DecodeFrameBody;
using rpc::DecodeFrameHeader;
using rpc::EncodeFrame;
using rpc::kFrameHeaderBytes;
using rpc::kFrameReadChunk;
using rpc::kMaxFrameBytes;

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

namespace {

std::chrono::steady_clock::duration ToChrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

// What a probe connect(2) to an existing socket file says about it.
enum class Probe { kLive, kStale };

absl::StatusOr<Probe> ProbeSocket(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("create probe socket for '", path, "'"));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::copy(path.begin(), path.end(), addr.sun_path);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return Probe::kLive;
  }
  // EAGAIN: the listener's backlog is full — it is alive.
  if (errno == EAGAIN || errno == EINPROGRESS) return Probe::kLive;
  if (errno == ECONNREFUSED || errno == ENOENT) return Probe::kStale;
  return ErrnoStatus(errno, absl::StrCat("probe socket '", path, "'"));
}

// The socket's directory must not let anyone else replace or squat the socket: owned by our
// euid, not group- or other-writable (issue 10 defect 7).
absl::Status CheckSocketDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("stat socket directory '", dir, "'"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket directory '", dir, "' is not a directory"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket directory '", dir, "' is owned by uid ", st.st_uid,
                     ", not by sarenad's uid ", ::geteuid(), "; refusing to listen there"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return absl::FailedPreconditionError(
        absl::StrCat("socket directory '", dir, "' is writable by group or others (mode ", mode,
                     "); refusing to listen there (make it 0755 or stricter)"));
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

class Connection;

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        acceptor_(io_),
        stop_deadline_(io_),
        worker_guard_(asio::make_work_guard(worker_io_)) {}

  ~Impl();

  absl::Status Listen();
  void Run();
  absl::Status Start();
  void Stop();
  void PostToWorker(std::function<void()> fn);

  ServerStats stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

 private:
  friend class Connection;
  friend class Server;

  void DoAccept();
  void OnAccepted(Local::socket socket);
  void DoStop();
  void MaybeFinishStop();
  void ConnectionClosed(const std::shared_ptr<Connection>& conn);
  // Queues `request` for the worker; `done` runs on the I/O thread with the response, or with
  // nullopt when the server stopped before the request started.
  void Execute(std::shared_ptr<Connection> conn, v1::Request request);
  template <typename F>
  void Count(F f) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    f(stats_);
  }
  bool Allowed(uid_t uid) const {
    return options_.allowed_uids.empty() ||
           std::find(options_.allowed_uids.begin(), options_.allowed_uids.end(), uid) !=
               options_.allowed_uids.end();
  }

  const ServerOptions options_;
  const Handler handler_;

  asio::io_context io_;
  Local::acceptor acceptor_;
  asio::steady_timer stop_deadline_;
  std::set<std::shared_ptr<Connection>> connections_;  // I/O thread only
  std::map<uid_t, uint32_t> per_uid_;                  // open connections by uid; I/O thread
  bool stopping_ = false;                              // I/O thread only
  uint64_t next_id_ = 1;                               // I/O thread only

  // The worker: one thread running worker_io_, so handlers execute one at a time in order.
  asio::io_context worker_io_;
  asio::executor_work_guard<asio::io_context::executor_type> worker_guard_;
  std::thread worker_thread_;

  std::thread background_;  // Start()
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> running_{false};

  // Identity of the socket file we created, so the destructor only removes our own.
  dev_t sock_dev_ = 0;
  ino_t sock_ino_ = 0;
  bool bound_ = false;

  mutable std::mutex stats_mu_;  // std::mutex: visible to ThreadSanitizer (Debian's absl is not)
  ServerStats stats_;            // guarded by stats_mu_
};

// One client connection. Lives on the I/O thread; kept alive by the pending operations' handlers
// (shared_from_this) and by Impl::connections_ until closed.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl* server, Local::socket socket, uint64_t id, PeerCred cred,
             bool peer_allowed)
      : server_(server),
        socket_(std::move(socket)),
        timer_(server->io_),
        id_(id),
        cred_(cred),
        peer_allowed_(peer_allowed) {}

  void Start() { WaitForRequest(); }

  // Closes the socket and cancels everything pending on it. Idempotent.
  void Close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    Disarm();
    socket_.shutdown(Local::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_->ConnectionClosed(shared_from_this());
  }

  bool busy() const { return busy_; }
  const PeerCred& cred() const { return cred_; }
  void set_close_after_response() { close_after_response_ = true; }
  std::string Describe() const {
    return absl::StrCat("connection #", id_, " (pid ", cred_.pid, " uid ", cred_.uid, " gid ",
                        cred_.gid, ")");
  }

  // Called on the I/O thread when the worker finished (or skipped) this connection's request.
  void OnExecuted(std::optional<v1::Response> response) {
    busy_ = false;
    if (closed_) {
      SARENA_LOG(Warning, "sarenad: ", Describe(),
                 " went away before its response could be written");
      return;
    }
    if (!response.has_value()) {  // stopped before the request started
      Close();
      return;
    }
    WriteResponse(*response);
  }

 private:
  // Arms the timer with `d` (zero = disarmed); on expiry the connection is closed.
  // A generation number tells a stale expiry (one that raced with Disarm/Arm) from a live one.
  void Arm(absl::Duration d, absl::string_view what) {
    Disarm();
    if (d <= absl::ZeroDuration()) return;
    timer_.expires_after(ToChrono(d));
    timer_.async_wait([self = shared_from_this(), what = std::string(what), d,
                       gen = timer_gen_](const boost::system::error_code& ec) {
      if (ec || self->closed_ || gen != self->timer_gen_) return;
      SARENA_LOG(Warning, "sarenad: ", self->Describe(), ": ", what, " timed out after ",
                 absl::FormatDuration(d), "; closing it");
      self->server_->Count([](ServerStats& s) { ++s.aborted; });
      self->Close();
    });
  }

  void Disarm() {
    ++timer_gen_;
    timer_.cancel();
  }

  void Abort(absl::string_view why) {
    SARENA_LOG(Warning, "sarenad: ", Describe(), ": ", why, "; closing it");
    server_->Count([](ServerStats& s) { ++s.aborted; });
    Close();
  }

  void ProtocolError(absl::string_view why) {
    SARENA_LOG(Warning, "sarenad: ", Describe(), ": protocol error: ", why, "; closing it");
    server_->Count([](ServerStats& s) { ++s.protocol_errors; });
    Close();
  }

  // Waits (idle_timeout) for the first byte of the next request, or the peer's close.
  void WaitForRequest() {
    if (closed_) return;
    if (server_->stopping_) {
      Close();
      return;
    }
    Arm(server_->options_.idle_timeout, "idle connection");
    socket_.async_wait(Local::socket::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (self->closed_) return;
                         if (ec) {
                           self->Abort(absl::StrCat("wait for request: ", ec.message()));
                           return;
                         }
                         self->ReadHeader();
                       });
  }

  void ReadHeader() {
    Arm(server_->options_.io_timeout, "receiving a request");
    asio::async_read(socket_, asio::buffer(header_),
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                       if (self->closed_) return;
                       if (ec == asio::error::eof && n == 0) {  // clean close between requests
                         self->Close();
                         return;
                       }
                       if (ec) {
                         self->Abort(absl::StrCat("connection lost in a frame header (", n, " of ",
                                                  kFrameHeaderBytes, " bytes): ", ec.message()));
                         return;
                       }
                       absl::StatusOr<uint32_t> len = DecodeFrameHeader(self->header_);
                       if (!len.ok()) {
                         self->ProtocolError(len.status().message());
                         return;
                       }
                       self->ReadBody(*len);
                     });
  }

  // The body is allocated as it arrives, never `len` bytes up front: a peer that announces
  // 4 MiB and sends 4 bytes holds at most one chunk (std::string growth keeps the capacity
  // within twice what arrived plus one chunk).
  static constexpr size_t kBodyChunk = kFrameReadChunk;

  void ReadBody(uint32_t len) {
    body_.clear();
    body_.shrink_to_fit();
    body_len_ = len;
    ReadBodyChunk();
  }

  void ReadBodyChunk() {
    const size_t off = body_.size();
    if (off >= body_len_) {
      Disarm();
      OnRequest();
      return;
    }
    const size_t chunk = std::min<size_t>(body_len_ - off, kBodyChunk);
    body_.resize(off + chunk);
    socket_.async_read_some(
        asio::buffer(body_.data() + off, chunk),
        [self = shared_from_this(), off](const boost::system::error_code& ec, size_t n) {
          if (self->closed_) return;
          self->body_.resize(off + n);
          if (ec) {
            self->Abort(absl::StrCat("connection lost in a frame body (", self->body_.size(),
                                     " of ", self->body_len_, " bytes): ", ec.message()));
            return;
          }
          self->ReadBodyChunk();
        });
  }

  void OnRequest() {
    v1::Request request;
    absl::Status parsed = DecodeFrameBody(body_, &request);
    body_.clear();
    body_.shrink_to_fit();
    if (!parsed.ok()) {
      ProtocolError(parsed.message());
      return;
    }
    if (!peer_allowed_) {
      close_after_response_ = true;
      WriteResponse(ErrorResponse(absl::PermissionDeniedError(
          absl::StrCat("uid ", cred_.uid, " is not allowed to use sarenad socket '",
                       server_->options_.socket_path, "'"))));
      return;
    }
    if (request.kind_case() == v1::Request::KIND_NOT_SET) {
      WriteResponse(ErrorResponse(absl::InvalidArgumentError(
          "invalid request: no request kind set (unknown to this sarenad version?)")));
      return;
    }
    SARENA_LOG(Debug, "sarenad: ", Describe(), ": ", rpc::RequestKindName(request.kind_case()), " request");
    busy_ = true;
    server_->Execute(shared_from_this(), std::move(request));
  }

  void WriteResponse(const v1::Response& response) {
    absl::StatusOr<std::string> frame = EncodeFrame(response);
    if (!frame.ok()) {
      SARENA_LOG(Error, "sarenad: ", Describe(),
                 ": cannot encode response: ", frame.status().message());
      frame = EncodeFrame(ErrorResponse(absl::Status(
          frame.status().code(),
          absl::StrCat("sarenad cannot encode its response: ", frame.status().message()))));
      if (!frame.ok()) {
        Close();
        return;
      }
    }
    out_ = std::move(*frame);
    Arm(server_->options_.io_timeout, "sending a response");
    asio::async_write(
        socket_, asio::buffer(out_),
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          if (self->closed_) return;
          if (ec) {
            self->Abort(absl::StrCat("connection lost while sending a response (", n, " of ",
                                     self->out_.size(), " bytes): ", ec.message()));
            return;
          }
          self->out_.clear();
          if (self->close_after_response_) {
            self->Close();
            return;
          }
          self->WaitForRequest();
        });
  }

  Server::Impl* const server_;
  Local::socket socket_;
  asio::steady_timer timer_;
  const uint64_t id_;
  const PeerCred cred_;
  const bool peer_allowed_;
  std::array<uint8_t, kFrameHeaderBytes> header_{};
  std::string body_;
  uint32_t body_len_ = 0;  // announced length of the body being read
  std::string out_;
  uint64_t timer_gen_ = 0;
  bool closed_ = false;
  bool busy_ = false;  // a request of ours is queued on / running in the worker
  bool close_after_response_ = false;
};

// ---------------------------------------------------------------------------------------------

Server::Impl::~Impl() {
  Stop();
  if (background_.joinable()) background_.join();
  worker_guard_.reset();
  if (worker_thread_.joinable()) worker_thread_.join();
  // Close what is left (Run never ran, or was cut short) before the io_context goes away.
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  for (const auto& conn : std::set<std::shared_ptr<Connection>>(connections_)) conn->Close();
  connections_.clear();
  if (bound_) {
    struct stat st;
    if (::lstat(options_.socket_path.c_str(), &st) == 0 && st.st_dev == sock_dev_ &&
        st.st_ino == sock_ino_) {
      ::unlink(options_.socket_path.c_str());
    }
  }
}

absl::Status Server::Impl::Listen() {
  const std::string& path = options_.socket_path;
  if (path.empty()) return absl::InvalidArgumentError("invalid socket_path '': empty");
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid socket_path '", path, "': longer than ",
                                                   sizeof(sockaddr_un::sun_path) - 1, " bytes"));
  }
  if (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (absl::Status made = MakeDirs(dir, 0755); !made.ok()) {
      return absl::Status(made.code(), absl::StrCat("socket '", path, "': ", made.message()));
    }
    SARENA_RETURN_IF_ERROR(CheckSocketDir(dir));
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "listen on '", path, "': the path exists and is not a socket; refusing to replace it"));
    }
    SARENA_ASSIGN_OR_RETURN(Probe probe, ProbeSocket(path));
    if (probe == Probe::kLive) {
      return absl::AlreadyExistsError(absl::StrCat("another sarenad is listening on '", path, "'"));
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("remove stale socket '", path, "'"));
    }
    SARENA_LOG(Info, "sarenad: removed stale socket '", path, "' (nothing was listening)");
  } else if (errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("stat socket '", path, "'"));
  }

  boost::system::error_code ec;
  acceptor_.open(Local(), ec);
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("create socket for '", path, "'"));
  ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
  acceptor_.bind(Local::endpoint(path), ec);
  if (ec == asio::error::address_in_use) {
    return absl::AlreadyExistsError(absl::StrCat("another sarenad is listening on '", path,
                                                 "' (bind: address already in use)"));
  }
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("bind socket '", path, "'"));
  if (::lstat(path.c_str(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("stat socket '", path, "'"));
  }
  bound_ = true;
  sock_dev_ = st.st_dev;
  sock_ino_ = st.st_ino;
  // chmod before listen: nobody can connect before the mode is right.
  if (::chmod(path.c_str(), options_.mode) != 0) {
    return ErrnoStatus(errno, absl::StrCat("chmod socket '", path, "'"));
  }
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("listen on socket '", path, "'"));

  worker_thread_ = std::thread([this] { worker_io_.run(); });
  DoAccept();
  return absl::OkStatus();
}

void Server::Impl::DoAccept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, Local::socket socket) {
    if (ec == asio::error::operation_aborted || stopping_) return;
    if (ec) {
      // EMFILE/ENFILE and friends: log and keep accepting (after a breath, not in a hot loop).
      SARENA_LOG(Error, "sarenad: accept on '", options_.socket_path, "': ", ec.message());
      auto delay = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      delay->async_wait([this, delay](const boost::system::error_code& e) {
        if (!e && !stopping_) DoAccept();
      });
      return;
    }
    OnAccepted(std::move(socket));
    DoAccept();
  });
}

void Server::Impl::OnAccepted(Local::socket socket) {
  const uint64_t id = next_id_++;
  Count([](ServerStats& s) { ++s.accepted; });
  boost::system::error_code ignored;
  ucred uc{};
  socklen_t len = sizeof(uc);
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) {
    SARENA_LOG(Error, "sarenad: connection #", id, " closed: getsockopt(SO_PEERCRED): ",
               ErrnoStatus(errno, "read peer credentials").message());
    Count([](ServerStats& s) { ++s.rejected_peer; });
    socket.close(ignored);
    return;
  }
  PeerCred cred{uc.pid, uc.uid, uc.gid};
  // Limits: total; for non-root peers also the per-uid bound and the reserve kept for uid 0.
  const size_t open = connections_.size();
  const uint32_t reserve = std::min(options_.reserved_root_connections, options_.max_connections);
  std::string refused;
  if (open >= options_.max_connections) {
    refused = absl::StrCat(open, " connections open (max_connections ",
                           options_.max_connections, ")");
  } else if (cred.uid != 0 && open >= options_.max_connections - reserve) {
    refused = absl::StrCat(open, " connections open; the last ", reserve,
                           " of max_connections ", options_.max_connections,
                           " are reserved for uid 0");
  } else if (cred.uid != 0 && options_.max_connections_per_uid > 0 &&
             per_uid_[cred.uid] >= options_.max_connections_per_uid) {
    refused = absl::StrCat("uid ", cred.uid, " already has ", per_uid_[cred.uid],
                           " connections open (max_connections_per_uid ",
                           options_.max_connections_per_uid, ")");
  }
  if (!refused.empty()) {
    if (auto it = per_uid_.find(cred.uid); it != per_uid_.end() && it->second == 0) {
      per_uid_.erase(it);
    }
    SARENA_LOG(Warning, "sarenad: connection #", id, " (pid ", cred.pid, " uid ", cred.uid,
               ") refused: ", refused);
    Count([](ServerStats& s) { ++s.rejected_overload; });
    socket.close(ignored);
    return;
  }
  const bool allowed = Allowed(cred.uid);
  auto conn = std::make_shared<Connection>(this, std::move(socket), id, cred, allowed);
  if (!allowed) {
    SARENA_LOG(Warning, "sarenad: ", conn->Describe(), " rejected: uid ", cred.uid,
               " is not in the allowed uids; it gets a permission-denied reply and is closed");
    Count([](ServerStats& s) { ++s.rejected_peer; });
  }
  connections_.insert(conn);
  ++per_uid_[cred.uid];
  Count([](ServerStats& s) { ++s.active_connections; });
  conn->Start();
}

void Server::Impl::ConnectionClosed(const std::shared_ptr<Connection>& conn) {
  if (connections_.erase(conn) > 0) {
    if (auto it = per_uid_.find(conn->cred().uid); it != per_uid_.end() && --it->second == 0) {
      per_uid_.erase(it);
    }
    Count([](ServerStats& s) { --s.active_connections; });
  }
  if (stopping_) MaybeFinishStop();
}

void Server::Impl::Execute(std::shared_ptr<Connection> conn, v1::Request request) {
  Count([](ServerStats& s) { ++s.requests; });
  // The work guard keeps io_.run() alive until the response is back on the I/O thread.
  asio::post(worker_io_, [this, conn = std::move(conn), request = std::move(request),
                          received = absl::Now(), guard = asio::make_work_guard(io_)]() mutable {
    std::optional<v1::Response> response;
    if (!stop_requested_.load()) {
      response = handler_(request, conn->cred());
      if (options_.observe) options_.observe(request, *response, absl::Now() - received);
    }
    asio::post(io_, [conn = std::move(conn), response = std::move(response)]() mutable {
      conn->OnExecuted(std::move(response));
    });
  });
}

void Server::Impl::PostToWorker(std::function<void()> fn) {
  asio::post(worker_io_, [this, fn = std::move(fn)] {
    if (!stop_requested_.load()) fn();
  });
}

void Server::Impl::Run() {
  if (stop_requested_.load()) return;
  running_ = true;
  SARENA_LOG(Info, "sarenad: serving on '", options_.socket_path, "'");
  io_.run();
  SARENA_LOG(Info, "sarenad: stopped serving on '", options_.socket_path, "'");
}

absl::Status Server::Impl::Start() {
  if (running_.load() || background_.joinable()) {
    return absl::FailedPreconditionError("start server: already running");
  }
  if (stop_requested_.load()) return absl::FailedPreconditionError("start server: stopped");
  running_ = true;
  background_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void Server::Impl::Stop() {
  if (stop_requested_.exchange(true)) return;
  asio::post(io_, [this] { DoStop(); });
}

void Server::Impl::DoStop() {
  if (stopping_) return;
  stopping_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  // Idle connections close now; a connection whose request is in the worker closes after its
  // response is written (or once the worker skips it).
  for (const auto& conn : std::set<std::shared_ptr<Connection>>(connections_)) {
    if (conn->busy()) {
      conn->set_close_after_response();
    } else {
      conn->Close();
    }
  }
  absl::Duration grace =
      options_.io_timeout > absl::ZeroDuration() ? options_.io_timeout : absl::Seconds(30);
  stop_deadline_.expires_after(ToChrono(grace));
  stop_deadline_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    SARENA_LOG(Warning, "sarenad: stop: ", connections_.size(),
               " connection(s) still busy after the grace period; closing them");
    for (const auto& conn : std::set<std::shared_ptr<Connection>>(connections_)) conn->Close();
    io_.stop();
  });
  MaybeFinishStop();
}

void Server::Impl::MaybeFinishStop() {
  if (!connections_.empty()) return;
  stop_deadline_.cancel();
  io_.stop();
}

// ---------------------------------------------------------------------------------------------

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

absl::StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options, Handler handler) {
  if (!handler) return absl::InvalidArgumentError("create server: handler is empty");
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  SARENA_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Run() { impl_->Run(); }
absl::Status Server::Start() { return impl_->Start(); }
void Server::Stop() {
  impl_->Stop();
  const std::thread::id self = std::this_thread::get_id();
  if (impl_->background_.joinable() && impl_->background_.get_id() != self &&
      impl_->worker_thread_.get_id() != self) {
    impl_->background_.join();
  }
}
void Server::PostToWorker(std::function<void()> fn) { impl_->PostToWorker(std::move(fn)); }
boost::asio::io_context& Server::io_context() { return impl_->io_; }
const std::string& Server::socket_path() const { return impl_->options_.socket_path; }
ServerStats Server::stats() const { return impl_->stats(); }

v1::Response ErrorResponse(const absl::Status& status, uint32_t cni_code) {
  v1::Response response;
  v1::Error* error = response.mutable_error();
  if (status.ok()) {
    error->set_code(static_cast<int32_t>(absl::StatusCode::kUnknown));
    error->set_message("unknown error (an OK status was reported as a failure)");
  } else {
    error->set_code(static_cast<int32_t>(status.code()));
    error->set_message(std::string(status.message()));
  }
  error->set_cni_code(cni_code);
  return response;
}

}  // namespace sarena::daemon
