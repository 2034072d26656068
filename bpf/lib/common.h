/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Small helpers shared by every sarena program: config access, counters, endpoint lookup, the
 * drop helper and the monitor's events. */
#ifndef SARENA_BPF_LIB_COMMON_H_
#define SARENA_BPF_LIB_COMMON_H_

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
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

/*
 * Endpoint for an IPv4 address (network byte order), or NULL. The endpoint slot of the address
 * (SARENA_MAP_ENDPOINT_SLOTS, one inlined array access) answers when it holds this address;
 * otherwise the endpoint hash does (the authority, see sarena/abi.h).
 */
static __always_inline const struct sarena_endpoint *sarena_lookup_ipv4(__u32 addr_be) {
  __u32 idx = bpf_ntohl(addr_be) & (SARENA_ENDPOINT_SLOTS - 1);
  const struct sarena_endpoint_slot *slot = bpf_map_lookup_elem(&sarena_lxc4, &idx);
  if (slot && slot->addr_be == addr_be && addr_be != 0) return &slot->ep;
  struct sarena_endpoint_key key = {};
  __builtin_memcpy(key.addr, &addr_be, sizeof(addr_be));
  key.family = SARENA_FAMILY_IPV4;
  return bpf_map_lookup_elem(&sarena_lxc, &key);
}

/*
 * Token bucket of event type `type` on this CPU (see sarena/abi.h, "Datapath events"): true when
 * an event may be written now (one token taken), false when it is suppressed (counted).
 */
#define SARENA_NANO 1000000000ull
#define SARENA_EVENTS_REFILL_CAP_NS (SARENA_EVENTS_BURST * SARENA_NANO / SARENA_EVENTS_RATE)
static __always_inline int sarena_event_admit(struct sarena_event_limit *lim, __u64 now) {
  __u64 elapsed = now - lim->last_ns;
  lim->last_ns = now;
  /* A bucket refills completely in REFILL_CAP ns; capping first keeps the product in range. */
  if (elapsed > SARENA_EVENTS_REFILL_CAP_NS) elapsed = SARENA_EVENTS_REFILL_CAP_NS;
  __u64 tokens = lim->tokens + elapsed * SARENA_EVENTS_RATE;
  if (tokens > SARENA_EVENTS_BURST * SARENA_NANO) tokens = SARENA_EVENTS_BURST * SARENA_NANO;
  if (tokens < SARENA_NANO) {
    lim->tokens = tokens;
    lim->suppressed++;
    return 0;
  }
  lim->tokens = tokens - SARENA_NANO;
  return 1;
}

/*
 * The local endpoint a dropped packet belongs to (see struct sarena_event): its sender when the
 * source address is an endpoint whose device is the ingress device, else its destination.
 */
static __always_inline __u32 sarena_event_endpoint(struct __sk_buff *skb, __u32 saddr_be,
                                                   __u32 daddr_be) {
  const struct sarena_endpoint *ep = sarena_lookup_ipv4(saddr_be);
  if (ep && ep->ifindex == skb->ingress_ifindex) return ep->endpoint_id;
  ep = sarena_lookup_ipv4(daddr_be);
  return ep ? ep->endpoint_id : SARENA_EVENT_NO_ENDPOINT;
}

/*
 * Writes one struct sarena_event for `skb` into SARENA_MAP_EVENTS, rate-limited per CPU and type.
 * `endpoint_id` SARENA_EVENT_NO_ENDPOINT asks for the drop attribution (sarena_event_endpoint).
 * The 5-tuple is read with bpf_skb_load_bytes (the packet may be malformed: best effort).
 * A BPF-to-BPF call (noinline), so the many drop sites share one copy; returns 0.
 */
static inline __attribute__((noinline)) int sarena_emit_event(struct __sk_buff *skb, __u32 type,
                                                               __u32 reason, __u32 ifindex,
                                                               __u32 endpoint_id) {
  __u32 idx = type;
  struct sarena_event_limit *lim = bpf_map_lookup_elem(&sarena_evlim, &idx);
  if (!lim) return 0;
  __u64 now = bpf_ktime_get_ns();
  if (!sarena_event_admit(lim, now)) return 0;
  struct sarena_event *ev = bpf_ringbuf_reserve(&sarena_events, sizeof(*ev), 0);
  if (!ev) {
    lim->lost++;
    return 0;
  }
  lim->emitted++;
  __builtin_memset(ev, 0, sizeof(*ev));
  ev->ts_ns = now;
  ev->type = type;
  ev->reason = reason;
  ev->ifindex = ifindex;
  ev->endpoint_id = endpoint_id;
  ev->len = skb->len;
  ev->cpu = bpf_get_smp_processor_id();

  __u16 eth_proto = 0;
  struct iphdr iph;
  if (bpf_skb_load_bytes(skb, 12, &eth_proto, sizeof(eth_proto)) == 0 &&
      eth_proto == bpf_htons(ETH_P_IP) &&
      bpf_skb_load_bytes(skb, ETH_HLEN, &iph, sizeof(iph)) == 0 && iph.version == 4) {
    ev->family = SARENA_FAMILY_IPV4;
    ev->proto = iph.protocol;
    __builtin_memcpy(ev->src, &iph.saddr, 4);
    __builtin_memcpy(ev->dst, &iph.daddr, 4);
    __u32 l4 = ETH_HLEN + iph.ihl * 4;
    int first_fragment = (bpf_ntohs(iph.frag_off) & 0x1fff) == 0;
    if (iph.ihl >= 5 && first_fragment) {
      if (iph.protocol == IPPROTO_TCP || iph.protocol == IPPROTO_UDP) {
        __u16 ports[2];
        if (bpf_skb_load_bytes(skb, l4, ports, sizeof(ports)) == 0) {
          ev->sport = bpf_ntohs(ports[0]);
          ev->dport = bpf_ntohs(ports[1]);
        }
      } else if (iph.protocol == IPPROTO_ICMP) {
        __u8 type_code[2];
        if (bpf_skb_load_bytes(skb, l4, type_code, sizeof(type_code)) == 0) {
          ev->sport = type_code[0];
          ev->dport = type_code[1];
        }
      }
    }
    if (endpoint_id == SARENA_EVENT_NO_ENDPOINT)
      ev->endpoint_id = sarena_event_endpoint(skb, iph.saddr, iph.daddr);
  }
  bpf_ringbuf_submit(ev, 0);
  return 0;
}

/*
 * THE drop accounting: adds the packet to the drop counter of `reason` and reports it as a
 * SARENA_EVENT_DROP (rate-limited). Every drop goes through here (sarena_drop,
 * sarena_redirect_verdict), so every drop site is seen by `sarena monitor`.
 */
static __always_inline void sarena_count_drop(struct __sk_buff *skb,
                                              enum sarena_drop_reason reason) {
  __u32 idx = reason;
  struct sarena_drop_counter *c = bpf_map_lookup_elem(&sarena_drops, &idx);
  if (c) {
    c->packets++;
    c->bytes += skb->len;
  }
  sarena_emit_event(skb, SARENA_EVENT_DROP, reason, skb->ifindex, SARENA_EVENT_NO_ENDPOINT);
}

/* Counts, reports and drops: `return sarena_drop(skb, SARENA_DROP_...);` */
static __always_inline int sarena_drop(struct __sk_buff *skb, enum sarena_drop_reason reason) {
  sarena_count_drop(skb, reason);
  return TC_ACT_SHOT;
}

/*
 * Reports a packet of endpoint `ep` as a SARENA_EVENT_TRACE at `point` (SARENA_TRACE_*) when the
 * endpoint is traced. Off (the usual case) it costs one test of a flags word the caller has
 * already loaded with the endpoint.
 */
static __always_inline void sarena_trace(struct __sk_buff *skb, const struct sarena_endpoint *ep,
                                         __u32 point) {
  if (ep->flags & SARENA_EP_F_TRACE)
    sarena_emit_event(skb, SARENA_EVENT_TRACE, point, ep->ifindex, ep->endpoint_id);
}

/*
 * Redirect helper result -> verdict, counting refusals. bpf_redirect*() return TC_ACT_REDIRECT,
 * or TC_ACT_SHOT when the flags are invalid (the ifindex itself is resolved after the program
 * returns; a vanished device is dropped by the kernel later).
 */
static __always_inline int sarena_redirect_verdict(struct __sk_buff *skb, long ret) {
  if (ret == TC_ACT_SHOT) sarena_count_drop(skb, SARENA_DROP_REDIRECT_FAILED);
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

/*
 * Writes the 12 address bytes of an Ethernet header at `hdr` (destination, then source) in four
 * stores (32 + 16 bits per MAC) instead of 24 byte moves: struct ethhdr and the map value's MAC
 * arrays are byte arrays, so a __builtin_memcpy of 6 bytes compiles to byte loads and stores.
 * The JIT'ed loads and stores may be unaligned (x86 allows it; the verifier only refuses
 * unaligned packet/map access under BPF_F_STRICT_ALIGNMENT, which sarena never sets).
 */
static __always_inline void sarena_mac_store2(__u8 *hdr, const __u8 *dst, const __u8 *src) {
  __u32 d0 = *(const __u32 *)dst;
  __u16 d1 = *(const __u16 *)(dst + 4);
  __u32 s0 = *(const __u32 *)src;
  __u16 s1 = *(const __u16 *)(src + 4);
  *(__u32 *)hdr = d0;
  *(__u16 *)(hdr + 4) = d1;
  *(__u32 *)(hdr + 6) = s0;
  *(__u16 *)(hdr + 10) = s1;
}

#endif /* SARENA_BPF_LIB_COMMON_H_ */
