"""Calico node building blocks shared by the Calico cases: tunl0, workload veths named
cali + sha1("<namespace>.<name>")[:11], /32 routes scope link, blackhole block routes proto bird,
proxy_arp on the workload veth, the pod side's 169.254.1.1 gateway."""
from topo import (cali_name, calico_ippool, calico_list, calico_rules, ipip, iptables_text,
                  k8s_list, k8s_node, k8s_pod, kube_proxy, merge_rules, physical, topology)

CALI_MAC = "ee:ee:ee:ee:ee:ee"


def calico_node(t, node, iface, addr, gw, mtu=1500, tunnel_addr=None, tunl_mtu=1480,
                onlink_gw=False, block=None):
    ns = t.node(node)
    ns.stub(iface, mtu)
    ns.ip("addr", "add", addr, "dev", iface)
    ns.ip("link", "set", iface, "up")
    if onlink_gw:
        ns.ip("route", "add", gw, "dev", iface, "scope", "link")
    ns.ip("route", "add", "default", "via", gw, "dev", iface)
    ns.sysctl("net.ipv4.ip_forward", "1")
    if tunnel_addr is not None:
        ns.stub("tunl0", tunl_mtu)
        if tunnel_addr:
            ns.ip("addr", "add", tunnel_addr + "/32", "dev", "tunl0")
        ns.ip("link", "set", "tunl0", "up")
        t.fixup(ns, "tunl0", ipip())
    if block:
        ns.ip("route", "add", "blackhole", block, "proto", "bird")
    return ns


def calico_pod(t, node, namespace, name, ip, mtu=1500, pod_mac=None):
    host = cali_name(namespace, name)
    p = t.pod(node, namespace, name, ip, host, mtu=mtu, gateway="169.254.1.1", pod_mac=pod_mac,
              host_mac=CALI_MAC)
    ns = t.nodes[node]
    ns.ip("route", "add", ip, "dev", host, "scope", "link")
    ns.sysctl("net.ipv4.conf.%s.proxy_arp" % host, "1")
    ns.sysctl("net.ipv4.conf.%s.rp_filter" % host, "1")
    ns.sysctl("net.ipv4.neigh.%s.proxy_delay" % host, "0")
    p.ip("neigh", "add", "169.254.1.1", "lladdr", CALI_MAC, "dev", "eth0", "nud", "reachable")
    return p


# The two nodes of the VXLAN cases: (name, node address, vxlan.calico address, block).
VXLAN_NODES = [("node-a", "10.10.0.11", "10.66.1.192", "10.66.1.192/26"),
               ("node-b", "10.10.0.12", "10.66.2.192", "10.66.2.192/26")]
VXLAN_MACS = {"node-a": "66:f0:0a:0a:00:0b", "node-b": "66:f0:0a:0a:00:0c"}


def vxlan_pair(case, pool):
    """Writes cases/<case>: two Calico nodes with vxlanMode Always and IPPool `pool` (natOutgoing,
    kube-proxy's and Felix's rules for it): vxlan.calico (VNI 4096, port 4789, MTU 1450) with the
    node's IPv4VXLANTunnelAddr, routes "<block> via <peer tunnel addr> dev vxlan.calico onlink", a
    permanent neighbour entry for the peer tunnel address and a bridge fdb entry sending the peer's
    vxlan.calico MAC to the peer node; pod default/client on node-a, default/server on node-b."""
    with topology(case) as t:
        rules = iptables_text(*merge_rules(kube_proxy([], pool), calico_rules([pool])))
        for name, addr, vtep, block in VXLAN_NODES:
            n = calico_node(t, name, "eth0", addr + "/24", "10.10.0.1", block=block)
            n.ip("link", "add", "vxlan.calico", "mtu", "1450", "address", VXLAN_MACS[name],
                 "type", "vxlan", "id", "4096", "local", addr, "dev", "eth0", "dstport", "4789",
                 "nolearning")
            n.ip("addr", "add", vtep + "/32", "dev", "vxlan.calico")
            n.ip("link", "set", "vxlan.calico", "up")
            n.iptables_restore(rules)
            t.fixup(n, "eth0", physical)
        a, b = VXLAN_NODES
        for (name, _, _, _), (pname, paddr, pvtep, pblock) in [(a, b), (b, a)]:
            n = t.nodes[name]
            n.ip("route", "add", pblock, "via", pvtep, "dev", "vxlan.calico", "onlink", "proto",
                 "80")
            n.ip("neigh", "add", pvtep, "lladdr", VXLAN_MACS[pname], "dev", "vxlan.calico",
                 "nud", "permanent")
            n.exec("bridge", "fdb", "add", VXLAN_MACS[pname], "dev", "vxlan.calico", "dst",
                   paddr, "self", "permanent")
        calico_pod(t, "node-a", "default", "client", "10.66.1.195", mtu=1450)
        calico_pod(t, "node-b", "default", "server", "10.66.2.200", mtu=1450)
        t.dump({
            "nodes.json": k8s_list([
                k8s_node(name, addr, annotations={
                    "projectcalico.org/IPv4Address": addr + "/24",
                    "projectcalico.org/IPv4VXLANTunnelAddr": vtep})
                for name, addr, vtep, _ in VXLAN_NODES]),
            "pods.json": k8s_list([
                k8s_pod("default", "client", "node-a", "10.66.1.195", "10.10.0.11",
                        labels={"app": "client"}),
                k8s_pod("default", "server", "node-b", "10.66.2.200", "10.10.0.12",
                        labels={"app": "server"}, ports=[8080]),
            ]),
            "services.json": k8s_list([]),
            "endpointslices.json": k8s_list([]),
            "ippools.json": calico_list([
                calico_ippool("vxlan-pool", pool, ipip="Never", vxlan="Always",
                              nat_outgoing=True)]),
        })
