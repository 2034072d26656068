"""sarena-node: one healthy sarena node as sarenad sets it up (sarena_host/sarena_net, pod CIDR
10.20.0.0/24 on sarena_host, lxc veths, endpoint list, programs on every lxc and on sarena_host),
net.ipv4.conf.all.rp_filter=1 as distros set it, three pods and a ClusterIP Service api -> pod-c
with kube-proxy's chains. Unit tests mutate copies of it, one fault at a time."""
import sys

from sarena_common import endpoint_record, lxc_name, programs, sarena_node, sarena_pod
from topo import (iptables_text, k8s_endpointslice, k8s_list, k8s_node, k8s_pod, k8s_service,
                  kube_proxy, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "sarena-node"
PODS = [("pod-a", "10.20.0.10", "1a" * 32, {"app": "a"}, []),
        ("pod-b", "10.20.0.11", "2b" * 32, {"app": "b"}, [8080]),
        ("pod-c", "10.20.0.12", "3c" * 32, {"app": "api"}, [8080])]
SERVICES = [dict(ns="default", name="api", port_name="p80", cluster_ip="10.96.0.80", port=80,
                 endpoints=[("10.20.0.12", 8080, "node-a")])]

with topology(CASE) as t:
    a = sarena_node(t, "node-a", "10.0.9.10/24", "10.0.9.1", "10.20.0.1", "10.20.0.0/24")
    t.fixup(a, "eth0", physical)
    a.ip("neigh", "add", "10.0.9.1", "lladdr", "52:54:00:09:00:01", "dev", "eth0", "nud",
         "reachable")
    lxcs = []
    for name, ip, cid, _, _ in PODS:
        _, lxc = sarena_pod(t, "node-a", "default", name, ip, "10.20.0.1", cid)
        lxcs.append(lxc)
    a.sysctl("net.ipv4.conf.all.rp_filter", "1")
    a.iptables_restore(iptables_text(*kube_proxy(SERVICES, "10.20.0.0/16", "node-a")))
    eps = [endpoint_record(t, "node-a", "default", name, ip, "10.20.0.1", cid, i + 1)
           for i, (name, ip, cid, _, _) in enumerate(PODS)]
    t.dump({
        "nodes.json": k8s_list([k8s_node("node-a", "10.0.9.10", pod_cidr="10.20.0.0/24")]),
        "pods.json": k8s_list([
            k8s_pod("default", name, "node-a", ip, "10.0.9.10", labels=labels, ports=ports,
                    container_id="containerd://" + cid)
            for name, ip, cid, labels, ports in PODS]),
        "services.json": k8s_list([
            k8s_service("default", "api", "10.96.0.80", [(80, 8080, "TCP", None)],
                        selector={"app": "api"})]),
        "endpointslices.json": k8s_list([
            k8s_endpointslice("default", "api", [("10.20.0.12", "node-a", "pod-c", True)],
                              [("p80", 8080, "TCP")])]),
    })
    t.write_node_file("node-a", "sarena-endpoints.json", {"endpoints": eps})
    t.write_node_file("node-a", "sarena-programs.json", programs(t, "node-a", lxcs))
