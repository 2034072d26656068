#include "libsarena/model/packet.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sarena::model {

std::string ProtoName(uint8_t proto) {
  switch (proto) {
    case kProtoIcmp: return "icmp";
    case kProtoIpip: return "ipip";
    case kProtoTcp: return "tcp";
    case kProtoUdp: return "udp";
    case kProtoSctp: return "sctp";
    default: return absl::StrCat(proto);
  }
}

absl::StatusOr<uint8_t> ParseProto(absl::string_view text, absl::string_view field) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "tcp") return kProtoTcp;
  if (t == "udp") return kProtoUdp;
  if (t == "icmp") return kProtoIcmp;
  if (t == "sctp") return kProtoSctp;
  if (t == "ipip" || t == "ipencap" || t == "ipv4") return kProtoIpip;
  if (t == "all" || t == "ip") return 0;
  if (t == "gre") return 47;
  if (t == "esp") return 50;
  if (t == "ah") return 51;
  if (t == "icmpv6" || t == "ipv6-icmp") return 58;
  if (t == "udplite") return 136;
  if (t == "igmp") return 2;
  uint32_t n = 0;
  if (absl::SimpleAtoi(t, &n) && n <= 255) return static_cast<uint8_t>(n);
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", field, " '", text, "': unknown protocol"));
}

absl::string_view ToString(CtState state) {
  switch (state) {
    case CtState::kNew: return "NEW";
    case CtState::kEstablished: return "ESTABLISHED";
    case CtState::kRelated: return "RELATED";
    case CtState::kInvalid: return "INVALID";
    case CtState::kUntracked: return "UNTRACKED";
  }
  return "?";
}

std::string Packet::ToString() const {
  std::string s;
  if (proto == kProtoTcp || proto == kProtoUdp || proto == kProtoSctp) {
    s = absl::StrCat(ProtoName(proto), " ", src.to_string(), ":", sport, " -> ", dst.to_string(),
                     ":", dport);
  } else {
    s = absl::StrCat(ProtoName(proto), " ", src.to_string(), " -> ", dst.to_string());
  }
  if (mark != 0) absl::StrAppend(&s, absl::StrFormat(" mark 0x%x", mark));
  return s;
}

Packet Packet::Reversed() const {
  Packet r = *this;
  std::swap(r.src, r.dst);
  std::swap(r.sport, r.dport);
  return r;
}

}  // namespace sarena::model
