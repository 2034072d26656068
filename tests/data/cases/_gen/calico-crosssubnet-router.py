"""calico-crosssubnet-router: vxlanMode CrossSubnet between Calico nodes in different subnets,
joined by a router namespace that knows only the nodes' subnets (a cloud VPC fabric: no route
for pod addresses). node-a 10.20.0.11/24 -- router (10.20.0.1 / 10.20.1.1, ip_forward 1) --
node-c 10.20.1.13/24 (two /24 subnets of one 10.20.0.0/16 VPC); each node has vxlan.calico (VNI 4096, its IPv4VXLANTunnelAddr) and the
router is a namespace of the snapshot (nodes/router) that is not a Kubernetes node.

  calico-crosssubnet-router        the fault: node-a routes node-c's block without
                                   encapsulation, via the router (BIRD's route for a BGP peer),
                                   which has no route for pods: FATAL route_mismatch at node-a.
  calico-crosssubnet-router-wide   the fault: node-a's eth0 address is 10.20.0.11/16 (its
                                   annotation still /24). Calico decides CrossSubnet from the
                                   interface: node-c (10.20.1.13) is in node-a's subnet, so BIRD
                                   routes its block "via 10.20.1.13 dev eth0" - on-link by the
                                   /16, but behind the router, which does not answer ARP for it:
                                   FATAL neighbor_missing at node-a, INFO cross_subnet.
  calico-crosssubnet-router-fixed  the repaired twin: each block via the peer's tunnel address
                                   on vxlan.calico onlink."""
import sys

from calico_common import calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "calico-crosssubnet-router"
FIXED = CASE.endswith("-fixed")
WIDE = CASE.endswith("-wide")
NODES = {"node-a": ("10.20.0.11", "10.20.0.1", "ra", "10.67.1.0/26", "10.67.1.1",
                    "66:f0:0a:14:00:0b"),
         "node-c": ("10.20.1.13", "10.20.1.1", "rc", "10.67.3.0/26", "10.67.3.1",
                    "66:f0:0a:1e:00:0d")}

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.67.0.0/16"),
                                       calico_rules(["10.67.0.0/16"])))
    router = t.node("router")
    router.sysctl("net.ipv4.ip_forward", "1")
    for name, (addr, gw, rdev, block, vtep, mac) in NODES.items():
        n = t.node(name)
        router.ip("link", "add", rdev, "type", "veth", "peer", "name", "eth0", "netns", n.name)
        router.ip("addr", "add", gw + "/24", "dev", rdev)
        router.ip("link", "set", rdev, "up")
        plen = "/16" if WIDE and name == "node-a" else "/24"
        n.ip("addr", "add", addr + plen, "dev", "eth0")
        n.ip("link", "set", "eth0", "up")
        n.ip("route", "add", "default", "via", gw, "dev", "eth0")
        n.sysctl("net.ipv4.ip_forward", "1")
        n.ip("route", "add", "blackhole", block, "proto", "bird")
        n.ip("link", "add", "vxlan.calico", "mtu", "1450", "address", mac, "type", "vxlan",
             "id", "4096", "local", addr, "dev", "eth0", "dstport", "4789", "nolearning")
        n.ip("addr", "add", vtep + "/32", "dev", "vxlan.calico")
        n.ip("link", "set", "vxlan.calico", "up")
        n.iptables_restore(rules)
    for name, pname in (("node-a", "node-c"), ("node-c", "node-a")):
        n = t.nodes[name]
        paddr, _, _, pblock, pvtep, pmac = NODES[pname]
        if name == "node-a" and WIDE:
            n.ip("route", "add", pblock, "via", paddr, "dev", "eth0", "proto", "bird")
        elif name == "node-a" and not FIXED:
            n.ip("route", "add", pblock, "via", NODES[name][1], "dev", "eth0", "proto", "bird")
        else:
            n.ip("route", "add", pblock, "via", pvtep, "dev", "vxlan.calico", "onlink", "proto",
                 "80")
            n.ip("neigh", "add", pvtep, "lladdr", pmac, "dev", "vxlan.calico", "nud",
                 "permanent")
            n.exec("bridge", "fdb", "add", pmac, "dev", "vxlan.calico", "dst", paddr, "self",
                   "permanent")
    calico_pod(t, "node-a", "default", "client", "10.67.1.5", mtu=1450)
    calico_pod(t, "node-c", "default", "far", "10.67.3.7", mtu=1450)
    t.dump({
        "nodes.json": k8s_list([
            k8s_node(name, addr, annotations={
                "projectcalico.org/IPv4Address": addr + "/24",
                "projectcalico.org/IPv4VXLANTunnelAddr": vtep})
            for name, (addr, _, _, _, vtep, _) in NODES.items()]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.67.1.5", "10.20.0.11"),
            k8s_pod("default", "far", "node-c", "10.67.3.7", "10.20.1.13", ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("cross-pool", "10.67.0.0/16", ipip="Never", vxlan="CrossSubnet",
                          nat_outgoing=True)]),
    })
