"""bridge-node: a node of the reference bridge CNI (cni0 10.244.0.1/24, veths enslaved to it,
MASQUERADE for traffic leaving the pod CIDR, kube-proxy chains without Services), two pods.
Unit tests of the generic walk mutate copies of it."""
import sys

from topo import iptables_text, k8s_list, k8s_node, k8s_pod, kube_proxy, merge_rules, physical, topology

CASE = sys.argv[1] if len(sys.argv) > 1 else "bridge-node"

with topology(CASE) as t:
    a = t.node("node-a")
    a.stub("eth0")
    a.ip("addr", "add", "10.0.4.10/24", "dev", "eth0")
    a.ip("link", "set", "eth0", "up")
    a.ip("route", "add", "default", "via", "10.0.4.1", "dev", "eth0")
    a.ip("link", "add", "cni0", "type", "bridge")
    a.ip("addr", "add", "10.244.0.1/24", "dev", "cni0")
    a.ip("link", "set", "cni0", "up")
    a.ip("neigh", "add", "10.0.4.1", "lladdr", "52:54:00:0a:04:01", "dev", "eth0", "nud",
         "reachable")
    a.sysctl("net.ipv4.ip_forward", "1")
    t.fixup(a, "eth0", physical)
    t.pod("node-a", "default", "client", "10.244.0.9", "veth3f9a2c1d", prefix=24, master="cni0",
          gateway="10.244.0.1", gateway_onlink=False)
    t.pod("node-a", "default", "server", "10.244.0.10", "veth81c0e2aa", prefix=24, master="cni0",
          gateway="10.244.0.1", gateway_onlink=False)
    a.iptables_restore(iptables_text(*merge_rules(
        kube_proxy([], "10.244.0.0/16"),
        ([], ['-A POSTROUTING -s 10.244.0.0/24 ! -o cni0 -j MASQUERADE'], [], []))))
    t.dump({
        "nodes.json": k8s_list([k8s_node("node-a", "10.0.4.10", pod_cidr="10.244.0.0/24")]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.244.0.9", "10.0.4.10",
                    labels={"app": "client"}),
            k8s_pod("default", "server", "node-a", "10.244.0.10", "10.0.4.10",
                    labels={"app": "server"}, ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
    })
