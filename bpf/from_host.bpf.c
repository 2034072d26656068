// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * from_host: TCX egress of sarena_host, i.e. every packet the host stack routes toward the node
 * pod CIDR that no endpoint route (pod IP/32 dev lxc..., installed by sarenad per endpoint)
 * claims: addresses with no pod, and pods whose endpoint route was removed behind sarenad's back.
 *
 *   non-IPv4 (ARP, IPv6, VLAN-tagged...)         -> TC_ACT_OK
 *   malformed IPv4                               -> drop (TRUNCATED / BAD_IP_HEADER), counted
 *   IPv4 to a local endpoint                     -> local_delivery with bpf_redirect (this is an
 *                                                   egress hook: redirect_peer is refused here)
 *   IPv4 inside the node pod CIDR, no endpoint   -> drop (NO_ENDPOINT), counted: passing it on
 *                                                   would bounce it through sarena_net
 *   anything else                                -> TC_ACT_OK
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/common.h"
#include "lib/ipv4.h"
#include "lib/local_delivery.h"
#include "lib/maps.h"

static __always_inline int sarena_from_host_ipv4(struct __sk_buff *skb) {
  struct sarena_ipv4_info ip;
  enum sarena_drop_reason reason = sarena_ipv4_parse(skb, &ip);
  if (reason != SARENA_DROP_NONE) return sarena_drop(skb, reason);

  const struct sarena_endpoint *dst = sarena_lookup_ipv4(ip.daddr_be);
  if (dst) return sarena_local_delivery(skb, dst, 0, /*allow_peer=*/0);
  const struct sarena_config *cfg = sarena_config_get();
  if (cfg && sarena_in_pod_cidr(cfg, ip.daddr_be))
    return sarena_drop(skb, SARENA_DROP_NO_ENDPOINT);
  return TC_ACT_OK;
}

SEC("tc")
int from_host(struct __sk_buff *skb) {
  if (sarena_eth_proto(skb) == bpf_htons(ETH_P_IP)) return sarena_from_host_ipv4(skb);
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
