// Helpers shared by the bpf-tier tests: a private bpffs per test, entering a test network
// namespace, and crafting Ethernet/IPv4/ARP frames with correct checksums.
#ifndef SARENA_TESTS_BPF_BPF_TEST_ENV_H_
#define SARENA_TESTS_BPF_BPF_TEST_ENV_H_

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "libsarena/bpf/bpffs.h"
#include "libsarena/net/ip.h"
#include "tests/lib/test_util.h"

namespace sarena::testing {

/// A private bpffs instance mounted on a fresh directory under /tmp (this machine has no bpffs
/// at /sys/fs/bpf, and a private instance cannot collide with anything): unmounted and removed
/// on destruction, pins and all.
class ScopedBpffs {
 public:
  ScopedBpffs() {
    if (dir_.path().empty()) return;  // mkdtemp failed: TempDir reported it
    auto mounted = bpf::EnsureBpffs(dir_.path());
    if (!mounted.ok()) {
      ADD_FAILURE() << mounted.status();
      return;
    }
    mounted_ = *mounted;
  }
  ~ScopedBpffs() {
    if (!mounted_.empty()) umount2(mounted_.c_str(), MNT_DETACH);
  }  // then dir_, the mount point, is removed
  ScopedBpffs(const ScopedBpffs&) = delete;
  ScopedBpffs& operator=(const ScopedBpffs&) = delete;

  const std::string& path() const { return dir_.path(); }
  /// The directory a bpffs was mounted on ("" if none was needed).
  const std::string& mounted() const { return mounted_; }

 private:
  TempDir dir_{"sarena-bpffs-"};
  std::string mounted_;
};

/// Moves the calling thread into the network namespace at `path` and back on destruction.
class ScopedNetnsEnter {
 public:
  explicit ScopedNetnsEnter(const std::string& path) {
    orig_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (orig_ < 0 || fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      ADD_FAILURE() << "cannot enter netns " << path << ": " << strerror(errno);
    } else {
      entered_ = true;
    }
    if (fd >= 0) close(fd);
  }
  ~ScopedNetnsEnter() {
    if (entered_ && setns(orig_, CLONE_NEWNET) != 0) std::abort();  // never run on elsewhere
    if (orig_ >= 0) close(orig_);
  }
  ScopedNetnsEnter(const ScopedNetnsEnter&) = delete;
  ScopedNetnsEnter& operator=(const ScopedNetnsEnter&) = delete;

 private:
  int orig_ = -1;
  bool entered_ = false;
};

// ---- Packet crafting ----

constexpr size_t kEthHlen = 14;
constexpr uint16_t kEthPIp = 0x0800;
constexpr uint16_t kEthPArp = 0x0806;
constexpr uint16_t kEthPIpv6 = 0x86dd;
constexpr uint16_t kEthP8021Q = 0x8100;
constexpr uint8_t kIpprotoTcp = 6;
constexpr uint8_t kIpprotoUdp = 17;
constexpr uint8_t kIpprotoIcmp = 1;

inline void Put16(std::vector<uint8_t>& p, size_t off, uint16_t v) {
  p[off] = v >> 8;
  p[off + 1] = v & 0xff;
}
inline uint16_t Get16(const std::vector<uint8_t>& p, size_t off) {
  return static_cast<uint16_t>(p[off] << 8 | p[off + 1]);
}
inline void Put32Be(std::vector<uint8_t>& p, size_t off, uint32_t be) {
  std::memcpy(&p[off], &be, 4);
}

/// RFC 1071 Internet checksum of `len` bytes at `data` (result in host order, ready for Put16).
inline uint16_t InternetChecksum(const uint8_t* data, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(data[i] << 8 | data[i + 1]);
  if (len & 1) sum += static_cast<uint32_t>(data[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

struct Ipv4Spec {
  net::Mac eth_dst = {0x02, 0, 0, 0, 0, 0xee};
  net::Mac eth_src = {0x02, 0, 0, 0, 0, 0xff};
  std::string saddr = "10.244.1.10";
  std::string daddr = "10.244.1.11";
  uint8_t proto = kIpprotoTcp;
  uint16_t sport = 40000;
  uint16_t dport = 8080;
  uint8_t tcp_flags = 0x10;  // TCP header byte 13: ACK (an established segment); SYN = 0x02
  uint8_t ttl = 64;
  uint8_t tos = 0;
  uint16_t id = 0x1234;
  uint16_t frag_off = 0x4000;  // DF
  int ihl = 5;                 // 5..15; options are filled with NOPs (type 1)
  size_t payload = 16;         // L4 payload bytes after the 20/8-byte TCP/UDP header
};

/// An Ethernet + IPv4 (+ options) + TCP/UDP(+payload) frame with a correct IP header checksum.
/// For other protocols the "L4" part is 8 bytes of pattern.
inline std::vector<uint8_t> BuildIpv4(const Ipv4Spec& s) {
  size_t hlen = static_cast<size_t>(s.ihl) * 4;
  size_t l4 = (s.proto == kIpprotoTcp ? 20 : 8) + s.payload;
  std::vector<uint8_t> p(kEthHlen + hlen + l4, 0);
  std::memcpy(&p[0], s.eth_dst.data(), 6);
  std::memcpy(&p[6], s.eth_src.data(), 6);
  Put16(p, 12, kEthPIp);
  size_t ip = kEthHlen;
  p[ip] = static_cast<uint8_t>(0x40 | (s.ihl & 0xf));
  p[ip + 1] = s.tos;
  Put16(p, ip + 2, static_cast<uint16_t>(hlen + l4));
  Put16(p, ip + 4, s.id);
  Put16(p, ip + 6, s.frag_off);
  p[ip + 8] = s.ttl;
  p[ip + 9] = s.proto;
  Put32Be(p, ip + 12, net::ToBe32(boost::asio::ip::make_address_v4(s.saddr)));
  Put32Be(p, ip + 16, net::ToBe32(boost::asio::ip::make_address_v4(s.daddr)));
  for (size_t i = 20; i < hlen; ++i) p[ip + i] = 1;  // NOP options
  Put16(p, ip + 10, InternetChecksum(&p[ip], hlen));
  size_t l4off = ip + hlen;
  if (s.proto == kIpprotoTcp || s.proto == kIpprotoUdp) {
    Put16(p, l4off, s.sport);
    Put16(p, l4off + 2, s.dport);
    if (s.proto == kIpprotoUdp) Put16(p, l4off + 4, static_cast<uint16_t>(l4));
    if (s.proto == kIpprotoTcp) {
      p[l4off + 12] = 0x50;  // data offset: 5 words
      p[l4off + 13] = s.tcp_flags;
    }
  }
  for (size_t i = l4off + 4; i < p.size(); ++i) {
    if (s.proto != kIpprotoTcp && s.proto != kIpprotoUdp) p[i] = static_cast<uint8_t>(i);
  }
  return p;
}

struct ArpSpec {
  net::Mac eth_dst = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  net::Mac eth_src;
  uint16_t op = 1;  // request
  net::Mac sha;
  std::string spa;
  net::Mac tha = {0, 0, 0, 0, 0, 0};
  std::string tpa;
};

/// An Ethernet/IPv4 ARP frame (RFC 826), 42 bytes.
inline std::vector<uint8_t> BuildArp(const ArpSpec& s) {
  std::vector<uint8_t> p(42, 0);
  std::memcpy(&p[0], s.eth_dst.data(), 6);
  std::memcpy(&p[6], s.eth_src.data(), 6);
  Put16(p, 12, kEthPArp);
  Put16(p, 14, 1);       // ARPHRD_ETHER
  Put16(p, 16, kEthPIp);  // protocol
  p[18] = 6;
  p[19] = 4;
  Put16(p, 20, s.op);
  std::memcpy(&p[22], s.sha.data(), 6);
  Put32Be(p, 28, net::ToBe32(boost::asio::ip::make_address_v4(s.spa)));
  std::memcpy(&p[32], s.tha.data(), 6);
  Put32Be(p, 38, net::ToBe32(boost::asio::ip::make_address_v4(s.tpa)));
  return p;
}

inline net::Mac MacAt(const std::vector<uint8_t>& p, size_t off) {
  net::Mac m;
  std::memcpy(m.data(), &p[off], 6);
  return m;
}

}  // namespace sarena::testing

#endif  // SARENA_TESTS_BPF_BPF_TEST_ENV_H_
