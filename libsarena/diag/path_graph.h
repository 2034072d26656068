// The path graph of one trace: hops (vertices) joined by links (edges), with the suspicions found
// at each hop. A Boost.Graph adjacency_list, so a Service's fan-out over backends is a real branch
// and `-o dot` is boost::write_graphviz of it.
#ifndef LIBSARENA_DIAG_PATH_GRAPH_H_
#define LIBSARENA_DIAG_PATH_GRAPH_H_

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/packet.h"
#include "libsarena/net/ip.h"

namespace sarena::diag {

/// What a hop is (JSON "kind").
enum class HopKind { kPod, kNode, kService, kExternal };
/// "pod" | "node" | "service" | "external".
absl::string_view ToString(HopKind kind);

/// What the hop does with the packet (JSON "action"): originates it (send), routes it on
/// (forward), translates it for a Service (service), delivers it to a listener (serve), or drops
/// it.
enum class HopAction { kSend, kForward, kService, kServe, kDrop };
/// "send" | "forward" | "service" | "serve" | "drop".
absl::string_view ToString(HopAction action);

/// Severity of a suspicion. FATAL: the kernel drops the packet (the path is broken). CRITICAL:
/// some packets of the flow are lost (e.g. large ones). WARNING: likely wrong, traffic may still
/// pass. INFO: context, or a check that could not be done.
enum class Level { kInfo = 0, kWarning = 1, kCritical = 2, kFatal = 3 };
/// "INFO" | "WARNING" | "CRITICAL" | "FATAL".
absl::string_view ToString(Level level);

/// The packet type of the path model (5-tuple, mark, conntrack state, TTL, length).
using Packet = model::Packet;

/// One finding. `code` is from the vocabulary of codes.h (no_route, rp_filter_drop, ...); `hop` is
/// the id of the hop it belongs to ("" for the query as a whole).
struct Suspicion {
  Level level = Level::kInfo;
  std::string code;
  std::string hop;
  std::string message;
};

/// One hop of the path (a vertex).
struct Hop {
  std::string id;  // unique within the graph (PathGraph::AddHop enforces it)
  HopKind kind = HopKind::kNode;
  std::string node;  // node the hop runs on; "" for external hops
  std::string iif;   // ingress interface name in the hop's netns, "" when originating
  std::string oif;   // egress interface, "" when delivered or dropped here
  HopAction action = HopAction::kForward;
  Packet packet;       // as the hop emits it (after NAT); as received for serve/drop
  bool reply = false;  // true on the reply direction
  std::vector<Suspicion> suspicions;

  /// Highest level among `suspicions`, or std::nullopt when there are none.
  std::optional<Level> MaxLevel() const;
};

/// A link between two hops (an edge): how the packet travelled ("veth", "ipip", "vxlan",
/// "underlay", "bridge", "local", "reply"...), shown on the DOT edge.
struct LinkInfo {
  std::string label;
};

/// The path graph. Vertices are stored in insertion order, which is the walk's order (request
/// hops first, then the reply); reports list hops in that order.
class PathGraph {
 public:
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Hop, LinkInfo>;
  using Vertex = Graph::vertex_descriptor;

  /// Adds a hop. When `hop.id` is already taken, "#2", "#3"... is appended so ids stay unique.
  Vertex AddHop(Hop hop);
  /// Adds a directed link `from` -> `to`.
  void Link(Vertex from, Vertex to, absl::string_view label);
  /// Attaches a suspicion to hop `v` (its `hop` field is set to the hop's id).
  void AddSuspicion(Vertex v, Level level, absl::string_view code, absl::string_view message);
  /// A suspicion about the whole query (hop "").
  void AddGlobalSuspicion(Level level, absl::string_view code, absl::string_view message);

  Hop& hop(Vertex v) { return graph_[v]; }
  const Hop& hop(Vertex v) const { return graph_[v]; }
  size_t num_hops() const { return boost::num_vertices(graph_); }
  const Graph& graph() const { return graph_; }
  /// Vertex of the hop with id `id`, if any.
  std::optional<Vertex> Find(absl::string_view id) const;

  /// Every suspicion: hop suspicions in hop order, then the global ones. A suspicion with the
  /// same (level, code, hop, message) is listed once.
  std::vector<Suspicion> Suspicions() const;

 private:
  Graph graph_;
  absl::flat_hash_map<std::string, Vertex> by_id_;
  std::vector<Suspicion> global_;
};

/// Overall result (JSON "verdict").
enum class Verdict { kReachable, kUnreachable, kDegraded };
/// "reachable" | "unreachable" | "degraded".
absl::string_view ToString(Verdict verdict);

/// docs/architecture.md "The diagnoser's contract": unreachable iff some suspicion is FATAL;
/// degraded iff some is CRITICAL or WARNING and none is FATAL; reachable otherwise (INFO only, or
/// nothing).
Verdict ComputeVerdict(const std::vector<Suspicion>& suspicions);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_PATH_GRAPH_H_
