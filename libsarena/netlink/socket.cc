#include "libsarena/netlink/socket.h"

#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/netlink/internal.h"

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

namespace sarena::nl {
namespace internal {

absl::Status CheckMessage(const nlmsghdr& nlh, uint16_t type, size_t hdr_size,
                          absl::string_view what) {
  if (nlh.nlmsg_type != type) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse ", what, ": unexpected message type ", nlh.nlmsg_type));
  }
  if (nlh.nlmsg_len < NLMSG_LENGTH(hdr_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse ", what, ": truncated message (", nlh.nlmsg_len, " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status CheckIfName(absl::string_view name, absl::string_view field) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", field, " '", name, "': an interface name has 1 to 15 characters"));
  }
  for (char c : name) {
    if (c == '/' || c == ':' || absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(absl::StrCat("invalid ", field, " '", name,
                                                     "': '/', ':' and whitespace are not allowed"));
    }
  }
  return absl::OkStatus();
}

absl::Status WithCode(absl::Status status, absl::StatusCode code) {
  return absl::Status(code, status.message());
}

}  // namespace internal

namespace {

// Large enough for any rtnetlink dump chunk (the kernel sizes dump skbs after the largest
// receive buffer it has seen, capped at 32 KiB) and any single reply.
constexpr size_t kRecvBufSize = 64 * 1024;

}  // namespace

// ---- acks ----

absl::StatusOr<AckError> ParseAck(const nlmsghdr& nlh) {
  AckError ack;
  const size_t payload_len = nlh.nlmsg_len >= NLMSG_HDRLEN ? nlh.nlmsg_len - NLMSG_HDRLEN : 0;
  size_t tlv_offset = 0;
  if (nlh.nlmsg_type == NLMSG_ERROR) {
    if (payload_len < sizeof(nlmsgerr)) {
      return absl::InvalidArgumentError("parse netlink ack: truncated NLMSG_ERROR");
    }
    nlmsgerr err;
    std::memcpy(&err, mnl_nlmsg_get_payload(&nlh), sizeof err);
    ack.error = -err.error;
    tlv_offset = sizeof(nlmsgerr);
    // Without NETLINK_CAP_ACK (or for acks of success) the request's payload follows.
    if (!(nlh.nlmsg_flags & NLM_F_CAPPED) && err.msg.nlmsg_len >= NLMSG_HDRLEN) {
      tlv_offset += NLMSG_ALIGN(err.msg.nlmsg_len - NLMSG_HDRLEN);
    }
  } else if (nlh.nlmsg_type == NLMSG_DONE) {
    if (payload_len >= sizeof(int)) {
      int v;
      std::memcpy(&v, mnl_nlmsg_get_payload(&nlh), sizeof v);
      ack.error = -v;
      tlv_offset = NLMSG_ALIGN(sizeof(int));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("parse netlink ack: message type ", nlh.nlmsg_type, " is not an ack"));
  }
  if (ack.error < 0) ack.error = -ack.error;  // be lenient with odd senders
  if ((nlh.nlmsg_flags & NLM_F_ACK_TLVS) && tlv_offset < payload_len) {
    const auto* attr = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(&nlh, tlv_offset));
    int len = static_cast<int>(payload_len - tlv_offset);
    while (mnl_attr_ok(attr, len)) {
      switch (mnl_attr_get_type(attr)) {
        case NLMSGERR_ATTR_MSG:
          ack.extack = internal::AttrStr(attr);
          break;
        case NLMSGERR_ATTR_OFFS:
          if (auto v = internal::AttrU32(attr)) ack.bad_attr_offset = *v;
          break;
        default:
          break;
      }
      len -= static_cast<int>(MNL_ALIGN(attr->nla_len));
      attr = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(attr) +
                                             MNL_ALIGN(attr->nla_len));
    }
  }
  return ack;
}

// ---- socket ----

absl::StatusOr<Socket> Socket::Open() {
  constexpr absl::string_view kWhat = "open netlink socket 'route'";
  mnl_socket* sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (sock == nullptr) return ErrnoStatus(errno, kWhat);
  if (mnl_socket_bind(sock, 0, MNL_SOCKET_AUTOPID) < 0) {
    int err = errno;
    mnl_socket_close(sock);
    return ErrnoStatus(err, kWhat, "bind");
  }
  int one = 1;
  // Both are best effort: kernels before 4.12 lack extended acks, and the errors still work.
  mnl_socket_setsockopt(sock, NETLINK_EXT_ACK, &one, sizeof one);
  mnl_socket_setsockopt(sock, NETLINK_CAP_ACK, &one, sizeof one);
  return Socket(sock, mnl_socket_get_portid(sock));
}

absl::StatusOr<Socket> Socket::OpenIn(const Netns& ns) {
  return RunInWithResult(ns, [] { return Socket::Open(); });
}

Socket::Socket(Socket&& other) noexcept
    : sock_(std::exchange(other.sock_, nullptr)), portid_(other.portid_), seq_(other.seq_) {}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (sock_ != nullptr) mnl_socket_close(sock_);
    sock_ = std::exchange(other.sock_, nullptr);
    portid_ = other.portid_;
    seq_ = other.seq_;
  }
  return *this;
}

Socket::~Socket() {
  if (sock_ != nullptr) mnl_socket_close(sock_);
}

int Socket::fd() const { return sock_ ? mnl_socket_get_fd(sock_) : -1; }

absl::Status Socket::Run(nlmsghdr* nlh, absl::string_view what,
                         absl::FunctionRef<absl::Status(const nlmsghdr&)> on_msg, bool dump,
                         bool* interrupted) {
  if (sock_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(what, ": socket closed"));
  nlh->nlmsg_flags |= NLM_F_REQUEST | (dump ? NLM_F_DUMP : NLM_F_ACK);
  if (++seq_ == 0) ++seq_;
  const uint32_t seq = seq_;
  nlh->nlmsg_seq = seq;
  nlh->nlmsg_pid = 0;
  last_errno_ = 0;
  if (mnl_socket_sendto(sock_, nlh, nlh->nlmsg_len) < 0) {
    return ErrnoStatus(errno, what, "netlink send");
  }
  std::vector<char> buf(kRecvBufSize);
  absl::Status cb_status;
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(sock_, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, what, "netlink receive");
    }
    const auto* m = reinterpret_cast<const nlmsghdr*>(buf.data());
    int len = static_cast<int>(n);
    for (; mnl_nlmsg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
      if (m->nlmsg_seq != seq) continue;  // stale answer to an earlier request
      if (m->nlmsg_flags & NLM_F_DUMP_INTR) *interrupted = true;
      if (m->nlmsg_type == NLMSG_ERROR || m->nlmsg_type == NLMSG_DONE) {
        absl::StatusOr<AckError> ack = ParseAck(*m);
        if (!ack.ok()) return absl::InternalError(absl::StrCat(what, ": ", ack.status().message()));
        if (ack->error != 0) {
          last_errno_ = ack->error;
          return ErrnoStatus(ack->error, what, ack->extack);
        }
        return cb_status;
      }
      if (m->nlmsg_type == NLMSG_NOOP) continue;
      if (m->nlmsg_type == NLMSG_OVERRUN) {
        return ErrnoStatus(ENOBUFS, what, "netlink overrun");
      }
      if (cb_status.ok()) cb_status = on_msg(*m);
    }
  }
}

absl::Status Socket::Request(nlmsghdr* nlh, absl::string_view what,
                             absl::FunctionRef<absl::Status(const nlmsghdr&)> on_reply) {
  bool interrupted = false;
  return Run(nlh, what, on_reply, /*dump=*/false, &interrupted);
}

absl::Status Socket::Request(nlmsghdr* nlh, absl::string_view what) {
  return Request(nlh, what, [](const nlmsghdr&) { return absl::OkStatus(); });
}

absl::Status Socket::Dump(nlmsghdr* nlh, absl::string_view what,
                          absl::FunctionRef<absl::Status(const nlmsghdr&)> on_msg,
                          absl::FunctionRef<void()> on_restart) {
  // Keep a copy: Run() edits flags/seq in place and the caller's buffer may be reused.
  std::vector<char> copy(reinterpret_cast<const char*>(nlh),
                         reinterpret_cast<const char*>(nlh) + nlh->nlmsg_len);
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (attempt > 0) on_restart();
    std::vector<char> msg = copy;
    bool interrupted = false;
    absl::Status st =
        Run(reinterpret_cast<nlmsghdr*>(msg.data()), what, on_msg, /*dump=*/true, &interrupted);
    if (!st.ok() || !interrupted) return st;
  }
  return absl::UnavailableError(
      absl::StrCat(what, ": dump interrupted 4 times by concurrent changes"));
}

}  // namespace sarena::nl
