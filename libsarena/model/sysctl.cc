#include "libsarena/model/sysctl.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace sarena::model {

namespace {

// The net.ipv4.conf.<dev>.<name> keys the model interprets (the index of Sysctls::DeviceConf).
constexpr absl::string_view kConfNames[] = {
    "rp_filter",      "arp_ignore",     "forwarding",
    "accept_local",   "route_localnet", "src_valid_mark",
    "send_redirects", "proxy_arp",      "ignore_routes_with_linkdown"};

static_assert(std::size(kConfNames) == 9, "Sysctls::DeviceConf::kNames");

// Index of `name` in kConfNames, or -1.
int ConfNameIndex(absl::string_view name) {
  for (size_t i = 0; i < std::size(kConfNames); ++i) {
    if (kConfNames[i] == name) return static_cast<int>(i);
  }
  return -1;
}

constexpr absl::string_view kIpv4Conf = "net.ipv4.conf.";

// A net.ipv4.conf.<dev>.<name> key the model interprets: its device (as spelled in the key)
// and its index in kConfNames.
struct InterpretedConf {
  absl::string_view dev;
  int index;
};
std::optional<InterpretedConf> SplitInterpretedConfKey(absl::string_view key) {
  if (!absl::StartsWith(key, kIpv4Conf)) return std::nullopt;
  absl::string_view rest = key.substr(kIpv4Conf.size());
  size_t dot = rest.rfind('.');
  if (dot == absl::string_view::npos || dot == 0) return std::nullopt;  // no <dev>
  int i = ConfNameIndex(rest.substr(dot + 1));
  if (i < 0) return std::nullopt;
  return InterpretedConf{rest.substr(0, dot), i};
}

// A value as an integer: its first whitespace-separated token.
std::optional<int64_t> IntValue(absl::string_view v) {
  size_t sp = v.find_first_of(" \t");
  if (sp != absl::string_view::npos) v = v.substr(0, sp);
  int64_t n = 0;
  if (!absl::SimpleAtoi(v, &n)) return std::nullopt;
  return n;
}

// The per-device directories: <prefix><dev>.<leaf>, where no leaf name holds a dot, so everything
// between the prefix and the last dot is the device name.
constexpr absl::string_view kPerDevicePrefixes[] = {"net.ipv4.conf.", "net.ipv6.conf.",
                                                    "net.ipv4.neigh.", "net.ipv6.neigh."};

// The key in sysctl -a's spelling: '.' separators, and a '.' inside a device name written '/'.
//  - The /proc/sys path form ("net/ipv4/conf/vxlan.calico/forwarding", which sysctl(8) also
//    accepts): when the first separator is '/', every '/' and '.' swap, as procps-ng's
//    slashdot() does — "net.ipv4.conf.vxlan/calico.forwarding".
//  - A dotted key whose device's '.' was left unescaped ("net.ipv4.conf.vxlan.calico.forwarding"):
//    under a per-device directory the device is everything up to the last dot, so its dots
//    become '/'.
std::string CanonicalKey(absl::string_view key) {
  std::string k(key);
  size_t first = k.find_first_of("./");
  if (first != std::string::npos && k[first] == '/') {
    for (char& c : k) {
      if (c == '/') {
        c = '.';
      } else if (c == '.') {
        c = '/';
      }
    }
  }
  for (absl::string_view prefix : kPerDevicePrefixes) {
    if (!absl::StartsWith(k, prefix)) continue;
    size_t last = k.rfind('.');
    if (last == std::string::npos || last <= prefix.size()) break;
    std::replace(k.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                 k.begin() + static_cast<std::ptrdiff_t>(last), '.', '/');
    break;
  }
  return k;
}

// proc_dointvec prints an int with "%d" (proc_put_long): an optional '-' and digits with no
// leading zero, never "+1", "01" or "-0".
bool IsCanonicalInt(absl::string_view v) {
  const bool negative = absl::ConsumePrefix(&v, "-");
  if (v.empty()) return false;
  for (char c : v) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  if (v[0] == '0') return v.size() == 1 && !negative;  // "0", never "00" or "-0"
  return true;
}

}  // namespace

std::optional<SysctlCheck> Sysctls::Interpreted(absl::string_view key) {
  // The kernel bounds these itself: proc_dointvec_minmax (0-3), and br_netfilter stores any
  // non-zero write as 1 (brnf_sysctl_call_tables), so a dump holds 0 or 1.
  if (key == "net.ipv4.fib_multipath_hash_policy") return SysctlCheck::Bounded(0, 3);
  if (key == "net.bridge.bridge-nf-call-iptables") return SysctlCheck::Bounded(0, 1);
  // proc_dointvec: the kernel stores any int for these, and the model reads each value as the
  // kernel does (rp_filter 1 is strict and any other non-zero loose, __fib_validate_source; a
  // BOOLEAN is on when non-zero; arp_ignore's reserved 4-7 and unknown values answer,
  // arp_ignore()).
  if (key == "net.ipv4.ip_forward") return SysctlCheck::AnyInt();
  if (!SplitInterpretedConfKey(key)) return std::nullopt;
  return SysctlCheck::AnyInt();
}

absl::StatusOr<Sysctls> Sysctls::Parse(absl::string_view text, absl::string_view file_name) {
  Sysctls out;
  out.values_.reserve(2048);
  absl::flat_hash_map<std::string, int> first_line;  // key -> line it was read from
  first_line.reserve(2048);
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (absl::StartsWith(line, "sysctl:")) continue;  // "sysctl: permission denied on key ..."
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("parse ", file_name, ": line ", line_no,
                                                     ": expected 'key = value', got '", line, "'"));
    }
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    if (key.empty() || key.find(' ') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("parse ", file_name, ": line ", line_no,
                                                     ": invalid key '", key, "'"));
    }
    std::string k = CanonicalKey(key);
    // A key the model interprets must hold one integer in the kernel's range, as the kernel
    // prints it: a corrupt value is an error here, never read later as "unset".
    const std::optional<SysctlCheck> check = Interpreted(k);
    if (check.has_value()) {
      const bool bounded = check->kind == SysctlCheck::Kind::kBounded;
      int64_t n = 0;
      if (!absl::SimpleAtoi(value, &n)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parse ", file_name, ": line ", line_no, ": key '", k, "': value '", value,
            "' is not an integer",
            bounded ? absl::StrCat(" (expected ", check->min, "-", check->max, ")")
                    : std::string()));
      }
      if (!IsCanonicalInt(value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parse ", file_name, ": line ", line_no, ": key '", k, "': value '", value,
            "' is not an integer as the kernel prints it ('", n, "'): not a sysctl -a dump"));
      }
      if (n < check->min || n > check->max) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parse ", file_name, ": line ", line_no, ": key '", k, "': value ", n,
            " out of range [", check->min, ", ", check->max, "]",
            bounded ? "" : " (a C int: proc_dointvec)"));
      }
    }
    // `sysctl -a` prints a key the model interprets (one integer) once: a second line for it (in
    // any of its spellings) is a contradiction or a spliced file, never resolved by order. Other
    // keys may repeat: procps prints a multi-line value as one `key = line` per line
    // (fs.pipe-keep, kernel.core_modes, dev.cdrom.info); the first line is kept.
    const bool interpreted = check.has_value();
    auto [seen, inserted] = first_line.try_emplace(k, line_no);
    if (!inserted && !interpreted) continue;
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parse ", file_name, ": line ", line_no, ": key '", k, "' (value '", value,
          "') is already set at line ", seen->second, " (value '", out.values_[k],
          "'): sysctl -a prints each such key once"));
    }
    if (interpreted) out.IndexConf(k, value);
    out.values_.emplace(std::move(k), std::string(value));
  }
  return out;
}

void Sysctls::Set(absl::string_view key, absl::string_view value) {
  values_.insert_or_assign(std::string(key), std::string(value));
  IndexConf(key, value);
}

void Sysctls::IndexConf(absl::string_view key, absl::string_view value) {
  std::optional<InterpretedConf> c = SplitInterpretedConfKey(key);
  // A device written with '.' (Set() takes keys as given) is not the kernel's spelling, which
  // ConfInt looks up ('/'): such a key is not that device's value.
  if (!c || c->dev.find('.') != absl::string_view::npos) return;
  const int i = c->index;
  DeviceConf& d = conf_[c->dev];
  std::optional<int64_t> n = IntValue(value);
  d.value[i] = n.value_or(0);
  if (n.has_value()) {
    d.present |= 1u << i;
  } else {
    d.present &= ~(1u << i);
  }
}

std::optional<std::string> Sysctls::Get(absl::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> Sysctls::GetInt(absl::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return IntValue(it->second);
}

std::string Sysctls::ConfKey(absl::string_view dev, absl::string_view name) {
  std::string d(dev);
  std::replace(d.begin(), d.end(), '.', '/');
  return absl::StrCat("net.ipv4.conf.", d, ".", name);
}

std::optional<int64_t> Sysctls::ConfInt(absl::string_view dev, absl::string_view name) const {
  if (int i = ConfNameIndex(name); i >= 0) {
    std::string slashed;
    if (dev.find('.') != absl::string_view::npos) {
      slashed = std::string(dev);
      std::replace(slashed.begin(), slashed.end(), '.', '/');
      dev = slashed;
    }
    auto it = conf_.find(dev);
    if (it == conf_.end() || (it->second.present & (1u << i)) == 0) return std::nullopt;
    return it->second.value[i];
  }
  // Any other key: ConfKey(dev, name) built on the stack.
  constexpr absl::string_view kPrefix = kIpv4Conf;
  char buf[160];
  size_t n = kPrefix.size() + dev.size() + 1 + name.size();
  if (n > sizeof(buf)) return GetInt(ConfKey(dev, name));
  char* w = buf;
  std::memcpy(w, kPrefix.data(), kPrefix.size());
  w += kPrefix.size();
  for (char c : dev) *w++ = c == '.' ? '/' : c;
  *w++ = '.';
  std::memcpy(w, name.data(), name.size());
  return GetInt(absl::string_view(buf, n));
}

SysctlValue Sysctls::Max(absl::string_view dev, absl::string_view name, int64_t def) const {
  std::optional<int64_t> all = ConfInt("all", name);
  std::optional<int64_t> d = ConfInt(dev, name);
  if (!d.has_value()) d = ConfInt("default", name);
  if (!all.has_value() && !d.has_value()) return {def, false};
  return {std::max(all.value_or(0), d.value_or(0)), true};
}

SysctlValue Sysctls::Or(absl::string_view dev, absl::string_view name, int64_t def) const {
  std::optional<int64_t> all = ConfInt("all", name);
  std::optional<int64_t> d = ConfInt(dev, name);
  if (!d.has_value()) d = ConfInt("default", name);
  if (!all.has_value() && !d.has_value()) return {def, false};
  return {(all.value_or(0) != 0 || d.value_or(0) != 0) ? 1 : 0, true};
}

SysctlValue Sysctls::RpFilter(absl::string_view dev) const { return Max(dev, "rp_filter", 0); }

SysctlValue Sysctls::Forwarding(absl::string_view dev) const {
  if (auto d = ConfInt(dev, "forwarding"); d.has_value()) return {*d, true};
  if (auto a = ConfInt("all", "forwarding"); a.has_value()) return {*a, true};
  if (auto f = GetInt("net.ipv4.ip_forward"); f.has_value()) return {*f, true};
  return {0, false};
}

SysctlValue Sysctls::IpForward() const {
  if (auto f = GetInt("net.ipv4.ip_forward"); f.has_value()) return {*f, true};
  if (auto a = ConfInt("all", "forwarding"); a.has_value()) return {*a, true};
  return {0, false};
}

SysctlValue Sysctls::FibMultipathHashPolicy() const {
  if (auto v = GetInt("net.ipv4.fib_multipath_hash_policy"); v.has_value()) return {*v, true};
  return {0, false};
}

std::string MultipathHashPolicyText(int64_t policy) {
  switch (policy) {
    case 0:
      return "layer 3 (source and destination address)";
    case 1:
      // fib_multipath_hash: an skb that already has an L4 hash (skb->l4_hash, a local socket's
      // sk_txhash, kept across a veth) is hashed by that, not by its ports; TCP re-draws it on
      // a retransmission (sk_rethink_txhash). Seen on 6.18 in tests/privileged/diag_diff_test.sh.
      return "layer 4 (the 5-tuple; a pod's own connection is hashed by its socket's random "
             "hash instead, re-drawn on each retransmission)";
    case 2:
      return "layer 3, or the inner layer 3 of an encapsulated packet";
    case 3:
      return "custom (net.ipv4.fib_multipath_hash_fields)";
    default:
      return absl::StrCat("unknown policy ", policy);
  }
}

SysctlValue Sysctls::AcceptLocal(absl::string_view dev) const { return Or(dev, "accept_local", 0); }
SysctlValue Sysctls::RouteLocalnet(absl::string_view dev) const {
  return Or(dev, "route_localnet", 0);
}
SysctlValue Sysctls::SrcValidMark(absl::string_view dev) const {
  return Or(dev, "src_valid_mark", 0);
}
SysctlValue Sysctls::SendRedirects(absl::string_view dev) const {
  return Or(dev, "send_redirects", 1);
}
SysctlValue Sysctls::IgnoreRoutesWithLinkdown(absl::string_view dev) const {
  return Or(dev, "ignore_routes_with_linkdown", 0);
}

}  // namespace sarena::model
