// The trace query: `--src SRC --dst DST:PORT/PROTO` as DESIGN.md ("Diagnoser") defines it, where
// SRC/DST is `pod:NS/NAME`, `node:NAME`, `svc:NS/NAME` (destination only) or an IPv4 address.
#ifndef LIBSARENA_DIAG_QUERY_H_
#define LIBSARENA_DIAG_QUERY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"

namespace sarena::diag {

/// One side of the query, as written on the command line (not yet resolved against a snapshot).
struct EndpointSpec {
  enum class Kind { kPod, kNode, kService, kIp };
  Kind kind = Kind::kIp;
  std::string namespace_;  // kPod, kService
  std::string name;        // kPod, kNode, kService
  net::Ipv4 ip;            // kIp

  /// The text form ("pod:default/api", "node:node-a", "svc:web/www", "10.0.0.1").
  std::string ToString() const;
};

/// Parses SRC or DST without the port part. `allow_service` is false for --src.
/// Errors (kInvalidArgument, naming `flag`): unknown prefix, missing "NS/NAME", empty name,
/// a service as source, an address that is not IPv4.
absl::StatusOr<EndpointSpec> ParseEndpointSpec(absl::string_view text, absl::string_view flag,
                                               bool allow_service);

/// A whole query.
struct Query {
  EndpointSpec src;
  EndpointSpec dst;
  uint16_t dport = 0;  // host byte order
  uint8_t proto = 6;   // IP protocol number
  uint16_t sport = 0;  // 0 = an ephemeral port, unknown
  uint8_t ttl = 64;    // initial IP TTL
  uint32_t size = 0;   // packet size in bytes (0 = full-size: the source device MTU)
};

/// Parses `--src` and `--dst` ("DST:PORT/PROTO"; "/PROTO" optional, default tcp; PORT may be 0
/// for icmp). Errors: kInvalidArgument naming --src/--dst and the bad part.
absl::StatusOr<Query> ParseQuery(absl::string_view src, absl::string_view dst);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_QUERY_H_
