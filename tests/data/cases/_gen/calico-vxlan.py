"""calico-vxlan: two Calico nodes with vxlanMode Always: vxlan.calico (VNI 4096, port 4789, MTU
1450) carrying the node's IPv4VXLANTunnelAddr, routes "<block> via <peer tunnel addr> dev
vxlan.calico onlink", a permanent neighbour entry for the peer tunnel address and a bridge fdb
entry sending the peer's vxlan.calico MAC to the peer node."""
import json
import sys

from calico_common import calico_node, calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, physical, run, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "calico-vxlan"
NODES = [("node-a", "10.10.0.11", "10.66.1.192", "10.66.1.192/26"),
         ("node-b", "10.10.0.12", "10.66.2.192", "10.66.2.192/26")]
MACS = {"node-a": "66:f0:0a:0a:00:0b", "node-b": "66:f0:0a:0a:00:0c"}

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.66.0.0/16"),
                                       calico_rules(["10.66.0.0/16"])))
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
            calico_ippool("vxlan-pool", "10.66.0.0/16", ipip="Never", vxlan="Always",
                          nat_outgoing=True)]),
    })
