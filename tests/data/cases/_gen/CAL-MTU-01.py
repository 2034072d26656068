"""CAL-MTU-01: Calico IPIP (ipipMode Always) with tunl0 and pod veths at MTU 1480 on an underlay
whose eth0 MTU is 1460: encapsulated full-size packets (1500 bytes) cannot leave eth0."""
import sys

from calico_common import calico_node, calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "CAL-MTU-01"
MTU = 1460 if CASE == "CAL-MTU-01" else 1500

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.65.0.0/16"),
                                       calico_rules(["10.65.0.0/16"])))
    a = calico_node(t, "node-a", "eth0", "10.128.0.4/32", "10.128.0.1", mtu=MTU,
                    tunnel_addr="10.65.1.0", onlink_gw=True, block="10.65.1.0/26")
    a.ip("route", "add", "10.65.2.0/26", "via", "10.128.0.5", "dev", "tunl0", "proto", "bird",
         "onlink")
    a.ip("neigh", "add", "10.128.0.1", "lladdr", "42:01:0a:80:00:01", "dev", "eth0", "nud",
         "reachable")
    a.iptables_restore(rules)
    t.fixup(a, "eth0", physical)
    calico_pod(t, "node-a", "default", "client", "10.65.1.3", mtu=1480)

    b = calico_node(t, "node-b", "eth0", "10.128.0.5/32", "10.128.0.1", mtu=MTU,
                    tunnel_addr="10.65.2.0", onlink_gw=True, block="10.65.2.0/26")
    b.ip("route", "add", "10.65.1.0/26", "via", "10.128.0.4", "dev", "tunl0", "proto", "bird",
         "onlink")
    b.ip("neigh", "add", "10.128.0.1", "lladdr", "42:01:0a:80:00:01", "dev", "eth0", "nud",
         "reachable")
    b.iptables_restore(rules)
    t.fixup(b, "eth0", physical)
    calico_pod(t, "node-b", "default", "files", "10.65.2.8", mtu=1480)

    t.dump({
        "nodes.json": k8s_list([
            k8s_node("node-a", "10.128.0.4", annotations={
                "projectcalico.org/IPv4Address": "10.128.0.4/32",
                "projectcalico.org/IPv4IPIPTunnelAddr": "10.65.1.0"}),
            k8s_node("node-b", "10.128.0.5", annotations={
                "projectcalico.org/IPv4Address": "10.128.0.5/32",
                "projectcalico.org/IPv4IPIPTunnelAddr": "10.65.2.0"}),
        ]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.65.1.3", "10.128.0.4",
                    labels={"app": "client"}),
            k8s_pod("default", "files", "node-b", "10.65.2.8", "10.128.0.5",
                    labels={"app": "files"}, ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("default-ipv4-ippool", "10.65.0.0/16", ipip="Always", vxlan="Never",
                          nat_outgoing=True)]),
    })
