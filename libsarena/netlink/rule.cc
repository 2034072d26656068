#include "libsarena/netlink/rule.h"

#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/internal.h"
#include "libsarena/netlink/socket.h"

namespace sarena::nl {

using internal::AttrIpv4;
using internal::AttrStr;
using internal::AttrU32;
using internal::AttrU8;
using internal::MsgBuf;

std::string ToString(const Rule& r) {
  std::string s;
  if (r.priority) absl::StrAppend(&s, *r.priority, ": ");
  if (r.invert) absl::StrAppend(&s, "not ");
  absl::StrAppend(&s, "from ", r.src ? r.src->to_string() : "all");
  if (r.dst) absl::StrAppend(&s, " to ", r.dst->to_string());
  if (r.tos) absl::StrAppend(&s, " tos ", r.tos);
  if (r.fwmark) {
    absl::StrAppend(&s, " fwmark ", *r.fwmark);
    if (r.fwmask) absl::StrAppend(&s, "/", *r.fwmask);
  }
  if (!r.iif.empty()) absl::StrAppend(&s, " iif ", r.iif);
  if (!r.oif.empty()) absl::StrAppend(&s, " oif ", r.oif);
  switch (r.action) {
    case RuleAction::kToTable:
      absl::StrAppend(&s, " lookup ", TableName(r.table));
      break;
    case RuleAction::kGoto:
      absl::StrAppend(&s, " goto ", r.goto_target.value_or(0));
      break;
    default:
      absl::StrAppend(&s, " ", ToString(r.action));
  }
  return s;
}

absl::StatusOr<Rule> ParseRuleMessage(const nlmsghdr& nlh) {
  SARENA_RETURN_IF_ERROR(internal::CheckMessage(nlh, RTM_NEWRULE, sizeof(fib_rule_hdr), "rule"));
  const auto* frh = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(&nlh));
  if (frh->family != AF_INET) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse rule: family ", frh->family, " is not AF_INET"));
  }
  if (frh->dst_len > 32 || frh->src_len > 32) {
    return absl::InvalidArgumentError("parse rule: prefix length > 32");
  }
  Rule r;
  r.table = frh->table;
  r.action = static_cast<RuleAction>(frh->action);
  r.tos = frh->tos;
  r.invert = (frh->flags & FIB_RULE_INVERT) != 0;
  r.priority = 0;  // FRA_PRIORITY is omitted for priority 0
  internal::ForEachAttr(nlh, sizeof(fib_rule_hdr), [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case FRA_PRIORITY:
        r.priority = AttrU32(a);
        break;
      case FRA_TABLE:
        if (auto v = AttrU32(a)) r.table = *v;
        break;
      case FRA_SRC:
        if (auto v = AttrIpv4(a)) r.src = net::Ipv4Prefix(*v, frh->src_len);
        break;
      case FRA_DST:
        if (auto v = AttrIpv4(a)) r.dst = net::Ipv4Prefix(*v, frh->dst_len);
        break;
      case FRA_IIFNAME:
        r.iif = AttrStr(a);
        break;
      case FRA_OIFNAME:
        r.oif = AttrStr(a);
        break;
      case FRA_FWMARK:
        r.fwmark = AttrU32(a);
        break;
      case FRA_FWMASK:
        r.fwmask = AttrU32(a);
        break;
      case FRA_GOTO:
        r.goto_target = AttrU32(a);
        break;
      case FRA_PROTOCOL:
        if (auto v = AttrU8(a)) r.protocol = *v;
        break;
      default:
        break;
    }
  });
  return r;
}

absl::Status Socket::ModifyRule(const Rule& r, uint16_t type, uint16_t flags,
                                absl::string_view verb) {
  const std::string what = absl::StrCat(verb, " rule '", ToString(r), "'");
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(type, flags);
  auto* frh = MsgBuf::PutHeader<fib_rule_hdr>(nlh);
  frh->family = AF_INET;
  frh->tos = r.tos;
  // On delete, kToTable (the default) matches any action, as `ip rule del` without one does.
  frh->action = (type == RTM_DELRULE && r.action == RuleAction::kToTable)
                    ? uint8_t{FR_ACT_UNSPEC}
                    : static_cast<uint8_t>(r.action);
  frh->table = r.table < 256 ? static_cast<uint8_t>(r.table) : uint8_t{RT_TABLE_UNSPEC};
  if (r.invert) frh->flags |= FIB_RULE_INVERT;
  if (r.priority) mnl_attr_put_u32(nlh, FRA_PRIORITY, *r.priority);
  if (r.table != kTableUnspec) mnl_attr_put_u32(nlh, FRA_TABLE, r.table);
  if (r.src) {
    frh->src_len = static_cast<uint8_t>(r.src->prefix_length());
    internal::PutIpv4(nlh, FRA_SRC, r.src->address());
  }
  if (r.dst) {
    frh->dst_len = static_cast<uint8_t>(r.dst->prefix_length());
    internal::PutIpv4(nlh, FRA_DST, r.dst->address());
  }
  if (!r.iif.empty()) mnl_attr_put_strz(nlh, FRA_IIFNAME, r.iif.c_str());
  if (!r.oif.empty()) mnl_attr_put_strz(nlh, FRA_OIFNAME, r.oif.c_str());
  if (r.fwmark) mnl_attr_put_u32(nlh, FRA_FWMARK, *r.fwmark);
  if (r.fwmask) mnl_attr_put_u32(nlh, FRA_FWMASK, *r.fwmask);
  if (r.goto_target) mnl_attr_put_u32(nlh, FRA_GOTO, *r.goto_target);
  if (r.protocol) mnl_attr_put_u8(nlh, FRA_PROTOCOL, r.protocol);
  return Request(nlh, what);
}

absl::Status Socket::AddRule(const Rule& rule) {
  return ModifyRule(rule, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, "add");
}

absl::Status Socket::DeleteRule(const Rule& rule) {
  return ModifyRule(rule, RTM_DELRULE, 0, "delete");
}

absl::StatusOr<std::vector<Rule>> Socket::ListRules() {
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETRULE, 0);
  MsgBuf::PutHeader<fib_rule_hdr>(nlh)->family = AF_INET;
  std::vector<Rule> out;
  SARENA_RETURN_IF_ERROR(Dump(
      nlh, "list rules 'all'",
      [&](const nlmsghdr& m) -> absl::Status {
        if (m.nlmsg_type != RTM_NEWRULE) return absl::OkStatus();
        const auto* h = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(&m));
        if (h->family != AF_INET) return absl::OkStatus();
        SARENA_ASSIGN_OR_RETURN(Rule r, ParseRuleMessage(m));
        out.push_back(std::move(r));
        return absl::OkStatus();
      },
      [&] { out.clear(); }));
  std::stable_sort(out.begin(), out.end(), [](const Rule& a, const Rule& b) {
    return a.priority.value_or(0) < b.priority.value_or(0);
  });
  return out;
}

}  // namespace sarena::nl
