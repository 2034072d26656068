"""EBPF-01: udev rewrote the pod veth MACs after the CNI recorded them; the eBPF delivery path
rewrites the destination MAC to the recorded pod MAC, which the pod's eth0 no longer has, so the pod
kernel discards the frame (PACKET_OTHERHOST). Retold for the sarena datapath as the case states it:
the pod CIDR routed through the host device only (no endpoint route), so host -> pod traffic is
delivered by from_host's local_delivery with the recorded MAC. The fixed twin is today's sarena
node: live MACs recorded and the endpoint route in place."""
import sys

from sarena_common import endpoint_record, programs, sarena_node, sarena_pod
from topo import k8s_list, k8s_node, k8s_pod, physical, topology

CASE = sys.argv[1] if len(sys.argv) > 1 else "EBPF-01"
CID = "3b6f0c2d9a8e4f17b5c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0"

with topology(CASE) as t:
    a = sarena_node(t, "node-a", "10.0.9.10/24", "10.0.9.1", "10.20.0.1", "10.20.0.0/24")
    t.fixup(a, "eth0", physical)
    stale = CASE == "EBPF-01"
    _, lxc = sarena_pod(t, "node-a", "default", "nginx", "10.20.0.77", "10.20.0.1", CID,
                        pod_mac="52:54:aa:10:00:02", host_mac="16:5e:2b:90:4c:11",
                        endpoint_route=not stale)
    ep = endpoint_record(t, "node-a", "default", "nginx", "10.20.0.77", "10.20.0.1", CID, 1,
                         pod_mac="9e:31:c4:55:17:08" if stale else None,
                         host_mac="aa:0b:12:ce:40:91" if stale else None)
    t.dump({
        "nodes.json": k8s_list([k8s_node("node-a", "10.0.9.10", pod_cidr="10.20.0.0/24")]),
        "pods.json": k8s_list([k8s_pod("default", "nginx", "node-a", "10.20.0.77", "10.0.9.10",
                                       labels={"app": "nginx"}, ports=[80],
                                       container_id="containerd://" + CID)]),
        "services.json": k8s_list([]),
        "endpointslices.json": k8s_list([]),
    })
    t.write_node_file("node-a", "sarena-endpoints.json", {"endpoints": [ep]})
    t.write_node_file("node-a", "sarena-programs.json", programs(t, "node-a", [lxc]))
