/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Ethernet and IPv4 header validation and 5-tuple extraction. */
#ifndef SARENA_BPF_LIB_IPV4_H_
#define SARENA_BPF_LIB_IPV4_H_

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sarena/abi.h"
#include "lib/common.h"

#define SARENA_IPV4_MIN_HLEN 20
#define SARENA_IP_OFFSET_MASK 0x1fff /* fragment offset bits of iphdr.frag_off (host order) */
#define SARENA_IPV4_MAX_TOT_LEN 0xffff
#define SARENA_TCP_SYN 0x02 /* TCP header byte 13 flag bits (RFC 9293 section 3.1) */
#define SARENA_TCP_ACK 0x10

/* What the programs need to know about an IPv4 packet. Addresses/ports in network byte order. */
struct sarena_ipv4_info {
  __u32 saddr_be;
  __u32 daddr_be;
  __u16 sport_be; /* 0 unless TCP/UDP and the first (or only) fragment */
  __u16 dport_be;
  __u8 proto;     /* IPPROTO_* */
  __u8 hlen;      /* IHL * 4, 20..60 bytes */
};

/*
 * Makes the first `len` bytes of the packet readable/writable by direct packet access, pulling
 * them into the linear area if the skb is non-linear. Returns 0 or -1 when the packet is shorter.
 * Invalidates every packet pointer the caller holds.
 */
static __always_inline int sarena_ensure_linear(struct __sk_buff *skb, __u32 len) {
  if ((void *)(long)skb->data + len <= (void *)(long)skb->data_end) return 0;
  if (skb->len < len) return -1;
  if (bpf_skb_pull_data(skb, len) < 0) return -1;
  if ((void *)(long)skb->data + len > (void *)(long)skb->data_end) return -1;
  return 0;
}

/*
 * Direct packet access to the first `len` bytes: sets `*data` / `*data_end` to the linear head
 * and proves `*data + len <= *data_end` to the verifier. The common case costs one bounds check;
 * a non-linear head (or a runt frame) goes through sarena_ensure_linear, and the pointers are
 * re-derived (the pull invalidated them) and checked again. Returns 0, or -1 when the packet is
 * shorter than `len`.
 */
static __always_inline int sarena_linear_head(struct __sk_buff *skb, __u32 len, void **data,
                                              void **data_end) {
  *data = (void *)(long)skb->data;
  *data_end = (void *)(long)skb->data_end;
  if (*data + len <= *data_end) return 0;
  if (sarena_ensure_linear(skb, len) < 0) return -1;
  *data = (void *)(long)skb->data;
  *data_end = (void *)(long)skb->data_end;
  if (*data + len > *data_end) return -1;
  return 0;
}

/*
 * The EtherType of the frame (network byte order), or 0 when the frame is shorter than an
 * Ethernet header. Frames with an offloaded VLAN tag (skb->vlan_present) report ETH_P_8021Q so
 * that they are never treated as untagged IPv4/ARP. Ensures ETH_HLEN linear bytes.
 */
static __always_inline __u16 sarena_eth_proto(struct __sk_buff *skb) {
  if (skb->vlan_present) return bpf_htons(ETH_P_8021Q);
  void *data, *data_end;
  if (sarena_linear_head(skb, ETH_HLEN, &data, &data_end) < 0) return 0;
  /* One 16-bit load (struct ethhdr is packed: its h_proto would be read byte by byte). */
  return *(__u16 *)(data + 12);
}

/*
 * Validates the IPv4 header after the Ethernet header and fills `info`. Returns SARENA_DROP_NONE
 * or the reason to drop:
 *   SARENA_DROP_TRUNCATED      frame shorter than eth + 20, than eth + IHL*4, than the IP total
 *                              length, or a TCP/UDP first fragment without room for its ports;
 *   SARENA_DROP_BAD_IP_HEADER  version != 4, IHL < 5, total length < IHL*4.
 * On success the Ethernet header and the fixed 20-byte IPv4 header are linear (direct packet
 * access), but the caller must re-derive its packet pointers (they may have been invalidated).
 * Ports are read at eth + IHL*4, i.e. after any IP options (RFC 791 section 3.1).
 */
static __always_inline enum sarena_drop_reason sarena_ipv4_parse(struct __sk_buff *skb,
                                                                  struct sarena_ipv4_info *info) {
  __u32 frame_len = skb->len;
  if (frame_len < ETH_HLEN + SARENA_IPV4_MIN_HLEN) return SARENA_DROP_TRUNCATED;
  void *data, *data_end;
  if (sarena_linear_head(skb, ETH_HLEN + SARENA_IPV4_MIN_HLEN, &data, &data_end) < 0)
    return SARENA_DROP_TRUNCATED;
  struct iphdr *iph = data + ETH_HLEN;

  if (iph->version != 4 || iph->ihl < 5) return SARENA_DROP_BAD_IP_HEADER;
  __u32 hlen = iph->ihl * 4;
  __u32 ip_len = frame_len - ETH_HLEN; /* bytes after the Ethernet header, incl. any padding */
  if (ip_len < hlen) return SARENA_DROP_TRUNCATED;

  /*
   * The datagram ends at tot_len; bytes after it are Ethernet padding. tot_len 0 on a frame
   * longer than 64 KiB is IPv4 BIG TCP (the length lives in the skb), so trust the frame then.
   */
  __u32 tot_len = bpf_ntohs(iph->tot_len);
  if (tot_len == 0 && ip_len > SARENA_IPV4_MAX_TOT_LEN) {
    tot_len = ip_len;
  } else {
    if (tot_len < hlen) return SARENA_DROP_BAD_IP_HEADER;
    if (tot_len > ip_len) return SARENA_DROP_TRUNCATED;
  }

  info->saddr_be = iph->saddr;
  info->daddr_be = iph->daddr;
  info->proto = iph->protocol;
  info->hlen = hlen;
  info->sport_be = 0;
  info->dport_be = 0;

  int first_fragment = (bpf_ntohs(iph->frag_off) & SARENA_IP_OFFSET_MASK) == 0;
  if (first_fragment && (info->proto == IPPROTO_TCP || info->proto == IPPROTO_UDP)) {
    /* Source and destination port are the first 4 bytes of both TCP and UDP headers. */
    if (tot_len < hlen + 4) return SARENA_DROP_TRUNCATED;
    __be16 *ports = data + ETH_HLEN + hlen;
    if ((void *)(ports + 2) <= data_end) {
      /* Fast path: the L4 header is in the linear area (direct packet access). */
      info->sport_be = ports[0];
      info->dport_be = ports[1];
    } else {
      __u16 copy[2];
      if (bpf_skb_load_bytes(skb, ETH_HLEN + hlen, copy, sizeof(copy)) < 0)
        return SARENA_DROP_TRUNCATED;
      info->sport_be = copy[0];
      info->dport_be = copy[1];
    }
  }
  return SARENA_DROP_NONE;
}

/* The SARENA_MAP_HOST_FLOWS key of the flow `info`'s sender opened (its address and port). */
static __always_inline void sarena_flow_key_src(const struct sarena_ipv4_info *info,
                                                struct sarena_flow_key *key) {
  __builtin_memset(key, 0, sizeof(*key));
  key->addr_be = info->saddr_be;
  key->port_be = info->sport_be;
  key->proto = info->proto;
}

/* The SARENA_MAP_HOST_FLOWS key a reply to a flow opened by `info`'s receiver would match. */
static __always_inline void sarena_flow_key_dst(const struct sarena_ipv4_info *info,
                                                struct sarena_flow_key *key) {
  __builtin_memset(key, 0, sizeof(*key));
  key->addr_be = info->daddr_be;
  key->port_be = info->dport_be;
  key->proto = info->proto;
}

/* True when `addr_be` lies in the configured node pod CIDR (false when none is configured). */
static __always_inline int sarena_in_pod_cidr(const struct sarena_config *cfg, __u32 addr_be) {
  __u32 len = cfg->pod_cidr_len;
  if (len == 0 || len > 32) return 0;
  __u32 mask = bpf_htonl(0xffffffffu << (32 - len));
  return (addr_be & mask) == (cfg->pod_cidr_be & mask);
}

#endif /* SARENA_BPF_LIB_IPV4_H_ */
