// model::AnswersArp (net/ipv4/arp.c arp_process): arp_ignore levels 0-3 (max of all and the
// device), proxy ARP only for targets forwarded out of another device, NOARP devices.
#include "libsarena/model/arp.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"

namespace sarena::model {
namespace {

using ::testing::HasSubstr;

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }

// A router netns: eth0 10.0.0.1/24, eth1 10.0.1.1/24 (eth1 NOARP when `eth1_noarp`), the
// connected and local routes as the kernel adds them, ip_forward on, plus `sysctls`.
Netstack Router(const std::string& sysctls, bool eth1_noarp = false) {
  std::string eth1_flags = eth1_noarp ? R"(["BROADCAST","NOARP","UP","LOWER_UP"])"
                                      : R"(["BROADCAST","MULTICAST","UP","LOWER_UP"])";
  std::string links = R"([
    {"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,
     "operstate":"UNKNOWN","link_type":"loopback","address":"00:00:00:00:00:00"},
    {"ifindex":2,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,
     "operstate":"UP","link_type":"ether","address":"02:00:00:00:00:01"},
    {"ifindex":3,"ifname":"eth1","flags":)" + eth1_flags + R"(,"mtu":1500,
     "operstate":"UP","link_type":"ether","address":"02:00:00:00:00:02"}])";
  std::string addrs = R"([
    {"ifindex":1,"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,
     "scope":"host"}]},
    {"ifindex":2,"ifname":"eth0","addr_info":[{"family":"inet","local":"10.0.0.1","prefixlen":24,
     "scope":"global"}]},
    {"ifindex":3,"ifname":"eth1","addr_info":[{"family":"inet","local":"10.0.1.1","prefixlen":24,
     "scope":"global"}]}])";
  std::string routes = R"([
    {"dst":"10.0.0.0/24","dev":"eth0","protocol":"kernel","scope":"link","prefsrc":"10.0.0.1",
     "flags":[]},
    {"dst":"10.0.1.0/24","dev":"eth1","protocol":"kernel","scope":"link","prefsrc":"10.0.1.1",
     "flags":[]},
    {"type":"local","dst":"10.0.0.1","table":"local","dev":"eth0","protocol":"kernel",
     "scope":"host","prefsrc":"10.0.0.1","flags":[]},
    {"type":"local","dst":"10.0.1.1","table":"local","dev":"eth1","protocol":"kernel",
     "scope":"host","prefsrc":"10.0.1.1","flags":[]},
    {"type":"local","dst":"127.0.0.0/8","table":"local","dev":"lo","protocol":"kernel",
     "scope":"host","prefsrc":"127.0.0.1","flags":[]}])";
  Netstack ns;
  EXPECT_TRUE(ns.ParseLinks(links).ok());
  EXPECT_TRUE(ns.ParseAddrs(addrs).ok());
  EXPECT_TRUE(ns.ParseRoutes(routes).ok());
  EXPECT_TRUE(ns.ParseSysctls("net.ipv4.ip_forward = 1\n"
                              "net.ipv4.conf.all.forwarding = 1\n"
                              "net.ipv4.conf.eth0.forwarding = 1\n"
                              "net.ipv4.conf.eth1.forwarding = 1\n" +
                              sysctls)
                  .ok());
  ns.Finalize();
  return ns;
}

TEST(AnswersArp, ArpIgnoreZeroAnswersForAnyLocalAddress) {
  Netstack ns = Router("");
  const Interface& eth0 = *ns.FindInterface("eth0");
  EXPECT_TRUE(AnswersArp(ns, eth0, Ip("10.0.0.1"), Ip("10.0.0.9")));
  EXPECT_TRUE(AnswersArp(ns, eth0, Ip("10.0.1.1"), Ip("10.0.0.9")));  // eth1's, asked on eth0
}

TEST(AnswersArp, ArpIgnoreOneOnlyForTheReceivingDevicesAddress) {
  Netstack ns = Router("net.ipv4.conf.all.arp_ignore = 1\n");
  const Interface& eth0 = *ns.FindInterface("eth0");
  EXPECT_TRUE(AnswersArp(ns, eth0, Ip("10.0.0.1"), Ip("10.9.9.9")));
  std::string why;
  EXPECT_FALSE(AnswersArp(ns, eth0, Ip("10.0.1.1"), Ip("10.0.0.9"), &why));
  EXPECT_EQ(why, "arp_ignore 1 on eth0");
}

TEST(AnswersArp, ArpIgnoreIsTheMaximumOfAllAndTheDevice) {
  // all=0, eth0=2: the device's 2 applies (the sender must be inside the address's subnet).
  Netstack ns = Router("net.ipv4.conf.eth0.arp_ignore = 2\n");
  const Interface& eth0 = *ns.FindInterface("eth0");
  EXPECT_TRUE(AnswersArp(ns, eth0, Ip("10.0.0.1"), Ip("10.0.0.9")));
  std::string why;
  EXPECT_FALSE(AnswersArp(ns, eth0, Ip("10.0.0.1"), Ip("10.9.9.9"), &why));
  EXPECT_EQ(why, "arp_ignore 2 on eth0");
  // eth1 keeps all's 0.
  EXPECT_TRUE(AnswersArp(ns, *ns.FindInterface("eth1"), Ip("10.0.0.1"), Ip("10.9.9.9")));
}

TEST(AnswersArp, ArpIgnoreEightNeverAnswers) {
  Netstack ns = Router("net.ipv4.conf.all.arp_ignore = 8\n");
  EXPECT_FALSE(AnswersArp(ns, *ns.FindInterface("eth0"), Ip("10.0.0.1"), Ip("10.0.0.9")));
}

TEST(AnswersArp, ArpIgnoreReservedAndUnknownValuesAnswerAsZero) {
  // arp_ignore()'s switch: 4-7 are reserved and answer, as does any value it does not name
  // (the kernel stores any int: proc_dointvec).
  for (const char* v : {"4", "7", "9", "-1"}) {
    Netstack ns = Router(absl::StrCat("net.ipv4.conf.all.arp_ignore = ", v, "\n"));
    EXPECT_TRUE(AnswersArp(ns, *ns.FindInterface("eth0"), Ip("10.0.1.1"), Ip("10.9.9.9"))) << v;
  }
}

TEST(AnswersArp, OtherAddressesOnlyByProxyArp) {
  Netstack off = Router("");
  std::string why;
  EXPECT_FALSE(AnswersArp(off, *off.FindInterface("eth0"), Ip("10.0.1.5"), Ip("10.0.0.9"), &why));
  EXPECT_EQ(why, "no local address, and proxy_arp is off on eth0");

  Netstack on = Router("net.ipv4.conf.eth0.proxy_arp = 1\n");
  const Interface& eth0 = *on.FindInterface("eth0");
  // Forwarded out of eth1: answered.
  EXPECT_TRUE(AnswersArp(on, eth0, Ip("10.0.1.5"), Ip("10.0.0.9")));
  // Routed back out of eth0 itself: not answered (arp_fwd_proxy).
  why.clear();
  EXPECT_FALSE(AnswersArp(on, eth0, Ip("10.0.0.7"), Ip("10.0.0.9"), &why));
  EXPECT_THAT(why, HasSubstr("answers only for an address it forwards out of another device"));
  // No route at all: not answered, and the reason says so.
  why.clear();
  EXPECT_FALSE(AnswersArp(on, eth0, Ip("192.0.2.1"), Ip("10.0.0.9"), &why));
  EXPECT_THAT(why, HasSubstr("no forwarding route"));
  // proxy_arp on "all" counts for every device (IN_DEV_PROXY_ARP = all OR dev).
  Netstack all = Router("net.ipv4.conf.all.proxy_arp = 1\n");
  EXPECT_TRUE(AnswersArp(all, *all.FindInterface("eth0"), Ip("10.0.1.5"), Ip("10.0.0.9")));
}

TEST(AnswersArp, NoarpDeviceNeverAnswers) {
  Netstack ns = Router("", /*eth1_noarp=*/true);
  std::string why;
  EXPECT_FALSE(AnswersArp(ns, *ns.FindInterface("eth1"), Ip("10.0.1.1"), Ip("10.0.1.9"), &why));
  EXPECT_EQ(why, "eth1 is NOARP");
}

}  // namespace
}  // namespace sarena::model
