// Reports of a traced path: the stable JSON contract (docs/architecture.md "The diagnoser's
// contract"), a human-readable text form, Graphviz DOT, and SVG rendered by graphviz's `dot`.
#ifndef LIBSARENA_DIAG_REPORT_H_
#define LIBSARENA_DIAG_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/diag/report.pb.h"

namespace sarena::diag {

/// The report message (verdict by ComputeVerdict, hops in graph order, suspicions as
/// PathGraph::Suspicions()).
sarena::diag::v1::Report BuildReport(const PathGraph& graph);

/// JSON of BuildReport via protobuf's JSON mapping with the .proto field names and every field
/// printed (empty strings and zero ports included), e.g.
/// {"verdict":"unreachable","hops":[{"id":"node-a","kind":"node",...}],"suspicions":[...]}.
/// `pretty` adds newlines and two-space indentation. Errors: kInternal from the JSON printer.
absl::StatusOr<std::string> ToJson(const PathGraph& graph, bool pretty = true);

/// Human-readable: the verdict, one block per hop ("[n] id (kind on node) action iif -> oif",
/// the packet, the hop's suspicions), then every suspicion. Ends with a newline.
std::string ToText(const PathGraph& graph);

/// Graphviz DOT of the graph (boost::write_graphviz): one box per hop labelled with id, action,
/// interfaces, packet and its suspicions, filled by its worst level (FATAL red, CRITICAL orange,
/// WARNING gold, INFO light blue, none light green); edges labelled with the link kind.
std::string ToDot(const PathGraph& graph);

/// Runs `dot -Tsvg -o <svg_path>` with `dot_text` on stdin (graphviz must be installed).
/// Errors: kNotFound when `dot` cannot be executed; kInternal when it exits non-zero (its stderr
/// in the message); kUnavailable on fork/pipe failures.
absl::Status RenderSvg(absl::string_view dot_text, const std::string& svg_path);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_REPORT_H_
