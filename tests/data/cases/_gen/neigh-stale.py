"""neigh-stale: a Calico node (BGP pool) whose operator pinned a static neighbour entry for pod
default/server (10.67.1.6) on its cali veth; the pod was recreated behind the same address and
its eth0 now has another MAC. node-a sends every frame for the pod to the old MAC, which the
pod's eth0 drops as PACKET_OTHERHOST; nothing re-resolves a permanent entry.

  neigh-stale        the entry's lladdr is the old MAC (02:00:00:00:0a:06)
  neigh-stale-fixed  the repaired twin: the entry names the pod's live MAC (02:00:00:00:01:06)"""
import sys

from calico_common import calico_node, calico_pod, cali_name
from topo import (calico_ippool, calico_list, calico_rules, iptables_text, k8s_list, k8s_node,
                  k8s_pod, kube_proxy, merge_rules, physical, topology)

CASE = sys.argv[1] if len(sys.argv) > 1 else "neigh-stale"
FIXED = CASE.endswith("-fixed")
LIVE_MAC = "02:00:00:00:01:06"
OLD_MAC = "02:00:00:00:0a:06"

with topology(CASE) as t:
    rules = iptables_text(*merge_rules(kube_proxy([], "10.67.0.0/16"),
                                       calico_rules(["10.67.0.0/16"])))
    n = calico_node(t, "node-a", "eth0", "10.20.0.11/24", "10.20.0.1", block="10.67.1.0/26")
    n.iptables_restore(rules)
    t.fixup(n, "eth0", physical)
    calico_pod(t, "node-a", "default", "client", "10.67.1.5")
    calico_pod(t, "node-a", "default", "server", "10.67.1.6", pod_mac=LIVE_MAC)
    n.ip("neigh", "replace", "10.67.1.6", "lladdr", LIVE_MAC if FIXED else OLD_MAC, "dev",
         cali_name("default", "server"), "nud", "permanent")
    t.dump({
        "nodes.json": k8s_list([
            k8s_node("node-a", "10.20.0.11", annotations={
                "projectcalico.org/IPv4Address": "10.20.0.11/24"})]),
        "pods.json": k8s_list([
            k8s_pod("default", "client", "node-a", "10.67.1.5", "10.20.0.11"),
            k8s_pod("default", "server", "node-a", "10.67.1.6", "10.20.0.11", ports=[8080]),
        ]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
        "ippools.json": calico_list([
            calico_ippool("pool", "10.67.0.0/16", ipip="Never", vxlan="Never",
                          nat_outgoing=True)]),
    })
