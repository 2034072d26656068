// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * to_overlay: TCX egress of sarena_vxlan (a collect-metadata "external" VXLAN device), i.e. every
 * frame about to be encapsulated. Two kinds of frames get here:
 *   - frames from_container redirected here: they already carry the tunnel key it set (a TX
 *     metadata dst on the skb). bpf_skb_get_tunnel_key succeeds on them, and they pass untouched
 *     and uncounted (from_container counted them). This needs no mark or cb: a frame the host
 *     stack routed has a routing dst (or none), never tunnel metadata, so the helper fails with
 *     -EINVAL. (Success is the test, not the reported remote: the helper reads remote_ipv4 from
 *     the key's *source* field, which is the peer on RX metadata but 0 on TX metadata.)
 *   - frames the HOST STACK routed onto sarena_vxlan (the node itself -> a remote pod, kube-proxy
 *     DNAT to a remote backend, forwarded replies): they get their key here.
 *
 *   overlay config absent (flags 0)                 -> TC_ACT_OK (fail open)
 *   tunnel key already set (from_container's)       -> TC_ACT_OK
 *   non-IPv4 (ARP, IPv6...)                         -> TC_ACT_OK (external VXLAN drops it: no key)
 *   malformed IPv4                                  -> drop (TRUNCATED / BAD_IP_HEADER)
 *   IPv4, inner dst in a tunnel-map CIDR            -> tunnel key (remote = the peer's underlay,
 *                                                      id = VNI, TTL 64, zero outer UDP checksum),
 *                                                      tx counted on the node counter, TC_ACT_OK
 *     ... whose underlay is not IPv4 / key refused  -> drop (TUNNEL_KEY_FAILED)
 *   IPv4, no tunnel-map entry                       -> drop (NO_TUNNEL_ENDPOINT): the VXLAN device
 *                                                      would drop it anyway, without a trace
 * The TTL is not touched: the host stack already forwarded (or originated) the packet.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/common.h"
#include "lib/ipv4.h"
#include "lib/maps.h"
#include "lib/overlay.h"

/* True when the skb already carries tunnel metadata (see the header). */
static __always_inline int sarena_has_tunnel_key(struct __sk_buff *skb) {
  struct bpf_tunnel_key key = {};
  return bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) == 0;
}

SEC("tc")
int to_overlay(struct __sk_buff *skb) {
  const struct sarena_overlay_config *cfg = sarena_overlay_config_get();
  if (!cfg) return TC_ACT_OK;
  if (sarena_has_tunnel_key(skb)) return TC_ACT_OK;
  if (sarena_eth_proto(skb) != bpf_htons(ETH_P_IP)) return TC_ACT_OK;

  struct sarena_ipv4_info ip;
  enum sarena_drop_reason reason = sarena_ipv4_parse(skb, &ip);
  if (reason != SARENA_DROP_NONE) return sarena_drop(skb, reason);

  const struct sarena_tunnel *tun = sarena_tunnel_lookup_ipv4(ip.daddr_be);
  if (!tun) return sarena_drop(skb, SARENA_DROP_NO_TUNNEL_ENDPOINT);
  if (sarena_set_tunnel_key(skb, tun, cfg) < 0)
    return sarena_drop(skb, SARENA_DROP_TUNNEL_KEY_FAILED);
  sarena_count_node_tx(tun->node_id, skb->len);
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
