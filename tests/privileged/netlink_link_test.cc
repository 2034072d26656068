// Privileged tests of sarena::nl namespaces and links against the real kernel. Everything
// happens in network namespaces the test creates (unique names per run); the root namespace is
// never modified. Results are cross-checked with iproute2's JSON output (`ip -j`).
#include <sys/stat.h>

// Options structs are filled with designated initializers (docs/architecture.md "Conventions");
// omitted members keep their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/link.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/socket.h"
#include "tests/lib/ip_json.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::nl {
namespace {

using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::sarena::testing::UniqueName;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

using ::sarena::testing::IpJson;
using ::sarena::testing::ListHas;
using ::sarena::testing::Num;
using ::sarena::testing::PbList;
using ::sarena::testing::PbStruct;
using ::sarena::testing::Str;

net::Mac Mac(const char* text) { return *net::ParseMac(text); }

class NetlinkLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::IsRoot()) << "privileged tests must run as root (they never skip)";
  }
};

// ---------------------------------------------------------------- namespaces

TEST_F(NetlinkLinkTest, NetnsOpenByNameAndByPathAreTheSameNamespace) {
  ScopedNetns ns("nlo");
  absl::StatusOr<Netns> by_name = Netns::Open(ns.name());
  ASSERT_OK(by_name);
  EXPECT_EQ(by_name->path(), ns.path());
  absl::StatusOr<Netns> by_path = Netns::Open(ns.path());
  ASSERT_OK(by_path);
  EXPECT_TRUE(*by_name == *by_path);

  // The inode is the nsfs identity that `stat -L` shows for the bind mount.
  struct stat st;
  ASSERT_EQ(stat(ns.path().c_str(), &st), 0);
  EXPECT_EQ(by_name->inode(), st.st_ino);

  // A process inside the namespace: /proc/PID/ns/net names the same namespace.
  std::string pid_text = RunOk(ns.Exec("sh -c 'sleep 60 >/dev/null 2>&1 & echo $!'"));
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(pid_text), &pid)) << pid_text;
  absl::Cleanup kill_sleep = [pid] { sarena::testing::Run(absl::StrCat("kill -9 ", pid)); };
  absl::StatusOr<Netns> by_pid = Netns::Open(absl::StrCat("/proc/", pid, "/ns/net"));
  ASSERT_OK(by_pid);
  EXPECT_TRUE(*by_pid == *by_name);

  // Different from ours, which equals /proc/self/ns/net and /proc/1/ns/net (not modified).
  absl::StatusOr<Netns> current = Netns::Current();
  ASSERT_OK(current);
  EXPECT_TRUE(*current != *by_name);
  absl::StatusOr<Netns> self = Netns::Open("/proc/self/ns/net");
  ASSERT_OK(self);
  EXPECT_TRUE(*current == *self);

  absl::StatusOr<Netns> dup = by_name->Dup();
  ASSERT_OK(dup);
  EXPECT_TRUE(*dup == *by_name);
  EXPECT_NE(dup->fd(), by_name->fd());
}

TEST_F(NetlinkLinkTest, NetnsOpenErrors) {
  absl::StatusOr<Netns> missing = Netns::Open(UniqueName("nlmissing"));
  EXPECT_THAT(missing,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("open netns '/var/run/netns/")));
  absl::StatusOr<Netns> not_ns = Netns::Open("/proc/self/status");
  EXPECT_THAT(not_ns, StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<Netns> mnt_ns = Netns::Open("/proc/self/ns/mnt");
  EXPECT_THAT(mnt_ns, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Netns::Open(".."), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(NetlinkLinkTest, RunInRunsInsideWithoutMovingTheCaller) {
  ScopedNetns ns("nlr");
  absl::StatusOr<Netns> target = Netns::Open(ns.name());
  ASSERT_OK(target);
  absl::StatusOr<Netns> before = Netns::Current();
  ASSERT_OK(before);
  bool inside = false;
  absl::Status st = RunIn(*target, [&]() -> absl::Status {
    absl::StatusOr<Netns> here = Netns::Current();
    if (!here.ok()) return here.status();
    inside = *here == *target;
    return absl::OkStatus();
  });
  ASSERT_OK(st);
  EXPECT_TRUE(inside);
  absl::StatusOr<Netns> after = Netns::Current();
  ASSERT_OK(after);
  EXPECT_TRUE(*after == *before);

  // fn's status is returned as is.
  absl::Status err = RunIn(*target, [] { return absl::DataLossError("from fn"); });
  EXPECT_THAT(err, StatusIs(absl::StatusCode::kDataLoss));
  // RunInWithResult forwards a value.
  absl::StatusOr<ino_t> ino = RunInWithResult(*target, []() -> absl::StatusOr<ino_t> {
    absl::StatusOr<Netns> here = Netns::Current();
    if (!here.ok()) return here.status();
    return here->inode();
  });
  ASSERT_OK(ino);
  EXPECT_EQ(*ino, target->inode());
}

TEST_F(NetlinkLinkTest, NetnsCreateAndDeleteLikeIpNetns) {
  const std::string name = UniqueName("nlc", 31);
  absl::Cleanup cleanup = [&] { (void)Netns::Delete(name); };
  absl::StatusOr<Netns> created = Netns::Create(name);
  ASSERT_OK(created);
  EXPECT_THAT(RunOk("ip netns list"), HasSubstr(name));
  // A new namespace holds only loopback, and it is a different namespace from ours.
  PbList links = IpJson(absl::StrCat("ip -n ", name, " -j link show"));
  ASSERT_EQ(links.values_size(), 1);
  EXPECT_EQ(Str(links.values(0).struct_value(), "ifname"), "lo");
  absl::StatusOr<Netns> opened = Netns::Open(name);
  ASSERT_OK(opened);
  EXPECT_TRUE(*opened == *created);
  EXPECT_TRUE(*created != *Netns::Current());

  absl::StatusOr<Netns> again = Netns::Create(name);
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(Netns::Create("a/b"), StatusIs(absl::StatusCode::kInvalidArgument));

  ASSERT_OK(Netns::Delete(name));
  EXPECT_THAT(RunOk("ip netns list"), ::testing::Not(HasSubstr(name)));
  absl::Status twice = Netns::Delete(name);
  EXPECT_THAT(twice, StatusIs(absl::StatusCode::kNotFound));
  // The handle keeps the namespace alive after its name is gone.
  absl::StatusOr<Socket> sock = Socket::OpenIn(*created);
  ASSERT_OK(sock);
  absl::StatusOr<Link> lo = sock->GetLink("lo");
  ASSERT_OK(lo);
  EXPECT_EQ(lo->ifindex, 1);
}

// ---------------------------------------------------------------- veth and link attributes

TEST_F(NetlinkLinkTest, VethWithPeerInAnotherNetnsSeenFromBothSides) {
  ScopedNetns a("nla"), b("nlb");
  absl::StatusOr<Netns> na = Netns::Open(a.name());
  absl::StatusOr<Netns> nb = Netns::Open(b.path());
  ASSERT_TRUE(na.ok() && nb.ok());
  absl::StatusOr<Socket> sa = Socket::OpenIn(*na);
  absl::StatusOr<Socket> sb = Socket::OpenIn(*nb);
  ASSERT_TRUE(sa.ok() && sb.ok());

  const std::string host = UniqueName("vh"), peer = UniqueName("vp");
  absl::StatusOr<Link> local = sa->CreateVeth({.name = host,
                                               .peer_name = peer,
                                               .peer_netns = &*nb,
                                               .mtu = 1400,
                                               .mac = Mac("02:aa:00:00:00:01"),
                                               .peer_mac = Mac("02:bb:00:00:00:02")});
  ASSERT_OK(local);
  EXPECT_EQ(local->name, host);
  EXPECT_EQ(local->kind, "veth");
  EXPECT_EQ(local->mtu, 1400u);
  EXPECT_EQ(net::FormatMac(local->mac), "02:aa:00:00:00:01");
  EXPECT_FALSE(local->up);
  EXPECT_TRUE(local->link_netnsid.has_value()) << "peer lives in another netns";

  absl::StatusOr<Link> remote = sb->GetLink(peer);
  ASSERT_OK(remote);
  EXPECT_EQ(remote->kind, "veth");
  EXPECT_EQ(remote->mtu, 1400u);
  EXPECT_EQ(net::FormatMac(remote->mac), "02:bb:00:00:00:02");
  EXPECT_TRUE(remote->link_netnsid.has_value());
  // Each side's IFLA_LINK is the other's ifindex.
  EXPECT_EQ(local->link, remote->ifindex);
  EXPECT_EQ(remote->link, local->ifindex);
  // By ifindex too.
  absl::StatusOr<Link> by_index = sb->GetLink(remote->ifindex);
  ASSERT_OK(by_index);
  EXPECT_EQ(by_index->name, peer);
  // The peer is not in A.
  EXPECT_THAT(sa->GetLink(peer), StatusIs(absl::StatusCode::kNotFound));

  // iproute2 agrees, from both namespaces.
  PbList ja = IpJson(a.Exec("ip -j -d link show dev " + host));
  ASSERT_EQ(ja.values_size(), 1);
  const PbStruct& la = ja.values(0).struct_value();
  EXPECT_EQ(Num(la, "ifindex"), local->ifindex);
  EXPECT_EQ(Str(la, "address"), "02:aa:00:00:00:01");
  EXPECT_EQ(Num(la, "mtu"), 1400);
  EXPECT_EQ(Str(la.fields().at("linkinfo").struct_value(), "info_kind"), "veth");
  PbList jb = IpJson(b.Exec("ip -j -d link show dev " + peer));
  ASSERT_EQ(jb.values_size(), 1);
  const PbStruct& lb = jb.values(0).struct_value();
  EXPECT_EQ(Num(lb, "ifindex"), remote->ifindex);
  EXPECT_EQ(Str(lb, "address"), "02:bb:00:00:00:02");
  EXPECT_EQ(Num(lb, "link_index"), local->ifindex);

  // ListLinks: lo and the veth, ordered by ifindex.
  absl::StatusOr<std::vector<Link>> links = sa->ListLinks();
  ASSERT_OK(links);
  ASSERT_EQ(links->size(), 2u);
  EXPECT_EQ((*links)[0].name, "lo");
  EXPECT_EQ((*links)[1].name, host);

  // Deleting one end removes both.
  ASSERT_OK(sa->DeleteLink(host));
  EXPECT_THAT(sb->GetLink(peer), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(NetlinkLinkTest, UpDownMtuMacRename) {
  ScopedNetns a("nlu");
  absl::StatusOr<Netns> na = Netns::Open(a.name());
  ASSERT_OK(na);
  absl::StatusOr<Socket> s = Socket::OpenIn(*na);
  ASSERT_OK(s);
  const std::string x = UniqueName("ux"), y = UniqueName("uy");
  absl::StatusOr<Link> lx = s->CreateVeth({.name = x, .peer_name = y});
  ASSERT_OK(lx);
  EXPECT_EQ(lx->mtu, 1500u);

  ASSERT_OK(s->SetLinkUp(x));
  ASSERT_TRUE(s->SetLinkUp(lx->link).ok());  // the peer, by ifindex
  absl::StatusOr<Link> up = s->GetLink(x);
  ASSERT_OK(up);
  EXPECT_TRUE(up->up);
  PbList j = IpJson(a.Exec("ip -j link show dev " + x));
  EXPECT_TRUE(ListHas(j.values(0).struct_value(), "flags", "UP"));
  // Both ends up: carrier and operstate UP.
  EXPECT_TRUE(up->lower_up);
  EXPECT_EQ(up->oper_state, OperState::kUp);
  EXPECT_EQ(ToString(up->oper_state), Str(j.values(0).struct_value(), "operstate"));

  ASSERT_OK(s->SetLinkDown(lx->ifindex));
  EXPECT_FALSE(s->GetLink(x)->up);
  j = IpJson(a.Exec("ip -j link show dev " + x));
  EXPECT_FALSE(ListHas(j.values(0).struct_value(), "flags", "UP"));

  ASSERT_OK(s->SetMtu(x, 9000));
  EXPECT_EQ(s->GetLink(x)->mtu, 9000u);
  EXPECT_EQ(Num(IpJson(a.Exec("ip -j link show dev " + x)).values(0).struct_value(), "mtu"), 9000);

  ASSERT_OK(s->SetMac(x, Mac("02:12:34:56:78:9a")));
  EXPECT_EQ(net::FormatMac(s->GetLink(x)->mac), "02:12:34:56:78:9a");
  EXPECT_EQ(Str(IpJson(a.Exec("ip -j link show dev " + x)).values(0).struct_value(), "address"),
            "02:12:34:56:78:9a");

  // Rename keeps the ifindex; the old name is gone.
  const std::string z = UniqueName("uz");
  ASSERT_OK(s->Rename(x, z));
  absl::StatusOr<Link> renamed = s->GetLink(z);
  ASSERT_OK(renamed);
  EXPECT_EQ(renamed->ifindex, lx->ifindex);
  EXPECT_THAT(s->GetLink(x), StatusIs(absl::StatusCode::kNotFound));
  // Renaming to a name that exists: kAlreadyExists.
  absl::Status taken = s->Rename(z, y);
  EXPECT_THAT(taken, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(std::string(taken.message()),
              HasSubstr(absl::StrCat("rename link '", z, "' to '", y, "'")));
}

TEST_F(NetlinkLinkTest, KernelErrorsCarryErrnoAndExtack) {
  ScopedNetns a("nle");
  absl::StatusOr<Netns> na = Netns::Open(a.name());
  ASSERT_OK(na);
  absl::StatusOr<Socket> s = Socket::OpenIn(*na);
  ASSERT_OK(s);
  const std::string x = UniqueName("ex"), y = UniqueName("ey");
  ASSERT_OK(s->CreateVeth({.name = x, .peer_name = y}));

  // Duplicate link -> kAlreadyExists with the errno.
  absl::StatusOr<Link> dup = s->CreateVeth({.name = x, .peer_name = UniqueName("ez")});
  EXPECT_THAT(dup, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(std::string(dup.status().message()),
              HasSubstr(absl::StrCat("create veth '", x, "': File exists (errno 17)")));

  // Missing link -> kNotFound.
  const std::string ghost = UniqueName("gh");
  absl::Status del = s->DeleteLink(ghost);
  EXPECT_THAT(del, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(std::string(del.message()), HasSubstr(absl::StrCat("delete link '", ghost, "'")));
  EXPECT_THAT(s->GetLink(ghost), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(s->GetLink(987654), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(s->SetLinkUp(ghost), StatusIs(absl::StatusCode::kNotFound));

  // An MTU above the veth maximum: EINVAL plus the kernel's extended-ack explanation.
  absl::Status mtu = s->SetMtu(x, 70000);
  EXPECT_THAT(mtu, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(mtu.message()), HasSubstr("errno 22"));
  EXPECT_THAT(std::string(mtu.message()), HasSubstr("mtu greater than device maximum")) << mtu;

  // A multicast MAC is rejected.
  absl::Status mac = s->SetMac(x, Mac("01:00:5e:00:00:01"));
  EXPECT_FALSE(mac.ok());
  EXPECT_THAT(std::string(mac.message()), HasSubstr("errno"));

  // Names are checked before the kernel sees them.
  EXPECT_EQ(s->CreateVeth({.name = "this-name-is-too-long", .peer_name = y}).status().code(),
            absl::StatusCode::kInvalidArgument);

  // The socket stays usable after errors.
  EXPECT_OK(s->GetLink(x));
}

TEST_F(NetlinkLinkTest, MoveToNetnsWithRename) {
  ScopedNetns a("nlm"), b("nln");
  absl::StatusOr<Netns> na = Netns::Open(a.name());
  absl::StatusOr<Netns> nb = Netns::Open(b.name());
  ASSERT_TRUE(na.ok() && nb.ok());
  absl::StatusOr<Socket> sa = Socket::OpenIn(*na);
  absl::StatusOr<Socket> sb = Socket::OpenIn(*nb);
  ASSERT_TRUE(sa.ok() && sb.ok());
  const std::string x = UniqueName("mx"), y = UniqueName("my"), eth = UniqueName("eth");
  absl::StatusOr<Link> lx =
      sa->CreateVeth({.name = x, .peer_name = y, .peer_mac = Mac("02:00:00:00:0a:0b")});
  ASSERT_OK(lx);
  ASSERT_OK(sa->MoveToNetns(y, *nb, eth));
  EXPECT_THAT(sa->GetLink(y), StatusIs(absl::StatusCode::kNotFound));
  absl::StatusOr<Link> moved = sb->GetLink(eth);
  ASSERT_OK(moved);
  EXPECT_EQ(net::FormatMac(moved->mac), "02:00:00:00:0a:0b");
  EXPECT_EQ(moved->link, lx->ifindex);
  EXPECT_TRUE(sa->GetLink(x)->link_netnsid.has_value());
  // And back without a rename (by ifindex).
  ASSERT_OK(sb->MoveToNetns(moved->ifindex, *na));
  EXPECT_OK(sa->GetLink(eth));
  EXPECT_FALSE(sa->GetLink(x)->link_netnsid.has_value());
}

TEST_F(NetlinkLinkTest, BridgeMasterAndVxlan) {
  ScopedNetns a("nlv");
  absl::StatusOr<Netns> na = Netns::Open(a.name());
  ASSERT_OK(na);
  absl::StatusOr<Socket> s = Socket::OpenIn(*na);
  ASSERT_OK(s);
  const std::string br = UniqueName("br"), dm = UniqueName("dm"), vx = UniqueName("vx");
  absl::StatusOr<Link> bridge = s->CreateLink({.name = br, .kind = "bridge"});
  ASSERT_OK(bridge);
  EXPECT_EQ(bridge->kind, "bridge");
  // (This kernel has no "dummy" driver, so the bridge port is one end of a veth pair.)
  absl::StatusOr<Link> dummy =
      s->CreateVeth({.name = dm, .peer_name = UniqueName("dp"), .mtu = 1450});
  ASSERT_OK(dummy);
  EXPECT_EQ(dummy->mtu, 1450u);
  ASSERT_OK(s->SetMaster(dm, bridge->ifindex));
  absl::StatusOr<Link> port = s->GetLink(dm);
  ASSERT_OK(port);
  EXPECT_EQ(port->master, bridge->ifindex);
  EXPECT_EQ(port->slave_kind, "bridge");
  EXPECT_EQ(Str(IpJson(a.Exec("ip -j link show dev " + dm)).values(0).struct_value(), "master"),
            br);
  ASSERT_OK(s->SetMaster(dm, 0));
  EXPECT_EQ(s->GetLink(dm)->master, 0);

  absl::StatusOr<Link> vxlan = s->CreateVxlan({.name = vx,
                                               .vni = 4096,
                                               .local = *net::ParseIpv4("192.0.2.10"),
                                               .port = 4789,
                                               .underlay_ifindex = dummy->ifindex,
                                               .learning = false});
  ASSERT_OK(vxlan);
  EXPECT_EQ(vxlan->kind, "vxlan");
  ASSERT_TRUE(vxlan->vxlan.has_value());
  EXPECT_EQ(vxlan->vxlan->vni, 4096u);
  EXPECT_EQ(vxlan->vxlan->port, 4789);
  EXPECT_EQ(vxlan->vxlan->local->to_string(), "192.0.2.10");
  EXPECT_EQ(vxlan->vxlan->underlay_ifindex, dummy->ifindex);
  EXPECT_FALSE(vxlan->vxlan->learning);
  PbList j = IpJson(a.Exec("ip -j -d link show dev " + vx));
  const PbStruct& data = j.values(0)
                             .struct_value()
                             .fields()
                             .at("linkinfo")
                             .struct_value()
                             .fields()
                             .at("info_data")
                             .struct_value();
  EXPECT_EQ(Num(data, "id"), 4096);
  EXPECT_EQ(Num(data, "port"), 4789);
  EXPECT_EQ(Str(data, "local"), "192.0.2.10");
  EXPECT_EQ(data.fields().at("learning").bool_value(), false);
}

}  // namespace
}  // namespace sarena::nl
