"""KP-01: a ClusterIP Service whose selector matches no pod. kube-proxy of that era installed the
REJECT only in filter OUTPUT (and Calico's cali-FORWARD accepts first), so pod traffic to the
ClusterIP is neither DNATed nor rejected: it follows the default route and is lost."""
import sys

from topo import (iptables_text, k8s_endpointslice, k8s_list, k8s_node, k8s_pod, k8s_service,
                  kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "KP-01"
FIXED = CASE != "KP-01"  # the fixed variant: labels match, an endpoint, current kube-proxy rules

NAT = [
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    '-A POSTROUTING -s 10.244.2.0/24 ! -o cni0 -j MASQUERADE',
    '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000',
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" '
    '-m mark --mark 0x4000/0x4000 -j MASQUERADE',
    '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the '
    'last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
]
FILTER = [
    '-A INPUT -j KUBE-FIREWALL',
    '-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -j KUBE-FIREWALL',
    '-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" '
    '-m mark --mark 0x8000/0x8000 -j DROP',
    '-A KUBE-SERVICES -d 10.96.120.40/32 -p tcp -m comment --comment "web/www:http has no '
    'endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable',
    '-A cali-FORWARD -s 10.244.0.0/16 -m comment --comment "cali:accept-pod-traffic" -j ACCEPT',
    '-A cali-FORWARD -d 10.244.0.0/16 -m comment --comment "cali:accept-pod-traffic" -j ACCEPT',
]

with topology(CASE) as t:
    a = t.node("node-a")
    a.stub("eth0")
    a.ip("addr", "add", "10.0.5.10/24", "dev", "eth0")
    a.ip("link", "set", "eth0", "up")
    a.ip("route", "add", "default", "via", "10.0.5.1", "dev", "eth0")
    a.ip("link", "add", "cni0", "type", "bridge")
    a.ip("addr", "add", "10.244.2.1/24", "dev", "cni0")
    a.ip("link", "set", "cni0", "up")
    a.sysctl("net.ipv4.ip_forward", "1")
    t.fixup(a, "eth0", physical)
    t.pod("node-a", "web", "client", "10.244.2.8", "veth7d1e0a33", prefix=24, master="cni0",
          gateway="10.244.2.1", gateway_onlink=False)
    t.pod("node-a", "web", "www-7c9f", "10.244.2.9", "veth0b4c9e12", prefix=24, master="cni0",
          gateway="10.244.2.1", gateway_onlink=False)
    if FIXED:
        a.iptables_restore(iptables_text(*merge_rules(
            kube_proxy([dict(ns="web", name="www", port_name="p80", cluster_ip="10.96.120.40",
                             port=80, endpoints=[("10.244.2.9", 8080, "node-a")])],
                       "10.244.0.0/16", "node-a"),
            ([], ['-A POSTROUTING -s 10.244.2.0/24 ! -o cni0 -j MASQUERADE'], [], []))))
    else:
        a.iptables_restore(iptables_text(
            ["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-NODEPORTS"], NAT,
            ["KUBE-FIREWALL", "KUBE-SERVICES", "cali-FORWARD"], FILTER))

    t.dump({
        "nodes.json": k8s_list([k8s_node("node-a", "10.0.5.10", pod_cidr="10.244.2.0/24")]),
        "pods.json": k8s_list([
            k8s_pod("web", "client", "node-a", "10.244.2.8", "10.0.5.10",
                    labels={"app": "client"}),
            k8s_pod("web", "www-7c9f", "node-a", "10.244.2.9", "10.0.5.10",
                    labels={"app": "www" if FIXED else "www-v2"}, ports=[8080]),
        ]),
        "services.json": k8s_list([
            k8s_service("web", "www", "10.96.120.40", [(80, 8080, "TCP", None)],
                        selector={"app": "www"}),
        ]),
        "endpointslices.json": k8s_list([
            k8s_endpointslice("web", "www",
                              [("10.244.2.9", "node-a", "www-7c9f", True)] if FIXED else [],
                              [("p80", 8080, "TCP")]),
        ]),
    })
