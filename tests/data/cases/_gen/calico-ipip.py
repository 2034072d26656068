"""calico-ipip: a healthy two-node Calico cluster, ipipMode Always, natOutgoing, kube-proxy with
a ClusterIP/NodePort/LoadBalancer Service (loadBalancerSourceRanges) over pods on both nodes and a
NodePort Service with externalTrafficPolicy Local whose only endpoint is on node-b.
Unit tests mutate copies of it, one fault at a time."""
import sys

from calico_common import calico_node, calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_endpointslice,
                  k8s_list, k8s_node, k8s_pod, k8s_service, kube_proxy, merge_rules, physical,
                  topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "calico-ipip"

SERVICES = [
    dict(ns="default", name="web", port_name="p80", cluster_ip="10.96.0.50", port=80,
         node_port=30080, lb_ip="203.0.113.10", source_ranges=["198.51.100.0/24"],
         endpoints=[("10.65.1.7", 8080, "node-a"), ("10.65.2.9", 8080, "node-b")]),
    dict(ns="default", name="local", port_name="p80", cluster_ip="10.96.0.60", port=80,
         node_port=30090, etp_local=True, endpoints=[("10.65.2.8", 8080, "node-b")]),
]

with topology(CASE) as t:
    for name, addr, tun, block, peer_block, peer in [
            ("node-a", "10.128.0.4", "10.65.1.0", "10.65.1.0/26", "10.65.2.0/26", "10.128.0.5"),
            ("node-b", "10.128.0.5", "10.65.2.0", "10.65.2.0/26", "10.65.1.0/26", "10.128.0.4")]:
        n = calico_node(t, name, "eth0", addr + "/32", "10.128.0.1", tunnel_addr=tun,
                        onlink_gw=True, block=block)
        n.ip("route", "add", peer_block, "via", peer, "dev", "tunl0", "proto", "bird", "onlink")
        n.ip("neigh", "add", "10.128.0.1", "lladdr", "42:01:0a:80:00:01", "dev", "eth0", "nud",
             "reachable")
        n.iptables_restore(iptables_text(*merge_rules(
            kube_proxy(SERVICES, "10.65.0.0/16", name), calico_rules(["10.65.0.0/16"]))))
        t.fixup(n, "eth0", physical)
    calico_pod(t, "node-a", "default", "client", "10.65.1.3", mtu=1480)
    calico_pod(t, "node-a", "default", "web-1", "10.65.1.7", mtu=1480)
    calico_pod(t, "node-b", "default", "files", "10.65.2.8", mtu=1480)
    calico_pod(t, "node-b", "default", "web-2", "10.65.2.9", mtu=1480)

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
            k8s_pod("default", "web-1", "node-a", "10.65.1.7", "10.128.0.4",
                    labels={"app": "web"}, ports=[8080]),
            k8s_pod("default", "files", "node-b", "10.65.2.8", "10.128.0.5",
                    labels={"app": "files"}, ports=[8080]),
            k8s_pod("default", "web-2", "node-b", "10.65.2.9", "10.128.0.5",
                    labels={"app": "web"}, ports=[8080]),
        ]),
        "services.json": k8s_list([
            k8s_service("default", "web", "10.96.0.50", [(80, 8080, "TCP", 30080)],
                        selector={"app": "web"}, svc_type="LoadBalancer",
                        lb_source_ranges=["198.51.100.0/24"], lb_ip="203.0.113.10"),
            k8s_service("default", "local", "10.96.0.60", [(80, 8080, "TCP", 30090)],
                        selector={"app": "files"}, svc_type="NodePort",
                        external_traffic_policy="Local"),
        ]),
        "endpointslices.json": k8s_list([
            k8s_endpointslice("default", "web", [("10.65.1.7", "node-a", "web-1", True),
                                                 ("10.65.2.9", "node-b", "web-2", True)],
                              [("p80", 8080, "TCP")]),
            k8s_endpointslice("default", "local", [("10.65.2.8", "node-b", "files", True)],
                              [("p80", 8080, "TCP")]),
        ]),
        "ippools.json": calico_list([
            calico_ippool("default-ipv4-ippool", "10.65.0.0/16", ipip="Always", vxlan="Never",
                          nat_outgoing=True)]),
    })
