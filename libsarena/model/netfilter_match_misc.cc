// The modules of iptables-extensions(8) that never look at the packet: statistic (a random or
// every-nth choice, enumerated by the evaluator as weighted branches) and comment/limit/hashlimit
// (always true): their parsing and their evaluation.
#include "absl/strings/numbers.h"
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model::internal {

absl::Status ParseStatisticModule(absl::string_view mod, const std::vector<Opt>& opts,
                                  absl::string_view span, IptRule* rule) {
  Match m;
  m.kind = MatchKind::kStatistic;
  m.text = span;
  absl::string_view mode;
  uint32_t every = 0;
  for (const Opt& o : opts) {
    if (o.name == "--mode") mode = FirstValue(o);
    if (o.name == "--probability") {
      if (!absl::SimpleAtod(FirstValue(o), &m.p) || m.p < 0 || m.p > 1) {
        return BadMatchValue(mod, o);
      }
      m.invert = o.invert;
    }
    if (o.name == "--every") {
      if (!absl::SimpleAtoi(FirstValue(o), &every) || every == 0) return BadMatchValue(mod, o);
      m.invert = o.invert;
    }
  }
  if (mode == "nth") m.p = 1.0 / every;
  else if (mode != "random") m.kind = MatchKind::kUnknown;
  rule->matches.push_back(std::move(m));
  return absl::OkStatus();
}

double StatisticProbability(const Match& m) { return m.invert ? 1.0 - m.p : m.p; }

absl::Status ParseAlwaysTrueModule(absl::string_view /*mod*/, const std::vector<Opt>& /*opts*/,
                                   absl::string_view /*span*/, IptRule* rule) {
  // Comments never affect the verdict; limit/hashlimit are assumed under their rate (a
  // single traced packet never exceeds a limit).
  Match m;
  m.kind = MatchKind::kTrue;
  rule->matches.push_back(std::move(m));
  return absl::OkStatus();
}

}  // namespace sarena::model::internal
