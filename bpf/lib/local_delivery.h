/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * local_delivery: hand an IPv4 packet straight to a pod on this node, as a router would:
 *   1. TTL <= 1 -> drop, counted as SARENA_DROP_TTL_EXCEEDED (no ICMP time-exceeded is sent);
 *   2. TTL - 1 with an incremental header checksum update (RFC 1624);
 *   3. Ethernet dst = the pod's MAC, src = the host-side veth MAC (the pod's gateway MAC, the
 *      same MAC the BPF ARP responder in from_container hands out for the gateway);
 *   4. redirect to the pod: bpf_redirect_peer (straight into the pod netns' ingress, skipping
 *      the backlog queue) when the caller runs at tc ingress and the node enables it, otherwise
 *      bpf_redirect to the egress of the host-side veth;
 *   5. a traced endpoint (SARENA_EP_F_TRACE) gets a SARENA_TRACE_TO_ENDPOINT event.
 */
#ifndef SARENA_BPF_LIB_LOCAL_DELIVERY_H_
#define SARENA_BPF_LIB_LOCAL_DELIVERY_H_

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/common.h"
#include "lib/csum.h"

/* Decrements the TTL of `iph` and patches its header checksum. Caller checked ttl > 1. */
static __always_inline void sarena_ipv4_dec_ttl(struct iphdr *iph) {
  /* TTL and protocol share the 16-bit word at offset 8 of the header (RFC 791 section 3.1). */
  __u16 *word = (__u16 *)&iph->ttl;
  __u16 old_word = *word;
  iph->ttl--;
  iph->check = sarena_csum_replace16(iph->check, old_word, *word);
}

/*
 * Delivers the IPv4 packet in `skb` to endpoint `ep`. `allow_peer` is true only when the caller
 * runs at tc/TCX ingress (bpf_redirect_peer is refused from egress); it takes effect only with
 * SARENA_CFG_F_REDIRECT_PEER in `cfg_flags`. Requires the Ethernet + 20-byte IPv4 header to be
 * linear (sarena_ipv4_parse ensures it). Returns the tc verdict.
 */
static __always_inline int sarena_local_delivery(struct __sk_buff *skb,
                                                 const struct sarena_endpoint *ep,
                                                 __u32 cfg_flags, int allow_peer) {
  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  struct iphdr *iph = data + ETH_HLEN;
  if ((void *)(iph + 1) > data_end) return sarena_drop(skb, SARENA_DROP_TRUNCATED);

  if (iph->ttl <= 1) return sarena_drop(skb, SARENA_DROP_TTL_EXCEEDED);
  sarena_ipv4_dec_ttl(iph);

  sarena_mac_store2(eth->h_dest, ep->pod_mac, ep->host_mac);

  __u32 ifindex = ep->ifindex;
  __u32 len = skb->len;
  long ret;
  if (allow_peer && (cfg_flags & SARENA_CFG_F_REDIRECT_PEER))
    ret = bpf_redirect_peer(ifindex, 0);
  else
    ret = bpf_redirect(ifindex, 0);
  if (ret == TC_ACT_REDIRECT) {
    sarena_count_rx(ep, len);
    sarena_trace(skb, ep, SARENA_TRACE_TO_ENDPOINT);
  }
  return sarena_redirect_verdict(skb, ret);
}

#endif /* SARENA_BPF_LIB_LOCAL_DELIVERY_H_ */
