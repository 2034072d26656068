/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Cluster datapath helpers (multi-node): overlay config, tunnel/peer map lookups, per-node
 * counters, and the two ways a pod packet leaves for a peer node:
 *
 *   tunnel (SARENA_MODE_TUNNEL): the tunnel key (remote = the peer's underlay IPv4, id = the
 *     cluster VNI, TTL 64, outer UDP checksum zero — BPF_F_ZERO_CSUM_TX, RFC 7348 section 5
 *     allows it for IPv4) is attached to the skb as a metadata dst, and the frame is redirected to
 *     the egress of sarena_vxlan (a collect-metadata "external" VXLAN device), which encapsulates
 *     it by that key;
 *   native (SARENA_MODE_NATIVE): bpf_fib_lookup of the inner destination through the uplink;
 *     SUCCESS -> MACs from the FIB result + bpf_redirect; NO_NEIGH -> bpf_redirect_neigh to the
 *     FIB's next hop (the kernel resolves the neighbour); BLACKHOLE / UNREACHABLE / PROHIBIT /
 *     NOT_FWDED (no unicast route) -> drop FIB_LOOKUP_FAILED; FWD_DISABLED, FRAG_NEEDED,
 *     UNSUPP_LWT and anything else -> TC_ACT_OK untouched, the host stack routes it (and sends
 *     the ICMP "fragmentation needed" a too-big packet deserves).
 *
 * Both forward the packet as a router: TTL <= 1 -> drop TTL_EXCEEDED, else TTL - 1 with an
 * incremental header checksum update (the helpers of local_delivery.h). The TTL is only touched
 * once the packet is certain to be redirected (so a TC_ACT_OK fallback is not decremented twice).
 * A packet sent is counted as tx on the peer's node counter (SARENA_MAP_NODE_COUNTERS).
 */
#ifndef SARENA_BPF_LIB_OVERLAY_H_
#define SARENA_BPF_LIB_OVERLAY_H_

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/common.h"
#include "lib/ipv4.h"
#include "lib/local_delivery.h"
#include "lib/maps.h"

#define SARENA_AF_INET 2           /* AF_INET for bpf_fib_lookup (linux/socket.h is libc-bound) */
#define SARENA_TUNNEL_TTL 64       /* outer IPv4 TTL of encapsulated packets */
#define SARENA_TUNNEL_LPM_BITS (32 + 128) /* prefixlen of a full-address tunnel-map lookup */

/* The cluster datapath config, or NULL in one-node mode (flags == 0, see sarena/abi.h). */
static __always_inline const struct sarena_overlay_config *sarena_overlay_config_get(void) {
  __u32 zero = 0;
  const struct sarena_overlay_config *cfg = bpf_map_lookup_elem(&sarena_ovl, &zero);
  if (!cfg || cfg->flags == 0) return NULL;
  return cfg;
}

/* The tunnel-map entry whose remote pod CIDR contains `addr_be` (IPv4, network order), or NULL. */
static __always_inline const struct sarena_tunnel *sarena_tunnel_lookup_ipv4(__u32 addr_be) {
  struct sarena_tunnel_key key = {};
  key.prefixlen = SARENA_TUNNEL_LPM_BITS;
  key.family = SARENA_FAMILY_IPV4;
  __builtin_memcpy(key.addr, &addr_be, sizeof(addr_be));
  return bpf_map_lookup_elem(&sarena_tun, &key);
}

/* The peer-map entry of underlay IPv4 `addr_be` (network order), or NULL. */
static __always_inline const struct sarena_peer *sarena_peer_lookup_ipv4(__u32 addr_be) {
  struct sarena_peer_key key = {};
  __builtin_memcpy(key.addr, &addr_be, sizeof(addr_be));
  key.family = SARENA_FAMILY_IPV4;
  return bpf_map_lookup_elem(&sarena_peers, &key);
}

/* Node counters of `node_id` (per-CPU slot), NULL when >= SARENA_MAX_PEERS. */
static __always_inline struct sarena_node_counters *sarena_node_counters_get(__u32 node_id) {
  return bpf_map_lookup_elem(&sarena_node_ctr, &node_id);
}

static __always_inline void sarena_count_node_tx(__u32 node_id, __u32 bytes) {
  struct sarena_node_counters *c = sarena_node_counters_get(node_id);
  if (c) {
    c->tx_packets++;
    c->tx_bytes += bytes;
  }
}

static __always_inline void sarena_count_node_rx(__u32 node_id, __u32 bytes) {
  struct sarena_node_counters *c = sarena_node_counters_get(node_id);
  if (c) {
    c->rx_packets++;
    c->rx_bytes += bytes;
  }
}

/* The IPv4 underlay address of a tunnel entry (network order), 0 when it is not IPv4. */
static __always_inline __u32 sarena_tunnel_underlay_ipv4(const struct sarena_tunnel *tun) {
  if (tun->underlay_family != SARENA_FAMILY_IPV4) return 0;
  __u32 be;
  __builtin_memcpy(&be, tun->underlay, sizeof(be));
  return be;
}

/*
 * Attaches the encapsulation key toward `tun` (remote = its IPv4 underlay, id = cfg->vni, TTL 64,
 * outer UDP checksum zero). Returns 0, or -1 when the underlay is not IPv4 or the helper refused.
 * Note: struct bpf_tunnel_key carries remote_ipv4 in HOST byte order (net/core/filter.c).
 */
static __always_inline int sarena_set_tunnel_key(struct __sk_buff *skb,
                                                 const struct sarena_tunnel *tun,
                                                 const struct sarena_overlay_config *cfg) {
  __u32 underlay_be = sarena_tunnel_underlay_ipv4(tun);
  if (underlay_be == 0) return -1;
  struct bpf_tunnel_key key = {};
  key.remote_ipv4 = bpf_ntohl(underlay_be);
  key.tunnel_id = cfg->vni;
  key.tunnel_ttl = SARENA_TUNNEL_TTL;
  if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), BPF_F_ZERO_CSUM_TX) < 0) return -1;
  return 0;
}

/*
 * TTL check on the (linear, see sarena_ipv4_parse) IPv4 header: SARENA_DROP_NONE when the packet
 * may be forwarded, TTL_EXCEEDED / TRUNCATED otherwise. Does not modify the packet.
 */
static __always_inline enum sarena_drop_reason sarena_forward_check(struct __sk_buff *skb) {
  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct iphdr *iph = data + ETH_HLEN;
  if ((void *)(iph + 1) > data_end) return SARENA_DROP_TRUNCATED;
  if (iph->ttl <= 1) return SARENA_DROP_TTL_EXCEEDED;
  return SARENA_DROP_NONE;
}

/*
 * Rewrites the (linear) Ethernet header to dst/src and decrements the TTL (checked > 1 by
 * sarena_forward_check). Returns -1 when the headers are not readable any more.
 */
static __always_inline int sarena_forward_rewrite(struct __sk_buff *skb, const __u8 *dst_mac,
                                                  const __u8 *src_mac) {
  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  struct iphdr *iph = data + ETH_HLEN;
  if ((void *)(iph + 1) > data_end) return -1;
  if (iph->ttl <= 1) return -1;
  sarena_ipv4_dec_ttl(iph);
  if (dst_mac) sarena_mac_copy(eth->h_dest, dst_mac);
  if (src_mac) sarena_mac_copy(eth->h_source, src_mac);
  return 0;
}

/*
 * Tunnel mode: encapsulation key + inner MACs (both the local sarena_vxlan MAC: the receiver
 * rewrites them) + TTL - 1, then bpf_redirect to the egress of sarena_vxlan. TC_ACT_OK (untouched)
 * when the config has no VXLAN device.
 */
static __always_inline int sarena_forward_tunnel(struct __sk_buff *skb,
                                                 const struct sarena_tunnel *tun,
                                                 const struct sarena_overlay_config *cfg) {
  __u32 vxlan_ifindex = cfg->vxlan_ifindex;
  if (!(cfg->flags & SARENA_OVL_F_TUNNEL) || vxlan_ifindex == 0) return TC_ACT_OK;
  enum sarena_drop_reason reason = sarena_forward_check(skb);
  if (reason != SARENA_DROP_NONE) return sarena_drop(skb, reason);
  if (sarena_set_tunnel_key(skb, tun, cfg) < 0)
    return sarena_drop(skb, SARENA_DROP_TUNNEL_KEY_FAILED);
  __u8 mac[SARENA_ETH_ALEN];
  sarena_mac_copy(mac, cfg->vxlan_mac);
  if (sarena_forward_rewrite(skb, mac, mac) < 0) return sarena_drop(skb, SARENA_DROP_TRUNCATED);
  __u32 node_id = tun->node_id;
  __u32 len = skb->len;
  long ret = bpf_redirect(vxlan_ifindex, 0);
  if (ret == TC_ACT_REDIRECT) sarena_count_node_tx(node_id, len);
  return sarena_redirect_verdict(skb, ret);
}

/* Native mode (see the file header for the FIB result -> verdict table). */
static __always_inline int sarena_forward_native(struct __sk_buff *skb,
                                                 const struct sarena_ipv4_info *ip,
                                                 const struct sarena_tunnel *tun,
                                                 const struct sarena_overlay_config *cfg) {
  if (!(cfg->flags & SARENA_OVL_F_NATIVE) || cfg->uplink_ifindex == 0) return TC_ACT_OK;
  enum sarena_drop_reason reason = sarena_forward_check(skb);
  if (reason != SARENA_DROP_NONE) return sarena_drop(skb, reason);

  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct iphdr *iph = data + ETH_HLEN;
  if ((void *)(iph + 1) > data_end) return sarena_drop(skb, SARENA_DROP_TRUNCATED);

  struct bpf_fib_lookup fib = {};
  fib.family = SARENA_AF_INET;
  fib.ifindex = cfg->uplink_ifindex;
  fib.l4_protocol = ip->proto;
  fib.sport = ip->sport_be;
  fib.dport = ip->dport_be;
  /*
   * tot_len 0: the kernel then checks the skb itself against the egress device's MTU after a
   * successful lookup (is_skb_forwardable, which lets GSO packets through). A nonzero tot_len
   * would make every 64 KiB GSO packet a pod's TCP hands its veth FRAG_NEEDED, sending bulk
   * TCP through the host stack. Without a neighbour (NO_NEIGH) there is no MTU check; the pod
   * MTU (sarenad: the uplink's in native mode) keeps packets within it.
   */
  fib.tot_len = 0;
  fib.tos = iph->tos;
  fib.ipv4_src = ip->saddr_be;
  fib.ipv4_dst = ip->daddr_be;
  long rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);

  __u32 node_id = tun->node_id;
  __u32 len = skb->len;
  long ret;
  if (rc == BPF_FIB_LKUP_RET_SUCCESS) {
    if (sarena_forward_rewrite(skb, fib.dmac, fib.smac) < 0)
      return sarena_drop(skb, SARENA_DROP_TRUNCATED);
    ret = bpf_redirect(fib.ifindex, 0);
  } else if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
    if (sarena_forward_rewrite(skb, 0, 0) < 0) return sarena_drop(skb, SARENA_DROP_TRUNCATED);
    struct bpf_redir_neigh nh = {};
    nh.nh_family = SARENA_AF_INET;
    nh.ipv4_nh = fib.ipv4_dst; /* bpf_fib_lookup leaves the next hop here */
    ret = bpf_redirect_neigh(fib.ifindex, &nh, sizeof(nh), 0);
  } else if (rc == BPF_FIB_LKUP_RET_BLACKHOLE || rc == BPF_FIB_LKUP_RET_UNREACHABLE ||
             rc == BPF_FIB_LKUP_RET_PROHIBIT || rc == BPF_FIB_LKUP_RET_NOT_FWDED) {
    return sarena_drop(skb, SARENA_DROP_FIB_LOOKUP_FAILED);
  } else {
    return TC_ACT_OK;
  }
  if (ret == TC_ACT_REDIRECT) sarena_count_node_tx(node_id, len);
  return sarena_redirect_verdict(skb, ret);
}

/*
 * Sends a pod packet (already validated, destination not local) toward the peer node owning
 * `tun`'s CIDR, by the peer's mode. Unknown modes -> TC_ACT_OK.
 */
static __always_inline int sarena_forward_to_peer(struct __sk_buff *skb,
                                                  const struct sarena_ipv4_info *ip,
                                                  const struct sarena_tunnel *tun,
                                                  const struct sarena_overlay_config *cfg) {
  if (tun->mode == SARENA_MODE_TUNNEL) return sarena_forward_tunnel(skb, tun, cfg);
  if (tun->mode == SARENA_MODE_NATIVE) return sarena_forward_native(skb, ip, tun, cfg);
  return TC_ACT_OK;
}

/* True when the destination (address, port) of `ip` is a recorded host flow (see abi.h). */
static __always_inline int sarena_is_host_flow_reply(const struct sarena_ipv4_info *ip) {
  struct sarena_flow_key key;
  sarena_flow_key_dst(ip, &key);
  return bpf_map_lookup_elem(&sarena_flows, &key) != NULL;
}

#endif /* SARENA_BPF_LIB_OVERLAY_H_ */
