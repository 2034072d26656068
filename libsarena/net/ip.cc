#include "libsarena/net/ip.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "libsarena/base/numbers.h"

namespace sarena::net {

absl::StatusOr<Ipv4> ParseIpv4(absl::string_view text, absl::string_view field) {
  boost::system::error_code ec;
  Ipv4 ip = boost::asio::ip::make_address_v4(std::string(text), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", field, " '", text, "': not an IPv4 address"));
  }
  return ip;
}

absl::StatusOr<Ipv4Prefix> ParseIpv4Prefix(absl::string_view text, absl::string_view field) {
  size_t slash = text.find('/');
  absl::string_view addr = text.substr(0, slash);
  int len = 32;
  if (slash != absl::string_view::npos) {
    const std::optional<uint64_t> parsed = ParseCanonicalUint(text.substr(slash + 1), 32);
    if (!parsed) {
      return absl::InvalidArgumentError(absl::StrCat("invalid ", field, " '", text,
                                                     "': prefix length must be 0..32"));
    }
    len = static_cast<int>(*parsed);
  }
  boost::system::error_code ec;
  Ipv4 ip = boost::asio::ip::make_address_v4(std::string(addr), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", field, " '", text, "': not an IPv4 prefix"));
  }
  return Ipv4Prefix(ip, static_cast<unsigned short>(len));
}

uint32_t ToBe32(const Ipv4& ip) { return htonl(ip.to_uint()); }

Ipv4 FromBe32(uint32_t be) { return Ipv4(ntohl(be)); }

bool Contains(const Ipv4Prefix& prefix, const Ipv4& ip) {
  const uint32_t len = prefix.prefix_length();
  if (len == 0) return true;
  const uint32_t mask = len == 32 ? 0xffffffffu : ~((1u << (32 - len)) - 1);
  return (ip.to_uint() & mask) == (prefix.address().to_uint() & mask);
}

absl::StatusOr<Mac> ParseMac(absl::string_view text, absl::string_view field) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  Mac mac{};
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", field, " '", text, "': not a MAC address"));
  };
  if (parts.size() != 6) return bad();
  for (size_t i = 0; i < 6; ++i) {
    int v = 0;
    if (parts[i].size() != 2 || !absl::SimpleHexAtoi(parts[i], &v)) return bad();
    mac[i] = static_cast<uint8_t>(v);
  }
  return mac;
}

std::string FormatMac(const Mac& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

}  // namespace sarena::net
