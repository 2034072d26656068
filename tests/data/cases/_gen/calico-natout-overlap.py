"""calico-natout-overlap: the IPPool overlaps a network outside the cluster. Two Calico VXLAN
nodes (as calico-vxlan) with pool vxlan-pool 10.66.0.0/16 (natOutgoing: true); a VM network
10.66.250.0/24 lies outside the cluster behind the nodes' default gateway 10.10.0.1. A pod
reaching the VM 10.66.250.10 is not masqueraded (Felix's cali-nat-outgoing rule skips
destinations inside any pool), so it leaves with the pod address and the reply cannot return.

    python3 calico-natout-overlap.py                                  # the broken case
    python3 calico-natout-overlap.py calico-natout-overlap-fixed      # pool narrowed to /17
"""
import sys

from calico_common import vxlan_pair

CASE = sys.argv[1] if len(sys.argv) > 1 else "calico-natout-overlap"
vxlan_pair(CASE, "10.66.0.0/17" if CASE.endswith("-fixed") else "10.66.0.0/16")
