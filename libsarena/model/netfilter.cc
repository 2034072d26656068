// The names of netfilter.h's enums and the Netfilter object itself (copies share the parsed
// rules). The iptables-save format is parsed by netfilter_iptables_save.cc into the rules of
// netfilter_rules.h; the match modules are netfilter_match_*.cc, the targets
// netfilter_targets.cc; the evaluation is netfilter_eval.cc.
#include "libsarena/model/netfilter.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model {

absl::string_view ToString(NfHook hook) {
  switch (hook) {
    case NfHook::kPrerouting: return "PREROUTING";
    case NfHook::kInput: return "INPUT";
    case NfHook::kForward: return "FORWARD";
    case NfHook::kOutput: return "OUTPUT";
    case NfHook::kPostrouting: return "POSTROUTING";
  }
  return "?";
}

absl::string_view ToString(NfTable table) {
  switch (table) {
    case NfTable::kRaw: return "raw";
    case NfTable::kMangle: return "mangle";
    case NfTable::kNat: return "nat";
    case NfTable::kFilter: return "filter";
    case NfTable::kSecurity: return "security";
  }
  return "?";
}

absl::string_view ToString(NfVerdict verdict) {
  switch (verdict) {
    case NfVerdict::kAccept: return "ACCEPT";
    case NfVerdict::kDrop: return "DROP";
    case NfVerdict::kReject: return "REJECT";
    case NfVerdict::kQueue: return "QUEUE";
  }
  return "?";
}

absl::string_view ToString(NfNote::Kind kind) {
  switch (kind) {
    case NfNote::Kind::kUnknownMatch: return "unknown_match";
    case NfNote::Kind::kUnknownTarget: return "unknown_target";
    case NfNote::Kind::kMissingChain: return "missing_chain";
    case NfNote::Kind::kLoop: return "loop";
    case NfNote::Kind::kOutcomeCap: return "outcome_cap";
    case NfNote::Kind::kNeedsNetstack: return "needs_netstack";
  }
  return "?";
}

std::string NfRuleRef::ToString() const {
  if (rule_number == 0) {
    return absl::StrCat(sarena::model::ToString(table), " ", chain, " policy (line ", line, "): ",
                        text);
  }
  return absl::StrCat(sarena::model::ToString(table), " ", chain, " #", rule_number, " (line ",
                      line, "): ", text);
}

Netfilter::Netfilter() : impl_(std::make_shared<Impl>()) {}
Netfilter::~Netfilter() = default;
Netfilter::Netfilter(const Netfilter&) = default;
Netfilter& Netfilter::operator=(const Netfilter&) = default;
Netfilter::Netfilter(Netfilter&&) noexcept = default;
Netfilter& Netfilter::operator=(Netfilter&&) noexcept = default;

bool Netfilter::HasTable(NfTable table) const {
  return impl_->tables[static_cast<int>(table)].present;
}

bool Netfilter::HasChain(NfTable table, absl::string_view chain) const {
  return impl_->tables[static_cast<int>(table)].Find(chain) != nullptr;
}

std::vector<std::string> Netfilter::Chains(NfTable table) const {
  std::vector<std::string> out;
  for (const internal::Chain& c : impl_->tables[static_cast<int>(table)].chains) {
    out.push_back(c.name);
  }
  return out;
}

size_t Netfilter::rule_count() const { return impl_->rule_count; }

bool Netfilter::HasTarget(absl::string_view target) const {
  return impl_->target_names.contains(target);
}

absl::string_view Netfilter::text() const { return impl_->text; }

void Netfilter::SetIpsets(Ipsets ipsets) {
  ipsets_ = std::make_shared<const Ipsets>(std::move(ipsets));
}

const Ipsets* Netfilter::ipsets() const { return ipsets_.get(); }

}  // namespace sarena::model
