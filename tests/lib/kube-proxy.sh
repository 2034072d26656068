# shellcheck shell=bash
# kube-proxy's iptables-mode layout (v1.28) for a node namespace, installed with iptables-restore
# so the real netfilter does the real DNAT / REJECT:
#   nat:    PREROUTING/OUTPUT -> KUBE-SERVICES -> KUBE-SVC-<hash> -> KUBE-SEP-<hash> (DNAT),
#           KUBE-MARK-MASQ, POSTROUTING -> KUBE-POSTROUTING (MASQUERADE of marked traffic);
#   filter: INPUT/FORWARD/OUTPUT -> KUBE-PROXY-FIREWALL / KUBE-FORWARD / KUBE-SERVICES /
#           KUBE-FIREWALL, and for a Service without endpoints the REJECT
#           ("<svc> has no endpoints") in filter KUBE-SERVICES, as kube-proxy writes it.
# Services are single-port TCP with at most one endpoint (so a fault on the path of the one
# backend decides every connection; the diagnoser's fan-out over backends is unit-tested).
#
#   kp_rules CLUSTER_CIDR SERVICE...   prints iptables-restore input; SERVICE is
#       "NS/NAME:PORTNAME CLUSTER_IP PORT BACKEND_IP:TARGET_PORT" or with BACKEND "-" (none)
#   kp_restore NETNS CLUSTER_CIDR SERVICE...   installs it in NETNS (replaces nat and filter)

# kp_hash PREFIX TEXT: PREFIX + 16 characters of sha256(TEXT) (kube-proxy uses base32 of the
# hash; any stable 16 characters name the chains as well).
kp_hash() {
  printf '%s%s' "$1" "$(printf '%s' "$2" | sha256sum | cut -c1-16 | tr a-f A-F)"
}

kp_rules() {
  local cidr=$1; shift
  local nat_chains=":KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODEPORTS - [0:0]"
  local nat='-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully'
  local filt_chains=":KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]"
  local filt='-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally visible service portals" -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT'
  local s spn cip port be svc sep
  for s in "$@"; do
    read -r spn cip port be <<<"$s"
    if [ "$be" = "-" ]; then
      filt+=$'\n'"-A KUBE-SERVICES -d $cip/32 -p tcp -m comment --comment \"$spn has no endpoints\" -m tcp --dport $port -j REJECT --reject-with icmp-port-unreachable"
      continue
    fi
    svc=$(kp_hash KUBE-SVC- "${spn}tcp")
    sep=$(kp_hash KUBE-SEP- "${spn}tcp$be")
    nat_chains+=$'\n'":$svc - [0:0]"$'\n'":$sep - [0:0]"
    nat+=$'\n'"-A KUBE-SERVICES -d $cip/32 -p tcp -m comment --comment \"$spn cluster IP\" -m tcp --dport $port -j $svc"
    nat+=$'\n'"-A $svc ! -s $cidr -d $cip/32 -p tcp -m comment --comment \"$spn cluster IP\" -m tcp --dport $port -j KUBE-MARK-MASQ"
    nat+=$'\n'"-A $svc -m comment --comment \"$spn -> $be\" -j $sep"
    nat+=$'\n'"-A $sep -s ${be%:*}/32 -m comment --comment \"$spn\" -j KUBE-MARK-MASQ"
    nat+=$'\n'"-A $sep -p tcp -m comment --comment \"$spn\" -m tcp -j DNAT --to-destination $be"
  done
  nat+=$'\n''-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS'
  # Other components' chains (e.g. Felix's) from KP_EXTRA_{NAT,FILTER}{_CHAINS,}.
  printf '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n%s\n%s%s\n%sCOMMIT\n' \
    "$nat_chains" "${KP_EXTRA_NAT_CHAINS:+$KP_EXTRA_NAT_CHAINS$'\n'}" "$nat" "${KP_EXTRA_NAT:+$KP_EXTRA_NAT$'\n'}"
  printf '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n%s\n%s%s\n%sCOMMIT\n' \
    "$filt_chains" "${KP_EXTRA_FILTER_CHAINS:+$KP_EXTRA_FILTER_CHAINS$'\n'}" "$filt" "${KP_EXTRA_FILTER:+$KP_EXTRA_FILTER$'\n'}"
}

kp_restore() {
  local ns=$1; shift
  kp_rules "$@" | ip netns exec "$ns" iptables-restore
}
