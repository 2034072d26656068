/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Small helpers shared by every sarena program: config access, counters, endpoint lookup. */
#ifndef SARENA_BPF_LIB_COMMON_H_
#define SARENA_BPF_LIB_COMMON_H_

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sarena/abi.h"
#include "lib/maps.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SARENA_ETH_ALEN 6

/*
 * The node configuration, or NULL when sarenad has not written it yet. An ARRAY entry always
 * exists (zero-filled), so "written" is defined as net_ifindex != 0 (see sarena/abi.h).
 */
static __always_inline const struct sarena_config *sarena_config_get(void) {
  __u32 zero = 0;
  const struct sarena_config *cfg = bpf_map_lookup_elem(&sarena_cfg, &zero);
  if (!cfg || cfg->net_ifindex == 0) return NULL;
  return cfg;
}

/* Endpoint for an IPv4 address (network byte order), or NULL. */
static __always_inline const struct sarena_endpoint *sarena_lookup_ipv4(__u32 addr_be) {
  struct sarena_endpoint_key key = {};
  __builtin_memcpy(key.addr, &addr_be, sizeof(addr_be));
  key.family = SARENA_FAMILY_IPV4;
  return bpf_map_lookup_elem(&sarena_lxc, &key);
}

/* Adds one packet of `bytes` to the drop counter of `reason`. */
static __always_inline void sarena_count_drop(enum sarena_drop_reason reason, __u32 bytes) {
  __u32 idx = reason;
  struct sarena_drop_counter *c = bpf_map_lookup_elem(&sarena_drops, &idx);
  if (c) {
    c->packets++;
    c->bytes += bytes;
  }
}

/* Counts and drops: `return sarena_drop(skb, SARENA_DROP_...);` */
static __always_inline int sarena_drop(struct __sk_buff *skb, enum sarena_drop_reason reason) {
  sarena_count_drop(reason, skb->len);
  return TC_ACT_SHOT;
}

/*
 * Redirect helper result -> verdict, counting refusals. bpf_redirect*() return TC_ACT_REDIRECT,
 * or TC_ACT_SHOT when the flags are invalid (the ifindex itself is resolved after the program
 * returns; a vanished device is dropped by the kernel later).
 */
static __always_inline int sarena_redirect_verdict(struct __sk_buff *skb, long ret) {
  if (ret == TC_ACT_SHOT) sarena_count_drop(SARENA_DROP_REDIRECT_FAILED, skb->len);
  return (int)ret;
}

/* Per-endpoint counters (per-CPU slot, so plain increments are race-free). */
static __always_inline struct sarena_ep_counters *sarena_ep_counters_get(
    const struct sarena_endpoint *ep) {
  __u32 idx = ep->endpoint_id;
  return bpf_map_lookup_elem(&sarena_ep_ctr, &idx); /* NULL when >= SARENA_MAX_ENDPOINTS */
}

static __always_inline void sarena_count_rx(const struct sarena_endpoint *ep, __u32 bytes) {
  struct sarena_ep_counters *c = sarena_ep_counters_get(ep);
  if (c) {
    c->rx_packets++;
    c->rx_bytes += bytes;
  }
}

static __always_inline void sarena_count_tx(const struct sarena_endpoint *ep, __u32 bytes) {
  struct sarena_ep_counters *c = sarena_ep_counters_get(ep);
  if (c) {
    c->tx_packets++;
    c->tx_bytes += bytes;
  }
}

/* Copies a 6-byte MAC (wire order). */
static __always_inline void sarena_mac_copy(__u8 *dst, const __u8 *src) {
  __builtin_memcpy(dst, src, SARENA_ETH_ALEN);
}

#endif /* SARENA_BPF_LIB_COMMON_H_ */
