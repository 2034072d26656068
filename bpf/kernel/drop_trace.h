/* The kernel drop tracer's ABI, shared by bpf/kernel/drop_trace.bpf.c and
 * libsarena/datapath/drop_trace.cc (C++).
 * Plain C, fixed-size fields; no kernel or libc headers, so both sides include it as is.
 * Byte order: addresses in network order (as on the wire); ports, protocol and ethertype in host
 * order. Source: include/trace/events/skb.h (tracepoint kfree_skb), include/net/dropreason-core.h. */
#ifndef SARENA_BPF_KERNEL_DROP_TRACE_H_
#define SARENA_BPF_KERNEL_DROP_TRACE_H_

#define SARENA_DROP_TRACE_MAX_ADDRS 8

/* drop_trace_cfg[0]: which packets to report. A packet is reported when its IPv4 source and
 * destination (for ARP: sender and target protocol address) are both in addrs[0..n_addrs). With
 * n_addrs == 0 every IPv4/ARP drop is reported. */
struct sarena_drop_trace_cfg {
  __u32 n_addrs;
  __u32 addrs[SARENA_DROP_TRACE_MAX_ADDRS]; /* network order */
};

/* One dropped packet (ringbuf record). */
struct sarena_drop_event {
  __u64 ts_ns;      /* bpf_ktime_get_ns() */
  __u64 location;   /* kernel text address that freed the skb */
  __u32 reason;     /* enum skb_drop_reason value (name from the kernel's BTF) */
  __u32 netns_ino;  /* nsfs inode of the device's (else the socket's) network namespace; 0 unknown */
  __u32 ifindex;    /* skb->dev->ifindex; 0 when the skb has no device */
  __u32 saddr;      /* network order; ARP: sender protocol address */
  __u32 daddr;      /* network order; ARP: target protocol address */
  __u16 eth_proto;  /* host order: 0x0800 IPv4, 0x0806 ARP */
  __u16 sport;      /* host order; ICMP: type << 8 | code; ARP: opcode */
  __u16 dport;      /* host order */
  __u8 l4proto;     /* IPPROTO_* for IPv4, 0 for ARP */
  __u8 tcp_flags;   /* TCP flags byte (SYN 0x02, ACK 0x10, RST 0x04) */
  char ifname[16];  /* skb->dev->name, "" without a device */
};

#endif /* SARENA_BPF_KERNEL_DROP_TRACE_H_ */
