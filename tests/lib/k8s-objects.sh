# shellcheck shell=bash
# Kubernetes / Calico API objects as `kubectl get ... -o json` and `calicoctl get ippools -o json`
# print them (the shapes the diagnoser's snapshot reader takes, docs/diag-snapshot.md), for
# snapshots of simulated nodes. Each function prints one object; k8s_list wraps objects read from
# stdin (one JSON value per object) into a List.
#
#   k8s_pod NS NAME NODE POD_IP HOST_IP [LABELS_JSON]
#   k8s_node NAME INTERNAL_IP [POD_CIDR] [ANNOTATIONS_JSON]
#   k8s_service NS NAME CLUSTER_IP PORT TARGET_PORT SELECTOR_JSON
#   k8s_endpointslice NS SERVICE TARGET_PORT [IP NODE POD]   (no endpoints without IP)
#   calico_ippool NAME CIDR IPIP_MODE VXLAN_MODE NAT_OUTGOING [BLOCK_SIZE]
#   k8s_list KIND < objects          kind of the List ("List" for kubectl, "IPPoolList")

k8s_pod() {
  jq -cn --arg ns "$1" --arg name "$2" --arg node "$3" --arg ip "$4" --arg host "$5" \
    --argjson labels "${6:-{\}}" '{
    apiVersion: "v1", kind: "Pod",
    metadata: {name: $name, namespace: $ns, labels: $labels, uid: ("uid-" + $ns + "-" + $name)},
    spec: {nodeName: $node, containers: [{name: "main", image: "registry.k8s.io/pause:3.9"}]},
    status: {phase: "Running", hostIP: $host, hostIPs: [{ip: $host}], podIP: $ip, podIPs: [{ip: $ip}],
             conditions: [{type: "Ready", status: "True"}]}}'
}

k8s_node() {
  jq -cn --arg name "$1" --arg ip "$2" --arg cidr "${3:-}" --argjson ann "${4:-{\}}" '{
    apiVersion: "v1", kind: "Node",
    metadata: {name: $name, annotations: $ann, labels: {"kubernetes.io/hostname": $name}},
    spec: (if $cidr == "" then {} else {podCIDR: $cidr, podCIDRs: [$cidr]} end),
    status: {addresses: [{type: "InternalIP", address: $ip}, {type: "Hostname", address: $name}],
             conditions: [{type: "Ready", status: "True"}]}}'
}

k8s_service() {
  jq -cn --arg ns "$1" --arg name "$2" --arg cip "$3" --argjson port "$4" --argjson tport "$5" \
    --argjson sel "$6" '{
    apiVersion: "v1", kind: "Service",
    metadata: {name: $name, namespace: $ns},
    spec: {type: "ClusterIP", clusterIP: $cip, clusterIPs: [$cip], selector: $sel,
           ipFamilies: ["IPv4"], internalTrafficPolicy: "Cluster", sessionAffinity: "None",
           ports: [{name: "http", port: $port, protocol: "TCP", targetPort: $tport}]},
    status: {loadBalancer: {}}}'
}

k8s_endpointslice() {
  jq -cn --arg ns "$1" --arg svc "$2" --argjson tport "$3" --arg ip "${4:-}" --arg node "${5:-}" \
    --arg pod "${6:-}" '{
    apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice", addressType: "IPv4",
    metadata: {name: ($svc + "-abcde"), namespace: $ns,
               labels: {"kubernetes.io/service-name": $svc,
                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
    ports: [{name: "http", port: $tport, protocol: "TCP"}]}
    + (if $ip == "" then {} else {endpoints: [{addresses: [$ip],
         conditions: {ready: true, serving: true, terminating: false}, nodeName: $node,
         targetRef: {kind: "Pod", namespace: $ns, name: $pod}}]} end)'
}

calico_ippool() {
  jq -cn --arg name "$1" --arg cidr "$2" --arg ipip "$3" --arg vxlan "$4" --argjson nat "$5" \
    --argjson bs "${6:-26}" '{
    apiVersion: "projectcalico.org/v3", kind: "IPPool", metadata: {name: $name},
    spec: {cidr: $cidr, blockSize: $bs, ipipMode: $ipip, vxlanMode: $vxlan, natOutgoing: $nat,
           nodeSelector: "all()", disabled: false, allowedUses: ["Workload", "Tunnel"]}}'
}

k8s_list() {
  local kind=${1:-List} api=v1
  [ "$kind" = IPPoolList ] && api=projectcalico.org/v3
  jq -cs --arg kind "$kind" --arg api "$api" '{apiVersion: $api, kind: $kind, items: ., metadata: {}}'
}
