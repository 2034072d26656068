/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Gateway ARP responder (RFC 826) for pods.
 *
 * Why BPF answers ARP (instead of a static neighbour entry inside every pod):
 *  - the pod needs nothing beyond its address and routes: no per-pod `ip neigh` entry to create,
 *    keep in sync and check, and tools that flush or re-resolve neighbours in the pod keep working;
 *  - the answer is the host-side veth MAC of that very pod (its endpoint's host_mac), which is
 *    exactly the source MAC local_delivery writes on packets it delivers to the pod, so the pod
 *    sees one consistent gateway MAC whichever path a packet took;
 *  - the host-side veth carries no IP address, so the kernel would not answer for the gateway
 *    (short of proxy_arp on every lxc device, which would answer for every address).
 * Only a request from a known endpoint, on its own veth, for the configured gateway address is
 * answered; every other ARP frame is left to the kernel.
 */
#ifndef SARENA_BPF_LIB_ARP_H_
#define SARENA_BPF_LIB_ARP_H_

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sarena/abi.h"
#include "lib/common.h"
#include "lib/ipv4.h"

/*
 * RFC 826 constants and the fixed ARP header, spelled out here because <linux/if_arp.h> drags in
 * libc socket headers that do not build for -target bpf. Values as in <linux/if_arp.h>.
 */
#define SARENA_ARPHRD_ETHER 1
#define SARENA_ARPOP_REQUEST 1
#define SARENA_ARPOP_REPLY 2

struct sarena_arphdr {
  __be16 ar_hrd; /* hardware type (SARENA_ARPHRD_ETHER) */
  __be16 ar_pro; /* protocol type (ETH_P_IP) */
  __u8 ar_hln;   /* hardware address length (6) */
  __u8 ar_pln;   /* protocol address length (4) */
  __be16 ar_op;  /* ARPOP_* */
};

/* The Ethernet/IPv4 ARP packet body after struct sarena_arphdr (RFC 826). */
struct sarena_arp_eth_ipv4 {
  __u8 sha[ETH_ALEN]; /* sender hardware address */
  __u8 spa[4];        /* sender protocol address, network byte order */
  __u8 tha[ETH_ALEN]; /* target hardware address */
  __u8 tpa[4];        /* target protocol address, network byte order */
} __attribute__((packed));

#define SARENA_ARP_FRAME_LEN \
  (ETH_HLEN + sizeof(struct sarena_arphdr) + sizeof(struct sarena_arp_eth_ipv4))

static __always_inline __u32 sarena_load_be32(const __u8 *p) {
  __u32 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

/*
 * If `skb` (an ARP frame at tc ingress of a pod's host-side veth) is an Ethernet/IPv4 request
 * for the gateway `cfg->node_ip_be` from the endpoint owning the ingress device, rewrites it in
 * place into the reply and returns bpf_redirect(skb->ifindex) — back out of the veth to the pod.
 * Otherwise returns TC_ACT_OK untouched.
 */
static __always_inline int sarena_arp_answer_gateway(struct __sk_buff *skb,
                                                     const struct sarena_config *cfg) {
  if (!cfg || cfg->node_ip_be == 0) return TC_ACT_OK;
  if (sarena_ensure_linear(skb, SARENA_ARP_FRAME_LEN) < 0) return TC_ACT_OK;

  void *data = (void *)(long)skb->data;
  void *data_end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  struct sarena_arphdr *arp = (void *)(eth + 1);
  struct sarena_arp_eth_ipv4 *body = (void *)(arp + 1);
  if ((void *)(body + 1) > data_end) return TC_ACT_OK;

  if (arp->ar_hrd != bpf_htons(SARENA_ARPHRD_ETHER) || arp->ar_pro != bpf_htons(ETH_P_IP) ||
      arp->ar_hln != ETH_ALEN || arp->ar_pln != 4 || arp->ar_op != bpf_htons(SARENA_ARPOP_REQUEST))
    return TC_ACT_OK;

  __u32 node_ip_be = cfg->node_ip_be;
  if (sarena_load_be32(body->tpa) != node_ip_be) return TC_ACT_OK;

  __u32 sender_be = sarena_load_be32(body->spa);
  const struct sarena_endpoint *ep = sarena_lookup_ipv4(sender_be);
  if (!ep || ep->ifindex != skb->ingress_ifindex) return TC_ACT_OK;

  /* Reply: target = the requester, sender = the gateway at the endpoint's host-side MAC. */
  arp->ar_op = bpf_htons(SARENA_ARPOP_REPLY);
  sarena_mac_copy(body->tha, body->sha);
  __builtin_memcpy(body->tpa, &sender_be, 4);
  sarena_mac_copy(body->sha, ep->host_mac);
  __builtin_memcpy(body->spa, &node_ip_be, 4);
  sarena_mac_store2((__u8 *)eth, body->tha, ep->host_mac);

  return sarena_redirect_verdict(skb, bpf_redirect(skb->ifindex, 0));
}

#endif /* SARENA_BPF_LIB_ARP_H_ */
