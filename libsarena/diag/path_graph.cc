#include "libsarena/diag/path_graph.h"

#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace sarena::diag {

absl::string_view ToString(HopKind kind) {
  switch (kind) {
    case HopKind::kPod:
      return "pod";
    case HopKind::kNode:
      return "node";
    case HopKind::kService:
      return "service";
    case HopKind::kExternal:
      return "external";
  }
  return "node";
}

absl::string_view ToString(HopAction action) {
  switch (action) {
    case HopAction::kSend:
      return "send";
    case HopAction::kForward:
      return "forward";
    case HopAction::kService:
      return "service";
    case HopAction::kServe:
      return "serve";
    case HopAction::kDrop:
      return "drop";
  }
  return "forward";
}

absl::string_view ToString(Level level) {
  switch (level) {
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARNING";
    case Level::kCritical:
      return "CRITICAL";
    case Level::kFatal:
      return "FATAL";
  }
  return "INFO";
}

absl::string_view ToString(Verdict verdict) {
  switch (verdict) {
    case Verdict::kReachable:
      return "reachable";
    case Verdict::kUnreachable:
      return "unreachable";
    case Verdict::kDegraded:
      return "degraded";
  }
  return "reachable";
}

std::optional<Level> Hop::MaxLevel() const {
  std::optional<Level> max;
  for (const Suspicion& s : suspicions) {
    if (!max || static_cast<int>(s.level) > static_cast<int>(*max)) max = s.level;
  }
  return max;
}

PathGraph::Vertex PathGraph::AddHop(Hop hop) {
  std::string id = hop.id;
  for (int n = 2; by_id_.contains(id); ++n) id = absl::StrCat(hop.id, "#", n);
  hop.id = id;
  for (Suspicion& s : hop.suspicions) s.hop = id;
  Vertex v = boost::add_vertex(std::move(hop), graph_);
  by_id_.emplace(id, v);
  return v;
}

void PathGraph::Link(Vertex from, Vertex to, absl::string_view label) {
  boost::add_edge(from, to, LinkInfo{std::string(label)}, graph_);
}

void PathGraph::AddSuspicion(Vertex v, Level level, absl::string_view code,
                             absl::string_view message) {
  Hop& h = graph_[v];
  h.suspicions.push_back(Suspicion{level, std::string(code), h.id, std::string(message)});
}

void PathGraph::AddGlobalSuspicion(Level level, absl::string_view code, absl::string_view message) {
  global_.push_back(Suspicion{level, std::string(code), "", std::string(message)});
}

std::optional<PathGraph::Vertex> PathGraph::Find(absl::string_view id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::vector<Suspicion> PathGraph::Suspicions() const {
  std::vector<Suspicion> out;
  absl::flat_hash_set<std::tuple<int, std::string, std::string, std::string>> seen;
  auto add = [&](const Suspicion& s) {
    if (seen.insert({static_cast<int>(s.level), s.code, s.hop, s.message}).second) {
      out.push_back(s);
    }
  };
  for (Vertex v = 0; v < boost::num_vertices(graph_); ++v) {
    for (const Suspicion& s : graph_[v].suspicions) add(s);
  }
  for (const Suspicion& s : global_) add(s);
  return out;
}

Verdict ComputeVerdict(const std::vector<Suspicion>& suspicions) {
  bool degraded = false;
  for (const Suspicion& s : suspicions) {
    if (s.level == Level::kFatal) return Verdict::kUnreachable;
    if (s.level == Level::kCritical || s.level == Level::kWarning) degraded = true;
  }
  return degraded ? Verdict::kDegraded : Verdict::kReachable;
}

}  // namespace sarena::diag
