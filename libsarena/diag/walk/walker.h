// The path walk's private parts (not installed): the Walker class that Trace
// (libsarena/diag/walk.h) runs; the walk's types are in flight.h. The member functions live in
// this folder, one file per concern (docs/architecture.md, "Where each concern lives").
#ifndef LIBSARENA_DIAG_WALK_WALKER_H_
#define LIBSARENA_DIAG_WALK_WALKER_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/diag/snapshot_input.h"
#include "libsarena/diag/walk.h"
#include "libsarena/diag/walk/flight.h"
#include "libsarena/diag/walk/step.h"
#include "libsarena/model/arp.h"
#include "libsarena/model/neigh.h"
#include "libsarena/model/service_match.h"
#include "libsarena/model/topology.h"
#include "libsarena/model/tunnel.h"

namespace sarena::diag::internal {

class Walker {
 public:
  Walker(const model::Snapshot& snap, const Query& query, Plugin& plugin, const TraceOptions& opts)
      : snap_(snap),
        cluster_(snap.cluster()),
        topo_(snap),
        query_(query),
        plugin_(plugin),
        opts_(opts) {
    pctx_.snapshot = &snap_;
    pctx_.cluster = &cluster_;
    pctx_.topology = &topo_;
    pctx_.graph = &graph_;
    pctx_.query = &query_;
    pctx_.branch_seen = &branch_seen_;
  }

  absl::Status Run();
  // Decides the TCP request checks whose server's MSS never became known (the request or its
  // reply died on the way, or the server is outside the snapshot): with the client's own path
  // MTU as the segment size, as without MSS knowledge.
  void Finish();
  PathGraph TakeGraph() { return std::move(graph_); }

 private:
  // ---- locations ----
  std::string HopId(const Where& w, bool reply) const;

  // ---- graph helpers ----
  Vertex AddHop(Hop hop, const Prev& prev);
  void Suspect(Vertex v, Level level, absl::string_view code, absl::string_view msg) {
    graph_.AddSuspicion(v, level, code, msg);
  }
  void Drop(Vertex v, absl::string_view code, absl::string_view msg);  // FATAL; the hop drops
  bool Need(const Where& w, Vertex v, SnapshotInput in, absl::string_view what,
            Absent then = Absent::kSkip);  // the absent-data rule: snapshot_input.h, hops.cc
  void InfoOnce(Vertex v, absl::string_view key, absl::string_view code, absl::string_view msg);

  // ---- placement (placement.cc) ----
  absl::StatusOr<net::Ipv4> ResolveDestination();
  absl::StatusOr<net::Ipv4> NodeDestination(const std::string& name);
  absl::StatusOr<net::Ipv4> ServiceDestination();
  // The walk's first steps (placement.cc).
  absl::StatusOr<Next> Start();
  absl::StatusOr<Next> StartFromNode(absl::string_view name, Flight f, Branch br);
  absl::StatusOr<Next> StartFromPod(Flight f, Branch br);
  absl::StatusOr<Next> StartFromIp(const net::Ipv4& ip, Flight f, Branch br);
  absl::StatusOr<Next> EnterFromOutside(const net::Ipv4& ip, Flight f, Branch br);
  absl::StatusOr<std::optional<DeviceRef>> AssumedEntry(const net::Ipv4& dst, uint16_t dport,
                                                        std::string* note);

  // ---- the loop (loop.cc) ----
  // Runs `first` and every step it leads to, depth-first, from a stack of steps.
  absl::Status RunSteps(Next first);
  // One step, in place: the stage it names, Enter / Join or a branch's first hop.
  absl::StatusOr<Next> RunStep(Step& step);
  // The stage of a step that names one of several (InputStep's, LocalStep's, ...).
  template <typename S>
  absl::StatusOr<Next> RunStage(S& s);

  // ---- the walk ----
  // A stage does its work at one place and returns the steps that follow (step.h), empty when
  // the path ends there. It takes its step (its arguments) by reference, in place on the loop's
  // stack: it may move from the step, which is dropped once it returns. It returns a non-OK status
  // only when the trace itself fails (a node's or pod's files cannot be loaded, a plugin bug); the
  // loop stops at once. What the walk finds about the network is a suspicion on a hop, never an
  // error.
  absl::StatusOr<Next> Originate(OriginateStep& s);
  absl::StatusOr<Next> OriginateRouted(OriginateRoutedStep& s);
  // OriginateRouted after the route lookup, with one next hop (`s.route`).
  absl::StatusOr<Next> OriginateVia(OriginateViaStep& s);
  absl::StatusOr<Next> Receive(ReceiveStep& s);
  absl::StatusOr<Next> Ingress(InputStep& s);
  absl::StatusOr<Next> ProcessInput(InputStep& s);
  // Input routing after PREROUTING: local delivery or forwarding.
  absl::StatusOr<Next> ContinueInput(InputStep& s);
  // True when input routing drops `pkt` (the FATAL is added to `v`); a forwarding drop whose
  // sysctls are unknown (`sysctls` false) is walked on.
  bool InputRoutingDrops(const Where& w, Vertex v, const std::string& iif, const Packet& pkt,
                         const model::InputResult& in, bool sysctls);
  // The FATAL of a packet that ip_forward or the ingress device's forwarding sysctl stops.
  void DropNotForwarded(const Where& w, Vertex v, const std::string& iif, const Packet& pkt,
                        const model::InputResult& in);
  // Local delivery: INPUT, then decapsulation of a tunnel packet or the local socket (Serve).
  absl::StatusOr<Next> LocalDelivery(InputStep& s);
  // Forwarding: the TTL decrement and, per next hop of `route`, ForwardRouted.
  absl::StatusOr<Next> Forward(ForwardStep& s);
  absl::StatusOr<Next> Decapsulate(LocalStep& s);
  // A forwarded packet after the route lookup, with one next hop: FORWARD, the MSS clamp, the
  // plugin's AfterRoute, Transmit.
  absl::StatusOr<Next> ForwardRouted(ForwardRoutedStep& s);
  // Egress of a routed packet (egress.cc): the egress device, POSTROUTING, the plugin's
  // OnEgress, the device MTU, Dispatch.
  absl::StatusOr<Next> Transmit(TransmitStep& s);
  // The route's output device, or null when it is missing or down (the suspicion is added).
  const Interface* EgressDevice(const Where& w, Vertex v, const RouteResult& route,
                                const Flight& f);
  // POSTROUTING out of `oif` (SNAT / MASQUERADE), the reply's un-DNAT and the plugin's
  // AfterPostrouting; the steps that follow instead when the packet stops there (nullopt: it
  // goes on).
  absl::StatusOr<std::optional<Next>> Postrouting(const Where& w, Vertex v, const Interface& oif,
                                                  const RouteResult& route, Flight& f, Branch& br);
  // POSTROUTING of a forwarded tunnel packet (a router between nodes): netfilter sees, and may
  // SNAT, its outer header.
  bool OuterPostrouting(const Where& w, Vertex v, const Interface& oif, const RouteResult& route,
                        Flight& f);
  // POSTROUTING of the node's own or forwarded packet: the MSS clamp and SNAT (`snat_done`).
  bool NodePostrouting(const Where& w, Vertex v, const Interface& oif, const RouteResult& route,
                       Flight& f, Branch& br, bool* snat_done);
  absl::StatusOr<Next> Dispatch(DeviceStep& s);
  absl::StatusOr<Next> Encapsulate(DeviceStep& s);
  // The tail of every encapsulation: routes `outer` (OUTPUT, POSTROUTING: the tunnel device
  // sends it with ip_local_out), checks the underlay device and MTU, and sends it on.
  // `outer_fragments`: the outer header has no DF, so an oversize outer packet is fragmented.
  // `via`: the outer route already chosen (one next hop of a multipath route), or null to look
  // it up.
  absl::StatusOr<Next> SendOuter(SendOuterStep& s);
  // What an encapsulation puts around the packet: the outer header so far (destination,
  // protocol, port), its source if the device fixes it, the overhead in bytes, and the hop
  // label. Built by VxlanPlan / WireguardPlan / IpipPlan, nullopt when the packet stops there
  // (the suspicion is added to `v`).
  struct EncapPlan {
    std::string kind;  // "vxlan", "wireguard", "ipip"
    uint32_t overhead = 0;
    Packet outer;
    std::optional<net::Ipv4> outer_src;
    std::string label;
  };
  std::optional<EncapPlan> VxlanPlan(const Where& w, Vertex v, const Interface& tun,
                                     const RouteResult& route, const Flight& f);
  std::optional<EncapPlan> WireguardPlan(Vertex v, const Interface& tun, const RouteResult& route,
                                         const Flight& f);
  std::optional<EncapPlan> IpipPlan(Vertex v, const Interface& tun, const RouteResult& route);
  // OUTPUT and POSTROUTING for an outer packet; false when it is dropped there.
  bool OuterNetfilter(const Where& w, Vertex v, const Interface& under, const RouteResult& r,
                      Flight& f, Packet* outer);
  // The MTU check of the underlay device `under` for `kind` encapsulation on `tun`.
  SizeFlag UnderlayMtuFlag(Vertex v, const std::string& kind, uint32_t overhead,
                           bool outer_fragments, const Interface& tun, const Interface& under);
  // PluginAction::kEncapsulate / kRedirect.
  absl::StatusOr<Next> EncapsulateWithKey(ActionStep& s);
  absl::StatusOr<Next> Redirect(ActionStep& s);
  // Netfilter dropped an encapsulated packet's outer header at `hook`: name the tunnel port.
  void TunnelPortBlocked(const Where& w, Vertex v, const Flight& f, const Packet& outer,
                         absl::string_view hook);
  absl::StatusOr<Next> Underlay(LinkStep& s);
  // The underlay to a node of the snapshot: over a veth cable, to the next hop, or through a
  // router to the destination: the steps that follow, nullopt (nothing done) when no node is
  // there.
  absl::StatusOr<std::optional<Next>> UnderlayToNode(const Where& w, Vertex v, const Interface& oif,
                                                     const net::Ipv4& nexthop, Flight& f,
                                                     Branch& br, const std::string& label);
  // A pod or Service address that leaves toward a next hop that is not a node (the WARNING /
  // FATAL route_mismatch). Nullopt (nothing done) for any other destination.
  absl::StatusOr<std::optional<Next>> UnderlayClusterAddress(const Where& w, Vertex v,
                                                             const Interface& oif,
                                                             const net::Ipv4& nexthop, Flight& f,
                                                             Branch& br, const std::string& label);
  absl::StatusOr<Next> VethPeer(LinkStep& s);
  // Pod -> node: the node-side device with the veth's peer ifindex (a bridge port: the bridge).
  absl::StatusOr<Next> VethToNode(LinkStep& s);
  // Node -> the pod or node that holds the veth's peer by the ifindex pair; nullopt (nothing
  // done) when none does.
  absl::StatusOr<std::optional<Next>> VethPeerByIfindex(const Where& w, Vertex v,
                                                        const Interface& oif,
                                                        const net::Ipv4& nexthop, Flight& f,
                                                        Branch& br);
  // Node -> a peer not found by ifindex: the pod owning the address, an underlay segment or
  // uplink outside the snapshot, else snapshot_incomplete.
  absl::StatusOr<Next> VethPeerByAddress(LinkStep& s);
  absl::StatusOr<Next> BridgePort(LinkStep& s);
  absl::StatusOr<Next> BridgeForward(BridgeForwardStep& s);
  struct PortTarget {
    const Interface* port = nullptr;
    std::optional<Where> where;  // the pod behind the port
    std::string ifname;
  };
  absl::StatusOr<std::optional<PortTarget>> FindBridgePort(const Where& w, const Interface& bridge,
                                                           const net::Ipv4& nexthop);
  // Whether bridged IPv4 on `bridge` passes iptables: net.bridge.bridge-nf-call-iptables OR the
  // bridge's nf_call_iptables option (br_nf_pre_routing); notes an assumed sysctl on `v`.
  bool BridgeNfOn(const Where& node, Vertex v, const Interface& bridge);
  // The port flags the kernel's br_forward / br_flood apply to a frame switched by `bridge`
  // from `in_port` (nullptr: sent by the bridge device itself, br_dev_xmit) to `t`: hairpin
  // (should_deliver: out port == in port), isolation (br_skb_isolated) and unknown-unicast
  // flooding without an fdb entry. Drops on `v` (FATAL bridge_hairpin / bridge_isolated /
  // bridge_flood) and returns false when the kernel would not deliver the frame.
  bool BridgePortFlagsPass(const Where& node, Vertex v, const Interface& bridge,
                           const Interface* in_port, const PortTarget& t, const Flight& f);
  absl::StatusOr<Next> DeliverToPod(DeliverToPodStep& s);
  absl::StatusOr<Next> Serve(LocalStep& s);
  absl::StatusOr<Next> External(ExternalStep& s);
  void ExternalReply(const net::Ipv4& ip, Flight f, Branch br, const Prev& prev);
  absl::StatusOr<Next> StartReply(LocalStep& s);
  // A plugin's action: nullopt when the walk goes on here, else the steps that follow (none
  // when the packet stops).
  absl::StatusOr<std::optional<Next>> HandlePluginAction(const Where& w, Vertex v,
                                                         const PluginAction& a, Flight& f,
                                                         Branch& br, std::string* iif);

  // ---- services (service.cc) ----
  using ServiceVia = model::ServiceVia;
  using ServiceMatch = model::ServiceMatch;
  // A backend the Service translates to: the DNAT'ed packet, its share of flows, and what
  // decided it (the kube-proxy rule, or "endpoints").
  struct ServiceTarget {
    Packet pkt;
    double probability = 1;
    std::string by;
  };
  // The steps that follow when the packet matched a Service (its backends' branches), else
  // nullopt.
  absl::StatusOr<std::optional<Next>> ServiceStage(const Where& w, Vertex v, const std::string& iif,
                                                   const Flight& f, const Branch& br,
                                                   bool originated);
  // No ready endpoint: the FATAL with the selector's matches, and how the client fails.
  void NoReadyEndpoints(const Where& w, Vertex s, const std::string& iif, const ServiceMatch& m,
                        const Packet& pkt, size_t not_ready, bool originated);
  // loadBalancerSourceRanges, externalTrafficPolicy / internalTrafficPolicy Local
  // (model::ApplyTrafficPolicy decides): the ready backends this packet may reach, or nullopt
  // when it is dropped at `s` (the FATAL added here).
  std::optional<std::vector<model::Backend>> PolicyBackends(
      const Where& w, Vertex s, const ServiceMatch& m, const Packet& pkt,
      const std::vector<model::Backend>& ready, bool originated);
  // The DNAT kube-proxy's rules make (else the eligible endpoints), or nullopt when the packet
  // dies at `s`.
  std::optional<std::vector<ServiceTarget>> ServiceTargets(
      const Where& w, Vertex s, const std::string& iif, const ServiceMatch& m, const Packet& pkt,
      const std::vector<model::Backend>& eligible, size_t ready, bool originated);
  void CheckTranslation(Vertex s, const model::Service& svc,
                        const std::vector<ServiceTarget>& targets,
                        const std::vector<model::Backend>& eligible);
  bool NoTranslation(const Where& w, Vertex s, const model::Service& svc, const Packet& pkt,
                     size_t ready);
  Next WalkServiceTargets(const Where& w, Vertex s, const Hop& h, const std::string& iif,
                          std::vector<ServiceTarget> targets, const Flight& f, const Branch& br,
                          bool originated);

  void ExplainNoEndpoints(const Where& w, Vertex s, const std::string& iif, const Packet& pkt,
                          bool originated);

  // ---- packet size / TCP MSS ----
  // Checks the packet in flight against `limit` / `settle` (SizeCheck) at hop `v`: at once, or
  // (the request of a TCP query without --size) kept in f.tcp.pending until the segment size is
  // known. `make_flag` builds the SizeCheck::flag, only when it may be needed. False when the
  // packet is dropped here (the hop's action is set).
  bool CheckSize(Vertex v, Flight& f, uint32_t limit, uint32_t settle,
                 absl::FunctionRef<SizeFlag()> make_flag);
  // The flag of a device's MTU check (WARNING: PMTU discovery; FATAL for a --size packet).
  // `whose`: whose MTU sized a packet that is not a TCP segment ("the sender's"), or empty.
  SizeFlag DeviceMtuFlag(Vertex v, const Interface& dev, absl::string_view whose = {});
  // How the reply's segments of `f` got their size (SegmentWhy).
  std::string ReplyWhy(const Flight& f) const;
  // Decides the chain ending at `leaf` for client segments of `size` bytes (`why`: how it was
  // negotiated, built when a check fails).
  void ResolveChecks(const std::shared_ptr<SizeCheckNode>& leaf, uint32_t size,
                     absl::FunctionRef<std::string()> why);
  // The request's checks of `f` (a reply reaching the client, or a request served outside the
  // snapshot), for the server `server` whose MSS reached the client as `rcvd` (0: unknown).
  void ResolveRequest(const std::shared_ptr<SizeCheckNode>& leaf, const TcpEnd* server,
                      uint32_t rcvd, const std::string& clamps);
  // iptables TCPMSS rules in mangle `hook` of `w` that the SYN (request) or SYN-ACK (reply)
  // matches lower f.tcp.syn as xt_TCPMSS does (--set-mss; --clamp-mss-to-pmtu: the smaller of
  // the output device's MTU and the MTU of the route back to the source, - 40; never raised).
  void ClampMss(const Where& w, NfHook hook, const Packet& pkt, absl::string_view iif,
                absl::string_view oif, Flight& f);
  std::string Who(const Where& w) const;

  // ---- netfilter / NAT ----
  NfPass RunHook(const Where& w, Vertex v, NfHook hook, const Packet& pkt, absl::string_view iif,
                 absl::string_view oif, std::optional<net::Ipv4> nexthop);
  // The dropping outcomes of one hook: the share certainly dropped, the first certain drop and
  // the first drop that rests on an assumption (pointers into the evaluated outcomes).
  struct NfDrops {
    double certain = 0;
    const NfOutcome* first = nullptr;
    const NfOutcome* first_assumed = nullptr;
  };
  NfDrops SortOutcomes(const Where& w, Vertex v, NfHook hook, const std::vector<NfOutcome>& outs,
                       NfPass* pass);
  void ReportNfDrops(Vertex v, NfHook hook, const Packet& pkt, const NfDrops& d, NfPass* pass);
  void UnSnat(const Where& w, Packet* p, const Branch& br);
  void UnDnat(const Where& w, Packet* p, const Branch& br);
  void SetCtState(const Where& w, Packet* p, const Flight& f, const Branch& br);

  // ---- routing ----
  void ReportRouteError(Vertex v, const RouteResult& r, const Packet& p, absl::string_view what,
                        const Where* w = nullptr);
  const Interface* DownDeviceFor(const Where& w, const net::Ipv4& dst);
  void NotePolicyRoute(Vertex v, const RouteResult& r);
  void CheckNeighbor(const Where& w, Vertex v, const Interface& dev,
                     const std::optional<net::Ipv4>& gateway);
  // NodeVethPeer found no node holding the other end of veth `oif`, but a node of the snapshot
  // has no link data and may hold it: that node's file is Needed (kEnd) and true returned, so
  // the veth is not taken for an uplink out of the cluster by absence.
  absl::StatusOr<bool> VethPeerMayBeUnlisted(const Where& w, Vertex v, const Interface& oif);
  // INFO router on a hop in a snapshot namespace that nodes.json does not list.
  void NoteRouter(const Where& w, Vertex v);
  // Leaving the cluster through a veth uplink: INFO cluster_exit, and a FATAL
  // nat_outgoing_missing when a pod address leaves without SNAT (false: the walk ends there).
  absl::StatusOr<bool> NoteVethUplinkExit(const Where& w, Vertex v, const Interface& oif,
                                          const Flight& f);
  // Crossing the veth `oif` -> `pif` (peer in `peer`): the next hop must resolve there (unless
  // cached), and the packet must fit the receiving device (is_skb_forwardable). False when the
  // packet died here (the FATAL is added to `v`).
  bool CrossVeth(const Where& w, Vertex v, const Interface& oif, const Where& peer,
                 const Interface& pif, const net::Ipv4& nexthop, Flight& f);
  // pod_ip_duplicate at `v` (a hop in pod `w.pod`) when the packet's destination is the address
  // of more than one live pod: FATAL when the query named another of them, else WARNING.
  void NoteSharedPodIp(const Where& w, Vertex v, const Flight& f);

  // ---- fan-out (hops.cc) ----
  // The steps of a fan-out: each branch (its first step) after an Enter step that gives it the
  // state at the fork, then a Join step; a single branch alone. `width`: walk_width_ in the
  // branches. `weights` (one per branch, empty = a count): a multipath route's next-hop
  // weights, so Join's note gives the share of flows.
  Next Fan(std::vector<Step> branches, size_t width, std::vector<uint32_t> weights = {});
  // Before a branch: the once-per-branch checks as at the fork, its hops collected.
  void Enter(const EnterStep& s);
  // After the last branch: when some but not all of them reach a FATAL, those FATALs become
  // CRITICAL with a note naming the share that fails.
  void Join(const JoinStep& s);
  // A branch's own first hop (NexthopBranchStep / ServiceBranchStep), then its next step.
  Next BranchHop(NexthopBranchStep& s);
  Next BranchHop(ServiceBranchStep& s);
  // A multipath route (more than one live next hop) forks the walk right after its lookup, so
  // that everything that depends on the egress device (FORWARD/OUTPUT `-o` rules, the MSS
  // clamp, the socket's MSS, MTU checks, the plugin) is decided per next hop: the step that
  // `make_cont` makes runs once per next hop with a clone of hop `v` and a one-next-hop route,
  // the hash policy is noted (multipath.cc). At most kMaxNexthopBranches next hops of one
  // route, and at most kMaxWalkWidth branches across nested forks; beyond that the heaviest next
  // hop alone is walked and the INFO says so. Nullopt (and `make_cont` not called) for a route
  // with one next hop.
  static constexpr size_t kMaxNexthopBranches = 16;
  static constexpr size_t kMaxWalkWidth = 64;
  std::optional<Next> ForkNexthops(const Where& w, Vertex v, const RouteResult& route,
                                   absl::FunctionRef<Step()> make_cont);

  const model::Snapshot& snap_;
  const model::Cluster& cluster_;
  // Whose namespace is which, who owns an address, a node's pods, veth ends (model/topology.h).
  model::Topology topo_;
  const Query& query_;
  Plugin& plugin_;
  TraceOptions opts_;
  PathGraph graph_;
  PluginContext pctx_;
  // Checks made once per branch (PluginContext::FirstInBranch): Enter gives each branch
  // the set as it was at the fork, so a finding at a place every branch crosses (a node's
  // sysctls, a pod's gateway) is in every branch, not only the first one walked.
  absl::flat_hash_set<std::string> branch_seen_;
  absl::flat_hash_set<std::string> once_;
  // Product of the branch counts of the forks on the way to the current hop (ForkNexthops;
  // Enter sets it, Join restores it).
  size_t walk_width_ = 1;
  std::vector<std::vector<Vertex>*> collectors_;
  // The request as the client sent it (after source selection), for reply verification.
  std::optional<Packet> client_packet_;
  Where client_where_;
  bool client_external_ = false;
  // Size of the client's first packet (its route MTU, or --size): a TCP server's segments are
  // no larger (the client's MSS).
  uint32_t client_size_ = 0;
  // Every request check made (creation order), for Finish.
  std::vector<std::shared_ptr<SizeCheckNode>> size_checks_;
};

}  // namespace sarena::diag::internal

#endif  // LIBSARENA_DIAG_WALK_WALKER_H_
