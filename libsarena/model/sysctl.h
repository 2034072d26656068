// Kernel sysctls of one network namespace, parsed from `sysctl -a` output, with the kernel's own
// rules for combining conf/all and conf/<dev> (Documentation/networking/ip-sysctl.rst and
// include/linux/inetdevice.h: IN_DEV_MAXCONF / IN_DEV_ORCONF / IN_DEV_CONF_GET).
#ifndef LIBSARENA_MODEL_SYSCTL_H_
#define LIBSARENA_MODEL_SYSCTL_H_

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::model {

/// Where an effective per-interface value came from.
struct SysctlValue {
  int64_t value = 0;
  /// False when neither conf.<dev>.<key> nor the fallback key was in the snapshot: `value` is then
  /// the kernel default and the caller should say "cannot check" rather than trust it.
  bool known = false;
};

/// How the value of a key the model interprets is validated (Sysctls::Interpreted).
struct SysctlCheck {
  enum class Kind {
    /// Any C int (the kernel's proc_dointvec stores every int written).
    kAnyInt,
    /// An int in [min, max] (proc_dointvec_minmax, or a handler that clamps the write).
    kBounded,
  };
  Kind kind = Kind::kAnyInt;
  int64_t min = INT32_MIN;
  int64_t max = INT32_MAX;

  static SysctlCheck AnyInt() { return {}; }
  static SysctlCheck Bounded(int64_t lo, int64_t hi) { return {Kind::kBounded, lo, hi}; }
  bool operator==(const SysctlCheck&) const = default;
};

/// A `sysctl -a` dump ("key = value" per line; keys with dots, interface names with '.' written
/// as '/' — e.g. "net.ipv4.conf.vxlan/calico.rp_filter" for device "vxlan.calico").
class Sysctls {
 public:
  Sysctls() = default;

  /// Parses `sysctl -a` text. Blank lines and lines starting with '#' or ';' are skipped; lines
  /// "sysctl: permission denied on key ..." (what sysctl prints on stderr when merged) are skipped.
  /// Values keep their text (multi-value keys like ip_local_port_range keep the tab/space
  /// separated text).
  /// Keys are stored in sysctl -a's spelling: '.' separators, a '.' inside a device name written
  /// '/' ("net.ipv4.conf.vxlan/calico.forwarding" for device "vxlan.calico"). Two other
  /// spellings are read as that key: the /proc/sys path form
  /// "net/ipv4/conf/vxlan.calico/forwarding" (first separator '/': every '/' and '.' swap, as
  /// procps-ng sysctl's slashdot() does), and, under net.ipv{4,6}.conf. and net.ipv{4,6}.neigh.
  /// (whose leaf names hold no dot), a dotted key with the device's dot unescaped,
  /// "net.ipv4.conf.vxlan.calico.forwarding".
  /// The keys the model interprets (Interpreted) are validated: their value must be one decimal
  /// integer written as the kernel prints it (proc_dointvec's "%d": no '+', no leading zero)
  /// inside the kernel's range, so a corrupt value is never read as "unset" or guessed at.
  /// Errors, all kInvalidArgument naming file and line:
  ///   "parse <file_name>: line N: expected 'key = value', got '<line>'";
  ///   "parse <file_name>: line N: invalid key '<key>'";
  ///   "parse <file_name>: line N: key '<key>': value '<value>' is not an integer[ (expected A-B)]";
  ///   "parse <file_name>: line N: key '<key>': value '<value>' is not an integer as the kernel
  ///    prints it ('<n>'): not a sysctl -a dump" (e.g. "+1", "01");
  ///   "parse <file_name>: line N: key '<key>': value V out of range [A, B]" (kAnyInt adds
  ///    " (a C int: proc_dointvec)");
  ///   "parse <file_name>: line N: key '<key>' (value '<v>') is already set at line M (value
  ///    '<w>'): sysctl -a prints each such key once" — a key the model interprets given twice,
  ///    in any spelling, even with the same value. Other keys may repeat (procps prints a
  ///    multi-line value as one `key = line` per line, e.g. fs.pipe-keep); the first is kept.
  static absl::StatusOr<Sysctls> Parse(absl::string_view text, absl::string_view file_name = "sysctl.txt");

  /// How Parse validates the value of a key the model interprets, or nullopt for a free-form
  /// key. The rule is the one the kernel itself enforces, so that every value a real kernel
  /// prints is accepted and read as the kernel reads it:
  ///   kBounded [0, 3]: net.ipv4.fib_multipath_hash_policy (proc_dointvec_minmax);
  ///   kBounded [0, 1]: net.bridge.bridge-nf-call-iptables (br_netfilter stores a non-zero
  ///     write as 1);
  ///   kAnyInt (proc_dointvec, a C int): net.ipv4.ip_forward and net.ipv4.conf.<dev>.rp_filter,
  ///     .arp_ignore, .forwarding, .accept_local, .route_localnet, .src_valid_mark,
  ///     .send_redirects, .ignore_routes_with_linkdown, .proxy_arp
  ///     (Documentation/networking/ip-sysctl.rst documents their meaningful values; the kernel
  ///     does not refuse others).
  /// `key` is in sysctl -a's spelling (dots; <dev> is any non-empty text, including
  /// "all"/"default").
  static std::optional<SysctlCheck> Interpreted(absl::string_view key);

  /// Sets or overrides one key (tests, synthetic snapshots). Not validated: an interpreted key set
  /// to a non-integer reads as absent.
  void Set(absl::string_view key, absl::string_view value);

  /// Raw text of `key` (exact key, dots as in sysctl -a), or nullopt.
  std::optional<std::string> Get(absl::string_view key) const;
  /// `key` as an integer (first whitespace-separated token), or nullopt when absent / not a number.
  std::optional<int64_t> GetInt(absl::string_view key) const;

  /// "net.ipv4.conf.<dev>.<name>" with '.' in `dev` replaced by '/' as the kernel names it.
  static std::string ConfKey(absl::string_view dev, absl::string_view name);
  /// net.ipv4.conf.<dev>.<name> as an integer, like GetInt(ConfKey(dev, name)); `dev` as the
  /// kernel names the device ("vxlan.calico", "all", "default"). The keys the model interprets
  /// (rp_filter, forwarding, arp_ignore, ...) come from a per-device table kept beside the raw
  /// values: these lookups run at every hop of a trace.
  std::optional<int64_t> ConfInt(absl::string_view dev, absl::string_view name) const;

  /// Effective rp_filter of `dev`: max(conf.all.rp_filter, conf.<dev>.rp_filter) (IN_DEV_MAXCONF).
  /// 0 = off, 1 = strict (RFC 3704 strict reverse path), 2 = loose. When conf.<dev> is absent,
  /// conf.default stands in for it. known=false when no rp_filter key is present at all.
  SysctlValue RpFilter(absl::string_view dev) const;

  /// conf.<dev>.forwarding — the flag the kernel checks on the INGRESS device of a packet to be
  /// forwarded (ip_route_input_slow: IN_DEV_FORWARD, per device only). Absent -> falls back to
  /// conf.all.forwarding (== net.ipv4.ip_forward, which writes every device's value), then
  /// net.ipv4.ip_forward; known=false if none is present (value 0, the kernel default).
  SysctlValue Forwarding(absl::string_view dev) const;
  /// net.ipv4.ip_forward (== conf.all.forwarding).
  SysctlValue IpForward() const;

  /// accept_local, route_localnet, src_valid_mark: IN_DEV_ORCONF (all OR dev).
  SysctlValue AcceptLocal(absl::string_view dev) const;
  SysctlValue RouteLocalnet(absl::string_view dev) const;
  SysctlValue SrcValidMark(absl::string_view dev) const;
  /// net.ipv4.conf.<dev>.send_redirects (IN_DEV_ORCONF); matters only for fib_validate_source's
  /// fast path when a packet leaves on the device it came in.
  SysctlValue SendRedirects(absl::string_view dev) const;
  /// net.ipv4.conf.all.ignore_routes_with_linkdown OR conf.<dev> (IN_DEV_ORCONF).
  SysctlValue IgnoreRoutesWithLinkdown(absl::string_view dev) const;
  /// net.ipv4.fib_multipath_hash_policy: which fields choose a multipath route's next hop for a
  /// flow (fib_multipath_hash); known=false when absent (value 0, the kernel default).
  SysctlValue FibMultipathHashPolicy() const;

  size_t size() const { return values_.size(); }
  const absl::flat_hash_map<std::string, std::string>& values() const { return values_; }

 private:
  /// The interpreted net.ipv4.conf.<dev>.<name> values of one device (sysctl.cc's kConfNames
  /// order); bit i of `present` says whether value i was in the dump and is an integer.
  struct DeviceConf {
    static constexpr size_t kNames = 9;  // = std::size(kConfNames), checked in sysctl.cc
    int64_t value[kNames] = {};
    uint32_t present = 0;
  };
  /// Keeps conf_ in step with values_ after `key` (as stored) was set to `value`.
  void IndexConf(absl::string_view key, absl::string_view value);
  SysctlValue Max(absl::string_view dev, absl::string_view name, int64_t def) const;
  SysctlValue Or(absl::string_view dev, absl::string_view name, int64_t def) const;

  absl::flat_hash_map<std::string, std::string> values_;
  /// Device (canonical, '/' for '.') -> its interpreted conf values, derived from values_.
  absl::flat_hash_map<std::string, DeviceConf> conf_;
};

/// What a fib_multipath_hash_policy value hashes (Documentation/networking/ip-sysctl.rst):
/// 0 "layer 3 (source and destination address)", 1 "layer 4 (the 5-tuple; ...)" — noting that
/// a packet from a local socket (a pod's, across its veth) carries the socket's L4 hash, which the
/// kernel uses instead of the ports and re-draws on retransmission — 2 "layer 3, or the
/// inner layer 3 of an encapsulated packet", 3 "custom (net.ipv4.fib_multipath_hash_fields)";
/// "unknown policy N" otherwise.
std::string MultipathHashPolicyText(int64_t policy);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_SYSCTL_H_
