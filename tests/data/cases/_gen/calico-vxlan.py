"""calico-vxlan: two Calico nodes with vxlanMode Always: vxlan.calico (VNI 4096, port 4789, MTU
1450) carrying the node's IPv4VXLANTunnelAddr, routes "<block> via <peer tunnel addr> dev
vxlan.calico onlink", a permanent neighbour entry for the peer tunnel address and a bridge fdb
entry sending the peer's vxlan.calico MAC to the peer node."""
import sys

from calico_common import vxlan_pair

vxlan_pair(sys.argv[1] if len(sys.argv) > 1 else "calico-vxlan", "10.66.0.0/16")
