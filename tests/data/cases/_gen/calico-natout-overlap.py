"""calico-natout-overlap: the IPPool overlaps a network outside the cluster. Two Calico VXLAN
nodes (as calico-vxlan) with pool vxlan-pool 10.66.0.0/16 (natOutgoing: true); a VM network
10.66.250.0/24 lies outside the cluster behind the nodes' default gateway 10.10.0.1. A pod
reaching the VM 10.66.250.10 is not masqueraded (Felix's cali-nat-outgoing rule skips
destinations inside any pool), so it leaves with the pod address and the reply cannot return.

    python3 calico-natout-overlap.py                                  # the broken case
    python3 calico-natout-overlap.py calico-natout-overlap-fixed      # pool narrowed to /17
"""
import sys

from calico_common import calico_node, calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "calico-natout-overlap"
POOL = "10.66.0.0/17" if CASE.endswith("-fixed") else "10.66.0.0/16"
NODES = [("node-a", "10.10.0.11", "10.66.1.192", "10.66.1.192/26"),
         ("node-b", "10.10.0.12", "10.66.2.192", "10.66.2.192/26")]
MACS = {"node-a": "66:f0:0a:0a:00:0b", "node-b": "66:f0:0a:0a:00:0c"}

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], POOL), calico_rules([POOL])))
    for name, addr, vtep, block in NODES:
        n = calico_node(t, name, "eth0", addr + "/24", "10.10.0.1", block=block)
        n.ip("link", "add", "vxlan.calico", "mtu", "1450", "address", MACS[name], "type",
             "vxlan", "id", "4096", "local", addr, "dev", "eth0", "dstport", "4789",
             "nolearning")
        n.ip("addr", "add", vtep + "/32", "dev", "vxlan.calico")
        n.ip("link", "set", "vxlan.calico", "up")
        n.iptables_restore(rules)
        t.fixup(n, "eth0", physical)
    for (name, addr, vtep, block), (pname, paddr, pvtep, pblock) in [(NODES[0], NODES[1]),
                                                                      (NODES[1], NODES[0])]:
        n = t.nodes[name]
        n.ip("route", "add", pblock, "via", pvtep, "dev", "vxlan.calico", "onlink", "proto", "80")
        n.ip("neigh", "add", pvtep, "lladdr", MACS[pname], "dev", "vxlan.calico", "nud",
             "permanent")
        n.exec("bridge", "fdb", "add", MACS[pname], "dev", "vxlan.calico", "dst", paddr, "self",
               "permanent")
    calico_pod(t, "node-a", "default", "client", "10.66.1.195", mtu=1450)
    calico_pod(t, "node-b", "default", "server", "10.66.2.200", mtu=1450)
    t.dump({
        "nodes.json": k8s_list([
            k8s_node(name, addr, annotations={
                "projectcalico.org/IPv4Address": addr + "/24",
                "projectcalico.org/IPv4VXLANTunnelAddr": vtep})
            for name, addr, vtep, _ in NODES]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.66.1.195", "10.10.0.11",
                    labels={"app": "client"}),
            k8s_pod("default", "server", "node-b", "10.66.2.200", "10.10.0.12",
                    labels={"app": "server"}, ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("vxlan-pool", POOL, ipip="Never", vxlan="Always", nat_outgoing=True)]),
    })
