#include "libsarena/rpc/framing.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <limits.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "libsarena/base/errno_status.h"

namespace sarena::rpc {
namespace {

// Milliseconds left until `deadline` for poll(), rounded up so we never spin with 0.
int PollTimeoutMs(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)));
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

// Waits until `fd` is ready for `events` or the deadline passes.
// Returns OK when ready, kDeadlineExceeded on timeout, an errno status on poll failure.
absl::Status WaitFd(int fd, short events, absl::Time deadline, absl::string_view what) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, PollTimeoutMs(deadline));
    if (rc > 0) return absl::OkStatus();  // ready, or POLLERR/POLLHUP: the I/O call reports it
    if (rc == 0) return absl::DeadlineExceededError(what);
    if (errno != EINTR) return ErrnoStatus(errno, what);
  }
}

bool PeerGone(int err) { return err == EPIPE || err == ECONNRESET || err == ENOTCONN; }

absl::Status WriteAll(int fd, absl::string_view data, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  size_t off = 0;
  // Sockets: send(MSG_DONTWAIT) never blocks, even on a blocking descriptor, so the deadline
  // holds. Pipes (ENOTSOCK): poll for POLLOUT, then write at most PIPE_BUF bytes, which a
  // writable pipe accepts without blocking.
  bool use_send = true;
  bool pipe_ready = false;
  while (off < data.size()) {
    ssize_t n;
    if (use_send) {
      n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else if (pipe_ready) {
      n = ::write(fd, data.data() + off, std::min<size_t>(data.size() - off, PIPE_BUF));
      pipe_ready = false;
    } else {
      n = -1;
      errno = EAGAIN;
    }
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == ENOTSOCK && use_send) {
      use_send = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      absl::Status s = WaitFd(fd, POLLOUT, deadline, "");
      pipe_ready = true;
      if (absl::IsDeadlineExceeded(s)) {
        return absl::DeadlineExceededError(
            absl::StrCat("write frame: timed out after ", absl::FormatDuration(timeout), " (",
                         off, " of ", data.size(), " bytes written)"));
      }
      if (!s.ok()) return s;
      continue;
    }
    int err = n < 0 ? errno : EPIPE;
    if (PeerGone(err)) {
      return absl::UnavailableError(
          absl::StrCat("write frame: connection closed by peer after ", off, " of ", data.size(),
                       " bytes (errno ", err, ")"));
    }
    return ErrnoStatus(err, "write frame");
  }
  return absl::OkStatus();
}

// Reads exactly `len` bytes into `buf`. `*got` reports how many arrived (for EOF messages).
// Returns OK, kOutOfRange on EOF (the caller words it), kDeadlineExceeded, or an I/O error.
absl::Status ReadExact(int fd, char* buf, size_t len, absl::Time deadline, size_t* got) {
  *got = 0;
  while (*got < len) {
    // Poll first so that blocking descriptors honour the deadline too.
    absl::Status s = WaitFd(fd, POLLIN, deadline, "");
    if (!s.ok()) return s;
    ssize_t n = ::read(fd, buf + *got, len - *got);
    if (n > 0) {
      *got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return absl::OutOfRangeError("eof");
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    if (PeerGone(errno)) {
      return absl::UnavailableError(
          absl::StrCat("read frame: connection reset by peer (errno ", errno, ")"));
    }
    return ErrnoStatus(errno, "read frame");
  }
  return absl::OkStatus();
}

}  // namespace

std::array<uint8_t, kFrameHeaderBytes> EncodeFrameHeader(uint32_t body_len) {
  return {static_cast<uint8_t>(body_len >> 24), static_cast<uint8_t>(body_len >> 16),
          static_cast<uint8_t>(body_len >> 8), static_cast<uint8_t>(body_len)};
}

absl::StatusOr<uint32_t> DecodeFrameHeader(const std::array<uint8_t, kFrameHeaderBytes>& header) {
  uint32_t len = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) |
                 (uint32_t{header[2]} << 8) | uint32_t{header[3]};
  if (len > kMaxFrameBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("frame body of ", len,
                                                     " bytes exceeds the limit of ",
                                                     kMaxFrameBytes, " bytes"));
  }
  return len;
}

absl::StatusOr<std::string> EncodeFrame(const google::protobuf::MessageLite& msg) {
  size_t size = msg.ByteSizeLong();
  if (size > kMaxFrameBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "encode frame: ", msg.GetTypeName(), " of ", size, " bytes exceeds the limit of ",
        kMaxFrameBytes, " bytes"));
  }
  std::string out;
  out.resize(kFrameHeaderBytes + size);
  auto header = EncodeFrameHeader(static_cast<uint32_t>(size));
  std::copy(header.begin(), header.end(), out.begin());
  if (size > 0 &&
      !msg.SerializeToArray(out.data() + kFrameHeaderBytes, static_cast<int>(size))) {
    return absl::InternalError(absl::StrCat("encode frame: serializing ", msg.GetTypeName(),
                                            " failed"));
  }
  return out;
}

absl::Status DecodeFrameBody(absl::string_view body, google::protobuf::MessageLite* msg) {
  msg->Clear();
  if (!msg->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return absl::DataLossError(absl::StrCat("frame body of ", body.size(),
                                            " bytes is not a valid ", msg->GetTypeName()));
  }
  return absl::OkStatus();
}

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& msg, absl::Duration timeout) {
  absl::StatusOr<std::string> frame = EncodeFrame(msg);
  if (!frame.ok()) return frame.status();
  return WriteAll(fd, *frame, timeout);
}

absl::Status ReadFrame(int fd, google::protobuf::MessageLite* msg, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto timed_out = [&](absl::string_view part, size_t got, size_t want) {
    return absl::DeadlineExceededError(absl::StrCat("read frame: timed out after ",
                                                    absl::FormatDuration(timeout), " (", part,
                                                    ": ", got, " of ", want, " bytes)"));
  };
  std::array<uint8_t, kFrameHeaderBytes> header;
  size_t got = 0;
  absl::Status s =
      ReadExact(fd, reinterpret_cast<char*>(header.data()), header.size(), deadline, &got);
  if (absl::IsOutOfRange(s)) {
    if (got == 0) return absl::UnavailableError("read frame: connection closed by peer");
    return absl::DataLossError(absl::StrCat("truncated frame: stream ended after ", got, " of ",
                                            kFrameHeaderBytes, " header bytes"));
  }
  if (absl::IsDeadlineExceeded(s)) return timed_out("header", got, kFrameHeaderBytes);
  if (!s.ok()) return s;

  absl::StatusOr<uint32_t> len = DecodeFrameHeader(header);
  if (!len.ok()) return absl::ResourceExhaustedError(absl::StrCat("read frame: ", len.status().message()));

  // Grow the body as bytes arrive (at most kFrameReadChunk beyond what was received), never
  // `*len` bytes up front: a peer announcing 4 MiB and sending nothing costs nothing.
  std::string body;
  while (body.size() < *len) {
    const size_t off = body.size();
    const size_t chunk = std::min<size_t>(*len - off, kFrameReadChunk);
    body.resize(off + chunk);
    s = ReadExact(fd, body.data() + off, chunk, deadline, &got);
    body.resize(off + got);
    if (absl::IsOutOfRange(s)) {
      return absl::DataLossError(absl::StrCat("truncated frame: stream ended after ",
                                              body.size(), " of ", *len, " body bytes"));
    }
    if (absl::IsDeadlineExceeded(s)) return timed_out("body", body.size(), *len);
    if (!s.ok()) return s;
  }
  return DecodeFrameBody(body, msg);
}

}  // namespace sarena::rpc
