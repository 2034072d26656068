// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * from_container: TCX ingress of a pod's host-side veth (lxc...), i.e. every frame the pod sends.
 *
 *   ARP request for the gateway from this pod  -> answered in place, sent back to the pod
 *   other ARP, IPv6, VLAN-tagged, other types  -> TC_ACT_OK (the kernel's business)
 *   malformed IPv4                             -> drop (TRUNCATED / BAD_IP_HEADER), counted
 *   IPv4 whose source is not this pod's IP     -> drop (SPOOFED_SOURCE), counted
 *   IPv4 to a local pod, not a host-flow reply -> local_delivery (redirect_peer when enabled)
 *   IPv4 to anything else                      -> into the host stack through sarena_net ->
 *                                                 sarena_host, so that the packet enters the
 *                                                 host on the device the pod CIDR is routed
 *                                                 through and strict rp_filter accepts it.
 *
 * Host-flow replies: a flow whose forward direction reached this pod through the host stack
 * (e.g. a ClusterIP DNAT'ed by kube-proxy, recorded by from_host in SARENA_MAP_HOST_FLOWS) must
 * return through the host stack too, so conntrack can reverse the NAT; short-circuiting it to
 * the client pod would deliver a reply from the wrong address.
 *
 * Without a node config (sarenad has not written SARENA_MAP_CONFIG yet) nothing is known about
 * the host path or the gateway: such packets are passed to the kernel (TC_ACT_OK) rather than
 * dropped and are not counted in SARENA_MAP_DROPS (they are not drops). Delivery to known
 * endpoints works without config (redirect_peer is then off).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/arp.h"
#include "lib/common.h"
#include "lib/ipv4.h"
#include "lib/local_delivery.h"
#include "lib/maps.h"

/*
 * Hands the packet to the host stack via the sarena_net -> sarena_host veth pair: Ethernet dst =
 * sarena_host's MAC (so the kernel sees a PACKET_HOST frame), src = sarena_net's MAC, then
 * redirect to the egress of sarena_net; it is received on sarena_host. The TTL is left alone:
 * the kernel decrements it if it forwards the packet.
 */
static __always_inline int sarena_to_host(struct __sk_buff *skb, const struct sarena_config *cfg) {
  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > data_end) return sarena_drop(skb, SARENA_DROP_TRUNCATED);
  sarena_mac_copy(eth->h_dest, cfg->host_mac);
  sarena_mac_copy(eth->h_source, cfg->net_mac);
  return sarena_redirect_verdict(skb, bpf_redirect(cfg->net_ifindex, 0));
}

static __always_inline int sarena_from_container_ipv4(struct __sk_buff *skb) {
  struct sarena_ipv4_info ip;
  enum sarena_drop_reason reason = sarena_ipv4_parse(skb, &ip);
  if (reason != SARENA_DROP_NONE) return sarena_drop(skb, reason);

  /* Anti-spoofing: the source must be the endpoint that owns the veth the packet came in on. */
  const struct sarena_endpoint *src = sarena_lookup_ipv4(ip.saddr_be);
  if (!src || src->ifindex != skb->ingress_ifindex)
    return sarena_drop(skb, SARENA_DROP_SPOOFED_SOURCE);
  sarena_count_tx(src, skb->len);

  const struct sarena_config *cfg = sarena_config_get();
  const struct sarena_endpoint *dst = sarena_lookup_ipv4(ip.daddr_be);
  if (dst) {
    struct sarena_flow_key key;
    sarena_flow_key_of(&ip, &key);
    if (!bpf_map_lookup_elem(&sarena_flows, &key))
      return sarena_local_delivery(skb, dst, cfg ? cfg->flags : 0, /*allow_peer=*/1);
  }
  if (!cfg) return TC_ACT_OK;
  return sarena_to_host(skb, cfg);
}

SEC("tc")
int from_container(struct __sk_buff *skb) {
  __u16 proto = sarena_eth_proto(skb);
  if (proto == bpf_htons(ETH_P_IP)) return sarena_from_container_ipv4(skb);
  if (proto == bpf_htons(ETH_P_ARP)) return sarena_arp_answer_gateway(skb, sarena_config_get());
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
