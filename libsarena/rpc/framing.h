// Length-prefixed protobuf framing of the sarenad wire protocol (libsarena/rpc/proto/sarenad.proto).
//
// One frame = a 4-byte unsigned body length in network byte order (big-endian), followed by that
// many bytes of one serialized message (a v1::Request from client to daemon, a v1::Response
// back). A body may be empty (a message with every field at its default serializes to 0 bytes).
// Bodies larger than kMaxFrameBytes are refused by both sides before any allocation.
//
// The constants and the header encode/decode functions are shared by the blocking helpers below
// (used by the CNI plugin's Client and by tests) and by the daemon's asynchronous Asio reader, so
// both ends agree on the limits.
#ifndef LIBSARENA_RPC_FRAMING_H_
#define LIBSARENA_RPC_FRAMING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace sarena::rpc {

/// Size of the frame header: the body length as a uint32 in network byte order.
inline constexpr size_t kFrameHeaderBytes = 4;

/// Largest accepted frame body, in bytes (4 MiB). Larger frames are rejected with
/// kResourceExhausted by EncodeFrame / WriteFrame / DecodeFrameHeader / ReadFrame.
inline constexpr uint32_t kMaxFrameBytes = 4u * 1024u * 1024u;

/// Readers (ReadFrame, the daemon's Asio reader) allocate a frame body in steps of at most this
/// many bytes as they arrive, never the announced length up front.
inline constexpr size_t kFrameReadChunk = 64 * 1024;

/// The 4 header bytes announcing a body of `body_len` bytes (big-endian). Does not check the
/// limit: callers check `body_len <= kMaxFrameBytes` (EncodeFrame does).
std::array<uint8_t, kFrameHeaderBytes> EncodeFrameHeader(uint32_t body_len);

/// Decodes a received header into the body length. Errors: kResourceExhausted
/// "frame body of N bytes exceeds the limit of 4194304 bytes" when the length exceeds
/// kMaxFrameBytes (the connection should then be closed: the stream cannot be resynchronized).
absl::StatusOr<uint32_t> DecodeFrameHeader(const std::array<uint8_t, kFrameHeaderBytes>& header);

/// Serializes `msg` and prepends its header: the exact bytes to put on the wire.
/// Errors: kResourceExhausted when the serialized body exceeds kMaxFrameBytes; kInternal when
/// serialization fails (e.g. required fields of a proto2 message missing).
absl::StatusOr<std::string> EncodeFrame(const google::protobuf::MessageLite& msg);

/// Parses a frame body (without its header) into `msg` (cleared first).
/// Errors: kDataLoss "frame body of N bytes is not a valid <type name>".
absl::Status DecodeFrameBody(absl::string_view body, google::protobuf::MessageLite* msg);

/// Writes one frame carrying `msg` to the stream socket (or pipe) `fd`, blocking until it is fully
/// written or `timeout` elapses. Works on blocking and non-blocking descriptors (it polls), never
/// raises SIGPIPE on sockets (MSG_NOSIGNAL).
/// Errors: kResourceExhausted (body too large, nothing written); kDeadlineExceeded
/// "write frame: timed out after <d> (<n> of <m> bytes written)"; kUnavailable when the peer
/// closed the connection (EPIPE / ECONNRESET); other I/O errors via sarena::ErrnoStatus.
absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& msg, absl::Duration timeout);

/// Reads exactly one frame from `fd` and parses it into `msg`, blocking until the whole frame has
/// arrived or `timeout` elapses (one deadline for header and body). The body buffer grows in
/// kFrameReadChunk steps as bytes arrive.
/// Errors: kUnavailable "read frame: connection closed by peer" when the stream ends before the
/// first header byte (a clean close between frames); kDataLoss "truncated frame ..." when it ends
/// in the middle of a frame; kResourceExhausted when the header announces more than
/// kMaxFrameBytes (the body is not read); kDeadlineExceeded on timeout; kDataLoss when the body
/// does not parse; kUnavailable on ECONNRESET; other I/O errors via sarena::ErrnoStatus.
absl::Status ReadFrame(int fd, google::protobuf::MessageLite* msg, absl::Duration timeout);

}  // namespace sarena::rpc

#endif  // LIBSARENA_RPC_FRAMING_H_
