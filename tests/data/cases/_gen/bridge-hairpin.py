"""bridge-hairpin: a node of the reference bridge CNI (cni0, br_netfilter on, kube-proxy) whose pod
web/www reaches its own Service web/www (ClusterIP 10.96.30.40:80 -> 10.244.3.9:8080). kube-proxy's
DNAT in bridge PREROUTING (br_netfilter) sends the frame back to the port it came in by; with
hairpin mode off on that port (the bridge plugin without "hairpinMode": true) br_forward drops it.
The -fixed variant turns hairpin on for the port (bridge link set dev veth5e0d2a11 hairpin on)."""
import sys

from topo import (iptables_text, k8s_endpointslice, k8s_list, k8s_node, k8s_pod, k8s_service,
                  kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "bridge-hairpin"
FIXED = CASE.endswith("-fixed")

with topology(CASE) as t:
    a = t.node("node-a")
    a.stub("eth0")
    a.ip("addr", "add", "10.0.6.10/24", "dev", "eth0")
    a.ip("link", "set", "eth0", "up")
    a.ip("route", "add", "default", "via", "10.0.6.1", "dev", "eth0")
    a.ip("link", "add", "cni0", "type", "bridge")
    a.ip("addr", "add", "10.244.3.1/24", "dev", "cni0")
    a.ip("link", "set", "cni0", "up")
    a.ip("neigh", "add", "10.0.6.1", "lladdr", "52:54:00:0a:06:01", "dev", "eth0", "nud",
         "reachable")
    a.sysctl("net.ipv4.ip_forward", "1")
    a.sysctl("net.bridge.bridge-nf-call-iptables", "1")
    t.fixup(a, "eth0", physical)
    t.pod("node-a", "web", "client", "10.244.3.8", "veth2c7b1f90", prefix=24, master="cni0",
          gateway="10.244.3.1", gateway_onlink=False)
    t.pod("node-a", "web", "www", "10.244.3.9", "veth5e0d2a11", prefix=24, master="cni0",
          gateway="10.244.3.1", gateway_onlink=False)
    if FIXED:
        a.ip("link", "set", "veth5e0d2a11", "type", "bridge_slave", "hairpin", "on")
    a.iptables_restore(iptables_text(*merge_rules(
        kube_proxy([dict(ns="web", name="www", port_name="p80", cluster_ip="10.96.30.40",
                         port=80, endpoints=[("10.244.3.9", 8080, "node-a")])],
                   "10.244.0.0/16", "node-a"),
        ([], ['-A POSTROUTING -s 10.244.3.0/24 ! -o cni0 -j MASQUERADE'], [], []))))
    t.dump({
        "nodes.json": k8s_list([k8s_node("node-a", "10.0.6.10", pod_cidr="10.244.3.0/24")]),
        "pods.json": k8s_list([
            k8s_pod("web", "client", "node-a", "10.244.3.8", "10.0.6.10",
                    labels={"app": "client"}),
            k8s_pod("web", "www", "node-a", "10.244.3.9", "10.0.6.10",
                    labels={"app": "www"}, ports=[8080]),
        ]),
        "services.json": k8s_list([
            k8s_service("web", "www", "10.96.30.40", [(80, 8080, "TCP", None)],
                        selector={"app": "www"}),
        ]),
        "endpointslices.json": k8s_list([
            k8s_endpointslice("web", "www", [("10.244.3.9", "node-a", "www", True)],
                              [("p80", 8080, "TCP")]),
        ]),
    })
