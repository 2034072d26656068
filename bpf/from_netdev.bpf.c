// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * from_netdev: TCX ingress of the uplink (--uplink), for native routing: a peer node sends its
 * pods' packets to our pods as plain routed IPv4 on the underlay.
 *
 *   overlay config absent, or without            -> TC_ACT_OK (fail open)
 *     SARENA_OVL_F_NATIVE
 *   not addressed to this host at L2 (pkt_type   -> TC_ACT_OK (the kernel drops or bridges it)
 *     != PACKET_HOST), non-IPv4 (ARP...)
 *   malformed IPv4                               -> TC_ACT_OK: not ours to judge on the uplink
 *   IPv4 to a local endpoint, source inside a    -> local_delivery (bpf_redirect_peer when the
 *     remote pod CIDR (tunnel map hit), not a       node enables it), rx counted on the source
 *     host-flow reply                               CIDR's node counter
 *   everything else (NodePort, VXLAN UDP, the    -> TC_ACT_OK
 *     node's own traffic, pods reached from
 *     outside the cluster)
 *
 * The source test (a tunnel-map CIDR) keeps traffic from outside the cluster on the host stack
 * path (firewall, conntrack); it is not anti-spoofing: anything on the underlay can claim a
 * remote pod source, just as it could to the kernel's own forwarding. Malformed frames are left
 * to the kernel rather than counted as datapath drops, because most uplink traffic is not ours.
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

SEC("tc")
int from_netdev(struct __sk_buff *skb) {
  const struct sarena_overlay_config *cfg = sarena_overlay_config_get();
  if (!cfg || !(cfg->flags & SARENA_OVL_F_NATIVE)) return TC_ACT_OK;
  if (skb->pkt_type != PACKET_HOST) return TC_ACT_OK;
  if (sarena_eth_proto(skb) != bpf_htons(ETH_P_IP)) return TC_ACT_OK;

  struct sarena_ipv4_info ip;
  if (sarena_ipv4_parse(skb, &ip) != SARENA_DROP_NONE) return TC_ACT_OK;

  const struct sarena_endpoint *dst = sarena_lookup_ipv4(ip.daddr_be);
  if (!dst) return TC_ACT_OK;
  const struct sarena_tunnel *src = sarena_tunnel_lookup_ipv4(ip.saddr_be);
  if (!src) return TC_ACT_OK;
  if (sarena_is_host_flow_reply(&ip)) return TC_ACT_OK;

  __u32 node_id = src->node_id;
  __u32 len = skb->len;
  const struct sarena_config *node = sarena_config_get();
  int verdict = sarena_local_delivery(skb, dst, node ? node->flags : 0, /*allow_peer=*/1);
  if (verdict == TC_ACT_REDIRECT) sarena_count_node_rx(node_id, len);
  return verdict;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
