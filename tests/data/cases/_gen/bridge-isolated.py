"""bridge-isolated: a node of the reference bridge CNI (cni0, br_netfilter on) whose two pods'
bridge ports are both isolated (`bridge link set dev X isolated on`, as a multi-tenant setup
isolates tenant ports): the bridge never switches a frame between two isolated ports
(br_skb_isolated), so pod default/client cannot reach pod default/server on the same bridge, while
both still reach the node. The -fixed variant turns isolation off on the server's port."""
import sys

from topo import iptables_text, k8s_list, k8s_node, k8s_pod, kube_proxy, merge_rules, physical, topology

CASE = sys.argv[1] if len(sys.argv) > 1 else "bridge-isolated"
FIXED = CASE.endswith("-fixed")

with topology(CASE) as t:
    a = t.node("node-a")
    a.stub("eth0")
    a.ip("addr", "add", "10.0.7.10/24", "dev", "eth0")
    a.ip("link", "set", "eth0", "up")
    a.ip("route", "add", "default", "via", "10.0.7.1", "dev", "eth0")
    a.ip("link", "add", "cni0", "type", "bridge")
    a.ip("addr", "add", "10.244.4.1/24", "dev", "cni0")
    a.ip("link", "set", "cni0", "up")
    a.ip("neigh", "add", "10.0.7.1", "lladdr", "52:54:00:0a:07:01", "dev", "eth0", "nud",
         "reachable")
    a.sysctl("net.ipv4.ip_forward", "1")
    a.sysctl("net.bridge.bridge-nf-call-iptables", "1")
    t.fixup(a, "eth0", physical)
    t.pod("node-a", "default", "client", "10.244.4.9", "veth91a4d0c2", prefix=24, master="cni0",
          gateway="10.244.4.1", gateway_onlink=False)
    t.pod("node-a", "default", "server", "10.244.4.10", "veth6b3e8f07", prefix=24, master="cni0",
          gateway="10.244.4.1", gateway_onlink=False)
    a.ip("link", "set", "veth91a4d0c2", "type", "bridge_slave", "isolated", "on")
    a.ip("link", "set", "veth6b3e8f07", "type", "bridge_slave", "isolated",
         "off" if FIXED else "on")
    a.iptables_restore(iptables_text(*merge_rules(
        kube_proxy([], "10.244.0.0/16"),
        ([], ['-A POSTROUTING -s 10.244.4.0/24 ! -o cni0 -j MASQUERADE'], [], []))))
    t.dump({
        "nodes.json": k8s_list([k8s_node("node-a", "10.0.7.10", pod_cidr="10.244.4.0/24")]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.244.4.9", "10.0.7.10",
                    labels={"app": "client"}),
            k8s_pod("default", "server", "node-a", "10.244.4.10", "10.0.7.10",
                    labels={"app": "server"}, ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
    })
