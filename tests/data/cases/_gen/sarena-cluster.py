"""sarena-cluster: three sarena nodes on one underlay subnet (10.0.9.0/24), cluster CIDR
10.20.0.0/16, as a hybrid-mode sarenad on etcd sets them up: sarena_vxlan (collect-metadata,
UDP 8472, learning off, ARP off, MTU uplink - 50 = 1450) on every node, the cluster CIDR's
unreachable route, and per peer either '<cidr> dev sarena_vxlan scope link src <node IP>'
(tunnel) or '<cidr> via <peer eth0> dev eth0 src <node IP>' (native):
    node-a <-> node-b  tunnel      node-a <-> node-c  native      node-b <-> node-c  tunnel
Pods (MTU 1450): pod-a on node-a, pod-b on node-b, pod-c on node-c; ClusterIP default/web
(10.96.0.90:80) -> pod-b:8080 with kube-proxy's chains on every node; all.rp_filter=1.
sarena-cluster.json (overlay config, node config, tunnel map, peer map, node counters) and
a tunnel peer's own address is a /32 tunnel entry with SARENA_TUN_F_NODE (no route);
sarena-programs.json (from_container, from_host, from_overlay, to_overlay, from_netdev) are
written as `sarena-diag collect` writes them, with the live ifindexes and MACs. Unit tests
(tests/unit/diag_sarena_cluster_test.cc) mutate copies, one fault at a time."""
import sys

from sarena_common import endpoint_record, link_of, lxc_name, programs, sarena_node, sarena_pod
from topo import (iptables_text, k8s_endpointslice, k8s_list, k8s_node, k8s_pod, k8s_service,
                  kube_proxy, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "sarena-cluster"
CLUSTER = "10.20.0.0/16"
VNI = 1
MTU = 1450
NODES = [  # name, node id, eth0, node IP, pod CIDR, pods [(name, ip, container id)]
    ("node-a", 1, "10.0.9.10", "10.20.0.1", "10.20.0.0/24", [("pod-a", "10.20.0.10", "a1" * 32)]),
    ("node-b", 2, "10.0.9.11", "10.20.1.1", "10.20.1.0/24", [("pod-b", "10.20.1.10", "b2" * 32)]),
    ("node-c", 3, "10.0.9.12", "10.20.2.1", "10.20.2.0/24", [("pod-c", "10.20.2.10", "c3" * 32)]),
]
NATIVE = {frozenset(("node-a", "node-c"))}
SERVICES = [dict(ns="default", name="web", port_name="p80", cluster_ip="10.96.0.90", port=80,
                 endpoints=[("10.20.1.10", 8080, "node-b")])]


def mode(a, b):
    return "native" if frozenset((a, b)) in NATIVE else "tunnel"


with topology(CASE) as t:
    lxcs = {}
    for name, _, eth, node_ip, cidr, pods in NODES:
        ns = sarena_node(t, name, eth + "/24", "10.0.9.1", node_ip, cidr, mtu=MTU)
        t.fixup(ns, "eth0", physical)
        ns.ip("link", "add", "sarena_vxlan", "mtu", str(MTU), "type", "vxlan", "external",
              "dstport", "8472", "nolearning", "noudpcsum")
        ns.ip("link", "set", "sarena_vxlan", "arp", "off")
        ns.ip("link", "set", "sarena_vxlan", "up")
        ns.ip("route", "add", "unreachable", CLUSTER, "proto", "93")
        for peer, _, peth, _, pcidr, _ in NODES:
            if peer == name:
                continue
            if mode(name, peer) == "tunnel":
                ns.ip("route", "add", pcidr, "dev", "sarena_vxlan", "scope", "link", "src", node_ip,
                      "proto", "93")
            else:
                ns.ip("route", "add", pcidr, "via", peth, "dev", "eth0", "src", node_ip,
                      "proto", "93")
        lxcs[name] = []
        for pod, ip, cid in pods:
            _, lxc = sarena_pod(t, name, "default", pod, ip, node_ip, cid, mtu=MTU)
            lxcs[name].append(lxc)
        ns.sysctl("net.ipv4.conf.all.rp_filter", "1")
        ns.iptables_restore(iptables_text(*kube_proxy(SERVICES, CLUSTER, name)))

    records = {}
    for name, _, eth, node_ip, cidr, pods in NODES:
        records[name] = [endpoint_record(t, name, "default", pod, ip, node_ip, cid, i + 1, mtu=MTU)
                         for i, (pod, ip, cid) in enumerate(pods)]
    t.dump({
        "nodes.json": k8s_list([k8s_node(n, eth, pod_cidr=c) for n, _, eth, _, c, _ in NODES]),
        "pods.json": k8s_list([
            k8s_pod("default", pod, n, ip, eth, labels={"app": pod.split("-")[1]},
                    ports=[8080], container_id="containerd://" + cid)
            for n, _, eth, _, _, pods in NODES for pod, ip, cid in pods]),
        "services.json": k8s_list([
            k8s_service("default", "web", "10.96.0.90", [(80, 8080, "TCP", None)],
                        selector={"app": "b"})]),
        "endpointslices.json": k8s_list([
            k8s_endpointslice("default", "web", [("10.20.1.10", "node-b", "pod-b", True)],
                              [("p80", 8080, "TCP")])]),
    })
    for name, node_id, eth, node_ip, cidr, pods in NODES:
        ns = t.nodes[name]
        vx = link_of(t, ns, "sarena_vxlan")
        up = link_of(t, ns, "eth0")
        t.write_node_file(name, "sarena-endpoints.json", {"endpoints": records[name]})
        progs = programs(t, name, lxcs[name])
        pid = 60
        for ifname, direction, prog in [("sarena_vxlan", "ingress", "from_overlay"),
                                        ("sarena_vxlan", "egress", "to_overlay"),
                                        ("eth0", "ingress", "from_netdev")]:
            pid += 1
            progs["programs"].append({"ifname": ifname, "ifindex": link_of(t, ns, ifname)["ifindex"],
                                      "direction": direction, "mode": "tcx", "prog": prog,
                                      "id": pid})
        t.write_node_file(name, "sarena-programs.json", progs)
        tunnels, peers = [], []
        for peer, pid_, peth, _, pcidr, _ in NODES:
            if peer == name:
                continue
            tunnels.append({"family": "ipv4", "cidr": pcidr, "underlay": peth,
                            "mode": mode(name, peer), "node_id": pid_, "flags": 0})
            peers.append({"family": "ipv4", "underlay": peth, "node_id": pid_, "flags": 0})
            if mode(name, peer) == "tunnel":
                # SARENA_TUN_F_NODE: a tunnel peer's own address (/32), no route of its own.
                tunnels.append({"family": "ipv4", "cidr": peth + "/32", "underlay": peth,
                                "mode": "tunnel", "node_id": pid_, "flags": 1})
        t.write_node_file(name, "sarena-cluster.json", {
            "overlay": {"flags": 3, "vni": VNI, "vxlan_ifindex": vx["ifindex"],
                        "uplink_ifindex": up["ifindex"], "node_id": node_id,
                        "vxlan_mac": vx["address"], "uplink_mac": up["address"],
                        "underlay": eth, "cluster_cidr": CLUSTER},
            "config": {"pod_cidr": cidr, "node_ip": node_ip},
            "tunnels": tunnels,
            "peers": peers,
            "node_counters": [{"node_id": p["node_id"], "tx_packets": "4", "tx_bytes": "400",
                               "rx_packets": "4", "rx_bytes": "400"} for p in peers],
        })
