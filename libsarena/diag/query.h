// The trace query: `--src SRC --dst DST:PORT/PROTO` as docs/architecture.md ("The diagnoser's
// contract") defines it, where SRC/DST is `pod:NS/NAME`, `node:NAME`, `svc:NS/NAME` (destination
// only) or an IPv4 address.
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
  uint32_t size = 0;   // packet size in bytes (kPacketSizeMtu: full size, see ParsePacketSize)
};

/// --size 0: a full-size packet, as large as the MTU of the device it leaves the source by.
inline constexpr uint32_t kPacketSizeMtu = 0;

/// The smallest packet of IP protocol `proto` (model::kProtoTcp, kProtoUdp, kProtoIcmp): its
/// IPv4 header and its own without payload or options, 40 for tcp, 28 for udp and icmp (echo).
uint32_t MinPacketSize(uint8_t proto);

/// The one definition of `sarena-diag trace --size` (offline and --live) for a packet of IP
/// protocol `proto` (Query::proto): the packet's IP total length in bytes,
/// MinPacketSize(proto)..65535, or 0 (kPacketSizeMtu, the default) = full size, the MTU of the
/// source's outgoing device (the offline walk reads it from the snapshot, and for TCP uses the
/// segment sizes the connection negotiates by MSS; --live's UDP probe takes the MTU of its
/// route, IP_MTU, which is that device's unless the route sets one).
/// Errors: kInvalidArgument "invalid --size '<text>': want 0 (the source device's MTU) or
/// <min>..65535 for <tcp|udp|icmp> (<min> bytes are its IPv4 and <proto> headers alone)" for
/// anything else (not a number, below the minimum, over 65535).
absl::StatusOr<uint32_t> ParsePacketSize(absl::string_view text, uint8_t proto);

/// Parses `--src` and `--dst` ("DST:PORT/PROTO"; "/PROTO" is required: a protocol is never
/// guessed). PROTO is exactly tcp, udp or icmp (lower case, as --help writes them); tcp and udp
/// need a PORT 1..65535, icmp has none: its PORT must be 0 ("10.0.0.2:0/icmp"). Errors:
/// kInvalidArgument naming --src/--dst, the value and the bad part: "no protocol: write
/// <DST>/tcp, ..." for "10.0.0.2:80", "unknown protocol 'sctp': want tcp, udp or icmp (lower
/// case)" (also for "TCP"), "icmp has no ports: port 8080 given ...", an invalid or zero port,
/// a bad SRC/DST (ParseEndpointSpec).
absl::StatusOr<Query> ParseQuery(absl::string_view src, absl::string_view dst);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_QUERY_H_
