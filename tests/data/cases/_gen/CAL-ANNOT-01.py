"""CAL-ANNOT-01: calico-node on node-c cannot autodetect its address (bond0 matches no pattern):
node-c has no projectcalico.org/IPv4Address, so node-a has no route for node-c's block and sends
pod traffic to the LAN gateway."""
import sys

from calico_common import calico_node, calico_pod
from topo import (bond, calico_ippool, calico_list, calico_rules, iptables_text, k8s_list,
                  k8s_node, k8s_pod, kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "CAL-ANNOT-01"
FIXED = CASE != "CAL-ANNOT-01"

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.70.0.0/16"),
                                       calico_rules(["10.70.0.0/16"])))
    a = calico_node(t, "node-a", "eth0", "10.12.0.11/24", "10.12.0.1", tunnel_addr="10.70.1.0",
                    block="10.70.1.0/26")
    if FIXED:
        a.ip("route", "add", "10.70.9.0/26", "via", "10.12.0.13", "dev", "tunl0", "proto", "bird",
             "onlink")
    a.ip("neigh", "add", "10.12.0.1", "lladdr", "00:1b:21:0a:0c:01", "dev", "eth0", "nud",
         "reachable")
    a.iptables_restore(rules)
    t.fixup(a, "eth0", physical)
    calico_pod(t, "node-a", "data", "app", "10.70.1.6", mtu=1480)

    c = calico_node(t, "node-c", "bond0", "10.12.0.13/24", "10.12.0.1",
                    tunnel_addr="10.70.9.0" if FIXED else "", block="10.70.9.0/26")
    if FIXED:
        c.ip("route", "add", "10.70.1.0/26", "via", "10.12.0.11", "dev", "tunl0", "proto", "bird",
             "onlink")
    c.iptables_restore(rules)
    t.fixup(c, "bond0", bond())
    calico_pod(t, "node-c", "data", "db-0", "10.70.9.4", mtu=1480)

    node_c_ann = {}
    if FIXED:
        node_c_ann = {"projectcalico.org/IPv4Address": "10.12.0.13/24",
                      "projectcalico.org/IPv4IPIPTunnelAddr": "10.70.9.0"}
    t.dump({
        "nodes.json": k8s_list([
            k8s_node("node-a", "10.12.0.11", annotations={
                "projectcalico.org/IPv4Address": "10.12.0.11/24",
                "projectcalico.org/IPv4IPIPTunnelAddr": "10.70.1.0"}),
            k8s_node("node-c", "10.12.0.13", annotations=node_c_ann),
        ]),
        "pods.json": k8s_list([
            k8s_pod("data", "app", "node-a", "10.70.1.6", "10.12.0.11", labels={"app": "app"}),
            k8s_pod("data", "db-0", "node-c", "10.70.9.4", "10.12.0.13", labels={"app": "db"},
                    ports=[5432]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("default-ipv4-ippool", "10.70.0.0/16", ipip="Always", vxlan="Never",
                          nat_outgoing=True, block_size=26)]),
    })
