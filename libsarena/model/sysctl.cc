#include "libsarena/model/sysctl.h"

#include <algorithm>
#include <climits>
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

// proc_dointvec: the kernel stores any int for these, and the model reads each value as the
// kernel does (rp_filter 1 is strict and any other non-zero loose, __fib_validate_source; a
// BOOLEAN is on when non-zero; arp_ignore's reserved 4-7 and unknown values answer, arp_ignore()).
constexpr std::pair<int64_t, int64_t> kAnyInt{INT32_MIN, INT32_MAX};

// The net.ipv4.conf.<dev>.<name> keys the model interprets.
bool InterpretedConfKey(absl::string_view name) {
  return name == "rp_filter" || name == "arp_ignore" || name == "forwarding" ||
         name == "accept_local" || name == "route_localnet" || name == "src_valid_mark" ||
         name == "send_redirects" || name == "ignore_routes_with_linkdown" ||
         name == "proxy_arp";
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> Sysctls::InterpretedRange(absl::string_view key) {
  // The kernel bounds these itself: proc_dointvec_minmax (0-3), and br_netfilter stores any
  // non-zero write as 1 (brnf_sysctl_call_tables), so a dump holds 0 or 1.
  if (key == "net.ipv4.fib_multipath_hash_policy") return std::make_pair(int64_t{0}, int64_t{3});
  if (key == "net.bridge.bridge-nf-call-iptables") return std::make_pair(int64_t{0}, int64_t{1});
  if (key == "net.ipv4.ip_forward") return kAnyInt;
  constexpr absl::string_view kConf = "net.ipv4.conf.";
  if (!absl::StartsWith(key, kConf)) return std::nullopt;
  absl::string_view rest = key.substr(kConf.size());
  size_t dot = rest.rfind('.');
  if (dot == absl::string_view::npos || dot == 0) return std::nullopt;  // no <dev>
  if (!InterpretedConfKey(rest.substr(dot + 1))) return std::nullopt;
  return kAnyInt;
}

absl::StatusOr<Sysctls> Sysctls::Parse(absl::string_view text, absl::string_view file_name) {
  Sysctls out;
  out.values_.reserve(2048);
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
    // `sysctl -a` may also print keys with '/' separators (-N / procfs paths): normalise to dots
    // only when there is no dot at all (then every '/' is a separator).
    std::string k(key);
    if (k.find('.') == std::string::npos) std::replace(k.begin(), k.end(), '/', '.');
    // A key the model interprets must hold one integer in the kernel's range: a corrupt value
    // is an error here, never read later as "unset".
    if (auto range = InterpretedRange(k); range.has_value()) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(value, &n)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parse ", file_name, ": line ", line_no, ": key '", k, "': value '", value,
            "' is not an integer",
            *range == kAnyInt ? std::string()
                              : absl::StrCat(" (expected ", range->first, "-", range->second, ")")));
      }
      if (n < range->first || n > range->second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parse ", file_name, ": line ", line_no, ": key '", k, "': value ", n,
            " out of range [", range->first, ", ", range->second, "]"));
      }
    }
    out.values_.insert_or_assign(std::move(k), std::string(value));
  }
  return out;
}

void Sysctls::Set(absl::string_view key, absl::string_view value) {
  values_.insert_or_assign(std::string(key), std::string(value));
}

std::optional<std::string> Sysctls::Get(absl::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> Sysctls::GetInt(absl::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  absl::string_view v = it->second;
  size_t sp = v.find_first_of(" \t");
  if (sp != absl::string_view::npos) v = v.substr(0, sp);
  int64_t n = 0;
  if (!absl::SimpleAtoi(v, &n)) return std::nullopt;
  return n;
}

std::string Sysctls::ConfKey(absl::string_view dev, absl::string_view name) {
  std::string d(dev);
  std::replace(d.begin(), d.end(), '.', '/');
  return absl::StrCat("net.ipv4.conf.", d, ".", name);
}

std::optional<int64_t> Sysctls::ConfInt(absl::string_view dev, absl::string_view name) const {
  // ConfKey(dev, name) built on the stack: these lookups run at every hop of a trace.
  constexpr absl::string_view kPrefix = "net.ipv4.conf.";
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
