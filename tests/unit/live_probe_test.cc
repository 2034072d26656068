// libsarena/live without privileges, on this process's own namespace: real probes over loopback
// (a listening TCP socket -> connected, a closed TCP port -> refused, a closed UDP port ->
// refused by the kernel's ICMP port unreachable, an open UDP port -> the answer), bad options
// named, the namespace scan, and drop reason names read from the running kernel's BTF.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "libsarena/live/drop_names.h"
#include "libsarena/live/netns_scan.h"
#include "libsarena/live/probe.h"

namespace sarena::live {
namespace {

const net::Ipv4 kLo = net::Ipv4::loopback();

// A bound socket on 127.0.0.1 with an ephemeral port; listening for TCP.
struct Server {
  int fd = -1;
  uint16_t port = 0;
  explicit Server(int type) {
    fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    socklen_t len = sizeof(sa);
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    if (type == SOCK_STREAM) listen(fd, 4);
  }
  ~Server() { close(fd); }
};

// A port that nothing listens on (bound, then closed).
uint16_t ClosedPort(int type) {
  Server s(type);
  return s.port;
}

// The loopback device's MTU as the largest IP total length (65536 -> 65535).
uint32_t LoopbackMtu() {
  std::ifstream f("/sys/class/net/lo/mtu");
  uint32_t mtu = 0;
  f >> mtu;
  return std::min<uint32_t>(mtu, 65535);
}

ProbeOptions Opts(uint8_t proto, uint16_t port) {
  ProbeOptions o;
  o.netns = "/proc/self/ns/net";
  o.src = kLo;
  o.dst = kLo;
  o.proto = proto;
  o.dport = port;
  o.timeout_ms = 300;
  o.count = 2;
  return o;
}

TEST(SendProbe, TcpToListenerConnects) {
  Server s(SOCK_STREAM);
  auto r = SendProbe(Opts(6, s.port));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome.result, "connected");
  EXPECT_EQ(r->outcome.packets, 1u);
  EXPECT_NE(r->outcome.sport, 0);
  EXPECT_GT(r->ended_ns, 0u);
  EXPECT_LE(r->ended_ns, MonotonicNs());
}

TEST(SendProbe, TcpToClosedPortIsRefused) {
  auto r = SendProbe(Opts(6, ClosedPort(SOCK_STREAM)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome.result, "refused");
  EXPECT_EQ(r->outcome.error_number, ECONNREFUSED);
}

TEST(SendProbe, UdpToClosedPortIsRefusedByIcmp) {
  auto r = SendProbe(Opts(17, ClosedPort(SOCK_DGRAM)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome.result, "refused");
  // Size 0 (the default) is full size, as the offline walk's --size 0: the route's MTU, here
  // loopback's (65536, capped at the largest IP packet). It was 64 bytes.
  EXPECT_EQ(r->outcome.size, LoopbackMtu());
}

TEST(SendProbe, UdpToOpenPortIsSentAndAnswered) {
  Server s(SOCK_DGRAM);
  // Echo the first datagram back.
  std::thread echo([&] {
    char buf[2048];
    sockaddr_in from = {};
    socklen_t len = sizeof(from);
    ssize_t n = recvfrom(s.fd, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n > 0) sendto(s.fd, buf, n, 0, reinterpret_cast<sockaddr*>(&from), len);
  });
  ProbeOptions o = Opts(17, s.port);
  o.size = 200;
  auto r = SendProbe(o);
  echo.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome.result, "connected");
  EXPECT_EQ(r->outcome.size, 200u);
  EXPECT_GE(r->outcome.packets, 1u);
}

TEST(SendProbe, SourceNotInNamespaceIsAnError) {
  ProbeOptions o = Opts(6, 80);
  o.src = net::Ipv4(0xC0000201);  // 192.0.2.1 (TEST-NET-1), not configured here
  auto r = SendProbe(o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "192.0.2.1")) << r.status();
}

TEST(SendProbe, BadOptionsNamed) {
  ProbeOptions o = Opts(1, 80);
  EXPECT_TRUE(absl::StrContains(SendProbe(o).status().message(), "proto 1"));
  o = Opts(6, 0);
  EXPECT_TRUE(absl::StrContains(SendProbe(o).status().message(), "dport 0"));
  o = Opts(17, 80);
  o.size = 20;
  EXPECT_TRUE(absl::StrContains(SendProbe(o).status().message(), "size 20"));
  o = Opts(17, 80);
  o.count = 17;
  EXPECT_TRUE(absl::StrContains(SendProbe(o).status().message(), "count 17"));
  o = Opts(6, 80);
  o.timeout_ms = 0;
  EXPECT_TRUE(absl::StrContains(SendProbe(o).status().message(), "timeout_ms 0"));
  o = Opts(6, 80);
  o.netns = "/nonexistent/ns";
  EXPECT_TRUE(absl::IsNotFound(SendProbe(o).status())) << SendProbe(o).status();
}

TEST(ScanNetns, CallerFirstWithItsInode) {
  auto all = ScanNetns();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_FALSE(all->empty());
  struct stat sb = {};
  ASSERT_EQ(stat("/proc/self/ns/net", &sb), 0);
  EXPECT_TRUE((*all)[0].current);
  EXPECT_EQ((*all)[0].inode, sb.st_ino);
  for (size_t i = 1; i < all->size(); ++i) {
    EXPECT_FALSE((*all)[i].current);
    EXPECT_NE((*all)[i].inode, sb.st_ino) << (*all)[i].path;
  }
}

TEST(DropReasonName, FromKernelBtf) {
  // The running kernel's enum: IP_RPFILTER and NO_SOCKET exist since 5.17/6.0.
  bool rpf = false, nosock = false;
  for (uint32_t v = 0; v < 512; ++v) {
    std::string n = DropReasonName(v);
    rpf |= n == "SKB_DROP_REASON_IP_RPFILTER";
    nosock |= n == "SKB_DROP_REASON_NO_SOCKET";
  }
  EXPECT_TRUE(rpf);
  EXPECT_TRUE(nosock);
  EXPECT_EQ(DropReasonName(1000000), "SKB_DROP_REASON_1000000");
}

}  // namespace
}  // namespace sarena::live
