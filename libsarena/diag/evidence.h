// Joins the kernel's own drop evidence for a real probe (model::LiveEvidence, gathered by
// libsarena/live for `sarena-diag trace --live`) to the hops the model walked, and says where the
// two agree and, loudly, where they do not.
//
// A kernel drop is joined to a hop of the same namespace (place "node:<n>" is the node's hops,
// "pod:<ns>/<name>" the pod's), preferring a hop whose iif or oif is the drop's device and whose
// packet (or its reverse, on the reply) has the dropped packet's addresses. Then:
//   agreed       the hop drops in the model and a FATAL code there explains the kernel's reason
//                (CodeExplainsDrop);
//   mismatch     the hop drops in the model but no FATAL code there explains the reason;
//   kernel_only  the kernel dropped where the model does not (or in a namespace the path never
//                entered, or one the snapshot does not have);
//   model_only   a hop drops in the model and the kernel reported no drop of the probe there;
//                except at the origin when the probe's send failed locally (the kernel refused
//                the packet before any skb existed: agreed, kernel_reason "send:<error>"), and
//                not_listening when the probe was refused (the kernel's RST).
// Source of the reasons: include/net/dropreason-core.h (enum skb_drop_reason).
#ifndef LIBSARENA_DIAG_EVIDENCE_H_
#define LIBSARENA_DIAG_EVIDENCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/model/live_evidence.h"

namespace sarena::diag {

/// Whether the model's suspicion `code` (codes.h vocabulary, e.g. "rp_filter_drop") explains
/// a kernel drop with reason `kernel_reason` (full enum name, "SKB_DROP_REASON_IP_RPFILTER", or
/// without the "SKB_DROP_REASON_" prefix): one of the code's drop_reasons in codes.h (the one
/// list). Unknown codes explain nothing.
bool CodeExplainsDrop(absl::string_view code, absl::string_view kernel_reason);

/// One joined finding (see the file comment).
struct EvidenceItem {
  enum class Outcome { kAgreed, kKernelOnly, kModelOnly, kMismatch };
  Outcome outcome = Outcome::kAgreed;
  std::string hop;            // Hop.id, "" when no hop matched
  std::string node;
  std::string place;
  std::string device;
  std::string model_code;     // FATAL code at the hop, "" for kernel_only
  std::string kernel_reason;  // SKB_DROP_REASON_*, "datapath:<reason>" or "send:<error>"
  std::string location;
  uint32_t count = 0;
  model::Packet packet;       // the dropped packet (model_only: the hop's packet)
  bool arp = false;           // the kernel dropped an ARP packet resolving the path's next hop
  std::string message;        // one line: "model: drop at node-a, rp_filter_drop; kernel: ..."
};
/// "agreed" | "kernel_only" | "model_only" | "mismatch".
absl::string_view ToString(EvidenceItem::Outcome outcome);

/// The join of one trace and its live evidence.
struct JoinedEvidence {
  std::vector<EvidenceItem> items;
  /// One line on the probe versus the verdict, e.g. "probe: 1 TCP SYN from ... : timeout after
  /// 1000 ms; model verdict unreachable: consistent".
  std::string probe_line;
  /// The probe's result contradicts the verdict (connected but unreachable, or failed but
  /// reachable/degraded).
  bool probe_disagrees = false;
  /// No disagreement of any kind.
  bool agree = true;
};

/// Joins `evidence` to `graph` (see the file comment). Pure; never fails.
JoinedEvidence JoinEvidence(const PathGraph& graph, const model::LiveEvidence& evidence);

/// The text block appended to ToText for --live: "live evidence: AGREE|DISAGREE ...", the probe
/// line, one line per item ("  agreed: model: ...; kernel: ..."), disagreements marked "!!".
std::string EvidenceText(const JoinedEvidence& joined);

/// The live JSON report (sarena.diag.v1.LiveReport: Report's fields, then evidence, probe,
/// agreement), printed like ToJson. Errors: kInternal from the JSON printer.
absl::StatusOr<std::string> ToLiveJson(const PathGraph& graph, const model::LiveEvidence& evidence,
                                       const JoinedEvidence& joined, bool pretty = true);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_EVIDENCE_H_
