// Thin helpers over boost::asio::ip::address_v4 / network_v4: parsing with absl::Status errors
// that name the field, byte-order conversion, and MAC addresses.
#ifndef LIBSARENA_NET_IP_H_
#define LIBSARENA_NET_IP_H_

#include <array>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/network_v4.hpp>

#include "absl/status/statusor.h"

namespace sarena::net {

using Ipv4 = boost::asio::ip::address_v4;
using Ipv4Prefix = boost::asio::ip::network_v4;

/// A 6-byte Ethernet MAC address in wire order.
using Mac = std::array<uint8_t, 6>;

/// Parses dotted-quad IPv4 ("10.244.1.5"). Errors: kInvalidArgument "invalid <field> '<text>':
/// not an IPv4 address". `field` names the input (flag, JSON key) for the message.
absl::StatusOr<Ipv4> ParseIpv4(absl::string_view text, absl::string_view field = "address");

/// Parses "A.B.C.D/len" (len decimal 0..32, written without sign or leading zero: "/08" and
/// "/+8" are refused, base/numbers.h). A bare address means /32. Host bits may be set
/// ("10.0.0.5/24" keeps address 10.0.0.5, prefix 24 — use .canonical() for the network).
/// Errors: kInvalidArgument naming `field` and the text.
absl::StatusOr<Ipv4Prefix> ParseIpv4Prefix(absl::string_view text,
                                           absl::string_view field = "prefix");

/// Address in network byte order as stored in BPF maps and packet headers.
uint32_t ToBe32(const Ipv4& ip);
/// Inverse of ToBe32: `be` is in network byte order.
Ipv4 FromBe32(uint32_t be);

/// True when `ip` lies inside `prefix` (canonical network of the prefix).
bool Contains(const Ipv4Prefix& prefix, const Ipv4& ip);

/// Parses "aa:bb:cc:dd:ee:ff" (case-insensitive). Errors: kInvalidArgument naming `field`.
absl::StatusOr<Mac> ParseMac(absl::string_view text, absl::string_view field = "mac");
/// Formats as lower-case "aa:bb:cc:dd:ee:ff" (the iproute2 form).
std::string FormatMac(const Mac& mac);

}  // namespace sarena::net

#endif  // LIBSARENA_NET_IP_H_
