// The evaluation of a packet against parsed iptables rules (netfilter_rules.h), the way the
// kernel's ip_tables does it: tables in hook-priority order, chains with jumps/gotos/RETURN and
// policies, verdicts, forks for what the model cannot decide (unknown matches, statistic
// branches). Each match is evaluated by its module's family (netfilter_match_*.cc); packet
// rewriting targets by netfilter_targets.cc.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model {

namespace {

using internal::Chain;
using internal::IptRule;
using internal::Match;
using internal::MatchInput;
using internal::MatchKind;
using internal::Table;
using internal::Target;
using internal::TargetKind;
using internal::Tri;

struct Frame {
  const Chain* chain;
  size_t next;
};

struct Branch {
  NfOutcome out;
  std::vector<Frame> stack;  // return frames
  const Chain* chain = nullptr;
  size_t idx = 0;
  int depth = 0;
};

// Whether a branch goes on with its next rule or has ended (its outcome is in the results).
enum class Flow : uint8_t { kGoOn, kDone };

class Evaluator {
 public:
  Evaluator(const Table& table, NfTable table_id, NfHook hook, const NfContext& ctx,
            const NfEvalOptions& opt, size_t* budget, const Ipsets* ipsets)
      : table_(table), table_id_(table_id), hook_(hook), ctx_(ctx), opt_(opt), budget_(budget),
        ipsets_(ipsets) {}

  // Runs `in` through `start`; appends terminal outcomes to `results`.
  void Run(NfOutcome in, const Chain* start, bool user_start, std::vector<NfOutcome>* results) {
    std::vector<Branch> work;
    Branch b;
    b.out = std::move(in);
    b.chain = start;
    b.idx = 0;
    user_start_ = user_start;
    work.push_back(std::move(b));
    while (!work.empty()) {
      Branch br = std::move(work.back());
      work.pop_back();
      Step(std::move(br), &work, results);
    }
  }

 private:
  NfRuleRef Ref(const Chain& c, const IptRule& r) const {
    NfRuleRef ref;
    ref.table = table_id_;
    ref.chain = c.name;
    ref.rule_number = r.number;
    ref.line = r.line;
    ref.text = std::string(r.text);
    return ref;
  }
  NfRuleRef PolicyRef(const Chain& c) const {
    NfRuleRef ref;
    ref.table = table_id_;
    ref.chain = c.name;
    ref.rule_number = 0;
    ref.line = c.line;
    ref.text = c.policy_text;
    return ref;
  }

  bool CanFork() const { return *budget_ > 0; }
  void UseFork() {
    if (*budget_ > 0) --*budget_;
  }
  void CapNote(Branch* br, const Chain& c, const IptRule& r) {
    if (cap_noted_) return;
    cap_noted_ = true;
    NfNote n;
    n.kind = NfNote::Kind::kOutcomeCap;
    n.rule = Ref(c, r);
    n.what = "outcome cap";
    n.detail = absl::StrCat("more than ", opt_.max_outcomes,
                            " outcomes: later branches took the most likely path only");
    br->out.notes.push_back(std::move(n));
  }

  // Evaluates one known match. Unknown-ish outcomes return kFork with `why` set.
  Tri Eval(const Match& m, const Packet& p, const NfOutcome& out, std::string* why,
           NfNote::Kind* note_kind) const {
    MatchInput in{p, out, ctx_, ipsets_, why, note_kind};
    switch (m.kind) {
      case MatchKind::kTrue: return Tri::kYes;
      case MatchKind::kSrc:
      case MatchKind::kDst:
      case MatchKind::kIif:
      case MatchKind::kOif:
      case MatchKind::kProto:
      case MatchKind::kFragment:
      case MatchKind::kSrcRange:
      case MatchKind::kDstRange:
      case MatchKind::kPktType: return internal::EvalBasicMatch(m, in);
      case MatchKind::kSport:
      case MatchKind::kDport:
      case MatchKind::kTcpFlags:
      case MatchKind::kMultiport:
      case MatchKind::kIcmpType: return internal::EvalPortMatch(m, in);
      case MatchKind::kSrcType:
      case MatchKind::kDstType:
      case MatchKind::kRpfilter: return internal::EvalRouteMatch(m, in);
      case MatchKind::kMark:
      case MatchKind::kConnmark:
      case MatchKind::kCtState: return internal::EvalConntrackMatch(m, in);
      case MatchKind::kSet: return internal::EvalSetMatch(m, in);
      case MatchKind::kStatistic: return Tri::kFork;  // handled by the caller
      case MatchKind::kUnknown:
        *why = "not implemented by the model";
        *note_kind = NfNote::Kind::kUnknownMatch;
        return Tri::kFork;
    }
    return Tri::kNo;
  }

  void AddNote(NfOutcome* out, NfNote::Kind kind, const Chain& c, const IptRule& r,
               absl::string_view what, absl::string_view detail) {
    for (const NfNote& n : out->notes) {
      if (n.kind == kind && n.rule.line == r.line && n.what == what) return;
    }
    NfNote n;
    n.kind = kind;
    n.rule = Ref(c, r);
    n.what = std::string(what);
    n.detail = std::string(detail);
    out->notes.push_back(std::move(n));
  }

  void Finish(Branch* br, NfVerdict v, std::optional<NfRuleRef> by,
              std::vector<NfOutcome>* results) {
    br->out.verdict = v;
    if (by.has_value()) br->out.decided_by = std::move(by);
    results->push_back(std::move(br->out));
  }

  // RETURN, or the end of chain `c`: back to the calling chain; from a base chain, its policy.
  Flow Return(Branch* br, const Chain& c, std::vector<NfOutcome>* results) {
    if (!br->stack.empty()) {
      Frame f = br->stack.back();
      br->stack.pop_back();
      br->chain = f.chain;
      br->idx = f.next;
      --br->depth;
      return Flow::kGoOn;
    }
    if (c.builtin && !user_start_) {
      Finish(br, c.policy,
             c.policy == NfVerdict::kAccept ? std::nullopt : std::optional(PolicyRef(c)),
             results);
    } else {
      Finish(br, NfVerdict::kAccept, std::nullopt, results);
    }
    return Flow::kDone;
  }

  // Runs a branch until it terminates or forks.
  void Step(Branch br, std::vector<Branch>* work, std::vector<NfOutcome>* results) {
    while (true) {
      const Chain& c = *br.chain;
      br.idx = internal::NextRule(c, br.idx, br.out.packet);
      if (br.idx >= c.rules.size()) {
        // End of chain: implicit RETURN for user chains, policy for base chains.
        if (Return(&br, c, results) == Flow::kDone) return;
        continue;
      }
      const IptRule& r = c.rules[br.idx];
      double branch_p = 1.0;
      if (!RuleMatches(&br, c, r, work, &branch_p)) {
        ++br.idx;
        continue;
      }
      if (TakeTarget(&br, c, r, branch_p, results) == Flow::kDone) return;
    }
  }

  // Whether rule `r` matches the branch's packet. Deterministic matches first (their order does
  // not change the result); then the undecidable ones (unknown matches, statistic), which fork
  // the branch (the other side is pushed on `work`). *branch_p: the statistic branch's
  // probability.
  bool RuleMatches(Branch* br, const Chain& c, const IptRule& r, std::vector<Branch>* work,
                   double* branch_p) {
    size_t n_undecided = 0;
    const Match* statistic = nullptr;
    for (size_t mi = 0; mi < r.matches.size(); ++mi) {
      const Match& m = r.matches[mi];
      if (m.kind == MatchKind::kStatistic) {
        statistic = &m;
        continue;
      }
      why_.clear();
      NfNote::Kind nk = NfNote::Kind::kUnknownMatch;
      Tri t = Eval(m, br->out.packet, br->out, &why_, &nk);
      if (t == Tri::kYes) continue;
      if (t == Tri::kNo) return false;
      if (n_undecided < 16) {
        undecided_why_[n_undecided] = std::move(why_);
        undecided_kind_[n_undecided] = nk;
        undecided_[n_undecided++] = &m;
      }
    }
    if (!AssumeUndecided(br, c, r, n_undecided, work)) return false;
    return statistic == nullptr || TakeStatistic(br, c, r, *statistic, work, branch_p);
  }

  // The undecided matches of rule `r`, per NfEvalOptions::unknown_match: false when the branch
  // assumes one of them fails.
  bool AssumeUndecided(Branch* br, const Chain& c, const IptRule& r, size_t n_undecided,
                       std::vector<Branch>* work) {
    for (size_t ui = 0; ui < n_undecided; ++ui) {
      const Match& m = *undecided_[ui];
      AddNote(&br->out, undecided_kind_[ui], c, r, m.text, undecided_why_[ui]);
      NfUnknownMatch policy = opt_.unknown_match;
      if (policy == NfUnknownMatch::kFork && !CanFork()) {
        CapNote(br, c, r);
        policy = NfUnknownMatch::kAssumeNoMatch;
      }
      if (policy == NfUnknownMatch::kAssumeNoMatch) return false;
      if (policy == NfUnknownMatch::kAssumeMatch) continue;
      UseFork();
      Branch other = *br;
      other.idx = br->idx + 1;
      other.out.assumptions.push_back({Ref(c, r), std::string(m.text), false});
      work->push_back(std::move(other));
      br->out.assumptions.push_back({Ref(c, r), std::string(m.text), true});
    }
    return true;
  }

  // A -m statistic match: the branch takes the "match" side (weighted by its probability), the
  // "no match" side is pushed on `work`; past the outcome cap, the more likely side only.
  bool TakeStatistic(Branch* br, const Chain& c, const IptRule& r, const Match& m,
                     std::vector<Branch>* work, double* branch_p) {
    double p = internal::StatisticProbability(m);
    if (p <= 0.0) return false;
    if (!(p < 1.0)) return true;  // (NaN included, as "p < 1" fails for it)
    if (CanFork()) {
      UseFork();
      Branch other = *br;  // the "no match" branch continues after this rule
      other.out.probability *= (1.0 - p);
      other.idx = br->idx + 1;
      work->push_back(std::move(other));
      br->out.probability *= p;
      *branch_p *= p;
      return true;
    }
    CapNote(br, c, r);
    if (p < 0.5) {
      br->out.probability *= (1.0 - p);
      return false;
    }
    br->out.probability *= p;
    *branch_p *= p;
    return true;
  }

  // The target of matched rule `r`.
  Flow TakeTarget(Branch* br, const Chain& c, const IptRule& r, double branch_p,
                  std::vector<NfOutcome>* results) {
    const Target& t = r.target;
    NfStep step;
    step.hook = hook_;
    step.rule = Ref(c, r);
    step.target = std::string(t.name);
    step.tcpmss = t.tcpmss;
    step.branch_probability = branch_p;
    br->out.steps.push_back(step);
    switch (t.kind) {
      case TargetKind::kNone:
      case TargetKind::kContinue:
        ++br->idx;
        return Flow::kGoOn;
      case TargetKind::kAccept:
        Finish(br, NfVerdict::kAccept, std::nullopt, results);
        return Flow::kDone;
      case TargetKind::kDrop:
        Finish(br, NfVerdict::kDrop, Ref(c, r), results);
        return Flow::kDone;
      case TargetKind::kReject:
        Finish(br, NfVerdict::kReject, Ref(c, r), results);
        return Flow::kDone;
      case TargetKind::kQueue:
        Finish(br, NfVerdict::kQueue, Ref(c, r), results);
        return Flow::kDone;
      case TargetKind::kReturn: return Return(br, c, results);
      case TargetKind::kJump:
      case TargetKind::kGoto: return Jump(br, c, r, results);
      case TargetKind::kDnat:
      case TargetKind::kSnat:
      case TargetKind::kMasquerade:
      case TargetKind::kRedirect: {
        std::string note;
        bool kept = internal::ApplyNatTarget(t, hook_, ctx_, &br->out, &note);
        if (!note.empty()) AddNote(&br->out, NfNote::Kind::kNeedsNetstack, c, r, t.text, note);
        Finish(br, kept ? NfVerdict::kAccept : NfVerdict::kDrop, Ref(c, r), results);
        return Flow::kDone;
      }
      case TargetKind::kMark:
      case TargetKind::kConnmark:
      case TargetKind::kNotrack:
        internal::ApplyMangleTarget(t, &br->out.packet);
        ++br->idx;
        return Flow::kGoOn;
      case TargetKind::kUnknown:
        AddNote(&br->out, NfNote::Kind::kUnknownTarget, c, r, t.text,
                "target not implemented by the model: treated as non-terminating");
        ++br->idx;
        return Flow::kGoOn;
    }
    return Flow::kGoOn;
  }

  // -j CHAIN (pushes a return frame) / -g CHAIN.
  Flow Jump(Branch* br, const Chain& c, const IptRule& r, std::vector<NfOutcome>* results) {
    const Target& t = r.target;
    const Chain* target = t.chain >= 0 ? &table_.chains[t.chain] : nullptr;
    if (target == nullptr) {
      // Unknown target extension (or a missing chain): non-terminating, noted.
      bool looks_like_chain = t.kind == TargetKind::kGoto;
      AddNote(&br->out,
              looks_like_chain ? NfNote::Kind::kMissingChain : NfNote::Kind::kUnknownTarget, c,
              r, t.text,
              looks_like_chain ? "goto to an undefined chain: ignored"
                               : "target not implemented by the model (or undefined chain): "
                                 "treated as non-terminating");
      ++br->idx;
      return Flow::kGoOn;
    }
    if (br->depth + 1 > opt_.max_depth) {
      AddNote(&br->out, NfNote::Kind::kLoop, c, r, t.text,
              "jump depth limit reached (chain loop?): the packet is dropped");
      Finish(br, NfVerdict::kDrop, Ref(c, r), results);
      return Flow::kDone;
    }
    if (t.kind == TargetKind::kJump) {
      br->stack.push_back({&c, br->idx + 1});
      ++br->depth;
    }
    br->chain = target;
    br->idx = 0;
    return Flow::kGoOn;
  }

  const Table& table_;
  NfTable table_id_;
  NfHook hook_;
  const NfContext& ctx_;
  const NfEvalOptions& opt_;
  size_t* budget_;
  const Ipsets* ipsets_;
  bool user_start_ = false;
  bool cap_noted_ = false;
  // Per-rule scratch, kept across rules (RuleMatches runs once per rule of long chains).
  const Match* undecided_[16];
  std::string undecided_why_[16];
  NfNote::Kind undecided_kind_[16];
  std::string why_;
};

std::vector<NfTable> TablesFor(NfHook hook) {
  switch (hook) {
    case NfHook::kPrerouting: return {NfTable::kRaw, NfTable::kMangle, NfTable::kNat};
    case NfHook::kInput:
      return {NfTable::kMangle, NfTable::kFilter, NfTable::kSecurity, NfTable::kNat};
    case NfHook::kForward: return {NfTable::kMangle, NfTable::kFilter, NfTable::kSecurity};
    case NfHook::kOutput:
      return {NfTable::kRaw, NfTable::kMangle, NfTable::kNat, NfTable::kFilter, NfTable::kSecurity};
    case NfHook::kPostrouting: return {NfTable::kMangle, NfTable::kNat};
  }
  return {};
}

}  // namespace

std::vector<NfOutcome> Netfilter::EvaluateTable(NfTable table, NfHook hook, const Packet& packet,
                                                const NfContext& ctx, const NfEvalOptions& options,
                                                absl::string_view chain) const {
  NfOutcome start;
  start.packet = packet;
  std::vector<NfOutcome> results;
  const Table& t = impl_->tables[static_cast<int>(table)];
  bool user = !chain.empty();
  const Chain* c = t.Find(user ? chain : ToString(hook));
  if (!t.present || c == nullptr) {
    results.push_back(std::move(start));
    return results;
  }
  size_t budget = options.max_outcomes > 0 ? options.max_outcomes - 1 : 0;
  Evaluator ev(t, table, hook, ctx, options, &budget, ipsets_.get());
  ev.Run(std::move(start), c, user, &results);
  return results;
}

std::vector<NfOutcome> Netfilter::EvaluateHook(NfHook hook, const Packet& packet,
                                               const NfContext& ctx,
                                               const NfEvalOptions& options) const {
  std::vector<NfOutcome> current;
  NfOutcome start;
  start.packet = packet;
  current.push_back(std::move(start));
  size_t budget = options.max_outcomes > 0 ? options.max_outcomes - 1 : 0;
  for (NfTable tid : TablesFor(hook)) {
    const Table& t = impl_->tables[static_cast<int>(tid)];
    if (!t.present) continue;
    const Chain* base = t.Find(ToString(hook));
    if (base == nullptr) continue;
    std::vector<NfOutcome> next;
    for (NfOutcome& o : current) {
      if (o.verdict != NfVerdict::kAccept) {
        next.push_back(std::move(o));
        continue;
      }
      if (tid == NfTable::kNat && o.packet.ct_state != CtState::kNew) {
        next.push_back(std::move(o));
        continue;
      }
      Evaluator ev(t, tid, hook, ctx, options, &budget, ipsets_.get());
      ev.Run(std::move(o), base, false, &next);
    }
    current = std::move(next);
  }
  // NAT rules are per-connection: the decided_by of an ACCEPT outcome only reports a NAT rule.
  return current;
}

}  // namespace sarena::model
