// Unit tests (no privileges) of sarena::nl's pure helpers: sysctl key mapping, ack/extack
// decoding and the message decoders, fed with messages built byte by byte with libmnl the way the
// kernel lays them out (rtnetlink(7), netlink(7) "NETLINK_EXT_ACK").
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>  // IFF_UP, IFF_BROADCAST (IFF_LOWER_UP only lives in <linux/if.h>)
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/addr.h"
#include "libsarena/netlink/link.h"
#include "libsarena/netlink/neigh.h"
#include "libsarena/netlink/route.h"
#include "libsarena/netlink/rule.h"
#include "libsarena/netlink/socket.h"
#include "libsarena/netlink/sysctl.h"
#include "libsarena/netlink/types.h"
#include "tests/lib/status_matchers.h"

namespace sarena::nl {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

net::Ipv4 Ip(const char* text) { return *net::ParseIpv4(text); }
uint32_t Be(const char* text) { return net::ToBe32(Ip(text)); }

// A message buffer with a header of type `type` and a zeroed family header T.
template <typename T>
struct Msg {
  explicit Msg(uint16_t type, uint16_t flags = 0) : buf(8192, 0) {
    nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = flags;
    hdr = static_cast<T*>(mnl_nlmsg_put_extra_header(nlh, sizeof(T)));
  }
  std::vector<char> buf;
  nlmsghdr* nlh;
  T* hdr;
};

// ---------------------------------------------------------------- sysctl keys

TEST(NetlinkSysctlPathTest, DottedSlashAndProcForms) {
  EXPECT_EQ(*SysctlPath("net.ipv4.conf.all.rp_filter"), "/proc/sys/net/ipv4/conf/all/rp_filter");
  EXPECT_EQ(*SysctlPath("net/ipv4/conf/eth0.100/rp_filter"),
            "/proc/sys/net/ipv4/conf/eth0.100/rp_filter");
  EXPECT_EQ(*SysctlPath("/proc/sys/net/ipv4/ip_forward"), "/proc/sys/net/ipv4/ip_forward");
  EXPECT_EQ(*SysctlPath("kernel.hostname"), "/proc/sys/kernel/hostname");
}

TEST(NetlinkSysctlPathTest, RejectsEscapesAndEmptyParts) {
  for (const char* bad : {"", ".", "net..ipv4", "net/../etc", "net/./x", "net//x", "net.", "/"}) {
    absl::StatusOr<std::string> p = SysctlPath(bad);
    EXPECT_THAT(p, StatusIs(absl::StatusCode::kInvalidArgument)) << bad << " -> " << *p;
  }
  EXPECT_THAT(std::string(SysctlPath("net/../etc").status().message()),
              HasSubstr("invalid sysctl key 'net/../etc'"));
}

// ---------------------------------------------------------------- acks

TEST(NetlinkParseAckTest, CappedErrorWithExtackMessageAndOffset) {
  Msg<nlmsgerr> m(NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS);
  m.hdr->error = -EINVAL;
  m.hdr->msg.nlmsg_len = 64;  // the request's length; capped: its payload is not echoed
  mnl_attr_put_strz(m.nlh, NLMSGERR_ATTR_MSG, "Nexthop has invalid gateway");
  mnl_attr_put_u32(m.nlh, NLMSGERR_ATTR_OFFS, 36);
  absl::StatusOr<AckError> ack = ParseAck(*m.nlh);
  ASSERT_OK(ack);
  EXPECT_EQ(ack->error, EINVAL);
  EXPECT_EQ(ack->extack, "Nexthop has invalid gateway");
  EXPECT_EQ(ack->bad_attr_offset, 36);
}

TEST(NetlinkParseAckTest, UncappedErrorSkipsTheEchoedRequest) {
  Msg<nlmsgerr> m(NLMSG_ERROR, NLM_F_ACK_TLVS);
  m.hdr->error = -EEXIST;
  // The echoed request: a header plus 12 payload bytes that look like an attribute.
  m.hdr->msg.nlmsg_len = NLMSG_HDRLEN + 12;
  char* payload = static_cast<char*>(mnl_nlmsg_put_extra_header(m.nlh, 12));
  auto* fake = reinterpret_cast<nlattr*>(payload);
  fake->nla_len = 12;
  fake->nla_type = NLMSGERR_ATTR_MSG;
  std::memcpy(payload + 4, "decoy!!", 8);
  mnl_attr_put_strz(m.nlh, NLMSGERR_ATTR_MSG, "real");
  absl::StatusOr<AckError> ack = ParseAck(*m.nlh);
  ASSERT_OK(ack);
  EXPECT_EQ(ack->error, EEXIST);
  EXPECT_EQ(ack->extack, "real");
}

TEST(NetlinkParseAckTest, PlainAckDoneAndNotAnAck) {
  Msg<nlmsgerr> ok(NLMSG_ERROR, NLM_F_CAPPED);
  absl::StatusOr<AckError> ack = ParseAck(*ok.nlh);
  ASSERT_OK(ack);
  EXPECT_EQ(ack->error, 0);
  EXPECT_EQ(ack->extack, "");
  EXPECT_EQ(ack->bad_attr_offset, -1);

  Msg<int> done(NLMSG_DONE, NLM_F_MULTI | NLM_F_ACK_TLVS);
  *done.hdr = -EINTR;
  mnl_attr_put_strz(done.nlh, NLMSGERR_ATTR_MSG, "dump failed");
  ack = ParseAck(*done.nlh);
  ASSERT_OK(ack);
  EXPECT_EQ(ack->error, EINTR);
  EXPECT_EQ(ack->extack, "dump failed");

  Msg<ifinfomsg> link(RTM_NEWLINK);
  EXPECT_THAT(ParseAck(*link.nlh), StatusIs(absl::StatusCode::kInvalidArgument));
  nlmsghdr truncated = {.nlmsg_len = NLMSG_HDRLEN + 4, .nlmsg_type = NLMSG_ERROR};
  EXPECT_THAT(ParseAck(truncated), StatusIs(absl::StatusCode::kInvalidArgument));
}

// ---------------------------------------------------------------- links

TEST(NetlinkParseLinkTest, VethInAnotherNamespace) {
  Msg<ifinfomsg> m(RTM_NEWLINK);
  m.hdr->ifi_index = 7;
  m.hdr->ifi_type = 1;
  m.hdr->ifi_flags = IFF_UP | IFF_BROADCAST | 0x10000 /* IFF_LOWER_UP */;
  mnl_attr_put_strz(m.nlh, IFLA_IFNAME, "lxc0123456789a");
  mnl_attr_put_u32(m.nlh, IFLA_MTU, 1450);
  const uint8_t mac[6] = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
  mnl_attr_put(m.nlh, IFLA_ADDRESS, 6, mac);
  mnl_attr_put_u8(m.nlh, IFLA_OPERSTATE, 6);
  mnl_attr_put_u32(m.nlh, IFLA_LINK, 2);
  mnl_attr_put_u32(m.nlh, IFLA_LINK_NETNSID, 0);
  mnl_attr_put_u32(m.nlh, IFLA_MASTER, 3);
  mnl_attr_put_u32(m.nlh, IFLA_TXQLEN, 1000);
  nlattr* info = mnl_attr_nest_start(m.nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(m.nlh, IFLA_INFO_KIND, "veth");
  mnl_attr_put_strz(m.nlh, IFLA_INFO_SLAVE_KIND, "bridge");
  mnl_attr_nest_end(m.nlh, info);
  absl::StatusOr<Link> link = ParseLinkMessage(*m.nlh);
  ASSERT_OK(link);
  EXPECT_EQ(link->ifindex, 7);
  EXPECT_EQ(link->name, "lxc0123456789a");
  EXPECT_EQ(link->kind, "veth");
  EXPECT_EQ(link->slave_kind, "bridge");
  EXPECT_EQ(link->mtu, 1450u);
  EXPECT_EQ(net::FormatMac(link->mac), "02:aa:bb:cc:dd:ee");
  EXPECT_TRUE(link->up);
  EXPECT_TRUE(link->lower_up);
  EXPECT_EQ(link->oper_state, OperState::kUp);
  EXPECT_EQ(link->link, 2);
  EXPECT_EQ(link->link_netnsid, 0);
  EXPECT_EQ(link->master, 3);
  EXPECT_EQ(link->txqlen, 1000u);
  EXPECT_EQ(link->type, 1);
  EXPECT_FALSE(link->vxlan.has_value());
}

TEST(NetlinkParseLinkTest, VxlanInfoDataAndWrongType) {
  Msg<ifinfomsg> m(RTM_NEWLINK);
  m.hdr->ifi_index = 9;
  mnl_attr_put_strz(m.nlh, IFLA_IFNAME, "vxlan.calico");
  nlattr* info = mnl_attr_nest_start(m.nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(m.nlh, IFLA_INFO_KIND, "vxlan");
  nlattr* data = mnl_attr_nest_start(m.nlh, IFLA_INFO_DATA);
  mnl_attr_put_u32(m.nlh, IFLA_VXLAN_ID, 4096);
  mnl_attr_put_u32(m.nlh, IFLA_VXLAN_LOCAL, Be("192.168.1.10"));
  mnl_attr_put_u16(m.nlh, IFLA_VXLAN_PORT, htons(4789));  // network byte order on the wire
  mnl_attr_put_u32(m.nlh, IFLA_VXLAN_LINK, 2);
  mnl_attr_put_u8(m.nlh, IFLA_VXLAN_LEARNING, 0);
  mnl_attr_nest_end(m.nlh, data);
  mnl_attr_nest_end(m.nlh, info);
  absl::StatusOr<Link> link = ParseLinkMessage(*m.nlh);
  ASSERT_OK(link);
  ASSERT_TRUE(link->vxlan.has_value());
  EXPECT_EQ(link->vxlan->vni, 4096u);
  EXPECT_EQ(link->vxlan->local, Ip("192.168.1.10"));
  EXPECT_FALSE(link->vxlan->group.has_value());
  EXPECT_EQ(link->vxlan->port, 4789);
  EXPECT_EQ(link->vxlan->underlay_ifindex, 2);
  EXPECT_FALSE(link->vxlan->learning);

  Msg<ifaddrmsg> wrong(RTM_NEWADDR);
  EXPECT_THAT(ParseLinkMessage(*wrong.nlh), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NetlinkLinkRefTest, ByIndexOrName) {
  LinkRef by_index = 5;
  EXPECT_TRUE(by_index.is_index());
  EXPECT_EQ(by_index.ifindex(), 5);
  EXPECT_EQ(by_index.ToString(), "ifindex 5");
  LinkRef by_name = "eth0";
  EXPECT_FALSE(by_name.is_index());
  EXPECT_EQ(by_name.name(), "eth0");
  EXPECT_EQ(by_name.ToString(), "eth0");
  EXPECT_EQ(by_name.ifindex(), 0);
  Link l;
  l.ifindex = 12;
  EXPECT_EQ(LinkRef(l).ifindex(), 12);
}

// ---------------------------------------------------------------- addresses, routes, rules,
// neighbours

TEST(NetlinkParseAddressTest, LocalPeerLabelFlags) {
  Msg<ifaddrmsg> m(RTM_NEWADDR);
  m.hdr->ifa_family = AF_INET;
  m.hdr->ifa_prefixlen = 32;
  m.hdr->ifa_scope = RT_SCOPE_LINK;
  m.hdr->ifa_index = 4;
  mnl_attr_put_u32(m.nlh, IFA_LOCAL, Be("10.0.0.1"));
  mnl_attr_put_u32(m.nlh, IFA_ADDRESS, Be("10.0.0.2"));
  mnl_attr_put_strz(m.nlh, IFA_LABEL, "tun0");
  mnl_attr_put_u32(m.nlh, IFA_FLAGS, IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE);
  absl::StatusOr<Address> a = ParseAddressMessage(*m.nlh);
  ASSERT_OK(a);
  EXPECT_EQ(a->ifindex, 4);
  EXPECT_EQ(a->prefix.to_string(), "10.0.0.1/32");
  EXPECT_EQ(a->peer, Ip("10.0.0.2"));
  EXPECT_EQ(a->scope, Scope::kLink);
  EXPECT_EQ(a->label, "tun0");
  EXPECT_EQ(a->flags, uint32_t{IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE});

  Msg<ifaddrmsg> v6(RTM_NEWADDR);
  v6.hdr->ifa_family = AF_INET6;
  EXPECT_THAT(ParseAddressMessage(*v6.nlh), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NetlinkParseRouteTest, TableMetricsAndGateway) {
  Msg<rtmsg> m(RTM_NEWROUTE);
  m.hdr->rtm_family = AF_INET;
  m.hdr->rtm_dst_len = 24;
  m.hdr->rtm_table = RT_TABLE_UNSPEC;  // ids > 255 only travel in RTA_TABLE
  m.hdr->rtm_protocol = RTPROT_BIRD;
  m.hdr->rtm_scope = RT_SCOPE_UNIVERSE;
  m.hdr->rtm_type = RTN_UNICAST;
  m.hdr->rtm_flags = RTNH_F_ONLINK;
  mnl_attr_put_u32(m.nlh, RTA_TABLE, 1000);
  mnl_attr_put_u32(m.nlh, RTA_DST, Be("10.244.2.0"));
  mnl_attr_put_u32(m.nlh, RTA_GATEWAY, Be("192.168.1.12"));
  mnl_attr_put_u32(m.nlh, RTA_OIF, 3);
  mnl_attr_put_u32(m.nlh, RTA_PREFSRC, Be("192.168.1.11"));
  mnl_attr_put_u32(m.nlh, RTA_PRIORITY, 20);
  nlattr* metrics = mnl_attr_nest_start(m.nlh, RTA_METRICS);
  mnl_attr_put_u32(m.nlh, RTAX_MTU, 1480);
  mnl_attr_nest_end(m.nlh, metrics);
  absl::StatusOr<Route> r = ParseRouteMessage(*m.nlh);
  ASSERT_OK(r);
  EXPECT_EQ(r->dst.to_string(), "10.244.2.0/24");
  EXPECT_EQ(r->table, 1000u);
  EXPECT_EQ(r->protocol, RouteProtocol::kBird);
  EXPECT_EQ(r->scope, Scope::kUniverse);
  EXPECT_EQ(r->type, RouteType::kUnicast);
  EXPECT_EQ(r->gateway, Ip("192.168.1.12"));
  EXPECT_EQ(r->oif, 3);
  EXPECT_EQ(r->prefsrc, Ip("192.168.1.11"));
  EXPECT_EQ(r->priority, 20u);
  EXPECT_EQ(r->mtu, 1480u);
  EXPECT_TRUE(r->onlink);
  EXPECT_EQ(ToString(*r),
            "10.244.2.0/24 via 192.168.1.12 dev 3 table 1000 proto bird scope global src "
            "192.168.1.11 metric 20 mtu 1480 onlink");
}

TEST(NetlinkParseRouteTest, DefaultRouteAndMultipathFirstHop) {
  Msg<rtmsg> m(RTM_NEWROUTE);
  m.hdr->rtm_family = AF_INET;
  m.hdr->rtm_table = RT_TABLE_MAIN;
  m.hdr->rtm_type = RTN_UNICAST;
  nlattr* mp = mnl_attr_nest_start(m.nlh, RTA_MULTIPATH);
  auto* nh = static_cast<rtnexthop*>(mnl_nlmsg_put_extra_header(m.nlh, sizeof(rtnexthop)));
  nh->rtnh_ifindex = 5;
  mnl_attr_put_u32(m.nlh, RTA_GATEWAY, Be("10.1.0.1"));
  nh->rtnh_len = static_cast<unsigned short>(
      reinterpret_cast<char*>(mnl_nlmsg_get_payload_tail(m.nlh)) - reinterpret_cast<char*>(nh));
  mnl_attr_nest_end(m.nlh, mp);
  absl::StatusOr<Route> r = ParseRouteMessage(*m.nlh);
  ASSERT_OK(r);
  EXPECT_EQ(r->dst.prefix_length(), 0);
  EXPECT_EQ(r->table, kTableMain);
  EXPECT_EQ(r->oif, 5);
  EXPECT_EQ(r->gateway, Ip("10.1.0.1"));
  EXPECT_THAT(ToString(*r), HasSubstr("default via 10.1.0.1 dev 5 table main"));
}

TEST(NetlinkParseRuleTest, FromToIifFwmarkInvert) {
  Msg<fib_rule_hdr> m(RTM_NEWRULE);
  m.hdr->family = AF_INET;
  m.hdr->src_len = 16;
  m.hdr->dst_len = 24;
  m.hdr->action = FR_ACT_TO_TBL;
  m.hdr->flags = FIB_RULE_INVERT;
  mnl_attr_put_u32(m.nlh, FRA_PRIORITY, 100);
  mnl_attr_put_u32(m.nlh, FRA_TABLE, 300);
  mnl_attr_put_u32(m.nlh, FRA_SRC, Be("10.244.0.0"));
  mnl_attr_put_u32(m.nlh, FRA_DST, Be("10.96.0.0"));
  mnl_attr_put_strz(m.nlh, FRA_IIFNAME, "eth0");
  mnl_attr_put_u32(m.nlh, FRA_FWMARK, 0x4000);
  mnl_attr_put_u32(m.nlh, FRA_FWMASK, 0x4000);
  absl::StatusOr<Rule> r = ParseRuleMessage(*m.nlh);
  ASSERT_OK(r);
  EXPECT_EQ(r->priority, 100u);
  EXPECT_EQ(r->table, 300u);
  EXPECT_EQ(r->src->to_string(), "10.244.0.0/16");
  EXPECT_EQ(r->dst->to_string(), "10.96.0.0/24");
  EXPECT_EQ(r->iif, "eth0");
  EXPECT_EQ(r->fwmark, 0x4000u);
  EXPECT_TRUE(r->invert);
  EXPECT_EQ(r->action, RuleAction::kToTable);
  EXPECT_EQ(ToString(*r),
            "100: not from 10.244.0.0/16 to 10.96.0.0/24 fwmark 16384/16384 iif eth0 lookup 300");

  // Priority 0 carries no FRA_PRIORITY.
  Msg<fib_rule_hdr> local(RTM_NEWRULE);
  local.hdr->family = AF_INET;
  local.hdr->table = RT_TABLE_LOCAL;
  local.hdr->action = FR_ACT_TO_TBL;
  absl::StatusOr<Rule> l = ParseRuleMessage(*local.nlh);
  ASSERT_OK(l);
  EXPECT_EQ(l->priority, 0u);
  EXPECT_EQ(ToString(*l), "0: from all lookup local");
}

TEST(NetlinkParseNeighborTest, PermanentAndIncomplete) {
  Msg<ndmsg> m(RTM_NEWNEIGH);
  m.hdr->ndm_family = AF_INET;
  m.hdr->ndm_ifindex = 6;
  m.hdr->ndm_state = NUD_PERMANENT;
  mnl_attr_put_u32(m.nlh, NDA_DST, Be("169.254.1.1"));
  const uint8_t mac[6] = {0xee, 0xee, 0xee, 0xee, 0xee, 0xee};
  mnl_attr_put(m.nlh, NDA_LLADDR, 6, mac);
  absl::StatusOr<Neighbor> n = ParseNeighborMessage(*m.nlh);
  ASSERT_OK(n);
  EXPECT_EQ(n->ifindex, 6);
  EXPECT_EQ(n->ip, Ip("169.254.1.1"));
  EXPECT_EQ(net::FormatMac(*n->mac), "ee:ee:ee:ee:ee:ee");
  EXPECT_EQ(n->state, NeighState::kPermanent);

  Msg<ndmsg> inc(RTM_NEWNEIGH);
  inc.hdr->ndm_family = AF_INET;
  inc.hdr->ndm_state = NUD_INCOMPLETE;
  mnl_attr_put_u32(inc.nlh, NDA_DST, Be("10.0.0.9"));
  n = ParseNeighborMessage(*inc.nlh);
  ASSERT_OK(n);
  EXPECT_FALSE(n->mac.has_value());

  Msg<ndmsg> no_dst(RTM_NEWNEIGH);
  no_dst.hdr->ndm_family = AF_INET;
  EXPECT_THAT(ParseNeighborMessage(*no_dst.nlh), StatusIs(absl::StatusCode::kInvalidArgument));
}

// ---------------------------------------------------------------- vocabulary

TEST(NetlinkVocabularyTest, NamesFollowIproute2) {
  EXPECT_EQ(ToString(Scope::kUniverse), "global");
  EXPECT_EQ(ToString(Scope::kLink), "link");
  EXPECT_EQ(ToString(static_cast<Scope>(100)), "100");
  EXPECT_EQ(*ParseScope("host"), Scope::kHost);
  EXPECT_EQ(*ParseScope("universe"), Scope::kUniverse);
  EXPECT_EQ(*ParseScope("253"), Scope::kLink);
  EXPECT_EQ(ParseScope("planet").status().message(), "invalid scope 'planet'");
  EXPECT_EQ(TableName(kTableMain), "main");
  EXPECT_EQ(TableName(kTableLocal), "local");
  EXPECT_EQ(TableName(100), "100");
  for (int t = 0; t <= 11; ++t) {
    auto type = static_cast<RouteType>(t);
    EXPECT_EQ(*ParseRouteType(ToString(type)), type) << t;
  }
  EXPECT_EQ(ToString(RouteType::kBlackhole), "blackhole");
  EXPECT_EQ(ToString(RouteProtocol::kBird), "bird");
  EXPECT_EQ(ToString(RouteProtocol::kSarena), "93");  // not in rt_protos: printed as a number
  EXPECT_EQ(ToString(static_cast<RouteProtocol>(99)), "openr");
  EXPECT_EQ(*ParseRouteProtocol("kernel"), RouteProtocol::kKernel);
  EXPECT_EQ(*ParseRouteProtocol("99"), static_cast<RouteProtocol>(99));
  EXPECT_FALSE(ParseRouteProtocol("nope").ok());
  EXPECT_EQ(ToString(NeighState::kPermanent), "PERMANENT");
  EXPECT_EQ(ToString(NeighState::kNone), "NONE");
  EXPECT_EQ(ToString(static_cast<NeighState>(0x82)), "REACHABLE,PERMANENT");
  EXPECT_EQ(ToString(NeighState::kReachable | NeighState::kPermanent), "REACHABLE,PERMANENT");
  for (uint16_t bit = 0x01; bit <= 0x80; bit <<= 1) {  // every name `ip neigh` prints
    auto state = static_cast<NeighState>(bit);
    EXPECT_EQ(*net::ParseNeighState(ToString(state)), state) << bit;
  }
  EXPECT_TRUE(net::HasAny(NeighState::kStale | NeighState::kNoArp, NeighState::kNoArp));
  EXPECT_FALSE(net::HasAny(NeighState::kStale, NeighState::kFailed | NeighState::kIncomplete));
  EXPECT_FALSE(net::HasAny(NeighState::kNone, NeighState::kNone));
  for (const char* bad : {"NONE", "reachable", "REACHABLE,PERMANENT", "0x80", "", "BOGUS"}) {
    absl::StatusOr<NeighState> st = net::ParseNeighState(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_EQ(st.status().message(), absl::StrCat("invalid neighbour state '", bad, "'"));
  }
  EXPECT_EQ(ToString(OperState::kLowerLayerDown), "LOWERLAYERDOWN");
  EXPECT_EQ(ToString(RuleAction::kToTable), "lookup");
}

}  // namespace
}  // namespace sarena::nl
