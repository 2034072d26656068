"""RPF-05: kube-router IPIP across subnets; node-b lacks the policy route for replies to node-a's
underlay address, so strict rp_filter drops the decapsulated packet arriving on tun-nodea."""
import sys

from topo import ipip, k8s_list, k8s_node, k8s_pod, physical, topology

CASE = sys.argv[1] if len(sys.argv) > 1 else "RPF-05"

with topology(CASE) as t:
    a = t.node("node-a")
    a.stub("eth0")
    a.ip("addr", "add", "192.168.10.10/24", "dev", "eth0")
    a.ip("link", "set", "eth0", "up")
    a.ip("route", "add", "default", "via", "192.168.10.1", "dev", "eth0")
    a.ip("link", "add", "kube-bridge", "type", "bridge")
    a.ip("addr", "add", "10.32.1.1/24", "dev", "kube-bridge")
    a.ip("link", "set", "kube-bridge", "up")
    a.stub("tun-nodeb", 1480)
    a.ip("link", "set", "tun-nodeb", "up")
    a.ip("route", "add", "10.32.2.0/24", "dev", "tun-nodeb", "proto", "17", "src",
         "192.168.10.10")
    a.ip("neigh", "add", "192.168.10.1", "lladdr", "02:00:c0:a8:0a:01", "dev", "eth0", "nud",
         "reachable")
    a.sysctl("net.ipv4.ip_forward", "1")
    t.fixup(a, "eth0", physical)
    t.fixup(a, "tun-nodeb", ipip(local="192.168.10.10", remote="192.168.20.20"))

    b = t.node("node-b")
    b.stub("eth0")
    b.ip("addr", "add", "192.168.20.20/24", "dev", "eth0")
    b.ip("link", "set", "eth0", "up")
    b.ip("route", "add", "default", "via", "192.168.20.1", "dev", "eth0")
    b.ip("link", "add", "kube-bridge", "type", "bridge")
    b.ip("addr", "add", "10.32.2.1/24", "dev", "kube-bridge")
    b.ip("link", "set", "kube-bridge", "up")
    b.stub("tun-nodea", 1480)
    b.ip("link", "set", "tun-nodea", "up")
    b.ip("route", "add", "10.32.1.0/24", "dev", "tun-nodea", "proto", "17", "src",
         "192.168.20.20")
    b.ip("neigh", "add", "192.168.20.1", "lladdr", "02:00:c0:a8:14:01", "dev", "eth0", "nud",
         "reachable")
    b.sysctl("net.ipv4.ip_forward", "1")
    b.sysctl("net.ipv4.conf.all.rp_filter", "1")
    t.fixup(b, "eth0", physical)
    t.fixup(b, "tun-nodea", ipip(local="192.168.20.20", remote="192.168.10.10"))
    if CASE != "RPF-05":
        # The fixed variant: kube-router's policy route for replies to node-a's underlay address.
        b.ip("rule", "add", "from", "10.32.2.0/24", "lookup", "77", "pref", "32765")
        b.ip("route", "add", "192.168.10.10", "dev", "tun-nodea", "table", "77")

    t.pod("node-b", "default", "api", "10.32.2.7", "veth5e1c0b2a", prefix=24, mtu=1480,
          master="kube-bridge", gateway="10.32.2.1", gateway_onlink=False)

    t.dump({
        "nodes.json": k8s_list([
            k8s_node("node-a", "192.168.10.10", pod_cidr="10.32.1.0/24"),
            k8s_node("node-b", "192.168.20.20", pod_cidr="10.32.2.0/24"),
        ]),
        "pods.json": k8s_list([
            k8s_pod("default", "api", "node-b", "10.32.2.7", "192.168.20.20",
                    labels={"app": "api"}, ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": {"apiVersion": "v1", "items": [], "kind": "List",
                                "metadata": {"resourceVersion": ""}},
    })
