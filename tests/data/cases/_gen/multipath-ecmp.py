"""multipath-ecmp: two Calico nodes (BGP pool, no encapsulation) joined by two links, eth0
(10.20.0.0/24) and eth1 (10.21.0.0/24); BIRD learned each remote block over both sessions and
installed one ECMP route with two next hops, as it does with `merge paths`. On node-b, eth1 has
forwarding turned off (net.ipv4.conf.eth1.forwarding = 0, e.g. a host-hardening script that
named the wrong device): packets for node-b's pods that node-a hashes onto eth1 die at node-b's
ingress (ip_forward: IN_DEV_FORWARD of the input device), the others get through — a share of
connections fails, depending on each flow's hash.

  multipath-ecmp        node-b's eth1 forwarding = 0
  multipath-ecmp-fixed  the repaired twin: forwarding = 1 on every device"""
import sys

from calico_common import calico_node, calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "multipath-ecmp"
FIXED = CASE.endswith("-fixed")
NODES = {"node-a": ("10.20.0.11", "10.21.0.11", "10.67.1.0/26"),
         "node-b": ("10.20.0.12", "10.21.0.12", "10.67.2.0/26")}

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.67.0.0/16"),
                                       calico_rules(["10.67.0.0/16"])))
    for name, (a0, a1, block) in NODES.items():
        n = calico_node(t, name, "eth0", a0 + "/24", "10.20.0.1", block=block)
        n.stub("eth1")
        n.ip("addr", "add", a1 + "/24", "dev", "eth1")
        n.ip("link", "set", "eth1", "up")
        n.sysctl("net.ipv4.conf.eth1.forwarding", "1")
        n.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        n.iptables_restore(rules)
        t.fixup(n, "eth0", physical)
        t.fixup(n, "eth1", physical)
    for name in NODES:
        for peer, (p0, p1, pblock) in NODES.items():
            if peer != name:
                t.nodes[name].ip("route", "add", pblock, "proto", "bird",
                                 "nexthop", "via", p0, "dev", "eth0",
                                 "nexthop", "via", p1, "dev", "eth1")
    if not FIXED:
        t.nodes["node-b"].sysctl("net.ipv4.conf.eth1.forwarding", "0")
    calico_pod(t, "node-a", "default", "client", "10.67.1.5")
    calico_pod(t, "node-b", "default", "server", "10.67.2.6")
    t.dump({
        "nodes.json": k8s_list([
            k8s_node(name, a0, annotations={"projectcalico.org/IPv4Address": a0 + "/24"})
            for name, (a0, _, _) in NODES.items()]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.67.1.5", "10.20.0.11"),
            k8s_pod("default", "server", "node-b", "10.67.2.6", "10.20.0.12", ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("pool", "10.67.0.0/16", ipip="Never", vxlan="Never",
                          nat_outgoing=True)]),
    })
