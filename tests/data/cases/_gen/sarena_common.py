"""Sarena node building blocks: the sarena_host <-> sarena_net veth pair with --node-ip /32 on
sarena_host, the pod-CIDR route via that IP, lxc veths (lxc + 11 hex) with their endpoint routes
(<pod IP>/32 dev lxc src <node IP>), pods with a /32 and a default
route via the gateway, and the files `sarena endpoint list -o json` and sarena-programs.json."""
import hashlib


def lxc_name(container_id, ifname="eth0"):
    return "lxc" + hashlib.sha256((container_id + ifname).encode()).hexdigest()[:11]


def sarena_node(t, node, eth_addr, eth_gw, node_ip, pod_cidr, mtu=1500):
    ns = t.node(node)
    ns.stub("eth0")
    ns.ip("addr", "add", eth_addr, "dev", "eth0")
    ns.ip("link", "set", "eth0", "up")
    ns.ip("route", "add", "default", "via", eth_gw, "dev", "eth0")
    ns.ip("link", "add", "sarena_host", "mtu", str(mtu), "type", "veth", "peer", "name",
          "sarena_net", "mtu", str(mtu))
    ns.ip("addr", "add", node_ip + "/32", "dev", "sarena_host")
    ns.ip("link", "set", "sarena_net", "up")
    ns.ip("link", "set", "sarena_host", "up")
    # The kernel refuses a local address as gateway ("Nexthop has invalid gateway"), so the pod
    # CIDR is an on-link route on sarena_host with the node IP as preferred source.
    ns.ip("route", "add", pod_cidr, "dev", "sarena_host", "scope", "link", "src", node_ip,
          "mtu", str(mtu))
    ns.sysctl("net.ipv4.ip_forward", "1")
    ns.sysctl("net.ipv4.conf.sarena_host.rp_filter", "0")
    ns.sysctl("net.ipv4.conf.sarena_net.rp_filter", "0")
    return ns


def sarena_pod(t, node, namespace, name, ip, node_ip, container_id, mtu=1500, pod_mac=None,
               host_mac=None, endpoint_route=True):
    host = lxc_name(container_id)
    p = t.pod(node, namespace, name, ip, host, mtu=mtu, gateway=node_ip, pod_mac=pod_mac,
              host_mac=host_mac)
    if endpoint_route:
        # sarenad's endpoint route (libsarena/datapath/endpoint.h EndpointRoute).
        t.nodes[node].ip("route", "add", ip + "/32", "dev", host, "scope", "link", "proto",
                         "static", "src", node_ip)
    return p, host


def link_of(t, netns, ifname):
    import json
    from topo import run
    return json.loads(run("ip", "-n", netns.name, "-j", "link", "show", "dev", ifname))[0]


def endpoint_record(t, node, namespace, name, ip, node_ip, container_id, endpoint_id, mtu=1500,
                    pod_mac=None, host_mac=None, host_ifindex=None):
    """One Endpoint as `sarena endpoint list -o json` prints it (protobuf JSON mapping with the
    .proto field names, uint64 as strings).
    MACs and ifindex default to the live values (what a healthy daemon recorded)."""
    ns = t.nodes[node]
    p = t.pods[(node, namespace, name)]
    host = lxc_name(container_id)
    live_host = link_of(t, ns, host)
    live_pod = link_of(t, p, "eth0")
    return {
        "ref": {"container_id": container_id, "ifname": "eth0"},
        "netns": "/var/run/netns/cni-%s" % container_id[:8],
        "ip": ip,
        "prefix_len": 32,
        "gateway": node_ip,
        "pod_mac": pod_mac or live_pod["address"],
        "host_ifname": host,
        "host_ifindex": host_ifindex or live_host["ifindex"],
        "host_mac": host_mac or live_host["address"],
        "endpoint_id": endpoint_id,
        "mtu": mtu,
        "pod_namespace": namespace,
        "pod_name": name,
        "counters": {"rx_packets": "12", "rx_bytes": "1320", "tx_packets": "10", "tx_bytes": "980"},
    }


def programs(t, node, lxcs, skip=()):
    """sarena-programs.json: from_container on each lxc (TCX ingress), from_host on sarena_host
    (TCX egress). `skip` lists interface names whose program is missing."""
    ns = t.nodes[node]
    out = []
    pid = 40
    for ifname in lxcs:
        pid += 1
        if ifname in skip:
            continue
        out.append({"ifname": ifname, "ifindex": link_of(t, ns, ifname)["ifindex"],
                    "direction": "ingress", "mode": "tcx", "prog": "from_container", "id": pid})
    if "sarena_host" not in skip:
        out.append({"ifname": "sarena_host", "ifindex": link_of(t, ns, "sarena_host")["ifindex"],
                    "direction": "egress", "mode": "tcx", "prog": "from_host", "id": 40})
    return {"programs": out}
