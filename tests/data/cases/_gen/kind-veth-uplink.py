"""kind-veth-uplink: a kind cluster (kindnet). Each node is a container whose eth0 is a veth into
docker's bridge network (172.18.0.0/16, gateway 172.18.0.1) -- the node's uplink, whose peer
lives in the Docker host's namespace, which is not part of the snapshot. Pods are on ptp veths
(kindnet: pod /24 address, default via the node-side 10.244.x.1).

The broken case: kindnet's masquerade rule is gone from KIND-MASQ-AGENT on kind-worker (the chain
still RETURNs cluster destinations, nothing masquerades the rest), so a pod's traffic to the
internet leaves through eth0 with its pod address, which nobody outside routes back.
`kind-veth-uplink-fixed` has kindnet's rules as installed.

ifindexes collide on purpose, as they do in kind: kind-worker's eth0 (ifindex 2) has its peer at
ifindex 4 in the Docker namespace, and kind-control-plane's second pod veth is ifindex 4 with its
peer at ifindex 2 (in that pod's namespace)."""
import sys

from topo import Netns, iptables_text, k8s_list, k8s_node, k8s_pod, kube_proxy, merge_rules, topology

CASE = sys.argv[1] if len(sys.argv) > 1 else "kind-veth-uplink"
FIXED = CASE.endswith("-fixed")
NODES = {"kind-control-plane": ("172.18.0.2", "10.244.0"),
         "kind-worker": ("172.18.0.3", "10.244.1")}
PODS = [("kind-control-plane", "kube-system", "coredns-5d78c9869d-4xq2v", "10.244.0.2", "veth1a2b3c4d"),
        ("kind-control-plane", "default", "web", "10.244.0.3", "veth5e6f7a8b"),
        ("kind-worker", "default", "client", "10.244.1.2", "veth9c0d1e2f")]


def kindnet_rules(masquerade):
    nat_chains = ["KIND-MASQ-AGENT"]
    nat = ['-A POSTROUTING -m addrtype ! --dst-type LOCAL -m comment --comment "kind-masq-agent: '
           'ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom '
           'KIND-MASQ-AGENT chain" -j KIND-MASQ-AGENT',
           '-A KIND-MASQ-AGENT -d 10.244.0.0/16 -m comment --comment "kind-masq-agent: local '
           'traffic is not subject to MASQUERADE" -j RETURN']
    if masquerade:
        nat.append('-A KIND-MASQ-AGENT -m comment --comment "kind-masq-agent: outbound traffic is '
                   'subject to MASQUERADE (must be last in chain)" -j MASQUERADE')
    return nat_chains, nat, [], []


with topology(CASE) as t:
    docker = Netns(t, "docker")  # the Docker host's side: not dumped
    docker.ip("link", "add", "br-kind", "type", "bridge")
    docker.ip("addr", "add", "172.18.0.1/16", "dev", "br-kind")
    docker.ip("link", "set", "br-kind", "up")
    for i, (name, (addr, pod_net)) in enumerate(NODES.items()):
        n = t.node(name)
        host_veth = "veth%02x" % (0xa0 + i)
        docker.ip("link", "add", host_veth, "type", "veth", "peer", "name", "eth0", "netns",
                  n.name)
        docker.ip("link", "set", host_veth, "master", "br-kind")
        docker.ip("link", "set", host_veth, "up")
        n.ip("addr", "add", addr + "/16", "dev", "eth0")
        n.ip("link", "set", "eth0", "up")
        n.ip("route", "add", "default", "via", "172.18.0.1", "dev", "eth0")
        n.sysctl("net.ipv4.ip_forward", "1")
    for name, (addr, pod_net) in NODES.items():
        n = t.nodes[name]
        for peer, (paddr, ppod_net) in NODES.items():
            if peer != name:
                n.ip("route", "add", ppod_net + ".0/24", "via", paddr, "dev", "eth0")
        broken = not FIXED and name == "kind-worker"
        n.iptables_restore(iptables_text(*merge_rules(kube_proxy([], "10.244.0.0/16"),
                                                      kindnet_rules(not broken))))
    for node, ns, name, ip, host in PODS:
        gw = NODES[node][1] + ".1"
        t.pod(node, ns, name, ip, host, prefix=24, gateway=gw, gateway_onlink=False)
        n = t.nodes[node]
        n.ip("addr", "add", gw + "/32", "dev", host)
        n.ip("route", "add", ip, "dev", host, "scope", "host")
    t.dump({
        "nodes.json": k8s_list([k8s_node(name, addr, pod_cidr=pod_net + ".0/24")
                                for name, (addr, pod_net) in NODES.items()]),
        "pods.json": k8s_list([k8s_pod(ns, name, node, ip, NODES[node][0],
                                       ports=[8080] if name == "web" else [])
                               for node, ns, name, ip, _ in PODS]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
    })
