"""Builds diagnoser snapshot fixtures from real network namespaces.

Each case script describes nodes and pods; this module creates them as network namespaces (names
unique per run, nothing touches the root namespace, no traffic is sent), then dumps every file of
the docs/diag-snapshot.md snapshot format with the real tools (`ip -j -p ...`, `sysctl -a`, `bridge -j fdb`,
`iptables-save`) and removes the namespaces again, even on failure.

What this kernel cannot create (the ipip module is absent here) is created as a `dummy` device and
rewritten afterwards into the shape `ip -j -d link show` prints for that kind (see `fake_kind`).
Run as root:  python3 tests/data/cases/_gen/<CASE>.py
"""

import contextlib
import json
import os
import re
import shutil
import subprocess

_PREFIX = "sdg%x" % (os.getpid() % 0xFFFF)


def run(*argv, stdin=None):
    r = subprocess.run(list(argv), input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), r.stderr.strip()))
    return r.stdout


def physical(link):
    """A NIC: no linkinfo (what ip -d shows for a physical device), carrier up."""
    link.pop("linkinfo", None)
    up = "UP" in link["flags"]
    link["flags"] = ["BROADCAST", "MULTICAST"] + (["UP", "LOWER_UP"] if up else [])
    link["operstate"] = "UP" if up else "DOWN"
    link["qdisc"] = "mq"
    link["txqlen"] = 1000
    link["min_mtu"] = 68
    link["max_mtu"] = 9000
    return link


def ipip(local="any", remote="any"):
    """Rewrites a dummy into the shape of an ipip tunnel (tunl0 or a point-to-point one)."""

    def fix(link):
        link["link_type"] = "ipip"
        link["address"] = "0.0.0.0" if local == "any" else local
        link["broadcast"] = "0.0.0.0" if remote == "any" else remote
        up = "UP" in link["flags"]
        link["flags"] = ["NOARP"] + (["UP", "LOWER_UP"] if up else [])
        link["operstate"] = "UNKNOWN" if up else "DOWN"
        link["qdisc"] = "noqueue"
        link["min_mtu"] = 0
        link["max_mtu"] = 0
        link["linkinfo"] = {
            "info_kind": "ipip",
            "info_data": {"proto": "ipip", "remote": remote, "local": local, "ttl": 0,
                          "pmtudisc": True},
        }
        return link

    return fix


def bond():
    def fix(link):
        link = physical(link)
        link["flags"].insert(2, "MASTER")
        link["qdisc"] = "noqueue"
        link["linkinfo"] = {"info_kind": "bond", "info_data": {"mode": "active-backup",
                                                                "miimon": 100}}
        return link

    return fix


class Netns:
    def __init__(self, topo, label):
        self.topo = topo
        self.label = label
        self.name = "%s-%s" % (_PREFIX, label)
        run("ip", "netns", "add", self.name)
        topo._netns.append(self)
        self.ip("link", "set", "lo", "up")

    def stub(self, ifname, mtu=1500):
        """A device to stand in for one this kernel cannot create (NIC, ipip, bond): an ifb,
        rewritten at dump time by the fixup registered for it."""
        self.ip("link", "add", ifname, "mtu", str(mtu), "type", "ifb")

    def ip(self, *args):
        return run("ip", "-n", self.name, *args)

    def exec(self, *argv, stdin=None):
        return run("ip", "netns", "exec", self.name, *argv, stdin=stdin)

    def sysctl(self, key, value):
        self.exec("sysctl", "-q", "-w", "%s=%s" % (key, value))

    def iptables_restore(self, text):
        self.exec("iptables-restore", stdin=text)


class Topo:
    def __init__(self, case_id):
        self.case_id = case_id
        self.out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                case_id)
        self._netns = []
        self.nodes = {}  # name -> Netns
        self.pods = {}   # (node, ns, name) -> Netns
        self.fixups = {}  # (netns label, ifname) -> fn(link dict) -> link dict

    def node(self, name):
        ns = Netns(self, "n-" + name)
        self.nodes[name] = ns
        return ns

    def pod(self, node, namespace, name, ip, host_ifname, mtu=1500, prefix=32, master=None,
            gateway=None, pod_mac=None, host_mac=None, gateway_onlink=True):
        """A pod netns joined to `node` by a veth: eth0 (pod side) <-> host_ifname (node side).

        The pod gets ip/prefix on eth0, an on-link route to `gateway` and a default route via it.
        With `master` the host side is enslaved to that bridge.
        """
        nns = self.nodes[node]
        p = Netns(self, "p-%s-%s" % (namespace, name))
        self.pods[(node, namespace, name)] = p
        nns.ip("link", "add", host_ifname, "mtu", str(mtu), "type", "veth", "peer", "name",
               "eth0", "mtu", str(mtu), "netns", p.name)
        if host_mac:
            nns.ip("link", "set", host_ifname, "address", host_mac)
        if pod_mac:
            p.ip("link", "set", "eth0", "address", pod_mac)
        if master:
            nns.ip("link", "set", host_ifname, "master", master)
        nns.ip("link", "set", host_ifname, "up")
        p.ip("addr", "add", "%s/%d" % (ip, prefix), "dev", "eth0")
        p.ip("link", "set", "eth0", "up")
        if gateway:
            if gateway_onlink and prefix == 32:
                p.ip("route", "add", gateway, "dev", "eth0", "scope", "link")
            p.ip("route", "add", "default", "via", gateway, "dev", "eth0")
        return p

    def fixup(self, ns, ifname, fn):
        self.fixups[(ns.label, ifname)] = fn

    # -- dumping ---------------------------------------------------------------------------------

    def _dump_ns(self, ns, d, node=True):
        os.makedirs(d, exist_ok=True)

        def write_json(fname, argv):
            data = json.loads(run(*argv) or "[]")
            if fname == "ip-link.json":
                data = [self.fixups.get((ns.label, l["ifname"]), lambda x: x)(l) for l in data]
            with open(os.path.join(d, fname), "w") as f:
                json.dump(data, f, indent=4)
                f.write("\n")

        write_json("ip-link.json", ["ip", "-n", ns.name, "-j", "-d", "link", "show"])
        write_json("ip-addr.json", ["ip", "-n", ns.name, "-j", "addr", "show"])
        write_json("ip-route.json", ["ip", "-n", ns.name, "-j", "route", "show", "table", "all"])
        write_json("ip-rule.json", ["ip", "-n", ns.name, "-j", "rule", "show"])
        write_json("ip-neigh.json", ["ip", "-n", ns.name, "-j", "neigh", "show"])
        sysctl = ns.exec("sysctl", "-a")
        keep = [l for l in sysctl.splitlines()
                if l.startswith("net.ipv4.") or l.startswith("net.bridge.")]
        with open(os.path.join(d, "sysctl.txt"), "w") as f:
            f.write("\n".join(keep) + "\n")
        if node:
            write_json("bridge-fdb.json", ["ip", "netns", "exec", ns.name, "bridge", "-j", "fdb",
                                           "show"])
            text = ns.exec("iptables-save")
            text = re.sub(r" on \w{3} \w{3} +\d+ [\d:]+ \d{4}", " on Mon Jan  5 10:00:00 2026", text)
            with open(os.path.join(d, "iptables-save.txt"), "w") as f:
                f.write(text)

    def dump(self, cluster):
        """Writes nodes/<node>/..., nodes/<node>/pods/<ns>/<pod>/... and cluster/<file> for each
        `cluster` entry (file name -> JSON-able object)."""
        if os.path.isdir(self.out):
            shutil.rmtree(self.out)
        for name, ns in self.nodes.items():
            self._dump_ns(ns, os.path.join(self.out, "nodes", name))
        for (node, namespace, name), ns in self.pods.items():
            self._dump_ns(ns, os.path.join(self.out, "nodes", node, "pods", namespace, name),
                          node=False)
        os.makedirs(os.path.join(self.out, "cluster"), exist_ok=True)
        for fname, obj in cluster.items():
            with open(os.path.join(self.out, "cluster", fname), "w") as f:
                json.dump(obj, f, indent=4)
                f.write("\n")

    def write_node_file(self, node, fname, obj):
        d = os.path.join(self.out, "nodes", node)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, fname), "w") as f:
            if isinstance(obj, str):
                f.write(obj)
            else:
                json.dump(obj, f, indent=4)
                f.write("\n")

    def remove(self, relpath):
        p = os.path.join(self.out, relpath)
        if os.path.exists(p):
            os.remove(p)

    def cleanup(self):
        for ns in reversed(self._netns):
            subprocess.run(["ip", "netns", "del", ns.name], capture_output=True)
        self._netns = []


@contextlib.contextmanager
def topology(case_id):
    t = Topo(case_id)
    try:
        yield t
    finally:
        t.cleanup()


# -- Kubernetes objects in the API's JSON shapes (kubectl get ... -o json) ----------------------

_UID = [0]


def _uid():
    _UID[0] += 1
    return "5f0c%04x-1d2e-4b3c-9a8b-0000000%05x" % (_UID[0], _UID[0])


def k8s_list(items):
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}


def k8s_node(name, internal_ip, pod_cidr=None, annotations=None, labels=None, ready=True):
    n = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": dict(annotations or {}),
            "creationTimestamp": "2026-01-05T09:00:00Z",
            "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux", **(labels or {})},
            "name": name,
            "resourceVersion": "1000",
            "uid": _uid(),
        },
        "spec": {},
        "status": {
            "addresses": [{"address": internal_ip, "type": "InternalIP"},
                          {"address": name, "type": "Hostname"}],
            "conditions": [{"lastHeartbeatTime": "2026-01-05T09:59:00Z",
                            "lastTransitionTime": "2026-01-05T09:00:30Z",
                            "message": "kubelet is posting ready status",
                            "reason": "KubeletReady",
                            "status": "True" if ready else "False", "type": "Ready"}],
            "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.2",
                         "kernelVersion": "6.1.0-13-amd64", "kubeProxyVersion": "v1.28.4",
                         "kubeletVersion": "v1.28.4", "operatingSystem": "linux",
                         "osImage": "Debian GNU/Linux 12 (bookworm)"},
        },
    }
    if pod_cidr:
        n["spec"]["podCIDR"] = pod_cidr
        n["spec"]["podCIDRs"] = [pod_cidr]
    return n


def k8s_pod(namespace, name, node, pod_ip, host_ip, labels=None, ports=(), host_network=False,
            ready=True, container_id=None, image="registry.k8s.io/e2e-test-images/agnhost:2.45"):
    cports = [{"containerPort": p, "name": "p%d" % p, "protocol": proto}
              for (p, proto) in [(x, "TCP") if isinstance(x, int) else x for x in ports]]
    container = {"image": image, "imagePullPolicy": "IfNotPresent", "name": name.split("-")[0],
                 "resources": {}, "terminationMessagePath": "/dev/termination-log",
                 "terminationMessagePolicy": "File"}
    if cports:
        container["ports"] = cports
    import hashlib
    cid = container_id or ("containerd://" +
                           hashlib.sha256(("%s/%s" % (namespace, name)).encode()).hexdigest())
    p = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"creationTimestamp": "2026-01-05T09:10:00Z", "labels": dict(labels or {}),
                     "name": name, "namespace": namespace, "resourceVersion": "2000",
                     "uid": _uid()},
        "spec": {"containers": [container], "dnsPolicy": "ClusterFirst",
                 "enableServiceLinks": True, "nodeName": node, "restartPolicy": "Always",
                 "schedulerName": "default-scheduler", "securityContext": {},
                 "serviceAccountName": "default", "terminationGracePeriodSeconds": 30},
        "status": {
            "conditions": [{"lastProbeTime": None, "lastTransitionTime": "2026-01-05T09:10:05Z",
                            "status": "True" if ready else "False", "type": "Ready"}],
            "containerStatuses": [{"containerID": cid, "image": image, "imageID": image,
                                   "lastState": {}, "name": container["name"], "ready": ready,
                                   "restartCount": 0, "started": True,
                                   "state": {"running": {"startedAt": "2026-01-05T09:10:04Z"}}}],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "phase": "Running",
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "qosClass": "BestEffort",
            "startTime": "2026-01-05T09:10:00Z",
        },
    }
    if host_network:
        p["spec"]["hostNetwork"] = True
    return p


def k8s_service(namespace, name, cluster_ip, ports, selector=None, svc_type="ClusterIP",
                external_traffic_policy=None, lb_source_ranges=None, lb_ip=None):
    """ports: [(port, targetPort, protocol, nodePort or None)]"""
    sp = []
    for (port, target, proto, node_port) in ports:
        e = {"name": "p%d" % port, "port": port, "protocol": proto, "targetPort": target}
        if node_port:
            e["nodePort"] = node_port
        sp.append(e)
    s = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"creationTimestamp": "2026-01-05T09:05:00Z", "name": name,
                     "namespace": namespace, "resourceVersion": "1500", "uid": _uid()},
        "spec": {"clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
                 "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
                 "ipFamilyPolicy": "SingleStack", "ports": sp, "sessionAffinity": "None",
                 "type": svc_type},
        "status": {"loadBalancer": {}},
    }
    if selector is not None:
        s["spec"]["selector"] = selector
    if external_traffic_policy:
        s["spec"]["externalTrafficPolicy"] = external_traffic_policy
    if lb_source_ranges:
        s["spec"]["loadBalancerSourceRanges"] = lb_source_ranges
    if lb_ip:
        s["status"]["loadBalancer"] = {"ingress": [{"ip": lb_ip, "ipMode": "VIP"}]}
    return s


def k8s_endpointslice(namespace, service, endpoints, ports):
    """endpoints: [(ip, node, pod_name, ready)]; ports: [(name, port, protocol)]"""
    s = {
        "addressType": "IPv4",
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"creationTimestamp": "2026-01-05T09:05:00Z",
                     "generateName": service + "-",
                     "labels": {"endpointslice.kubernetes.io/managed-by":
                                "endpointslice-controller.k8s.io",
                                "kubernetes.io/service-name": service},
                     "name": service + "-x7k2p", "namespace": namespace,
                     "ownerReferences": [{"apiVersion": "v1", "blockOwnerDeletion": True,
                                          "controller": True, "kind": "Service",
                                          "name": service, "uid": _uid()}],
                     "resourceVersion": "1600", "uid": _uid()},
        "ports": [{"name": n, "port": p, "protocol": pr} for (n, p, pr) in ports],
    }
    if endpoints:
        s["endpoints"] = [{"addresses": [ip],
                           "conditions": {"ready": ready, "serving": ready,
                                          "terminating": False},
                           "nodeName": node,
                           "targetRef": {"kind": "Pod", "name": pod, "namespace": namespace,
                                         "uid": _uid()}}
                          for (ip, node, pod, ready) in endpoints]
    return s


def calico_ippool(name, cidr, ipip="Never", vxlan="Never", nat_outgoing=True, block_size=26,
                  disabled=False):
    """projectcalico.org/v3 IPPool as `calicoctl get ippools -o json` prints it."""
    return {
        "apiVersion": "projectcalico.org/v3",
        "kind": "IPPool",
        "metadata": {"creationTimestamp": "2026-01-05T09:01:00Z", "name": name,
                     "resourceVersion": "900", "uid": _uid()},
        "spec": {"allowedUses": ["Workload", "Tunnel"], "blockSize": block_size, "cidr": cidr,
                 "disabled": disabled, "ipipMode": ipip, "natOutgoing": nat_outgoing,
                 "nodeSelector": "all()", "vxlanMode": vxlan},
    }


def calico_list(items):
    return {"apiVersion": "projectcalico.org/v3", "items": items, "kind": "IPPoolList",
            "metadata": {"resourceVersion": "950"}}


def cali_name(namespace, name):
    import hashlib
    return "cali" + hashlib.sha1(("%s.%s" % (namespace, name)).encode()).hexdigest()[:11]


# -- netfilter rule sets in the layouts the real components install ---------------------------

def _kp_hash(prefix, text):
    import base64
    import hashlib
    h = base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()
    return prefix + h[:16]


KUBE_PROXY_NAT_BASE = [
    ":KUBE-EXT-PLACEHOLDER",  # removed below; keeps the list shape obvious
]


def kube_proxy(services, cluster_cidr, node_name=None):
    """iptables-restore input in kube-proxy v1.28's iptables-mode layout.

    services: list of dicts {ns, name, port_name, proto ("tcp"), cluster_ip, port,
      node_port (opt), lb_ip (opt), source_ranges (opt list), etp_local (bool),
      endpoints: [(ip, target_port, node)]}.
    """
    nat_chains = ["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-NODEPORTS"]
    filt_chains = ["KUBE-EXTERNAL-SERVICES", "KUBE-FIREWALL", "KUBE-FORWARD",
                   "KUBE-KUBELET-CANARY", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL",
                   "KUBE-SERVICES", "KUBE-PROXY-CANARY"]
    nat, filt = [], []
    nat += [
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
        '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000',
        '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
        '-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0',
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" '
        '-j MASQUERADE --random-fully',
    ]
    filt += [
        '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer '
        'firewall" -j KUBE-PROXY-FIREWALL',
        '-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS',
        '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally visible '
        'service portals" -j KUBE-EXTERNAL-SERVICES',
        '-A INPUT -j KUBE-FIREWALL',
        '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer '
        'firewall" -j KUBE-PROXY-FIREWALL',
        '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
        '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" '
        '-j KUBE-SERVICES',
        '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally visible '
        'service portals" -j KUBE-EXTERNAL-SERVICES',
        '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer '
        'firewall" -j KUBE-PROXY-FIREWALL',
        '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" '
        '-j KUBE-SERVICES',
        '-A OUTPUT -j KUBE-FIREWALL',
        '-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming '
        'localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP',
        '-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP',
        '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark '
        '0x4000/0x4000 -j ACCEPT',
        '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack '
        '--ctstate RELATED,ESTABLISHED -j ACCEPT',
    ]
    tail_nat = []
    for s in services:
        spn = "%s/%s:%s" % (s["ns"], s["name"], s["port_name"])
        proto = s.get("proto", "tcp")
        svc = _kp_hash("KUBE-SVC-", spn + proto)
        ext = _kp_hash("KUBE-EXT-", spn + proto)
        svl = _kp_hash("KUBE-SVL-", spn + proto)
        fw = _kp_hash("KUBE-FW-", spn + proto)
        eps = s.get("endpoints", [])
        match = "-p %s -m %s --dport %d" % (proto, proto, s["port"])
        if not eps:
            filt.append('-A KUBE-SERVICES -d %s/32 -p %s -m comment --comment "%s has no '
                        'endpoints" -m %s --dport %d -j REJECT --reject-with '
                        'icmp-port-unreachable' % (s["cluster_ip"], proto, spn, proto, s["port"]))
            if s.get("node_port"):
                filt.append('-A KUBE-EXTERNAL-SERVICES -p %s -m comment --comment "%s has no '
                            'endpoints" -m addrtype --dst-type LOCAL -m %s --dport %d -j REJECT '
                            '--reject-with icmp-port-unreachable'
                            % (proto, spn, proto, s["node_port"]))
            continue
        nat_chains.append(svc)
        nat.append('-A KUBE-SERVICES -d %s/32 -p %s -m comment --comment "%s cluster IP" -m %s '
                   '--dport %d -j %s' % (s["cluster_ip"], proto, spn, proto, s["port"], svc))
        nat.append('-A %s ! -s %s -d %s/32 -p %s -m comment --comment "%s cluster IP" -m %s '
                   '--dport %d -j KUBE-MARK-MASQ'
                   % (svc, cluster_cidr, s["cluster_ip"], proto, spn, proto, s["port"]))

        def seps(chain, endpoints):
            n = len(endpoints)
            for i, (ip, tport, _node) in enumerate(endpoints):
                sep = _kp_hash("KUBE-SEP-", spn + proto + "%s:%d" % (ip, tport))
                if sep not in nat_chains:
                    nat_chains.append(sep)
                    nat.append('-A %s -s %s/32 -m comment --comment "%s" -j KUBE-MARK-MASQ'
                               % (sep, ip, spn))
                    nat.append('-A %s -p %s -m comment --comment "%s" -m %s -j DNAT '
                               '--to-destination %s:%d' % (sep, proto, spn, proto, ip, tport))
                left = n - i
                stat = ("" if left == 1 else
                        " -m statistic --mode random --probability %.11f" % (1.0 / left))
                nat.append('-A %s -m comment --comment "%s -> %s:%d"%s -j %s'
                           % (chain, spn, ip, tport, stat, sep))

        seps(svc, eps)
        external = s.get("node_port") or s.get("lb_ip")
        if external:
            nat_chains.append(ext)
            if s.get("etp_local"):
                nat_chains.append(svl)
                nat.append('-A %s -s %s -m comment --comment "pod traffic for %s external '
                           'destinations" -j %s' % (ext, cluster_cidr, spn, svc))
                nat.append('-A %s -m comment --comment "masquerade LOCAL traffic for %s external '
                           'destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ'
                           % (ext, spn))
                nat.append('-A %s -m comment --comment "route LOCAL traffic for %s external '
                           'destinations" -m addrtype --src-type LOCAL -j %s' % (ext, spn, svc))
                local = [e for e in eps if e[2] == node_name]
                if local:
                    nat.append('-A %s -j %s' % (ext, svl))
                    seps(svl, local)
                else:
                    nat.append('-A %s -m comment --comment "%s has no local endpoints" -j '
                               'KUBE-MARK-DROP' % (ext, spn))
                    if "KUBE-MARK-DROP" not in nat_chains:
                        nat_chains.append("KUBE-MARK-DROP")
                        nat.append('-A KUBE-MARK-DROP -j MARK --set-xmark 0x8000/0x8000')
                    if s.get("node_port"):
                        filt.append('-A KUBE-EXTERNAL-SERVICES -p %s -m comment --comment "%s has '
                                    'no local endpoints" -m addrtype --dst-type LOCAL -m %s '
                                    '--dport %d -j DROP' % (proto, spn, proto, s["node_port"]))
            else:
                nat.append('-A %s -m comment --comment "masquerade traffic for %s external '
                           'destinations" -j KUBE-MARK-MASQ' % (ext, spn))
                nat.append('-A %s -j %s' % (ext, svc))
            if s.get("node_port"):
                tail_nat.append('-A KUBE-NODEPORTS -p %s -m comment --comment "%s" -m %s --dport '
                                '%d -j %s' % (proto, spn, proto, s["node_port"], ext))
            if s.get("lb_ip"):
                target = ext
                if s.get("source_ranges"):
                    nat_chains.append(fw)
                    target = fw
                    for cidr in s["source_ranges"]:
                        nat.append('-A %s -s %s -m comment --comment "%s loadbalancer IP" -j %s'
                                   % (fw, cidr, spn, ext))
                    nat.append('-A %s -m comment --comment "%s loadbalancer IP" -j KUBE-MARK-DROP'
                               % (fw, spn))
                    if "KUBE-MARK-DROP" not in nat_chains:
                        nat_chains.append("KUBE-MARK-DROP")
                        nat.append('-A KUBE-MARK-DROP -j MARK --set-xmark 0x8000/0x8000')
                    filt.append('-A KUBE-PROXY-FIREWALL -d %s/32 -p %s -m comment --comment "%s '
                                'traffic not accepted by %s" -m %s --dport %d -j DROP'
                                % (s["lb_ip"], proto, spn, fw, proto, s["port"]))
                nat.append('-A KUBE-SERVICES -d %s/32 -p %s -m comment --comment "%s loadbalancer '
                           'IP" -m %s --dport %d -j %s'
                           % (s["lb_ip"], proto, spn, proto, s["port"], target))
    if "KUBE-MARK-DROP" in nat_chains:
        filt.append('-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping '
                    'marked packets" -m mark --mark 0x8000/0x8000 -j DROP')
    nat += tail_nat
    nat.append('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this '
               'must be the last rule in this chain" -m addrtype --dst-type LOCAL -j '
               'KUBE-NODEPORTS')
    return nat_chains, nat, filt_chains, filt


def iptables_text(nat_chains=(), nat=(), filt_chains=(), filt=(), mangle=()):
    """Assembles iptables-restore input (tables nat, filter, mangle)."""
    out = ["*nat"]
    out += [":%s - [0:0]" % c for c in dict.fromkeys(nat_chains)]
    out += list(nat) + ["COMMIT", "*filter"]
    out += [":%s - [0:0]" % c for c in dict.fromkeys(filt_chains)]
    out += list(filt) + ["COMMIT"]
    if mangle:
        out += ["*mangle"] + list(mangle) + ["COMMIT"]
    return "\n".join(out) + "\n"


def merge_rules(*parts):
    """Concatenates (nat_chains, nat, filt_chains, filt) tuples."""
    res = ([], [], [], [])
    for p in parts:
        for i in range(4):
            res[i].extend(p[i])
    return res


def calico_rules(pool_cidrs, nat_outgoing=True):
    """The parts of Felix's iptables layout the path depends on: workload forwarding accepted in
    cali-FORWARD, and natOutgoing MASQUERADE (Felix matches ipsets cali40masq-ipam-pools /
    cali40all-ipam-pools; the same test is written here with the pool CIDRs)."""
    nat_chains = ["cali-POSTROUTING", "cali-nat-outgoing"]
    nat = ['-A POSTROUTING -m comment --comment "cali:O3lYWMrLQYEMJtB5" -j cali-POSTROUTING',
           '-A cali-POSTROUTING -m comment --comment "cali:Z-c7XtVd2Bq7s_hA" -j cali-nat-outgoing']
    if nat_outgoing:
        for c in pool_cidrs:
            others = "".join(" ! -d %s" % o for o in pool_cidrs[:1])
            nat.append('-A cali-nat-outgoing -s %s%s -m comment --comment "cali:flqWnvo8yq4ULQLa" '
                       '-j MASQUERADE --random-fully' % (c, others))
    filt_chains = ["cali-FORWARD", "cali-from-hep-forward", "cali-to-hep-forward"]
    filt = ['-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD',
            '-A cali-FORWARD -m comment --comment "cali:vjrMJCRpqwy5oRoX" -j MARK --set-xmark '
            '0x0/0xe0000',
            '-A cali-FORWARD -i cali+ -m comment --comment "cali:8ZoYfO5HKXWbB3pk" -j ACCEPT',
            '-A cali-FORWARD -o cali+ -m comment --comment "cali:jdEuaPBe14V2hutn" -j ACCEPT',
            '-A cali-FORWARD -i tunl0 -m comment --comment "cali:IPIP" -j ACCEPT']
    return nat_chains, nat, filt_chains, filt
