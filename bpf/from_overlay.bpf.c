// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * from_overlay: TCX ingress of sarena_vxlan (collect-metadata VXLAN), i.e. every decapsulated
 * frame, with the outer header's data as its tunnel key (bpf_skb_get_tunnel_key).
 *
 *   overlay config absent (flags 0)              -> TC_ACT_OK (fail open)
 *   no tunnel key on the skb (cannot happen for  -> drop (TUNNEL_KEY_FAILED)
 *     a frame the VXLAN device decapsulated)
 *   outer source not in the peer map             -> drop (UNKNOWN_PEER)
 *   VNI != the config's VNI                      -> drop (WRONG_VNI)
 *   non-IPv4 inner frame (ARP, IPv6...)          -> TC_ACT_OK
 *   malformed inner IPv4                         -> drop (TRUNCATED / BAD_IP_HEADER)
 *   inner source neither in the sending peer's   -> drop (OVERLAY_SOURCE_MISMATCH)
 *     pod CIDRs (tunnel map -> same node_id) nor
 *     the peer's underlay address
 *   accepted: rx counted on the peer's node counter, then
 *     inner dst a local endpoint, not a host-    -> local_delivery (bpf_redirect_peer when the
 *     flow reply                                    node enables it: it works from the TCX
 *                                                   ingress of any device into a veth peer)
 *     anything else                              -> TC_ACT_OK, a PACKET_OTHERHOST frame first
 *                                                   gets dst MAC = sarena_vxlan's MAC and type
 *                                                   PACKET_HOST: the host stack
 *                                                   takes it (eth_type_trans classified it by
 *                                                   the sender's inner MAC, PACKET_OTHERHOST,
 *                                                   which ip_rcv would discard)
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/common.h"
#include "lib/ipv4.h"
#include "lib/local_delivery.h"
#include "lib/maps.h"
#include "lib/overlay.h"

/*
 * Hands the frame to the host stack as addressed to sarena_vxlan itself. Only a unicast frame
 * classified PACKET_OTHERHOST (the sender's inner dst MAC is not ours) is rewritten; broadcast
 * and multicast keep their type.
 */
static __always_inline int sarena_to_host_stack(struct __sk_buff *skb,
                                                const struct sarena_overlay_config *cfg) {
  if (skb->pkt_type != PACKET_OTHERHOST) return TC_ACT_OK;
  if (sarena_ensure_linear(skb, ETH_HLEN) == 0) {
    void *data = (void *)(long)skb->data;
    void *data_end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) <= data_end) sarena_mac_copy(eth->h_dest, cfg->vxlan_mac);
  }
  bpf_skb_change_type(skb, PACKET_HOST);
  return TC_ACT_OK;
}

SEC("tc")
int from_overlay(struct __sk_buff *skb) {
  const struct sarena_overlay_config *cfg = sarena_overlay_config_get();
  if (!cfg) return TC_ACT_OK;

  struct bpf_tunnel_key key = {};
  if (bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) < 0)
    return sarena_drop(skb, SARENA_DROP_TUNNEL_KEY_FAILED);
  __u32 remote_be = bpf_htonl(key.remote_ipv4); /* the helper reports host byte order */
  const struct sarena_peer *peer = sarena_peer_lookup_ipv4(remote_be);
  if (!peer) return sarena_drop(skb, SARENA_DROP_UNKNOWN_PEER);
  if (key.tunnel_id != cfg->vni) return sarena_drop(skb, SARENA_DROP_WRONG_VNI);
  __u32 node_id = peer->node_id;

  if (sarena_eth_proto(skb) != bpf_htons(ETH_P_IP)) return TC_ACT_OK;
  struct sarena_ipv4_info ip;
  enum sarena_drop_reason reason = sarena_ipv4_parse(skb, &ip);
  if (reason != SARENA_DROP_NONE) return sarena_drop(skb, reason);

  if (ip.saddr_be != remote_be) {
    const struct sarena_tunnel *src = sarena_tunnel_lookup_ipv4(ip.saddr_be);
    if (!src || src->node_id != node_id)
      return sarena_drop(skb, SARENA_DROP_OVERLAY_SOURCE_MISMATCH);
  }
  sarena_count_node_rx(node_id, skb->len);

  const struct sarena_endpoint *dst = sarena_lookup_ipv4(ip.daddr_be);
  if (dst && !sarena_is_host_flow_reply(&ip)) {
    const struct sarena_config *node = sarena_config_get();
    return sarena_local_delivery(skb, dst, node ? node->flags : 0, /*allow_peer=*/1);
  }
  return sarena_to_host_stack(skb, cfg);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
