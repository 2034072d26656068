"""Calico node building blocks shared by the Calico cases: tunl0, workload veths named
cali + sha1("<namespace>.<name>")[:11], /32 routes scope link, blackhole block routes proto bird,
proxy_arp on the workload veth, the pod side's 169.254.1.1 gateway."""
from topo import cali_name, ipip

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
