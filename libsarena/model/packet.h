// The packet the path model reasons about: an IPv4 5-tuple plus the kernel metadata that routing
// and netfilter decisions read (fwmark, conntrack state, TTL, length).
#ifndef LIBSARENA_MODEL_PACKET_H_
#define LIBSARENA_MODEL_PACKET_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// IP protocol numbers (IANA "Assigned Internet Protocol Numbers"; /etc/protocols).
inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoIpip = 4;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoSctp = 132;

/// "tcp", "udp", "icmp", "sctp", "ipip" for the numbers above, otherwise the decimal number.
std::string ProtoName(uint8_t proto);

/// Parses a protocol as iptables and iproute2 print it: a name ("tcp", "udp", "icmp", "sctp",
/// "ipip"/"ipencap", case-insensitive) or a decimal number 0..255. "all" parses as 0.
/// Errors: kInvalidArgument "invalid <field> '<text>': unknown protocol".
absl::StatusOr<uint8_t> ParseProto(absl::string_view text, absl::string_view field = "protocol");

/// Conntrack state of the packet as netfilter's conntrack match sees it (iptables-extensions(8),
/// "conntrack"/"state"). The first packet of a connection walked by the model is kNew; a reply
/// walked back along the return path is kEstablished. Netfilter's nat table is consulted only for
/// kNew packets (the kernel applies the connection's NAT binding to the others).
enum class CtState : uint8_t { kNew, kEstablished, kRelated, kInvalid, kUntracked };
absl::string_view ToString(CtState state);  // "NEW", "ESTABLISHED", ...

/// One IPv4 packet. Addresses are boost::asio::ip::address_v4 values (no byte-order question);
/// ports are in host byte order; `mark` is skb->mark (fwmark) as iptables/ip-rule print it.
struct Packet {
  net::Ipv4 src;
  net::Ipv4 dst;
  uint16_t sport = 0;  // host byte order; 0 for protocols without ports
  uint16_t dport = 0;  // host byte order
  uint8_t proto = kProtoTcp;
  uint32_t mark = 0;     // skb->mark
  uint32_t ct_mark = 0;  // conntrack mark (CONNMARK / -m connmark)
  CtState ct_state = CtState::kNew;
  uint8_t tos = 0;
  uint8_t ttl = 64;
  uint32_t length = 0;  // total IP length in bytes (0 = unknown, no MTU reasoning)
  /// TCP header flags as `-p tcp --tcp-flags` reads them (RFC 9293 3.1: FIN 0x01, SYN 0x02,
  /// RST 0x04, PSH 0x08, ACK 0x10); 0 = implied by ct_state: SYN for kNew, else ACK. Set to
  /// SYN|ACK (0x12) to evaluate rules on a connection's first reply segment.
  uint8_t tcp_flags = 0;

  /// "tcp 10.0.0.1:1234 -> 10.0.0.2:80 mark 0x4000" (mark only when non-zero).
  std::string ToString() const;
  /// Swaps src/dst and sport/dport (the reply direction); everything else is kept.
  Packet Reversed() const;

  friend bool operator==(const Packet&, const Packet&) = default;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_PACKET_H_
