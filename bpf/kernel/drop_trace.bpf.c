// SPDX-License-Identifier: GPL-2.0
/* The kernel's own drop evidence for `sarena-diag trace --live` (issue 11 item 1): every skb the
 * kernel frees as dropped (tracepoint skb:kfree_skb, attached as tp_btf so the skb is a typed
 * pointer read with CO-RE) whose IPv4 or ARP addresses are those of the probe, with the drop
 * reason, the namespace and device it died in and its 5-tuple. Events go to a ringbuf.
 * Built against vmlinux.h generated from the running kernel's BTF (bpf/CMakeLists.txt).
 * tp_btf arguments: (struct sk_buff *skb, void *location, enum skb_drop_reason reason, ...) —
 * include/trace/events/skb.h; newer kernels append `struct sock *rx_sk`, which is not read. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kernel/drop_trace.h"

#define ETH_P_IP_ 0x0800
#define ETH_P_ARP_ 0x0806

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sarena_drop_trace_cfg);
} drop_trace_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} drop_trace_events SEC(".maps");

/* Events bpf_ringbuf_output could not queue (the ring was full: user space is behind), since
 * load; read by datapath::DropTraceProgram::Drain as DropTraceBatch::lost. */
__u64 drop_trace_lost = 0;

static __always_inline int addr_wanted(const struct sarena_drop_trace_cfg *cfg, __u32 a) {
#pragma unroll
  for (int i = 0; i < SARENA_DROP_TRACE_MAX_ADDRS; i++) {
    if (i < cfg->n_addrs && cfg->addrs[i] == a) return 1;
  }
  return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(sarena_drop_trace, struct sk_buff *skb, void *location, int reason) {
  __u32 zero = 0;
  const struct sarena_drop_trace_cfg *cfg = bpf_map_lookup_elem(&drop_trace_cfg, &zero);
  if (!cfg) return 0;

  __u16 proto = bpf_ntohs(BPF_CORE_READ(skb, protocol));
  if (proto != ETH_P_IP_ && proto != ETH_P_ARP_) return 0;
  unsigned char *head = BPF_CORE_READ(skb, head);
  __u16 nh_off = BPF_CORE_READ(skb, network_header);
  if (nh_off == (__u16)~0U) return 0; /* network header never set */
  unsigned char *nh = head + nh_off;

  struct sarena_drop_event ev = {};
  ev.eth_proto = proto;
  if (proto == ETH_P_IP_) {
    struct iphdr ip;
    if (bpf_probe_read_kernel(&ip, sizeof(ip), nh)) return 0;
    if (ip.version != 4) return 0;
    ev.saddr = ip.saddr;
    ev.daddr = ip.daddr;
    ev.l4proto = ip.protocol;
    unsigned char *l4 = nh + ip.ihl * 4;
    if (ip.protocol == IPPROTO_TCP) {
      struct tcphdr th;
      if (!bpf_probe_read_kernel(&th, sizeof(th), l4)) {
        ev.sport = bpf_ntohs(th.source);
        ev.dport = bpf_ntohs(th.dest);
        /* the flags byte follows doff/res1 (offset 13) */
        bpf_probe_read_kernel(&ev.tcp_flags, 1, l4 + 13);
      }
    } else if (ip.protocol == IPPROTO_UDP) {
      struct udphdr uh;
      if (!bpf_probe_read_kernel(&uh, sizeof(uh), l4)) {
        ev.sport = bpf_ntohs(uh.source);
        ev.dport = bpf_ntohs(uh.dest);
      }
    } else if (ip.protocol == IPPROTO_ICMP) {
      __u8 tc[2] = {};
      if (!bpf_probe_read_kernel(tc, sizeof(tc), l4)) ev.sport = (__u16)(tc[0] << 8 | tc[1]);
    }
  } else {
    /* ARP for IPv4 over Ethernet: hdr(8) sha(6) spa(4) tha(6) tpa(4). */
    struct arphdr ah;
    if (bpf_probe_read_kernel(&ah, sizeof(ah), nh)) return 0;
    if (ah.ar_pln != 4 || ah.ar_hln != 6) return 0;
    ev.sport = bpf_ntohs(ah.ar_op);
    bpf_probe_read_kernel(&ev.saddr, 4, nh + 8 + 6);
    bpf_probe_read_kernel(&ev.daddr, 4, nh + 8 + 6 + 4 + 6);
  }
  if (cfg->n_addrs && !(addr_wanted(cfg, ev.saddr) && addr_wanted(cfg, ev.daddr))) return 0;

  ev.ts_ns = bpf_ktime_get_ns();
  ev.location = (__u64)location;
  ev.reason = (__u32)reason;
  struct net_device *dev = BPF_CORE_READ(skb, dev);
  if (dev) {
    ev.ifindex = BPF_CORE_READ(dev, ifindex);
    BPF_CORE_READ_STR_INTO(&ev.ifname, dev, name);
    ev.netns_ino = BPF_CORE_READ(dev, nd_net.net, ns.inum);
  } else {
    struct sock *sk = BPF_CORE_READ(skb, sk);
    if (sk) ev.netns_ino = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  }
  if (bpf_ringbuf_output(&drop_trace_events, &ev, sizeof(ev), 0) < 0) {
    __sync_fetch_and_add(&drop_trace_lost, 1);
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
