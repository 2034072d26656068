// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* noop: an empty tc program returning TC_ACT_OK — the baseline of the datapath benchmarks. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int noop(struct __sk_buff *skb) { return TC_ACT_OK; }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
