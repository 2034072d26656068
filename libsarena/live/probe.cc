#include "libsarena/live/probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/diag/query.h"
#include "libsarena/netlink/netns.h"

namespace sarena::live {
namespace {

double MsSince(uint64_t start_ns) { return static_cast<double>(MonotonicNs() - start_ns) / 1e6; }

sockaddr_in Sockaddr(const net::Ipv4& ip, uint16_t port) {
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = net::ToBe32(ip);
  return sa;
}

// What an asynchronous socket error means for the probe.
void SetError(int err, model::ProbeOutcome* o) {
  o->error_number = err;
  o->error = std::strerror(err);
  o->result = err == ECONNREFUSED ? "refused" : "unreachable";
}

absl::Status BindSource(int fd, const ProbeOptions& opt, model::ProbeOutcome* o) {
  sockaddr_in src = Sockaddr(opt.src, 0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) < 0) {
    return ErrnoStatus(errno, absl::StrCat("bind probe source ", opt.src.to_string(),
                                           " (is it an address of ", opt.netns, "?)"));
  }
  socklen_t len = sizeof(src);
  getsockname(fd, reinterpret_cast<sockaddr*>(&src), &len);
  o->sport = ntohs(src.sin_port);
  return absl::OkStatus();
}

absl::Status Tcp(const ProbeOptions& opt, ProbeResult* r) {
  model::ProbeOutcome& o = r->outcome;
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, "probe socket(AF_INET, SOCK_STREAM)");
  int one = 1;
  // One SYN only: no retransmission inside the bound (the first retransmit is at 1 s anyway).
  setsockopt(fd.get(), IPPROTO_TCP, TCP_SYNCNT, &one, sizeof(one));
  SARENA_RETURN_IF_ERROR(BindSource(fd.get(), opt, &o));
  sockaddr_in dst = Sockaddr(opt.dst, opt.dport);
  uint64_t start = MonotonicNs();
  o.packets = 1;
  int ret = connect(fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof(dst));
  if (ret < 0 && errno != EINPROGRESS) {
    int err = errno;
    o.result = "error";
    o.error_number = err;
    o.error = std::strerror(err);
  } else if (ret == 0) {
    o.result = "connected";
  } else {
    pollfd p{fd.get(), POLLOUT, 0};
    int n = poll(&p, 1, static_cast<int>(opt.timeout_ms));
    if (n <= 0) {
      o.result = "timeout";
    } else {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) {
        o.result = "connected";
      } else {
        SetError(err, &o);
      }
    }
  }
  r->ended_ns = MonotonicNs();
  o.elapsed_ms = MsSince(start);
  return absl::OkStatus();
}

absl::Status Udp(const ProbeOptions& opt, ProbeResult* r) {
  model::ProbeOutcome& o = r->outcome;
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, "probe socket(AF_INET, SOCK_DGRAM)");
  // No IP_RECVERR: a connected UDP socket learns hard ICMP errors (port/host unreachable) as
  // sk_err anyway, and a queued error would be freed on close as a drop of its own
  // (SKB_DROP_REASON_QUEUE_PURGE) that the live evidence would then report.
  int pmtu = IP_PMTUDISC_DO;
  setsockopt(fd.get(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
  SARENA_RETURN_IF_ERROR(BindSource(fd.get(), opt, &o));
  sockaddr_in dst = Sockaddr(opt.dst, opt.dport);
  uint32_t size = opt.size;
  uint64_t start = MonotonicNs();
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) < 0) {
    int err = errno;
    o.result = "error";
    o.error_number = err;
    o.error = std::strerror(err);
  } else if (size == diag::kPacketSizeMtu) {
    // A full-size datagram: the MTU of the route the connected socket took (ip(7) IP_MTU), the
    // outgoing device's unless the route sets its own, as the walk's size 0 is the source
    // device's MTU.
    int mtu = 0;
    socklen_t len = sizeof(mtu);
    if (getsockopt(fd.get(), IPPROTO_IP, IP_MTU, &mtu, &len) < 0) {
      return ErrnoStatus(errno, "probe getsockopt(IP_MTU)");
    }
    size = static_cast<uint32_t>(std::clamp(mtu, 28, 65535));
  }
  if (size == 0) size = 28;  // connect failed: nothing is sent
  o.size = size;
  std::vector<char> payload(size - 28, 'S');
  for (uint32_t i = 0; o.result.empty() && i < opt.count; ++i) {
    if (send(fd.get(), payload.data(), payload.size(), 0) < 0) {
      int err = errno;
      if (o.packets == 0 && err != ECONNREFUSED) {
        o.result = "error";
        o.error_number = err;
        o.error = std::strerror(err);
      } else {
        SetError(err, &o);  // an ICMP error for an earlier datagram
      }
      break;
    }
    ++o.packets;
    if (i + 1 < opt.count) usleep(2000);
  }
  // Wait for an error (an ICMP error sets the connected socket's sk_err) or a reply, bounded.
  uint64_t deadline = start + static_cast<uint64_t>(opt.timeout_ms) * 1000000ull;
  while (o.result.empty()) {
    uint64_t now = MonotonicNs();
    if (now >= deadline) {
      o.result = "sent";
      break;
    }
    pollfd p{fd.get(), POLLIN | POLLERR, 0};
    int n = poll(&p, 1, static_cast<int>((deadline - now) / 1000000ull) + 1);
    if (n <= 0) continue;
    char buf[2048];
    ssize_t got = recv(fd.get(), buf, sizeof(buf), 0);
    if (got >= 0) {
      o.result = "connected";  // the destination answered
    } else if (errno != EAGAIN) {
      SetError(errno, &o);
    }
  }
  r->ended_ns = MonotonicNs();
  o.elapsed_ms = MsSince(start);
  return absl::OkStatus();
}

}  // namespace

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

absl::StatusOr<ProbeResult> SendProbe(const ProbeOptions& opt) {
  if (opt.proto != 6 && opt.proto != 17) {
    return absl::InvalidArgumentError(absl::StrCat(
        "probe proto ", static_cast<int>(opt.proto), ": --live sends TCP or UDP probes only"));
  }
  if (opt.dport == 0) return absl::InvalidArgumentError("probe dport 0: need a port");
  if (opt.size != 0 && opt.size < 28) {
    return absl::InvalidArgumentError(absl::StrCat("probe size ", opt.size, ": want 28..65535"));
  }
  if (opt.count < 1 || opt.count > 16) {
    return absl::InvalidArgumentError(absl::StrCat("probe count ", opt.count, ": want 1..16"));
  }
  if (opt.timeout_ms < 1 || opt.timeout_ms > 5000) {
    return absl::InvalidArgumentError(
        absl::StrCat("probe timeout_ms ", opt.timeout_ms, ": want 1..5000"));
  }
  SARENA_ASSIGN_OR_RETURN(nl::Netns ns, nl::Netns::Open(opt.netns));
  SARENA_ASSIGN_OR_RETURN(nl::Netns self, nl::Netns::Current());
  ProbeResult r;
  r.outcome.netns_path = opt.netns;
  auto send = [&] { return opt.proto == 6 ? Tcp(opt, &r) : Udp(opt, &r); };
  // The caller's own namespace needs no setns (nor CAP_SYS_ADMIN).
  SARENA_RETURN_IF_ERROR(ns == self ? send() : nl::RunIn(ns, send));
  return r;
}

}  // namespace sarena::live
