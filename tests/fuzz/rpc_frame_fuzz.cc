// libFuzzer target: the sarenad frame decoder as the daemon and the plugin meet it — a 4-byte
// big-endian length header then a serialized Request/Response — plus the plugin's checks on a
// reply (CheckResponseKind, StatusFromError) and on a request (CheckRequestUtf8).
#include <array>
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "libsarena/rpc/client.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/sarenad.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // protobuf logs every invalid-UTF-8 string it parses (most inputs): keep the run's log readable.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  namespace rpc = sarena::rpc;
  if (size >= rpc::kFrameHeaderBytes) {
    std::array<uint8_t, rpc::kFrameHeaderBytes> header;
    std::memcpy(header.data(), data, header.size());
    (void)rpc::DecodeFrameHeader(header);
  }
  absl::string_view body(reinterpret_cast<const char*>(data), size);
  if (size > rpc::kFrameHeaderBytes) body.remove_prefix(rpc::kFrameHeaderBytes);
  rpc::v1::Request req;
  rpc::v1::Response resp;
  const bool req_ok = rpc::DecodeFrameBody(body, &req).ok();
  const bool resp_ok = rpc::DecodeFrameBody(body, &resp).ok();
  if (req_ok) (void)rpc::CheckRequestUtf8(req);
  if (resp_ok) {
    if (resp.has_error()) (void)rpc::StatusFromError(resp.error());
    rpc::v1::Request probe;
    probe.mutable_endpoint_add();
    (void)rpc::CheckResponseKind(probe, resp, "/fuzz/sarenad.sock");
    if (req_ok) (void)rpc::CheckResponseKind(req, resp, "/fuzz/sarenad.sock");
  }
  if (req_ok) {
    absl::StatusOr<std::string> frame = rpc::EncodeFrame(req);
    if (frame.ok()) {
      rpc::v1::Request again;
      absl::string_view b(*frame);
      b.remove_prefix(rpc::kFrameHeaderBytes);
      (void)rpc::DecodeFrameBody(b, &again);
    }
  }
  return 0;
}
