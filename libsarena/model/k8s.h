// Kubernetes objects as `kubectl get <kind> -A -o json` prints them (v1 List with "items"), reduced
// to what the path model needs, plus the cluster-wide index the diagnoser queries: pods by
// namespace/name and by IP, Services by namespace/name, cluster IP and node port, nodes by name and
// by any of their addresses, the endpoints of a Service port, and the Calico IP pools.
// Field names follow the Kubernetes API reference (core/v1 Pod, Node, Service, Endpoints;
// discovery.k8s.io/v1 EndpointSlice).
#ifndef LIBSARENA_MODEL_K8S_H_
#define LIBSARENA_MODEL_K8S_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/ippool.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by key

/// Value of `key` in `labels`, or nullptr.
const std::string* FindLabel(const Labels& labels, absl::string_view key);
/// Whether `labels` carry every key=value of `selector` (an equality-based label selector:
/// all requirements ANDed, so an empty selector matches every label set; Kubernetes "Labels
/// and Selectors").
bool SelectorMatches(const Labels& selector, const Labels& labels);

struct ContainerPort {
  std::string name;
  uint16_t container_port = 0;
  uint16_t host_port = 0;       // 0 = none
  uint8_t proto = 6;            // IP protocol number (TCP default)
};

struct Pod {
  std::string namespace_;       // metadata.namespace
  std::string name;
  std::string uid;
  Labels labels;
  Labels annotations;
  std::string node_name;        // spec.nodeName ("" when unscheduled)
  bool host_network = false;    // spec.hostNetwork
  std::string phase;            // status.phase
  std::optional<net::Ipv4> pod_ip;     // status.podIP (IPv4)
  std::vector<net::Ipv4> pod_ips;      // status.podIPs[].ip (IPv4 only)
  std::optional<net::Ipv4> host_ip;    // status.hostIP
  bool ready = false;           // status.conditions[type=Ready].status == "True"
  std::vector<ContainerPort> ports;    // spec.containers[].ports[]

  /// "namespace/name".
  std::string Key() const;
  /// The container port named `port_name` (for a Service's named targetPort), or nullptr.
  const ContainerPort* FindPort(absl::string_view port_name, uint8_t proto) const;
};

struct Node {
  std::string name;
  Labels labels;
  Labels annotations;
  std::vector<net::Ipv4> internal_ips;   // status.addresses[type=InternalIP]
  std::vector<net::Ipv4> external_ips;   // status.addresses[type=ExternalIP]
  std::string hostname;                  // status.addresses[type=Hostname]
  std::vector<net::Ipv4Prefix> pod_cidrs;  // spec.podCIDRs, else [spec.podCIDR] (IPv4 only)
  bool ready = false;
  bool unschedulable = false;
  /// projectcalico.org/IPv4Address: address with prefix length ("10.12.0.11/24"); nullopt when
  /// the annotation is absent or empty (Calico autodetection failed: CAL-ANNOT-01).
  std::optional<net::Ipv4Prefix> calico_ipv4_address;
  std::optional<net::Ipv4> calico_ipip_tunnel_addr;    // projectcalico.org/IPv4IPIPTunnelAddr
  std::optional<net::Ipv4> calico_vxlan_tunnel_addr;   // projectcalico.org/IPv4VXLANTunnelAddr
  std::optional<net::Ipv4> calico_wireguard_addr;      // projectcalico.org/IPv4WireguardInterfaceAddr

  /// First InternalIP, else first ExternalIP, else the Calico address.
  std::optional<net::Ipv4> PrimaryIp() const;
};

/// Service targetPort: a number or the name of a container port (IntOrString).
struct TargetPort {
  uint16_t number = 0;          // used when name is empty; 0 = same as port
  std::string name;
};

struct ServicePort {
  std::string name;
  uint8_t proto = 6;
  uint16_t port = 0;
  TargetPort target_port;
  uint16_t node_port = 0;       // 0 = none
};

enum class ServiceType : uint8_t { kClusterIP, kNodePort, kLoadBalancer, kExternalName };
absl::string_view ToString(ServiceType type);  // the API's spelling

struct Service {
  std::string namespace_;
  std::string name;
  ServiceType type = ServiceType::kClusterIP;
  std::vector<net::Ipv4> cluster_ips;     // spec.clusterIPs else [spec.clusterIP]; none for "None"
  bool headless = false;                  // clusterIP "None"
  std::vector<ServicePort> ports;
  Labels selector;                        // empty = no selector (manual endpoints)
  bool external_traffic_policy_local = false;  // spec.externalTrafficPolicy == "Local"
  bool internal_traffic_policy_local = false;  // spec.internalTrafficPolicy == "Local"
  std::vector<net::Ipv4Prefix> load_balancer_source_ranges;
  std::vector<net::Ipv4> load_balancer_ips;  // status.loadBalancer.ingress[].ip
  std::vector<net::Ipv4> external_ips;       // spec.externalIPs
  uint16_t health_check_node_port = 0;
  bool session_affinity_client_ip = false;
  std::string external_name;

  std::string Key() const;
  /// The port matching `port` and `proto`, or nullptr.
  const ServicePort* FindPort(uint16_t port, uint8_t proto) const;
  /// The port whose nodePort is `node_port` and protocol `proto`, or nullptr.
  const ServicePort* FindNodePort(uint16_t node_port, uint8_t proto) const;
};

/// One endpoint address of a Service port (EndpointSlice endpoint or Endpoints subset address).
struct Backend {
  net::Ipv4 ip;
  uint16_t port = 0;            // resolved target port
  uint8_t proto = 6;
  bool ready = true;            // conditions.ready (unset means ready); Endpoints: addresses[]
  bool serving = true;          // conditions.serving (unset = ready)
  bool terminating = false;
  std::string node_name;        // nodeName (slices) / addresses[].nodeName (Endpoints)
  std::string pod_namespace;    // targetRef of kind Pod
  std::string pod_name;
};

/// Endpoints of one Service, normalised from EndpointSlices or legacy Endpoints: each group is a
/// slice (or subset) — a port list and the addresses sharing it.
struct EndpointGroup {
  struct Port {
    std::string name;
    uint16_t port = 0;
    uint8_t proto = 6;
  };
  std::vector<Port> ports;
  std::vector<Backend> addresses;  // port/proto filled per group port when queried
};

/// Where the cluster data came from, per file, for INFO suspicions.
struct ClusterFiles {
  std::vector<std::string> loaded;   // relative paths, e.g. "cluster/pods.json"
  std::vector<std::string> missing;
  bool endpoint_slices = false;      // endpoints came from endpointslices.json (else endpoints.json)
};

/// Tuning of Cluster::Load.
struct ClusterLoadOptions {
  /// pods.json of at least this many bytes is read and parsed in slices on every core (kubectl's
  /// indented output of 150,000 pods is ~1.3 GB); smaller files are parsed in one piece.
  size_t parallel_min_bytes = size_t{96} << 20;
  /// Target size of one slice.
  size_t slice_bytes = size_t{48} << 20;
};

/// The cluster-wide objects with indexes. Immutable after construction; queries are const,
/// thread-safe and do not allocate unless they return a vector.
class Cluster {
 public:
  Cluster();
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;

  // --- Parsing (kubectl -o json List or a bare array of objects). Errors: kInvalidArgument
  // "parse <file_name>: items[12].status.podIP: invalid IPv4 'x'" (JSON path of the field), or
  // "parse <file_name>: JSON syntax error at byte N: ...". IPv6 values are skipped, not errors.
  // A list kind without "items" ({"kind": "PodList", "metadata": {...}}: kubectl prints
  // "items": [] for an empty list) is "parse <file_name>: items: missing: a PodList without
  // "items" ...", never read as one object.
  absl::Status ParsePods(absl::string_view json, absl::string_view file_name = "pods.json");
  absl::Status ParseNodes(absl::string_view json, absl::string_view file_name = "nodes.json");
  absl::Status ParseServices(absl::string_view json, absl::string_view file_name = "services.json");
  /// discovery.k8s.io/v1 EndpointSliceList (slices are tied to their Service by the
  /// kubernetes.io/service-name label). Replaces endpoints from ParseEndpoints.
  absl::Status ParseEndpointSlices(absl::string_view json,
                                   absl::string_view file_name = "endpointslices.json");
  /// core/v1 EndpointsList (subsets[].addresses = ready, notReadyAddresses = not ready).
  absl::Status ParseEndpoints(absl::string_view json, absl::string_view file_name = "endpoints.json");
  absl::Status ParseIpPools(absl::string_view json, absl::string_view file_name = "ippools.json");

  /// Programmatic building (tests, generators). Call Finalize() afterwards.
  void AddPod(Pod pod);
  void AddNode(Node node);
  void AddService(Service service);
  void SetEndpoints(absl::string_view namespace_, absl::string_view service,
                    std::vector<EndpointGroup> groups);
  void AddIpPool(IpPool pool);

  /// Rebuilds the indexes; required after parsing/adding and before queries.
  void Finalize();

  /// Reads `<dir>/pods.json`, nodes.json, services.json, endpointslices.json (preferred) or
  /// endpoints.json, ippools.json — each optional: a missing file is listed in files().missing.
  /// A malformed file fails the whole load (the error names it). `dir` is the snapshot's
  /// cluster/ directory; paths in files() are reported as "cluster/<name>".
  /// A large pods.json is parsed in parallel slices (ClusterLoadOptions); the result, and any
  /// error message, is the same as parsing it whole.
  static absl::StatusOr<Cluster> Load(absl::string_view dir, const ClusterLoadOptions& options = {});

  const ClusterFiles& files() const { return files_; }
  ClusterFiles& mutable_files() { return files_; }

  const std::vector<Pod>& pods() const { return pods_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Service>& services() const { return services_; }
  const std::vector<IpPool>& ip_pools() const { return ip_pools_; }
  bool has_ip_pools() const { return has_ip_pools_; }

  const Pod* FindPod(absl::string_view namespace_, absl::string_view name) const;
  /// Pod whose podIP/podIPs include `ip`, preferring a running non-hostNetwork pod (hostNetwork
  /// pods share the node IP and are never returned for it).
  const Pod* FindPodByIp(const net::Ipv4& ip) const;
  /// The live pods (phase Running, Pending or none; not hostNetwork) whose podIP/podIPs include
  /// `ip`, in input order, when there are two or more — Kubernetes never gives two live pods one
  /// address unless IPAM is broken; empty otherwise (one or no owner). Built by Finalize().
  std::vector<const Pod*> LivePodsSharingIp(const net::Ipv4& ip) const;
  /// All pods scheduled on `node` (hostNetwork included), in input order.
  std::vector<const Pod*> PodsOnNode(absl::string_view node) const;

  const Node* FindNode(absl::string_view name) const;
  /// Node with `ip` as InternalIP, ExternalIP, Calico IPv4Address or tunnel address.
  const Node* FindNodeByIp(const net::Ipv4& ip) const;
  /// The node whose spec.podCIDRs contain `ip`, or nullptr.
  const Node* FindNodeByPodCidr(const net::Ipv4& ip) const;

  const Service* FindService(absl::string_view namespace_, absl::string_view name) const;
  /// Service with `ip` among its cluster IPs (or load balancer / external IPs), or nullptr.
  const Service* FindServiceByIp(const net::Ipv4& ip) const;
  /// Service with a port whose nodePort is `node_port` for `proto`, or nullptr.
  const Service* FindServiceByNodePort(uint16_t node_port, uint8_t proto) const;

  /// The endpoint groups recorded for a Service (empty if none), in input order.
  const std::vector<EndpointGroup>* FindEndpoints(absl::string_view namespace_,
                                                  absl::string_view name) const;
  /// Backends of `port` of `service`: every address of every group that has a port with the
  /// service port's name (unnamed port: the group's single port) and protocol, with that port
  /// number. Not-ready endpoints are included (ready=false) so the caller can report them.
  std::vector<Backend> BackendsFor(const Service& service, const ServicePort& port) const;

  /// Pods a Service's spec.selector selects: pods of the Service's namespace carrying every
  /// selector label with the same value (equality-based selector, Kubernetes "Labels and
  /// Selectors"). `ready` counts those whose Ready condition is True. Both are 0 for a Service
  /// without a selector (its endpoints are managed by hand).
  struct SelectedPods {
    size_t pods = 0;
    size_t ready = 0;
  };
  SelectedPods CountSelectedPods(const Service& service) const;

  /// The most specific pool containing `ip` (see FindIpPool), or nullptr.
  const IpPool* FindIpPool(const net::Ipv4& ip) const;

 private:
  struct Index;
  std::vector<Pod> pods_;
  std::vector<Node> nodes_;
  std::vector<Service> services_;
  std::vector<IpPool> ip_pools_;
  bool has_ip_pools_ = false;
  absl::flat_hash_map<std::string, std::vector<EndpointGroup>> endpoints_;  // "ns/name"
  ClusterFiles files_;
  std::unique_ptr<Index> index_;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_K8S_H_
