// Privileged tests of the kfree_skb drop tracer (libsarena/datapath/drop_trace.h) and of
// `sarena-diag drops`' exit codes: real BPF (root, BTF) and drops made inside network namespaces
// the test creates (UDP to a closed port on their loopback: SKB_DROP_REASON_NO_SOCKET). No
// traffic leaves those namespaces.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/datapath/drop_trace.h"
#include "libsarena/netlink/netns.h"
#include "tests/lib/test_util.h"

namespace sarena::live {
namespace {

using ::sarena::datapath::DropTraceEvent;
using ::sarena::datapath::DropTraceProgram;
using ::sarena::datapath::kDropTraceDrainMaxEvents;
using ::sarena::testing::BinaryDir;
using ::sarena::testing::IsRoot;
using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::testing::HasSubstr;

const net::Ipv4 kLoopback(0x7F000001);  // 127.0.0.1

// `n` UDP datagrams from one unconnected socket to 127.0.0.1:9 inside `ns`, where nothing
// listens: every one is dropped by the kernel (no socket), none fails at the sender.
void SendDropsIn(const ScopedNetns& ns, int n) {
  RunOk(ns.Exec(absl::StrCat(
      "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
      "for _ in range(",
      n, "): s.sendto(b\"x\", (\"127.0.0.1\", 9))'")));
}

uint64_t InodeOf(const ScopedNetns& ns) {
  auto n = nl::Netns::Open(ns.name());
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? n->inode() : 0;
}

TEST(DropTraceProgram, DrainIsBoundedAndSaysMore) {
  ASSERT_TRUE(IsRoot()) << "needs root (BPF)";
  ScopedNetns ns("dtb");
  const uint64_t inode = InodeOf(ns);
  auto tracer = DropTraceProgram::Start({kLoopback});
  ASSERT_TRUE(tracer.ok()) << tracer.status();
  SendDropsIn(ns, 10);
  auto first = tracer->Drain(100, 3);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->drops.size(), 3u);
  EXPECT_TRUE(first->more);
  size_t ours = 0;
  for (const DropTraceEvent& d : first->drops) ours += d.netns_inode == inode;
  bool more = first->more;
  for (int i = 0; i < 100 && more; ++i) {
    auto next = tracer->Drain(0, 3);
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_LE(next->drops.size(), 3u);
    for (const DropTraceEvent& d : next->drops) ours += d.netns_inode == inode;
    more = next->more;
  }
  EXPECT_FALSE(more);
  EXPECT_EQ(ours, 10u);
  auto empty = tracer->Drain(0);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_FALSE(empty->more);
  EXPECT_EQ(empty->lost, 0u);
}

TEST(DropTraceProgram, FullRingCountsLostEvents) {
  ASSERT_TRUE(IsRoot()) << "needs root (BPF)";
  ScopedNetns ns("dtl");
  auto tracer = DropTraceProgram::Start({kLoopback});
  ASSERT_TRUE(tracer.ok()) << tracer.status();
  // The ring holds ~3600 events (256 KiB of 72-byte records); nobody reads while 6000 come.
  constexpr int kSent = 6000;
  SendDropsIn(ns, kSent);
  size_t read = 0;
  uint64_t lost = 0;
  bool more = true;
  for (int i = 0; i < 100 && more; ++i) {
    auto batch = tracer->Drain(0);
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_LE(batch->drops.size(), kDropTraceDrainMaxEvents);
    read += batch->drops.size();
    lost = batch->lost;
    more = batch->more;
  }
  EXPECT_GT(lost, 0u) << "read " << read;
  EXPECT_LT(read, static_cast<size_t>(kSent));
  EXPECT_GE(read + lost, static_cast<uint64_t>(kSent));
}

std::string Diag() { return absl::StrCat(BinaryDir(), "/tools/sarena-diag"); }

TEST(DiagDrops, EnvironmentFailureIsExit1NotBadInput) {
  // No kernel BTF (vmlinux hidden in a private mount namespace): the tracer cannot load
  // (libbpf: ESRCH, kNotFound). That is the machine's fault, not the command line's: exit 1.
  ASSERT_TRUE(IsRoot()) << "needs root (mount namespace)";
  auto r = sarena::testing::Run(absl::StrCat("unshare -m --propagation private sh -c 'mount --bind /dev/null "
                            "/sys/kernel/btf/vmlinux && exec ",
                            Diag(), " drops --duration 1 --no-symbols'"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("drop_trace")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(DiagDrops, StdoutWriteErrorIsExit1) {
  // The first drop's line cannot be written (/dev/full): the stream stops and says so.
  ASSERT_TRUE(IsRoot()) << "needs root (BPF)";
  ScopedNetns ns("dtw");
  std::string ready = absl::StrCat("/tmp/", ns.name(), ".ready");
  auto r = sarena::testing::Run(absl::StrCat(
      Diag(), " drops --netns ", ns.name(), " --ready-file ", ready,
      " --duration 20 --no-symbols >/dev/full & pid=$!\n"
      "for i in $(seq 200); do [ -e ",
      ready, " ] && break; sleep 0.05; done\n", ns.Exec("/usr/bin/python3 -c 'import socket; "
                                                        "socket.socket(socket.AF_INET, "
                                                        "socket.SOCK_DGRAM).sendto(b\"x\", "
                                                        "(\"127.0.0.1\", 9))'"),
      "\nwait $pid"));
  unlink(ready.c_str());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("write standard output")) << r.err;
}

}  // namespace
}  // namespace sarena::live
