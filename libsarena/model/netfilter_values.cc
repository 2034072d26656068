// Value parsers shared by the match modules and the targets of the iptables-save format
// (numbers, marks, addresses, port ranges) and the error they report.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libsarena/model/netfilter_rules.h"
#include "libsarena/net/ip.h"

namespace sarena::model::internal {

absl::Status BadMatchValue(absl::string_view mod, const Opt& o) {
  return absl::InvalidArgumentError(absl::StrCat("invalid value for -m ", mod, " ", o.name,
                                                 ": '", absl::StrJoin(o.values, " "), "'"));
}

bool ParseU32Any(absl::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) {
    if (!absl::SimpleHexAtoi(s.substr(2), &v)) return false;
  } else if (!absl::SimpleAtoi(s, &v)) {
    return false;
  }
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// "value[/mask]" as iptables prints marks.
bool ParseMarkMask(absl::string_view s, uint32_t* value, uint32_t* mask, uint32_t default_mask) {
  size_t slash = s.find('/');
  if (slash == absl::string_view::npos) {
    *mask = default_mask;
    return ParseU32Any(s, value);
  }
  return ParseU32Any(s.substr(0, slash), value) && ParseU32Any(s.substr(slash + 1), mask);
}

// "a.b.c.d[/len|/mask]".
bool ParseAddrMask(absl::string_view s, uint32_t* addr, uint32_t* mask) {
  size_t slash = s.find('/');
  absl::string_view a = s.substr(0, slash);
  auto ip = net::ParseIpv4(a);
  if (!ip.ok()) return false;
  *addr = ip->to_uint();
  if (slash == absl::string_view::npos) {
    *mask = 0xffffffffu;
    return true;
  }
  absl::string_view m = s.substr(slash + 1);
  if (m.find('.') != absl::string_view::npos) {
    auto mip = net::ParseIpv4(m);
    if (!mip.ok()) return false;
    *mask = mip->to_uint();
  } else {
    uint32_t len = 0;
    if (!absl::SimpleAtoi(m, &len) || len > 32) return false;
    *mask = len == 0 ? 0 : (0xffffffffu << (32 - len));
  }
  *addr &= *mask;
  return true;
}

bool ParsePortRange(absl::string_view s, uint16_t* lo, uint16_t* hi) {
  size_t colon = s.find(':');
  if (colon == absl::string_view::npos) colon = s.find('-');
  uint32_t a = 0, b = 0;
  if (colon == absl::string_view::npos) {
    if (!absl::SimpleAtoi(s, &a) || a > 65535) return false;
    *lo = *hi = static_cast<uint16_t>(a);
    return true;
  }
  absl::string_view l = s.substr(0, colon), h = s.substr(colon + 1);
  if (l.empty()) a = 0;
  else if (!absl::SimpleAtoi(l, &a)) return false;
  if (h.empty()) b = 65535;
  else if (!absl::SimpleAtoi(h, &b)) return false;
  if (a > 65535 || b > 65535) return false;
  *lo = static_cast<uint16_t>(a);
  *hi = static_cast<uint16_t>(b);
  return true;
}

uint32_t NameListBits(absl::string_view list, absl::Span<const NamedBits> names, bool* ok) {
  uint32_t bits = 0;
  *ok = true;
  for (absl::string_view t : absl::StrSplit(list, ',')) {
    std::string u = absl::AsciiStrToUpper(t);
    const NamedBits* found = nullptr;
    for (const NamedBits& n : names) {
      if (n.name == u) found = &n;
    }
    if (found == nullptr) {
      *ok = false;
      return 0;
    }
    bits |= found->bits;
  }
  return bits;
}

}  // namespace sarena::model::internal
