"""router-noreturn: two Calico nodes in different subnets (BGP, ipipMode/vxlanMode Never) joined by
a ToR router namespace that peers with them: node-a 10.20.0.11/24 -- router (10.20.0.1 /
10.30.0.1, ip_forward 1) -- node-c 10.30.0.13/24, each node's uplink a veth into the router.
BIRD resolves the BGP next hop of the other node's block recursively, so node-a's kernel route is
`10.67.3.0/26 via 10.20.0.1 dev eth0 proto bird` (the router), not via node-c itself. The router
has node-c's block but lost node-a's (the return route): client -> far is delivered, far's reply
dies on the router (SKB_DROP_REASON_IP_INNOROUTES). `router-noreturn-fixed` has the route.

The router is a namespace of the snapshot (nodes/router) that is not a Kubernetes node."""
import sys

from calico_common import calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "router-noreturn"
FIXED = CASE.endswith("-fixed")
NODES = {"node-a": ("10.20.0.11", "10.20.0.1", "ra", "10.67.1.0/26"),
         "node-c": ("10.30.0.13", "10.30.0.1", "rc", "10.67.3.0/26")}

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.67.0.0/16"),
                                       calico_rules(["10.67.0.0/16"])))
    router = t.node("router")
    router.sysctl("net.ipv4.ip_forward", "1")
    for name, (addr, gw, rdev, block) in NODES.items():
        n = t.node(name)
        router.ip("link", "add", rdev, "type", "veth", "peer", "name", "eth0", "netns", n.name)
        router.ip("addr", "add", gw + "/24", "dev", rdev)
        router.ip("link", "set", rdev, "up")
        n.ip("addr", "add", addr + "/24", "dev", "eth0")
        n.ip("link", "set", "eth0", "up")
        n.ip("route", "add", "default", "via", gw, "dev", "eth0")
        n.sysctl("net.ipv4.ip_forward", "1")
        n.ip("route", "add", "blackhole", block, "proto", "bird")
        n.iptables_restore(rules)
        # The router learns each block from its node (BGP), except node-a's in the broken case.
        if FIXED or name != "node-a":
            router.ip("route", "add", block, "via", addr, "dev", rdev, "proto", "bird")
    # BIRD's recursive next hop: the other block via the router, not via the peer node.
    t.nodes["node-a"].ip("route", "add", "10.67.3.0/26", "via", "10.20.0.1", "dev", "eth0",
                         "proto", "bird")
    t.nodes["node-c"].ip("route", "add", "10.67.1.0/26", "via", "10.30.0.1", "dev", "eth0",
                         "proto", "bird")
    calico_pod(t, "node-a", "default", "client", "10.67.1.5")
    calico_pod(t, "node-c", "default", "far", "10.67.3.7")
    t.dump({
        "nodes.json": k8s_list([
            k8s_node(name, addr, annotations={"projectcalico.org/IPv4Address": addr + "/24"})
            for name, (addr, _, _, _) in NODES.items()]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.67.1.5", "10.20.0.11"),
            k8s_pod("default", "far", "node-c", "10.67.3.7", "10.30.0.13", ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("default-ipv4-ippool", "10.67.0.0/16", ipip="Never", vxlan="Never",
                          nat_outgoing=True)]),
    })
