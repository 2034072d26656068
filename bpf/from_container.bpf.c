// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * from_container: TCX ingress of a pod's host-side veth (lxc...), i.e. every frame the pod sends.
 *
 *   ARP request for the gateway from this pod  -> answered in place, sent back to the pod
 *   other ARP, IPv6, VLAN-tagged, other types  -> TC_ACT_OK (the kernel's business)
 *   malformed IPv4                             -> drop (TRUNCATED / BAD_IP_HEADER), counted
 *   IPv4 whose source is not this pod's IP     -> drop (SPOOFED_SOURCE), counted
 *   IPv4 to a local pod, not a host-flow reply -> local_delivery (redirect_peer when enabled)
 *   IPv4 to a remote pod: overlay config set,  -> sent to the peer node (lib/overlay.h): VXLAN
 *     the tunnel map has the destination (a      via sarena_vxlan (tunnel mode) or bpf_fib_lookup
 *     pod CIDR, or a tunnel peer's node address   + redirect on the uplink (native mode); TTL - 1,
 *     with SARENA_TUN_F_NODE), not a host-flow    tx counted on the peer's node counter, no host
 *     reply                                       flow recorded. Mode off in the config, or a FIB
 *                                                 result the stack handles better -> TC_ACT_OK
 *   IPv4 to anything else                      -> TC_ACT_OK: the host stack routes it (Service
 *                                                 DNAT, masquerade, off-node), the pod's flow is
 *                                                 recorded as a host flow first. The packet
 *                                                 enters the host on this lxc device, and the
 *                                                 endpoint route (pod IP/32 dev lxc, installed by
 *                                                 sarenad) makes strict rp_filter accept it.
 *
 * Host flows (SARENA_MAP_HOST_FLOWS, see sarena/abi.h): a pod-to-pod packet whose destination
 * (address, port) opened a flow through the host stack is the reply of e.g. a ClusterIP
 * connection kube-proxy DNAT'ed to this pod; it goes back through the host stack (TC_ACT_OK) so
 * conntrack reverses the NAT, instead of reaching the client from the backend's address. A TCP
 * SYN a pod sends straight to another pod, local or remote, clears the record of its source port
 * (port reuse). Between two local pods both steps are skipped for a pod that never opened a
 * host flow (SARENA_MAP_FLOW_OPENERS): the reply check looks at the destination's mark, the
 * port-reuse step at the source's (records of an unmarked pod are never consulted locally).
 *
 * Events (docs/monitor.md): every drop is reported by the drop helper (lib/common.h); a packet
 * of a traced endpoint (SARENA_EP_F_TRACE in its entry) that passed anti-spoofing is reported as
 * SARENA_TRACE_FROM_ENDPOINT — one test of the source entry's flags when tracing is off.
 *
 * Without a node config (sarenad has not written SARENA_MAP_CONFIG yet) the gateway is unknown:
 * ARP is left to the kernel and redirect_peer is off. Nothing is dropped for lack of config.
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
#include "lib/overlay.h"

/*
 * The TCP flags byte (CWR..FIN, RFC 9293 section 3.1) of `ip`'s segment, 0 when unreadable (not
 * TCP, a non-first fragment, truncated). Direct packet access when the header is linear.
 */
static __always_inline __u8 sarena_tcp_flags(struct __sk_buff *skb,
                                             const struct sarena_ipv4_info *ip) {
  if (ip->proto != IPPROTO_TCP || (ip->sport_be == 0 && ip->dport_be == 0)) return 0;
  __u32 off = ETH_HLEN + ip->hlen + 13;
  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  if (off < ETH_HLEN + 60 + 13 && data + off + 1 <= data_end) {
    __u8 *flags = data + off;
    if ((void *)(flags + 1) <= data_end) return *flags;
  }
  __u8 flags = 0;
  if (bpf_skb_load_bytes(skb, off, &flags, 1) < 0) return 0;
  return flags;
}

static __always_inline int sarena_is_tcp_syn(__u8 flags) {
  return (flags & (SARENA_TCP_SYN | SARENA_TCP_ACK)) == SARENA_TCP_SYN;
}

/*
 * Records the flow `ip` opens from a local pod toward a non-endpoint address (see the header).
 * A flow is opened by a TCP SYN without ACK, or by any UDP/other packet; TCP segments of
 * connections the pod accepted (e.g. a reply to a kubelet probe from the node) are not flows the
 * pod opened and are not recorded. A lookup hit refreshes the LRU entry.
 */
static __always_inline void sarena_note_host_flow(struct __sk_buff *skb,
                                                  const struct sarena_endpoint *src,
                                                  const struct sarena_ipv4_info *ip) {
  struct sarena_flow_key key;
  sarena_flow_key_src(ip, &key);
  if (bpf_map_lookup_elem(&sarena_flows, &key)) return;
  if (ip->proto == IPPROTO_TCP && !sarena_is_tcp_syn(sarena_tcp_flags(skb, ip))) return;
  /* The opener mark goes first: a reply can only follow this packet, so it sees the mark. */
  __u32 idx = src->endpoint_id;
  __u32 *opener = bpf_map_lookup_elem(&sarena_flow_eps, &idx);
  if (opener && *opener == 0) *opener = 1;
  __u64 now = bpf_ktime_get_ns();
  bpf_map_update_elem(&sarena_flows, &key, &now, BPF_ANY);
}

/* True unless `ep` is known never to have opened a host flow (SARENA_MAP_FLOW_OPENERS). */
static __always_inline int sarena_may_have_host_flows(const struct sarena_endpoint *ep) {
  __u32 idx = ep->endpoint_id;
  const __u32 *opener = bpf_map_lookup_elem(&sarena_flow_eps, &idx);
  return !opener || *opener != 0;
}

/*
 * Called for a packet the pod sends DIRECTLY to another pod (local or remote). A TCP SYN opens
 * a direct connection from its source port: a host flow recorded for the port belongs to an
 * earlier connection (the kernel reuses a local port for another destination once the 4-tuple
 * differs). Forget it, or this connection's replies would cross the host and meet the old
 * connection's conntrack entry (un-DNAT to a ClusterIP).
 */
static __always_inline void sarena_forget_reused_port(struct __sk_buff *skb,
                                                      const struct sarena_ipv4_info *ip) {
  if (ip->proto != IPPROTO_TCP || !sarena_is_tcp_syn(sarena_tcp_flags(skb, ip))) return;
  struct sarena_flow_key key;
  sarena_flow_key_src(ip, &key);
  bpf_map_delete_elem(&sarena_flows, &key);
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
  sarena_trace(skb, src, SARENA_TRACE_FROM_ENDPOINT);

  const struct sarena_endpoint *dst = sarena_lookup_ipv4(ip.daddr_be);
  if (dst) {
    /* Host-flow records are keyed by the pod that opened them: for a pod pair that never did,
     * there is nothing to forget and no reply to recognise (one array read each). Only a TCP
     * SYN forgets a record, so other protocols skip the sender's mark. */
    if (ip.proto == IPPROTO_TCP && sarena_may_have_host_flows(src))
      sarena_forget_reused_port(skb, &ip);
    if (sarena_may_have_host_flows(dst) && sarena_is_host_flow_reply(&ip)) return TC_ACT_OK;
    const struct sarena_config *cfg = sarena_config_get();
    return sarena_local_delivery(skb, dst, cfg ? cfg->flags : 0, /*allow_peer=*/1);
  }
  /* Not a local endpoint: a remote pod (cluster mode) goes straight to its node. */
  const struct sarena_overlay_config *ovl = sarena_overlay_config_get();
  if (ovl) {
    const struct sarena_tunnel *tun = sarena_tunnel_lookup_ipv4(ip.daddr_be);
    if (tun) {
      /* Direct too: its replies come back through from_overlay / from_netdev, which check
       * the same host-flow records. */
      sarena_forget_reused_port(skb, &ip);
      if (sarena_is_host_flow_reply(&ip)) return TC_ACT_OK;
      return sarena_forward_to_peer(skb, &ip, tun, ovl);
    }
  }
  sarena_note_host_flow(skb, src, &ip);
  return TC_ACT_OK;
}

SEC("tc")
int from_container(struct __sk_buff *skb) {
  __u16 proto = sarena_eth_proto(skb);
  if (proto == bpf_htons(ETH_P_IP)) return sarena_from_container_ipv4(skb);
  if (proto == bpf_htons(ETH_P_ARP)) return sarena_arp_answer_gateway(skb, sarena_config_get());
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
