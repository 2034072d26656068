// Absent data in the walk (flight.h, "absent data"): which inputs a conclusion rests on, so that
// the walk makes it only when they are in the snapshot (libsarena/diag/snapshot_input.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "libsarena/diag/walk/flight.h"

namespace sarena::diag::internal {

std::vector<std::pair<SnapshotInput, std::string>> InputDropRestsOn(const model::InputResult& in) {
  std::vector<std::pair<SnapshotInput, std::string>> on;
  if (in.decision != InputDecision::kDrop || in.drop != InputDrop::kRpFilter) return on;
  // fib_validate_source: the reverse lookup goes through the rules; without an address on the
  // ingress device (its last resort) only the device's addresses tell.
  on.emplace_back(SnapshotInput::kRules, std::string(kRulesAssumed));
  if (in.rpf.failure == model::RpfFailure::kNoAddressOnIngress) {
    on.emplace_back(SnapshotInput::kAddrs, "the reverse-path filter (the ingress device's addresses)");
  }
  return on;
}

bool RestsOnNetstack(const NfOutcome& o) {
  return std::any_of(o.notes.begin(), o.notes.end(), [](const model::NfNote& n) {
    return n.kind == model::NfNote::Kind::kNeedsNetstack;
  });
}

}  // namespace sarena::diag::internal
