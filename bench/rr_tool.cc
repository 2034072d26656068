// rr_tool: a small TCP request/response benchmark in the spirit of netperf's TCP_RR and TCP_CRR.
//
//   rr_tool server --port P [--threads N]
//       Echo server: every byte read on a connection is written back. N epoll loops, each with
//       its own SO_REUSEPORT listening socket, so many connections are served at once.
//   rr_tool client --host H --port P --mode rr|crr --size BYTES --duration S [--json]
//       rr:  one connection; send SIZE bytes, wait for SIZE bytes back, repeat for S seconds.
//       crr: a new connection per transaction (connect, send, receive, close).
//       Reports transactions/s and latency percentiles (µs, one transaction from the first send
//       -- or the connect for crr -- to the last byte of the answer), as one JSON line with --json.
//
// Both sides set TCP_NODELAY, retry on EINTR, handle short reads/writes, and name the failing
// call, the peer and the errno in their error messages. Exit status: 0 ok, 1 runtime error,
// 2 bad usage.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libsarena/base/cli.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"

ABSL_FLAG(std::string, host, "", "client: server address (IPv4 or IPv6 literal, or a name)");
ABSL_FLAG(uint32_t, port, 0, "TCP port (server: listen; client: connect)");
ABSL_FLAG(std::string, mode, "rr",
          "client: rr (one connection) | crr (connection per transaction)");
ABSL_FLAG(uint32_t, size, 1, "client: request and response size in bytes");
ABSL_FLAG(double, duration, 5.0, "client: measured seconds");
ABSL_FLAG(double, warmup, 0.0, "client: seconds of transactions before measuring (not counted)");
ABSL_FLAG(double, timeout, 5.0, "client: seconds a connect, send or receive may block");
ABSL_FLAG(bool, json, false, "client: print the result as one JSON line");
ABSL_FLAG(uint32_t, threads, 1, "server: epoll loops (SO_REUSEPORT listeners)");

namespace {

using Clock = std::chrono::steady_clock;
using sarena::ErrnoStatus;

// --- socket helpers -------------------------------------------------------------------------

absl::Status SetNoDelay(int fd, absl::string_view peer) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return ErrnoStatus(errno, absl::StrCat("set TCP_NODELAY on socket to '", peer, "'"));
  }
  return absl::OkStatus();
}

// Writes all `len` bytes (blocking socket), retrying on EINTR and short writes.
absl::Status SendAll(int fd, const char* buf, size_t len, absl::string_view peer) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return absl::DeadlineExceededError(absl::StrCat("send to '", peer, "': timed out"));
      }
      return ErrnoStatus(errno, absl::StrCat("send to '", peer, "'"));
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Reads exactly `len` bytes (blocking socket), retrying on EINTR and short reads.
absl::Status RecvAll(int fd, char* buf, size_t len, absl::string_view peer) {
  while (len > 0) {
    ssize_t n = recv(fd, buf, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return absl::DeadlineExceededError(absl::StrCat("receive from '", peer, "': timed out"));
      }
      return ErrnoStatus(errno, absl::StrCat("receive from '", peer, "'"));
    }
    if (n == 0) {
      return absl::UnavailableError(absl::StrCat("receive from '", peer,
                                                 "': connection closed by the server mid-answer (",
                                                 len, " bytes missing)"));
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

struct Target {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  int family = AF_INET;
  std::string name;  // "host:port" for messages
};

absl::StatusOr<Target> Resolve(const std::string& host, uint32_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("resolve host '", host, "': ", gai_strerror(rc)));
  }
  Target t;
  std::memcpy(&t.addr, res->ai_addr, res->ai_addrlen);
  t.addr_len = res->ai_addrlen;
  t.family = res->ai_family;
  t.name = absl::StrCat(host, ":", port);
  freeaddrinfo(res);
  return t;
}

// A connected, blocking socket with TCP_NODELAY and send/receive timeouts (SO_SNDTIMEO also
// bounds connect() on Linux).
absl::StatusOr<sarena::UniqueFd> Connect(const Target& t, timeval timeout) {
  sarena::UniqueFd fd(socket(t.family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoStatus(errno, absl::StrCat("create socket for '", t.name, "'"));
  if (setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0 ||
      setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0) {
    return ErrnoStatus(errno, absl::StrCat("set timeouts on socket to '", t.name, "'"));
  }
  SARENA_RETURN_IF_ERROR(SetNoDelay(fd.get(), t.name));
  while (connect(fd.get(), reinterpret_cast<const sockaddr*>(&t.addr), t.addr_len) != 0) {
    if (errno == EINTR) continue;
    if (errno == EINPROGRESS) {
      return absl::DeadlineExceededError(absl::StrCat("connect to '", t.name, "': timed out"));
    }
    if (errno == EADDRNOTAVAIL) {
      return ErrnoStatus(errno, absl::StrCat("connect to '", t.name, "'"),
                         "no free local port (TIME_WAIT exhaustion? widen ip_local_port_range or "
                         "set net.ipv4.tcp_tw_reuse=1 in the client's netns)");
    }
    return ErrnoStatus(errno, absl::StrCat("connect to '", t.name, "'"));
  }
  return fd;
}

// --- client ---------------------------------------------------------------------------------

struct Result {
  uint64_t transactions = 0;
  double seconds = 0;
  std::vector<uint64_t> latency_ns;
};

double Percentile(std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(i, sorted.size() - 1)]) / 1000.0;
}

absl::Status RunClient(const Target& t, bool crr, uint32_t size, double duration, double warmup,
                       double timeout_s, Result* out) {
  timeval timeout{};
  timeout.tv_sec = static_cast<time_t>(timeout_s);
  timeout.tv_usec =
      static_cast<suseconds_t>((timeout_s - static_cast<double>(timeout.tv_sec)) * 1e6);
  std::vector<char> req(size), resp(size);
  for (uint32_t i = 0; i < size; ++i) req[i] = static_cast<char>('a' + i % 26);
  out->latency_ns.reserve(1 << 20);

  sarena::UniqueFd conn;
  if (!crr) {
    SARENA_ASSIGN_OR_RETURN(conn, Connect(t, timeout));
  }
  const auto start = Clock::now();
  const auto measure_from =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup));
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(duration));
  auto now = start;
  while (now < end) {
    const auto t0 = now;
    if (crr) {
      SARENA_ASSIGN_OR_RETURN(sarena::UniqueFd c, Connect(t, timeout));
      SARENA_RETURN_IF_ERROR(SendAll(c.get(), req.data(), size, t.name));
      SARENA_RETURN_IF_ERROR(RecvAll(c.get(), resp.data(), size, t.name));
      // The client closes first (as netperf's CRR and HTTP/1.0 clients do): TIME_WAIT is ours.
    } else {
      SARENA_RETURN_IF_ERROR(SendAll(conn.get(), req.data(), size, t.name));
      SARENA_RETURN_IF_ERROR(RecvAll(conn.get(), resp.data(), size, t.name));
    }
    now = Clock::now();
    if (t0 >= measure_from) {
      out->latency_ns.push_back(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0).count()));
    }
  }
  out->transactions = out->latency_ns.size();
  out->seconds = std::chrono::duration<double>(now - measure_from).count();
  if (resp != req) {
    return absl::DataLossError(
        absl::StrCat("receive from '", t.name, "': echo differs from request"));
  }
  return absl::OkStatus();
}

// --- server ---------------------------------------------------------------------------------

absl::StatusOr<sarena::UniqueFd> Listen(uint32_t port) {
  sarena::UniqueFd fd(socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const std::string name = absl::StrCat("[::]:", port);
  if (fd.get() < 0) return ErrnoStatus(errno, absl::StrCat("create socket for '", name, "'"));
  int one = 1, zero = 0;
  if (setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) != 0) {
    return ErrnoStatus(errno, absl::StrCat("set socket options on '", name, "'"));
  }
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(static_cast<uint16_t>(port));
  a.sin6_addr = in6addr_any;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return ErrnoStatus(errno, absl::StrCat("bind '", name, "'"));
  }
  if (listen(fd.get(), 4096) != 0)
    return ErrnoStatus(errno, absl::StrCat("listen on '", name, "'"));
  return fd;
}

struct Conn {
  std::string pending;  // echo bytes the socket did not take yet
};

// One epoll loop: accepts on `lfd`, echoes every connection. Level-triggered; a connection with
// unsent bytes waits for EPOLLOUT and is not read until they are gone (backpressure).
absl::Status ServeLoop(int lfd) {
  sarena::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  if (ep.get() < 0) return ErrnoStatus(errno, "create epoll instance 'server'");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, lfd, &ev) != 0) {
    return ErrnoStatus(errno, "add listener to epoll 'server'");
  }
  std::unordered_map<int, Conn> conns;
  std::vector<char> buf(1 << 16);
  std::vector<epoll_event> events(256);
  auto drop = [&](int fd) {
    epoll_ctl(ep.get(), EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(fd);
  };
  for (;;) {
    int n = epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "wait on epoll 'server'");
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == lfd) {
        for (;;) {
          int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EMFILE || errno == ENFILE) {
              std::fprintf(stderr, "rr_tool server: accept: %s\n", std::strerror(errno));
              break;
            }
            return ErrnoStatus(errno, "accept on listener 'server'");
          }
          int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLRDHUP;
          cev.data.fd = c;
          if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, c, &cev) != 0) {
            close(c);
            continue;
          }
          conns.emplace(c, Conn{});
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& conn = it->second;
      bool closed = false;
      if (!conn.pending.empty()) {
        if (events[i].events & (EPOLLERR | EPOLLHUP)) {
          drop(fd);
          continue;
        }
        ssize_t w = send(fd, conn.pending.data(), conn.pending.size(), MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          drop(fd);
          continue;
        }
        if (w > 0) conn.pending.erase(0, static_cast<size_t>(w));
        if (conn.pending.empty()) {
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLRDHUP;
          cev.data.fd = fd;
          epoll_ctl(ep.get(), EPOLL_CTL_MOD, fd, &cev);
        }
        continue;
      }
      ssize_t r = recv(fd, buf.data(), buf.size(), 0);
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        closed = true;  // ECONNRESET and friends: the client went away
      } else if (r == 0) {
        closed = true;
      } else {
        size_t off = 0;
        while (off < static_cast<size_t>(r)) {
          ssize_t w = send(fd, buf.data() + off, static_cast<size_t>(r) - off, MSG_NOSIGNAL);
          if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
              conn.pending.assign(buf.data() + off, static_cast<size_t>(r) - off);
              epoll_event cev{};
              cev.events = EPOLLOUT;
              cev.data.fd = fd;
              epoll_ctl(ep.get(), EPOLL_CTL_MOD, fd, &cev);
            } else {
              closed = true;
            }
            break;
          }
          off += static_cast<size_t>(w);
        }
      }
      if (closed) drop(fd);
    }
  }
}

int Usage(const char* msg) {
  std::fprintf(stderr, "rr_tool: %s\n%s", msg,
               "usage: rr_tool server --port P [--threads N]\n"
               "       rr_tool client --host H --port P --mode rr|crr --size BYTES --duration S "
               "[--warmup S] [--timeout S] [--json]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "rr_tool server --port P [--threads N] | rr_tool client --host H --port P --mode rr|crr "
      "--size BYTES --duration S [--json]\nTCP request/response benchmark (TCP_RR / TCP_CRR).");
  std::vector<std::string> args = sarena::NormalizeFlagDashes(argc, argv);
  std::vector<char*> av = sarena::ArgvOf(args);
  std::vector<char*> pos = absl::ParseCommandLine(static_cast<int>(args.size()), av.data());
  if (pos.size() != 2) return Usage("expected exactly one command: server or client");
  const std::string cmd = pos[1];
  const uint32_t port = absl::GetFlag(FLAGS_port);
  if (port == 0 || port > 65535) return Usage("--port must be 1..65535");
  std::signal(SIGPIPE, SIG_IGN);

  if (cmd == "server") {
    const uint32_t threads = std::max<uint32_t>(1, absl::GetFlag(FLAGS_threads));
    std::vector<sarena::UniqueFd> listeners;
    for (uint32_t i = 0; i < threads; ++i) {
      auto l = Listen(port);
      if (!l.ok()) {
        std::fprintf(stderr, "rr_tool server: %s\n", std::string(l.status().message()).c_str());
        return 1;
      }
      listeners.push_back(std::move(*l));
    }
    std::vector<std::thread> loops;
    for (uint32_t i = 1; i < threads; ++i) {
      int lfd = listeners[i].get();
      loops.emplace_back([lfd] {
        absl::Status st = ServeLoop(lfd);
        std::fprintf(stderr, "rr_tool server: %s\n", std::string(st.message()).c_str());
        std::_Exit(1);
      });
    }
    absl::Status st = ServeLoop(listeners[0].get());
    std::fprintf(stderr, "rr_tool server: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  if (cmd != "client") return Usage(absl::StrCat("unknown command '", cmd, "'").c_str());

  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "rr" && mode != "crr") return Usage("--mode must be rr or crr");
  const uint32_t size = absl::GetFlag(FLAGS_size);
  if (size == 0 || size > (64u << 20)) return Usage("--size must be 1..67108864 bytes");
  const double duration = absl::GetFlag(FLAGS_duration);
  if (!(duration > 0)) return Usage("--duration must be > 0 seconds");
  if (absl::GetFlag(FLAGS_host).empty()) return Usage("--host is required for client");
  auto target = Resolve(absl::GetFlag(FLAGS_host), port);
  if (!target.ok()) {
    std::fprintf(stderr, "rr_tool client: %s\n", std::string(target.status().message()).c_str());
    return 2;
  }
  Result r;
  absl::Status st =
      RunClient(*target, mode == "crr", size, duration, std::max(0.0, absl::GetFlag(FLAGS_warmup)),
                std::max(0.001, absl::GetFlag(FLAGS_timeout)), &r);
  if (!st.ok()) {
    std::fprintf(stderr, "rr_tool client (%s, %s, %u B) after %llu transactions: %s\n",
                 mode.c_str(), target->name.c_str(), size,
                 static_cast<unsigned long long>(r.latency_ns.size()),
                 std::string(st.message()).c_str());
    return 1;
  }
  std::sort(r.latency_ns.begin(), r.latency_ns.end());
  const double tps = r.seconds > 0 ? static_cast<double>(r.transactions) / r.seconds : 0;
  const double p50 = Percentile(r.latency_ns, 50), p90 = Percentile(r.latency_ns, 90),
               p99 = Percentile(r.latency_ns, 99), pmax = Percentile(r.latency_ns, 100);
  if (absl::GetFlag(FLAGS_json)) {
    std::printf(
        "{\"mode\":\"%s\",\"target\":\"%s\",\"size\":%u,\"seconds\":%.3f,\"transactions\":%llu,"
        "\"tps\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
        mode.c_str(), target->name.c_str(), size, r.seconds,
        static_cast<unsigned long long>(r.transactions), tps, p50, p90, p99, pmax);
  } else {
    std::printf(
        "%s %s size %u B: %llu transactions in %.3f s = %.1f/s; latency p50 %.1f us, "
        "p90 %.1f us, p99 %.1f us, max %.1f us\n",
        mode.c_str(), target->name.c_str(), size, static_cast<unsigned long long>(r.transactions),
        r.seconds, tps, p50, p90, p99, pmax);
  }
  return 0;
}
