// Locations (HopId; the namespaces themselves are model::Topology's), graph helpers (AddHop, InfoOnce, Need) and the
// branch fan-out (Fan, Enter, BranchHop, Join: a FATAL in some but not all branches is reported
// as CRITICAL).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

std::string Ep(const net::Ipv4& ip, uint16_t port) {
  return port ? absl::StrCat(ip.to_string(), ":", port) : ip.to_string();
}

std::string Tuple(const Packet& p) {
  return absl::StrCat(Ep(p.src, p.sport), " -> ", Ep(p.dst, p.dport), "/",
                      model::ProtoName(p.proto));
}

// ------------------------------------------------------------------------------------------
// Locations.

std::string Walker::HopId(const Where& w, bool reply) const {
  std::string id = w.in_pod() ? w.pod->Key() : w.node_name;
  if (reply) absl::StrAppend(&id, "@reply");
  return id;
}

// ------------------------------------------------------------------------------------------
// Graph helpers.

Vertex Walker::AddHop(Hop hop, const Prev& prev) {
  Vertex v = graph_.AddHop(std::move(hop));
  if (prev.v) graph_.Link(*prev.v, v, prev.label);
  for (auto* c : collectors_) c->push_back(v);
  return v;
}

void Walker::Drop(Vertex v, absl::string_view code, absl::string_view msg) {
  Suspect(v, Level::kFatal, code, msg);
  graph_.hop(v).action = HopAction::kDrop;
}

void Walker::InfoOnce(Vertex v, absl::string_view key, absl::string_view code,
                      absl::string_view msg) {
  if (!once_.insert(std::string(key)).second) return;
  Suspect(v, Level::kInfo, code, msg);
}

// The absent-data rule (snapshot_input.h): true when `in` is in the snapshot; else the INFO
// file_missing (once per namespace and file, whatever check asked first) and, for Absent::kEnd,
// the WARNING snapshot_incomplete that ends the path at `v` (the caller returns Done()). A
// namespace with no directory at all is the caller's to report.
bool Walker::Need(const Where& w, Vertex v, SnapshotInput in, absl::string_view what,
                  Absent then) {
  if (HasSnapshotInput(cluster_, w.ns, in)) return true;
  std::string file = SnapshotInputFile(w.ns, in);
  if (file.empty()) return false;
  InfoOnce(v, absl::StrCat("missing|", file), "file_missing",
           absl::StrCat("cannot check ", what, ": file ", file, " missing"));
  if (then == Absent::kEnd) {
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot check ", what,
                         IsClusterInput(in) ? "" : absl::StrCat(" in ", w.ns->id), " (", file,
                         " missing): the path beyond cannot be checked"));
  }
  return false;
}

// ------------------------------------------------------------------------------------------
// Fan-out.

Next Walker::Fan(std::vector<Step> branches, size_t width, std::vector<uint32_t> weights) {
  if (branches.size() <= 1) return branches;
  auto fork = std::make_shared<Fork>();
  fork->sets.resize(branches.size());
  fork->seen = branch_seen_;
  fork->width = width;
  fork->width_after = walk_width_;
  fork->weights = std::move(weights);
  Next next;
  for (size_t i = 0; i < branches.size(); ++i) {
    next.push_back(EnterStep{fork, i});
    next.push_back(std::move(branches[i]));
  }
  next.push_back(JoinStep{fork});
  return next;
}

void Walker::Enter(const EnterStep& s) {
  if (s.index > 0) collectors_.pop_back();  // the previous branch's
  branch_seen_ = s.fork->seen;              // each branch makes its own once-per-branch checks
  collectors_.push_back(&s.fork->sets[s.index]);
  walk_width_ = s.fork->width;
}

Next Walker::BranchHop(NexthopBranchStep& s) {
  Hop bh = graph_.hop(s.at);
  bh.id = absl::StrCat(bh.id, "@", s.dev);
  bh.suspicions.clear();
  Vertex b = AddHop(bh, Prev{s.at, s.label});
  SetVertex(*s.cont, b);
  return Then(std::move(*s.cont));
}

Next Walker::BranchHop(ServiceBranchStep& s) {
  Vertex b = s.at;
  if (s.clone) {
    b = AddHop(*s.clone, Prev{s.at, s.label});
  } else {
    graph_.hop(s.at).packet = s.pkt;
  }
  Suspect(b, Level::kInfo, "dnat", s.dnat);
  SetVertex(*s.cont, b);
  return Then(std::move(*s.cont));
}

void Walker::Join(const JoinStep& j) {
  collectors_.pop_back();  // the last branch's
  walk_width_ = j.fork->width_after;
  const std::vector<std::vector<Vertex>>& sets = j.fork->sets;
  const std::vector<uint32_t>& weights = j.fork->weights;
  // DESIGN: FATAL means the path is broken. When only some backends fail, some connections
  // succeed: report those FATALs as CRITICAL (the branch still shows where it fails).
  std::vector<bool> fatal(sets.size(), false);
  size_t nfatal = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    for (Vertex v : sets[i]) {
      if (graph_.hop(v).MaxLevel() == Level::kFatal) fatal[i] = true;
    }
    nfatal += fatal[i];
  }
  if (nfatal == 0 || nfatal == sets.size()) return;
  std::string note;
  if (weights.size() == sets.size()) {
    uint64_t total = 0, failing = 0;
    for (size_t i = 0; i < sets.size(); ++i) {
      total += weights[i];
      if (fatal[i]) failing += weights[i];
    }
    note = absl::StrFormat(
        " (only %d of %d next hops of the multipath route fail: about %.0f%% of flows, by "
        "next-hop weight, are hashed onto them and die; the others get through)",
        nfatal, sets.size(), total ? 100.0 * failing / total : 0.0);
  } else {
    note = absl::StrCat(" (only ", nfatal, " of ", sets.size(),
                        " Service branches fail: some connections succeed)");
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    if (!fatal[i]) continue;
    for (Vertex v : sets[i]) {
      for (Suspicion& s : graph_.hop(v).suspicions) {
        if (s.level != Level::kFatal) continue;
        s.level = Level::kCritical;
        s.message = absl::StrCat(s.message, note);
      }
    }
  }
}

}  // namespace sarena::diag::internal
