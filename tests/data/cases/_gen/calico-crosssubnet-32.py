"""calico-crosssubnet-32: ipipMode CrossSubnet on nodes whose addresses are /32 leases (clouds
that hand out /32 DHCP leases; the gateway on-link). node-a and node-b look like one subnet
(10.20.0.0/24), but Calico decides CrossSubnet from the address's real prefix length: a /32
has no other node in its subnet, so BIRD tunnels towards every peer.

  calico-crosssubnet-32        the fault: calico-node's annotations still say /24 (written
                               before the lease became a /32), BIRD routed node-b's block
                               directly via eth0 — once calico-node restarts it tunnels.
  calico-crosssubnet-32-fixed  the repaired twin: annotations /32 as calico-node autodetects
                               them, every peer's block via tunl0 onlink."""
import sys

from calico_common import calico_node, calico_pod
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "calico-crosssubnet-32"
FIXED = CASE.endswith("-fixed")
NODES = {"node-a": ("10.20.0.11", "10.20.0.1", "10.67.1.0", "10.67.1.0/26"),
         "node-b": ("10.20.0.12", "10.20.0.1", "10.67.2.0", "10.67.2.0/26"),
         "node-c": ("10.30.0.13", "10.30.0.1", "10.67.3.0", "10.67.3.0/26")}

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.67.0.0/16"),
                                       calico_rules(["10.67.0.0/16"])))
    for name, (addr, gw, tun, block) in NODES.items():
        n = calico_node(t, name, "eth0", addr + "/32", gw, tunnel_addr=tun, block=block,
                        onlink_gw=True)
        n.iptables_restore(rules)
        t.fixup(n, "eth0", physical)
    for name, (addr, _, _, _) in NODES.items():
        n = t.nodes[name]
        for peer, (paddr, _, _, pblock) in NODES.items():
            if peer == name:
                continue
            same24 = paddr.rsplit(".", 1)[0] == addr.rsplit(".", 1)[0]
            if same24 and not FIXED:
                n.ip("route", "add", pblock, "via", paddr, "dev", "eth0", "proto", "bird",
                     "onlink")
            else:
                n.ip("route", "add", pblock, "via", paddr, "dev", "tunl0", "proto", "bird",
                     "onlink")
    calico_pod(t, "node-a", "default", "client", "10.67.1.5", mtu=1480)
    calico_pod(t, "node-b", "default", "near", "10.67.2.6", mtu=1480)
    calico_pod(t, "node-c", "default", "far", "10.67.3.7", mtu=1480)
    plen = "/32" if FIXED else "/24"
    t.dump({
        "nodes.json": k8s_list([
            k8s_node(name, addr, annotations={
                "projectcalico.org/IPv4Address": addr + plen,
                "projectcalico.org/IPv4IPIPTunnelAddr": tun})
            for name, (addr, _, tun, _) in NODES.items()]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.67.1.5", "10.20.0.11"),
            k8s_pod("default", "near", "node-b", "10.67.2.6", "10.20.0.12", ports=[8080]),
            k8s_pod("default", "far", "node-c", "10.67.3.7", "10.30.0.13", ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("cross-pool", "10.67.0.0/16", ipip="CrossSubnet", vxlan="Never",
                          nat_outgoing=True)]),
    })
