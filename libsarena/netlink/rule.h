// IPv4 policy-routing rules (rtnetlink RTM_*RULE). Operations live on nl::Socket (socket.h).
// Source: rtnetlink(7) "RTM_NEWRULE", <linux/fib_rules.h>, ip-rule(8).
#ifndef LIBSARENA_NETLINK_RULE_H_
#define LIBSARENA_NETLINK_RULE_H_

#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/types.h"

namespace sarena::nl {

/// One IPv4 policy rule (`ip rule`). Used to add/delete and as a dump entry.
struct Rule {
  /// FRA_PRIORITY ("pref"): lower runs first. When unset on add, the kernel picks one below
  /// the lowest existing non-zero priority. Always set in reported rules.
  std::optional<uint32_t> priority;
  std::optional<net::Ipv4Prefix> src;  // FRA_SRC / src_len ("from"); unset = all
  std::optional<net::Ipv4Prefix> dst;  // FRA_DST / dst_len ("to"); unset = all
  RuleAction action = RuleAction::kToTable;
  uint32_t table = kTableMain;          // FRA_TABLE (for kToTable)
  std::string iif;                      // FRA_IIFNAME ("iif"), empty = any
  std::string oif;                      // FRA_OIFNAME ("oif"), empty = any
  std::optional<uint32_t> fwmark;       // FRA_FWMARK
  std::optional<uint32_t> fwmask;       // FRA_FWMASK
  std::optional<uint32_t> goto_target;  // FRA_GOTO (for kGoto)
  uint8_t tos = 0;                      // fib_rule_hdr.tos
  bool invert = false;                  // FIB_RULE_INVERT ("not")
  uint8_t protocol = 0;                 // FRA_PROTOCOL (RTPROT_*), 0 = unspec
};

/// Decodes one RTM_NEWRULE message (AF_INET only). Errors: kInvalidArgument when malformed or
/// not IPv4.
absl::StatusOr<Rule> ParseRuleMessage(const nlmsghdr& nlh);

/// "32766: from all lookup main" style (ip-rule-like) for messages and logs.
std::string ToString(const Rule& rule);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_RULE_H_
