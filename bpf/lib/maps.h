/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps every sarena BPF object shares. Each .bpf.c that includes this file carries its own
 * definition of every map; because all of them are pinned by name (LIBBPF_PIN_BY_NAME), the first
 * object loaded with bpf_object_open_opts.pin_root_path = <bpffs dir> creates and pins them as
 * <dir>/<name>, and every later object (and every later daemon run) reuses the pinned maps.
 * libbpf refuses to reuse a pin whose type, key/value size, max_entries or flags differ.
 *
 * The C identifiers ARE the pinned names; they must equal the SARENA_MAP_* strings in
 * sarena/abi.h (checked by the _Static_asserts at the end of this file).
 */
#ifndef SARENA_BPF_LIB_MAPS_H_
#define SARENA_BPF_LIB_MAPS_H_

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"

/* SARENA_MAP_ENDPOINTS: pod address -> where to deliver it. Written only by sarenad. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SARENA_MAX_ENDPOINTS);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct sarena_endpoint_key);
  __type(value, struct sarena_endpoint);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_lxc SEC(".maps");

/* SARENA_MAP_CONFIG: the node configuration at key 0. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sarena_config);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_cfg SEC(".maps");

/* SARENA_MAP_EP_COUNTERS: per-endpoint, per-CPU packet/byte counters, index = endpoint_id. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SARENA_MAX_ENDPOINTS);
  __type(key, __u32);
  __type(value, struct sarena_ep_counters);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_ep_ctr SEC(".maps");

/* SARENA_MAP_DROPS: per-CPU drop counters, index = enum sarena_drop_reason. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SARENA_DROP_REASON_MAX);
  __type(key, __u32);
  __type(value, struct sarena_drop_counter);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_drops SEC(".maps");

/* SARENA_MAP_HOST_FLOWS: reply 5-tuples of flows that reached a pod through the host stack. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, SARENA_MAX_HOST_FLOWS);
  __type(key, struct sarena_flow_key);
  __type(value, __u64);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_flows SEC(".maps");

/* SARENA_MAP_TUNNELS: remote pod CIDR -> the peer node owning it (longest prefix match). Keys
 * carry the family (see struct sarena_tunnel_key): lookups use prefixlen 32 + 128. */
struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, SARENA_MAX_TUNNELS);
  __uint(map_flags, BPF_F_NO_PREALLOC); /* required by LPM_TRIE */
  __type(key, struct sarena_tunnel_key);
  __type(value, struct sarena_tunnel);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_tun SEC(".maps");

/* SARENA_MAP_PEERS: underlay address of a member node -> its node id. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SARENA_MAX_PEERS);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct sarena_peer_key);
  __type(value, struct sarena_peer);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_peers SEC(".maps");

/* SARENA_MAP_OVERLAY_CONFIG: the cluster datapath config at key 0 (flags 0 = one-node mode). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sarena_overlay_config);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_ovl SEC(".maps");

/* SARENA_MAP_NODE_COUNTERS: per-peer-node, per-CPU counters, index = node_id. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SARENA_MAX_PEERS);
  __type(key, __u32);
  __type(value, struct sarena_node_counters);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_node_ctr SEC(".maps");

/* SARENA_MAP_EVENTS: the monitor's ring buffer of struct sarena_event (see sarena/abi.h). */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, SARENA_EVENTS_RINGBUF_BYTES);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_events SEC(".maps");

/* SARENA_MAP_EVENT_LIMITS: per-CPU token bucket of each event type, index = SARENA_EVENT_*. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SARENA_EVENT_TYPE_MAX);
  __type(key, __u32);
  __type(value, struct sarena_event_limit);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_evlim SEC(".maps");

/* SARENA_MAP_ENDPOINT_SLOTS: IPv4 endpoint copies by the address's low bits (sarena/abi.h). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, SARENA_ENDPOINT_SLOTS);
  __type(key, __u32);
  __type(value, struct sarena_endpoint_slot);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_lxc4 SEC(".maps");

/* SARENA_MAP_FLOW_OPENERS: endpoint ids that have opened host flows (sarena/abi.h). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, SARENA_MAX_ENDPOINTS);
  __type(key, __u32);
  __type(value, __u32);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} sarena_flow_eps SEC(".maps");

/* The identifiers above must spell the ABI names (what LIBBPF_PIN_BY_NAME pins). */
#define SARENA_STR_(x) #x
#define SARENA_STR(x) SARENA_STR_(x)
#define SARENA_ASSERT_MAP_NAME(ident, abi_name)                                      \
  _Static_assert(__builtin_strcmp(SARENA_STR(ident), abi_name) == 0, \
                 "map identifier " SARENA_STR(ident) " != " abi_name)
SARENA_ASSERT_MAP_NAME(sarena_lxc, SARENA_MAP_ENDPOINTS);
SARENA_ASSERT_MAP_NAME(sarena_cfg, SARENA_MAP_CONFIG);
SARENA_ASSERT_MAP_NAME(sarena_ep_ctr, SARENA_MAP_EP_COUNTERS);
SARENA_ASSERT_MAP_NAME(sarena_drops, SARENA_MAP_DROPS);
SARENA_ASSERT_MAP_NAME(sarena_flows, SARENA_MAP_HOST_FLOWS);
SARENA_ASSERT_MAP_NAME(sarena_tun, SARENA_MAP_TUNNELS);
SARENA_ASSERT_MAP_NAME(sarena_peers, SARENA_MAP_PEERS);
SARENA_ASSERT_MAP_NAME(sarena_ovl, SARENA_MAP_OVERLAY_CONFIG);
SARENA_ASSERT_MAP_NAME(sarena_node_ctr, SARENA_MAP_NODE_COUNTERS);
SARENA_ASSERT_MAP_NAME(sarena_events, SARENA_MAP_EVENTS);
SARENA_ASSERT_MAP_NAME(sarena_evlim, SARENA_MAP_EVENT_LIMITS);
SARENA_ASSERT_MAP_NAME(sarena_lxc4, SARENA_MAP_ENDPOINT_SLOTS);
SARENA_ASSERT_MAP_NAME(sarena_flow_eps, SARENA_MAP_FLOW_OPENERS);

#endif /* SARENA_BPF_LIB_MAPS_H_ */
