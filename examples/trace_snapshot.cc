// Example: the path model as a library — open a snapshot (docs/diag-snapshot.md), trace one query
// through it and print the verdict and the suspicions. No kernel access and no root: a snapshot
// collected elsewhere (`sarena-diag collect`) is enough, and a program that only traces can link
// sarena::diag alone (base, net, model: no libbpf, no libmnl).
//   example_trace_snapshot SNAPSHOT_DIR SRC DST:PORT[/PROTO] [CNI]
//     SRC / DST  pod:NS/NAME | node:NAME | svc:NS/NAME (destination only) | IPv4 address
//     CNI        calico | sarena | generic | auto (default: auto, looking at any node)
// Prints "cni plugin: NAME", "verdict: reachable|degraded|unreachable", then one line per
// suspicion "LEVEL code [hop]: message". Exit status: 0 the walk ran, 2 bad input, 1 usage.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/snapshot.h"

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "example_trace_snapshot: %s\n", std::string(status.message()).c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr,
                 "usage: %s SNAPSHOT_DIR SRC DST:PORT[/PROTO] [calico|sarena|generic|auto]\n",
                 argv[0]);
    return 1;
  }
  absl::StatusOr<sarena::diag::Query> query = sarena::diag::ParseQuery(argv[2], argv[3]);
  if (!query.ok()) return Fail(query.status());
  absl::StatusOr<std::unique_ptr<sarena::model::Snapshot>> snapshot =
      sarena::model::Snapshot::Open(argv[1]);
  if (!snapshot.ok()) return Fail(snapshot.status());
  // No node names: "auto" decides from the snapshot's nodes as a whole.
  absl::StatusOr<std::unique_ptr<sarena::diag::Plugin>> plugin =
      sarena::diag::SelectPlugin(argc == 5 ? argv[4] : "auto", **snapshot, {});
  if (!plugin.ok()) return Fail(plugin.status());

  absl::StatusOr<sarena::diag::TraceResult> result =
      sarena::diag::Trace(**snapshot, *query, **plugin);
  if (!result.ok()) return Fail(result.status());

  const std::vector<sarena::diag::Suspicion> suspicions = result->graph.Suspicions();
  std::printf("cni plugin: %s\n", result->plugin.c_str());
  std::printf("verdict: %s\n",
              std::string(sarena::diag::ToString(sarena::diag::ComputeVerdict(suspicions))).c_str());
  for (const sarena::diag::Suspicion& s : suspicions) {
    std::printf("%s %s [%s]: %s\n", std::string(sarena::diag::ToString(s.level)).c_str(),
                s.code.c_str(), s.hop.c_str(), s.message.c_str());
  }
  return 0;
}
