/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The ONE definition of everything the BPF datapath and user space (libsarena) share:
 * map names, map key/value layouts, flags, drop reasons and limits.
 * Included by bpf/<program>.bpf.c (clang -target bpf) and by C++ (libsarena/bpf, datapath, diag).
 *
 * Byte order: every field whose name ends in `_be` is in network byte order; everything else is
 * host byte order. MAC addresses are in wire order.
 */
#ifndef SARENA_ABI_H_
#define SARENA_ABI_H_

#include <linux/types.h>

/* ---- Map names (as seen by bpftool and as pinned under the bpffs directory). ---- */
#define SARENA_MAP_ENDPOINTS "sarena_lxc"      /* endpoint map: pod IP -> endpoint */
#define SARENA_MAP_CONFIG "sarena_cfg"         /* node config, one entry at key 0 */
#define SARENA_MAP_EP_COUNTERS "sarena_ep_ctr" /* per-endpoint per-CPU counters */
#define SARENA_MAP_DROPS "sarena_drops"        /* per-CPU drop counters by reason */
#define SARENA_MAP_HOST_FLOWS "sarena_flows"   /* pod-opened flows through the host stack */
#define SARENA_MAP_TUNNELS "sarena_tun"        /* LPM trie: remote pod CIDR -> peer node */
#define SARENA_MAP_PEERS "sarena_peers"        /* hash: peer underlay address -> node id */
#define SARENA_MAP_OVERLAY_CONFIG "sarena_ovl" /* cluster datapath config, one entry at key 0 */
#define SARENA_MAP_NODE_COUNTERS "sarena_node_ctr" /* per-peer-node per-CPU counters */
#define SARENA_MAP_EVENTS "sarena_events"      /* ring buffer of struct sarena_event (monitor) */
#define SARENA_MAP_EVENT_LIMITS "sarena_evlim" /* per-CPU event token buckets, by event type */
#define SARENA_MAP_ENDPOINT_SLOTS "sarena_lxc4" /* array: IPv4 endpoint copies, by address bits */
#define SARENA_MAP_FLOW_OPENERS "sarena_flow_eps" /* array: endpoint ids that opened host flows */

/* ---- Limits. ---- */
#define SARENA_MAX_ENDPOINTS 65536 /* entries of the endpoint map and of the counter array */
#define SARENA_MAX_HOST_FLOWS 65536
#define SARENA_MAX_TUNNELS 65536 /* remote pod CIDRs (entries of the tunnel map) */
#define SARENA_MAX_PEERS 16384   /* peer nodes (peer map); node ids are < SARENA_MAX_PEERS */

/* ---- Address families in sarena_endpoint_key.family. ---- */
#define SARENA_FAMILY_IPV4 1
#define SARENA_FAMILY_IPV6 2

/*
 * Endpoint map key: 16-byte address + family + cluster id (the Cilium-proven layout, room for
 * IPv6 and cluster mesh). IPv4 uses addr[0..3] in network byte order, addr[4..15] zero.
 */
struct sarena_endpoint_key {
  __u8 addr[16];    /* network byte order */
  __u8 family;      /* SARENA_FAMILY_* */
  __u8 pad0;        /* must be zero */
  __u16 cluster_id; /* 0 = this cluster */
};

/* Endpoint flags. */
#define SARENA_EP_F_HOST 0x1u  /* reserved: the entry describes the host itself */
#define SARENA_EP_F_TRACE 0x2u /* emit SARENA_EVENT_TRACE events for this endpoint (set and
                                * cleared by `sarena monitor --type trace`, see below) */

/* Endpoint map value: where and how to deliver a packet for the pod. */
struct sarena_endpoint {
  __u32 ifindex;     /* host-side veth (lxc...) ifindex in the node netns */
  __u8 pod_mac[6];   /* MAC of the pod's interface (CNI_IFNAME, e.g. eth0) */
  __u8 host_mac[6];  /* MAC of the host-side veth: the pod's gateway MAC */
  __u32 flags;       /* SARENA_EP_F_* */
  __u32 endpoint_id; /* index into SARENA_MAP_EP_COUNTERS, < SARENA_MAX_ENDPOINTS */
};

/*
 * Endpoint slots (SARENA_MAP_ENDPOINT_SLOTS, a BPF_MAP_TYPE_ARRAY of SARENA_ENDPOINT_SLOTS
 * entries): the per-packet fast path in front of the endpoint hash. The IPv4 endpoint A is copied
 * at index ntohl(A) & (SARENA_ENDPOINT_SLOTS - 1) (the low 16 bits: unique for every address of a
 * node pod CIDR up to /16), so the programs find it with one array access instead of hashing the
 * 20-byte key. A slot is valid when addr_be != 0 and equals the looked-up address; any other slot
 * (empty, or taken by another address with the same low bits) sends the lookup on to the hash, so
 * the hash stays the one authority and a slot is only ever a copy of its entry. Written only by
 * sarenad through EndpointMap (libsarena/datapath/maps.h): the slot is written after the hash
 * entry and cleared before it is deleted; a slot already holding another address is left alone;
 * at every start all slots are rebuilt from the hash (EndpointMap::ReconcileSlots).
 */
#define SARENA_ENDPOINT_SLOTS 65536u /* a power of 2 */
struct sarena_endpoint_slot {
  __u32 addr_be;               /* the endpoint's IPv4 address, network byte order; 0 = empty */
  struct sarena_endpoint ep;   /* a copy of the endpoint map's entry of addr_be */
};

/* Config flags. */
#define SARENA_CFG_F_REDIRECT_PEER 0x1u /* use bpf_redirect_peer where the kernel allows it */

/*
 * Node configuration, written by sarenad at key 0 of SARENA_MAP_CONFIG (an array of 1).
 * The programs treat the config as absent while net_ifindex == 0 (an array entry always exists,
 * zero-filled): then from_container passes non-local traffic to the kernel (TC_ACT_OK) and does
 * not answer ARP, and from_host does no pod-CIDR check. pod_cidr_len 0 means "no pod CIDR".
 */
struct sarena_config {
  __u32 node_ip_be;     /* --node-ip: the pods' gateway address, network byte order */
  __u32 host_ifindex;   /* sarena_host ifindex */
  __u32 net_ifindex;    /* sarena_net ifindex (the peer of sarena_host) */
  __u8 host_mac[6];     /* sarena_host MAC */
  __u8 net_mac[6];      /* sarena_net MAC */
  __u32 flags;          /* SARENA_CFG_F_* */
  __u32 pod_cidr_be;    /* node pod CIDR network, network byte order */
  __u32 pod_cidr_len;   /* prefix length 0..32 */
};

/* Per-endpoint counters (a PERCPU_ARRAY indexed by endpoint_id; user space sums the CPUs). */
struct sarena_ep_counters {
  __u64 rx_packets; /* delivered to the pod by the datapath */
  __u64 rx_bytes;
  __u64 tx_packets; /* sent by the pod and handled by the datapath */
  __u64 tx_bytes;
};

/* Drop reasons: index into SARENA_MAP_DROPS (a PERCPU_ARRAY of struct sarena_drop_counter). */
/* Drop reasons: the one list. X(ENUM_SUFFIX, value, "name", "why") — the C enum below, the C++
 * DropReasonName/DropReasonDescription (libsarena/datapath/abi.h) and the table in
 * docs/architecture.md are all generated from or checked against it (tests/bpf/map_test.cc).
 * Values are ABI: never renumber, only append. */
#define SARENA_DROP_REASONS(X)                                                                  \
  X(NONE, 0, "none", "not a drop")                                                             \
  X(TTL_EXCEEDED, 1, "ttl_exceeded", "TTL <= 1 on a packet to forward")                        \
  X(TRUNCATED, 2, "truncated", "frame shorter than the headers it claims")                     \
  X(NO_ENDPOINT, 3, "no_endpoint", "from_host: pod-CIDR destination with no endpoint")         \
  X(REDIRECT_FAILED, 4, "redirect_failed", "the redirect helper refused the ifindex")          \
  X(NO_CONFIG, 5, "no_config",                                                                 \
    "reserved: without config the programs pass (TC_ACT_OK), they do not drop")                \
  X(BAD_IP_HEADER, 6, "bad_ip_header", "IHL < 5 or total length inconsistent")                 \
  X(SPOOFED_SOURCE, 7, "spoofed_source", "pod sent a source IP that is not its own")           \
  X(NO_TUNNEL_ENDPOINT, 8, "no_tunnel_endpoint",                                               \
    "to_overlay: the host stack routed a packet onto sarena_vxlan for no known remote CIDR")   \
  X(UNKNOWN_PEER, 9, "unknown_peer", "from_overlay: VXLAN from an underlay address not a member") \
  X(WRONG_VNI, 10, "wrong_vni", "from_overlay: VXLAN with a VNI other than the cluster's")      \
  X(OVERLAY_SOURCE_MISMATCH, 11, "overlay_source_mismatch",                                    \
    "from_overlay: inner source is neither the sending peer's pod CIDR nor its address")      \
  X(FIB_LOOKUP_FAILED, 12, "fib_lookup_failed",                                                \
    "native routing: bpf_fib_lookup found no usable route to the peer")                        \
  X(TUNNEL_KEY_FAILED, 13, "tunnel_key_failed",                                                \
    "no tunnel key to read or set: no tunnel metadata, non-IPv4 underlay, or the helper refused")

#define SARENA_DROP_ENUM_ENTRY_(suffix, value, name, why) SARENA_DROP_##suffix = value,
enum sarena_drop_reason {
  SARENA_DROP_REASONS(SARENA_DROP_ENUM_ENTRY_)
  SARENA_DROP_REASON_MAX = 14,
};
#undef SARENA_DROP_ENUM_ENTRY_

struct sarena_drop_counter {
  __u64 packets;
  __u64 bytes;
};

/* ---- Datapath events (`sarena monitor`, docs/monitor.md). ---- */

/*
 * Every drop (the one helper sarena_drop / sarena_count_drop in bpf/lib/common.h) and, for
 * endpoints whose entry carries SARENA_EP_F_TRACE, every packet delivered to or sent by that
 * endpoint, is reported as one struct sarena_event in the SARENA_MAP_EVENTS ring buffer
 * (BPF_MAP_TYPE_RINGBUF, kernel doc Documentation/bpf/ringbuf.rst), pinned with the other maps.
 *
 * Rate limit, in BPF: a token bucket per CPU and per event type (SARENA_MAP_EVENT_LIMITS, a
 * PERCPU_ARRAY indexed by SARENA_EVENT_*): SARENA_EVENTS_RATE events per second refill it, it holds
 * at most SARENA_EVENTS_BURST events. An event finding the bucket empty is not written and counted
 * in `suppressed`; one finding the ring full (no reader, or a slow one) is counted in `lost`.
 * A flood of drops therefore costs a few map accesses per packet beyond the burst, never a ring
 * write, and cannot starve the node or the reader.
 */
#define SARENA_EVENT_DROP 1  /* a drop: reason = enum sarena_drop_reason */
#define SARENA_EVENT_TRACE 2 /* a traced endpoint's packet: reason = SARENA_TRACE_* */
#define SARENA_EVENT_TYPE_MAX 3

#define SARENA_TRACE_TO_ENDPOINT 1   /* delivered to the endpoint (local_delivery) */
#define SARENA_TRACE_FROM_ENDPOINT 2 /* sent by the endpoint, accepted by from_container */

#define SARENA_EVENTS_RINGBUF_BYTES (1u << 20) /* ring size: a power of 2, a multiple of pages */
#define SARENA_EVENTS_RATE 1000u               /* events per second per CPU per event type */
#define SARENA_EVENTS_BURST 256u               /* bucket size: events per CPU per type at once */
#define SARENA_EVENT_NO_ENDPOINT 0xffffffffu   /* sarena_event.endpoint_id: none is known */

/*
 * One datapath event (64 bytes). Unlike the maps above its ports are in HOST byte order.
 * endpoint_id: for TRACE the traced endpoint; for DROP the local endpoint that sent the packet
 * (its source address is an endpoint whose ifindex is the packet's ingress device), else the
 * local endpoint it was addressed to, else SARENA_EVENT_NO_ENDPOINT.
 * The addresses/ports are parsed from the packet, best effort: family 0 when the frame is not
 * IPv4 or too short for an IPv4 header; ports 0 for a non-first fragment or a truncated L4 header.
 */
struct sarena_event {
  __u64 ts_ns;       /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, ns */
  __u32 ifindex;     /* DROP: the device the program ran on; TRACE: the endpoint's lxc device */
  __u32 endpoint_id; /* see above; SARENA_EVENT_NO_ENDPOINT when none */
  __u32 len;         /* skb->len: frame bytes incl. the Ethernet header */
  __u32 cpu;         /* bpf_get_smp_processor_id() */
  __u8 type;         /* SARENA_EVENT_* */
  __u8 reason;       /* DROP: enum sarena_drop_reason; TRACE: SARENA_TRACE_* */
  __u8 family;       /* SARENA_FAMILY_IPV4, or 0 when the packet is not (readable) IPv4 */
  __u8 proto;        /* IP protocol (IPPROTO_*) */
  __u16 sport;       /* TCP/UDP source port, host order; ICMP: the ICMP type */
  __u16 dport;       /* TCP/UDP destination port, host order; ICMP: the ICMP code */
  __u8 src[16];      /* source address, network byte order; IPv4 in src[0..3] */
  __u8 dst[16];      /* destination address, network byte order; IPv4 in dst[0..3] */
};

/* SARENA_MAP_EVENT_LIMITS value: one CPU's token bucket and counters for one event type. */
struct sarena_event_limit {
  __u64 tokens;     /* credit in nano-events (1 event = 1e9), refilled at RATE per second */
  __u64 last_ns;    /* bpf_ktime_get_ns() of the last refill; 0 = never (the bucket starts full) */
  __u64 emitted;    /* events written to the ring */
  __u64 suppressed; /* events not written: the bucket was empty (the rate limit) */
  __u64 lost;       /* events not written: the ring was full (no reader or a slow one) */
};

/*
 * Host flows: connections a local pod opened toward an address that is NOT a local endpoint
 * (a ClusterIP, a NodePort, the node, anything off-node). from_container records the client side
 * of such a flow when the pod sends its first packet (TCP SYN without ACK; any UDP/other packet),
 * and checks it before short-circuiting a pod-to-pod packet: a packet from pod B to pod A whose
 * destination (A, port) is a recorded host flow is the reply of a connection that went through
 * the host stack (e.g. DNAT'ed by kube-proxy from a ClusterIP to B), so it must go back through
 * the host stack too, where conntrack reverses the NAT. Key = the client's address, port, proto;
 * value = first-seen time (bpf_ktime_get_ns, ns). LRU hash: a lookup refreshes an entry.
 */
struct sarena_flow_key {
  __u32 addr_be; /* the local pod that opened the flow, network byte order */
  __u16 port_be; /* its TCP/UDP source port, network byte order; 0 for other protocols */
  __u8 proto;    /* IPPROTO_* */
  __u8 pad;      /* must be zero */
};

/*
 * Host-flow openers (SARENA_MAP_FLOW_OPENERS, a BPF_MAP_TYPE_ARRAY of SARENA_MAX_ENDPOINTS
 * __u32, index = endpoint_id): nonzero once the endpoint has had a host flow recorded (set by
 * from_container before it records one; never cleared by the datapath). A pod-to-local-pod
 * packet consults SARENA_MAP_HOST_FLOWS only when its destination endpoint's entry is nonzero,
 * so pods that never opened a flow through the host stack cost one array read instead of an LRU
 * lookup. A reused endpoint_id may inherit a stale nonzero entry: that only costs the lookup.
 * Whoever writes SARENA_MAP_HOST_FLOWS other than from_container (tests) sets the opener too.
 * At every start sarenad marks the endpoint of every address with a recorded host flow
 * (libsarena/datapath/objects.cc), so pins from an older sarenad (no opener map, or one it did
 * not keep) lose no recorded flow.
 */

/* ---- Cluster datapath (multi-node). ---- */

/* Routing modes (sarenad --routing-mode; per peer in sarena_tunnel.mode). */
#define SARENA_MODE_TUNNEL 1 /* VXLAN through sarena_vxlan */
#define SARENA_MODE_NATIVE 2 /* routed on the underlay (bpf_fib_lookup + bpf_redirect_neigh) */
/* hybrid is a per-peer choice made in user space: NATIVE for peers on the uplink's subnet. */

/*
 * Tunnel map key (BPF_MAP_TYPE_LPM_TRIE, BPF_F_NO_PREALLOC): a remote pod CIDR.
 * prefixlen counts the bits after itself: 32 (family + pad, always matched whole) + the CIDR's
 * prefix length. IPv4 uses addr[0..3] in network byte order, addr[4..15] zero. A lookup uses
 * prefixlen = 32 + 128 and the full address.
 */
struct sarena_tunnel_key {
  __u32 prefixlen; /* LPM bits: 32 + CIDR length */
  __u8 family;     /* SARENA_FAMILY_* */
  __u8 pad[3];     /* must be zero */
  __u8 addr[16];   /* CIDR network, network byte order */
};

/* Tunnel map value: the peer node that owns the CIDR and how to reach it. */
struct sarena_tunnel {
  __u8 underlay[16];    /* peer's underlay (uplink) address, network byte order */
  __u8 underlay_family; /* SARENA_FAMILY_* */
  __u8 mode;            /* SARENA_MODE_* chosen for this peer */
  __u16 pad;            /* must be zero */
  __u32 node_id;        /* the peer's node id, < SARENA_MAX_PEERS; index into node counters */
  __u32 flags;          /* SARENA_TUN_F_* */
};

/*
 * Tunnel entry flags. SARENA_TUN_F_NODE: the entry is a tunnel-mode peer's own underlay
 * address (/32), not a pod CIDR. A pod talking to another node's address (its kubelet, an API
 * server on the node IP, a NodePort on that node) then goes through the tunnel like the node's
 * replies come back, so strict rp_filter on the peer sees the pod's source arrive on sarena_vxlan,
 * where that pod CIDR is routed. No kernel route is installed for such entries: the underlay
 * address itself stays routed on the uplink (the VXLAN packets' own path).
 */
#define SARENA_TUN_F_NODE 0x1u

/* Peer map key: an underlay address of a member node (validates decapsulated traffic). */
struct sarena_peer_key {
  __u8 addr[16]; /* network byte order; IPv4 in addr[0..3] */
  __u8 family;   /* SARENA_FAMILY_* */
  __u8 pad[3];   /* must be zero */
};

/* Peer map value. */
struct sarena_peer {
  __u32 node_id; /* < SARENA_MAX_PEERS */
  __u32 flags;   /* reserved, zero */
};

/* Overlay config flags. */
#define SARENA_OVL_F_TUNNEL 0x1u /* sarena_vxlan exists: tunnel (or hybrid) mode */
#define SARENA_OVL_F_NATIVE 0x2u /* native routing toward some peers (native or hybrid mode) */

/*
 * Cluster datapath config, written by sarenad at key 0 of SARENA_MAP_OVERLAY_CONFIG (array of 1)
 * when it runs with a cluster (--etcd-endpoints). All zero (flags == 0) = one-node mode: the
 * cross-node branches are off, from_overlay and from_netdev pass everything (fail open).
 */
struct sarena_overlay_config {
  __u32 flags;           /* SARENA_OVL_F_* */
  __u32 vni;             /* VXLAN network identifier (24 bits), host byte order */
  __u32 vxlan_ifindex;   /* sarena_vxlan ifindex (0 without tunnel) */
  __u32 uplink_ifindex;  /* --uplink ifindex */
  __u32 node_id;         /* this node's id */
  __u8 vxlan_mac[6];     /* sarena_vxlan MAC: inner dst MAC of decapsulated host-stack traffic */
  __u8 uplink_mac[6];    /* uplink MAC */
  __u8 underlay[16];     /* this node's underlay address, network byte order */
  __u8 underlay_family;  /* SARENA_FAMILY_* */
  __u8 pad[3];           /* must be zero */
  __u32 cluster_cidr_be; /* --cluster-cidr network (IPv4), network byte order */
  __u32 cluster_cidr_len;
};

/* Per-peer-node counters (PERCPU_ARRAY indexed by node_id; user space sums the CPUs). */
struct sarena_node_counters {
  __u64 tx_packets; /* sent toward the node (encapsulated or natively redirected) */
  __u64 tx_bytes;
  __u64 rx_packets; /* received from the node and accepted by from_overlay / from_netdev */
  __u64 rx_bytes;
};

#ifdef __cplusplus
static_assert(sizeof(struct sarena_endpoint_key) == 20, "abi: endpoint key");
static_assert(sizeof(struct sarena_endpoint) == 24, "abi: endpoint value");
static_assert(sizeof(struct sarena_endpoint_slot) == 28, "abi: endpoint slot");
static_assert(sizeof(struct sarena_config) == 36, "abi: config");
static_assert(sizeof(struct sarena_ep_counters) == 32, "abi: counters");
static_assert(sizeof(struct sarena_drop_counter) == 16, "abi: drop counter");
static_assert(sizeof(struct sarena_flow_key) == 8, "abi: flow key");
static_assert(sizeof(struct sarena_tunnel_key) == 24, "abi: tunnel key");
static_assert(sizeof(struct sarena_tunnel) == 28, "abi: tunnel value");
static_assert(sizeof(struct sarena_peer_key) == 20, "abi: peer key");
static_assert(sizeof(struct sarena_peer) == 8, "abi: peer value");
static_assert(sizeof(struct sarena_overlay_config) == 60, "abi: overlay config");
static_assert(sizeof(struct sarena_node_counters) == 32, "abi: node counters");
static_assert(sizeof(struct sarena_event) == 64, "abi: event");
static_assert(sizeof(struct sarena_event_limit) == 40, "abi: event limit");
#else
_Static_assert(sizeof(struct sarena_endpoint_key) == 20, "abi: endpoint key");
_Static_assert(sizeof(struct sarena_endpoint) == 24, "abi: endpoint value");
_Static_assert(sizeof(struct sarena_endpoint_slot) == 28, "abi: endpoint slot");
_Static_assert(sizeof(struct sarena_config) == 36, "abi: config");
_Static_assert(sizeof(struct sarena_ep_counters) == 32, "abi: counters");
_Static_assert(sizeof(struct sarena_drop_counter) == 16, "abi: drop counter");
_Static_assert(sizeof(struct sarena_flow_key) == 8, "abi: flow key");
_Static_assert(sizeof(struct sarena_tunnel_key) == 24, "abi: tunnel key");
_Static_assert(sizeof(struct sarena_tunnel) == 28, "abi: tunnel value");
_Static_assert(sizeof(struct sarena_peer_key) == 20, "abi: peer key");
_Static_assert(sizeof(struct sarena_peer) == 8, "abi: peer value");
_Static_assert(sizeof(struct sarena_overlay_config) == 60, "abi: overlay config");
_Static_assert(sizeof(struct sarena_node_counters) == 32, "abi: node counters");
_Static_assert(sizeof(struct sarena_event) == 64, "abi: event");
_Static_assert(sizeof(struct sarena_event_limit) == 40, "abi: event limit");
#endif

#endif /* SARENA_ABI_H_ */
