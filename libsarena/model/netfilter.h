// iptables rules of one network namespace, parsed from `iptables-save` output (legacy and nft
// backends print the same format), and evaluated on a Packet the way netfilter would:
// tables in hook-priority order, chains with jumps/gotos/RETURN, matches and targets from
// iptables(8) and iptables-extensions(8), NAT rewriting the packet.
//
// Randomness is enumerated, not sampled: every `-m statistic` branch yields its own outcome with
// its probability (kube-proxy's KUBE-SVC-* chains with N endpoints give N outcomes).
//
// `-m set` is evaluated against the namespace's IP sets when `ipset save` output is available
// (Netfilter::SetIpsets / NfContext::ipsets); otherwise it is an unknown match.
// Unknown matches (`-m physdev`, `-m owner`, `-m socket`, ...) and unknown targets are never
// silently ignored: each produces an NfNote. How an unknown MATCH is evaluated is chosen by
// NfEvalOptions::unknown_match; the default kFork evaluates both possibilities (matches / does not
// match) as separate outcomes, each carrying the assumption it made — conservative in the sense
// that a DROP hidden behind an unknown match is never missed and never asserted as certain.
// Unknown TARGETS are treated as non-terminating (evaluation continues with the next rule).
#ifndef LIBSARENA_MODEL_NETFILTER_H_
#define LIBSARENA_MODEL_NETFILTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/ipset.h"
#include "libsarena/model/packet.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

class Netstack;

/// The five IPv4 netfilter hooks.
enum class NfHook : uint8_t { kPrerouting, kInput, kForward, kOutput, kPostrouting };
/// "PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING".
absl::string_view ToString(NfHook hook);

/// iptables tables.
enum class NfTable : uint8_t { kRaw, kMangle, kNat, kFilter, kSecurity };
/// "raw", "mangle", "nat", "filter", "security".
absl::string_view ToString(NfTable table);

/// Final verdict of an outcome.
enum class NfVerdict : uint8_t {
  kAccept,  // the packet passed every table of the hook (possibly rewritten)
  kDrop,    // DROP target or a DROP chain policy
  kReject,  // REJECT target (the sender gets an ICMP error / TCP RST)
  kQueue,   // NFQUEUE/QUEUE: handed to user space; the model cannot follow
};
absl::string_view ToString(NfVerdict verdict);

/// Identifies a rule: table, chain, 1-based position in the chain (as `iptables -L --line-numbers`
/// counts) and 1-based line in the iptables-save text. A chain policy has rule_number 0.
struct NfRuleRef {
  NfTable table = NfTable::kFilter;
  std::string chain;
  int rule_number = 0;
  int line = 0;
  std::string text;  // the "-A ..." line as saved, or ":CHAIN POLICY" for a policy

  /// "filter FORWARD #3 (line 42): -A FORWARD -j DROP".
  std::string ToString() const;
};

/// Something the model could not evaluate exactly.
struct NfNote {
  enum class Kind : uint8_t {
    kUnknownMatch,    // a match module/option the model does not implement
    kUnknownTarget,   // a target the model does not implement (treated as non-terminating)
    kMissingChain,    // a jump to a chain that is not defined
    kLoop,            // jump depth exceeded (a chain loop): evaluation stopped with DROP
    kOutcomeCap,      // NfEvalOptions::max_outcomes reached; later forks were not enumerated
    kNeedsNetstack,   // addrtype/rpfilter/MASQUERADE without a Netstack: assumed as documented
  };
  Kind kind = Kind::kUnknownMatch;
  NfRuleRef rule;
  std::string what;   // e.g. "-m set --match-set KUBE-CLUSTER-IP dst,dst"
  std::string detail; // human-readable consequence
};
absl::string_view ToString(NfNote::Kind kind);  // "unknown_match", "unknown_target", ...

/// NfStep::tcpmss of a `-j TCPMSS --clamp-mss-to-pmtu` rule (a value no --set-mss can have).
inline constexpr uint32_t kNfTcpMssClampToPmtu = 0x10000;

/// One step of an outcome's trace: a rule whose matches all held (its target was taken).
struct NfStep {
  NfHook hook = NfHook::kPrerouting;
  NfRuleRef rule;
  std::string target;         // "ACCEPT", "DNAT", "KUBE-SVC-XYZ", ...
  /// TCPMSS rules (iptables-extensions(8)): the --set-mss value in bytes (1..65535), or
  /// kNfTcpMssClampToPmtu for --clamp-mss-to-pmtu; 0 for every other target. The evaluator does
  /// not rewrite the packet (Packet has no MSS option): the caller following a SYN applies it
  /// as xt_TCPMSS does (never raising the MSS).
  uint32_t tcpmss = 0;
  /// When the rule (or an earlier one) was a statistic branch: the probability of this branch
  /// given that the rule was reached (e.g. 0.3333). 1 for ordinary rules.
  double branch_probability = 1.0;
};

/// An assumption made for an unknown match under NfUnknownMatch::kFork.
struct NfAssumption {
  NfRuleRef rule;
  std::string what;
  bool assumed_match = false;
};

/// One possible fate of the packet through the evaluated hook(s).
struct NfOutcome {
  /// Product of the statistic-branch probabilities along this outcome. Outcomes that share the
  /// same assumptions sum to 1.
  double probability = 1.0;
  NfVerdict verdict = NfVerdict::kAccept;
  Packet packet;                      // after DNAT/SNAT/MASQUERADE/REDIRECT/MARK rewrites
  bool dnat = false;                  // destination rewritten (DNAT/REDIRECT)
  bool snat = false;                  // source rewritten (SNAT/MASQUERADE)
  std::optional<NfRuleRef> decided_by;  // the DROP/REJECT rule or policy; the NAT rule; else none
  std::vector<NfStep> steps;          // matched rules in evaluation order
  std::vector<NfAssumption> assumptions;  // empty = certain
  std::vector<NfNote> notes;          // unknown matches/targets met on this outcome's way

  bool certain() const { return assumptions.empty(); }
};

/// How to evaluate a match the model does not implement.
enum class NfUnknownMatch : uint8_t {
  kFork,            // both ways, as separate outcomes with NfAssumption records (default)
  kAssumeNoMatch,   // as if the match failed (the rule is skipped); a note records it
  kAssumeMatch,     // as if the match held; a note records it
};

struct NfEvalOptions {
  NfUnknownMatch unknown_match = NfUnknownMatch::kFork;
  /// Stop enumerating new forks beyond this many outcomes (statistic branches are still taken as
  /// their most probable branch, unknown matches as no-match) and add a kOutcomeCap note.
  size_t max_outcomes = 1024;
  /// Jump depth limit (the kernel's is far higher; real rule sets stay far below).
  int max_depth = 64;
};

/// Where the packet is when a hook runs. Device names as `ip link` prints them.
struct NfContext {
  absl::string_view iif;              // ingress device (PREROUTING/INPUT/FORWARD); empty for OUTPUT
  absl::string_view oif;              // egress device (FORWARD/OUTPUT/POSTROUTING)
  /// Next hop (gateway, or the destination itself) for MASQUERADE's source choice.
  std::optional<net::Ipv4> nexthop;
  /// Node/pod netstack for -m addrtype, -m rpfilter, MASQUERADE and REDIRECT. When null those
  /// produce kNeedsNetstack notes (addrtype/rpfilter then follow unknown_match).
  const Netstack* netstack = nullptr;
  /// IP sets for `-m set --match-set`; when null the sets attached with Netfilter::SetIpsets()
  /// are used; with neither, set matches are unknown matches.
  const Ipsets* ipsets = nullptr;
};

/// A parsed iptables-save dump. Immutable after Parse; Evaluate is const and thread-safe.
/// Copies are cheap: they share the parsed rules (a snapshot whose nodes carry the same
/// iptables-save text parses it once); SetIpsets changes only the copy it is called on.
class Netfilter {
 public:
  Netfilter();
  ~Netfilter();
  Netfilter(const Netfilter&);
  Netfilter& operator=(const Netfilter&);
  Netfilter(Netfilter&&) noexcept;
  Netfilter& operator=(Netfilter&&) noexcept;

  /// Parses `iptables-save` output: "*table" sections, ":CHAIN POLICY [p:b]" chain lines,
  /// "-A CHAIN ..." rules (double-quoted arguments with backslash escapes), "COMMIT", comments.
  /// Rule options that the evaluator does not know are kept and reported at evaluation time, not
  /// rejected here. Errors (kInvalidArgument, "parse <file_name>: line N: <cause>"): a rule
  /// outside a table, a rule for an undeclared chain, an unterminated quote, an unknown table, a
  /// malformed address/port/mark value of a known option, a missing COMMIT at end of input.
  static absl::StatusOr<Netfilter> Parse(absl::string_view text,
                                         absl::string_view file_name = "iptables-save.txt");

  /// True when `table` appeared in the input. An absent table behaves as empty with ACCEPT
  /// policies (the kernel has not loaded it).
  bool HasTable(NfTable table) const;
  /// True when `chain` exists in `table`.
  bool HasChain(NfTable table, absl::string_view chain) const;
  /// Chain names of `table` in declaration order.
  std::vector<std::string> Chains(NfTable table) const;
  /// Number of rules in total (all tables).
  size_t rule_count() const;
  /// True when some rule of any table jumps to `target` ("TCPMSS", "KUBE-SERVICES", ...): a
  /// cheap test before an evaluation that only matters when such a rule exists.
  bool HasTarget(absl::string_view target) const;
  /// The iptables-save text the rules were parsed from.
  absl::string_view text() const;

  /// Attaches the namespace's IP sets (`ipset save`), used by `-m set` matches. Snapshot does
  /// this when nodes/<node>/ipset-save.txt exists.
  void SetIpsets(Ipsets ipsets);
  const Ipsets* ipsets() const;  // nullptr when none attached

  /// Runs `packet` through every table registered at `hook` in priority order
  /// (PREROUTING: raw, mangle, nat; INPUT: mangle, filter, security, nat; FORWARD: mangle,
  /// filter, security; OUTPUT: raw, mangle, nat, filter, security; POSTROUTING: mangle, nat).
  /// The nat table is skipped unless packet.ct_state is kNew. Returns at least one outcome;
  /// the returned outcomes' packets carry the rewrites (a DNAT in nat PREROUTING is visible to
  /// the caller, who must route again).
  std::vector<NfOutcome> EvaluateHook(NfHook hook, const Packet& packet, const NfContext& ctx,
                                      const NfEvalOptions& options = {}) const;

  /// Runs `packet` through one table's base chain for `hook` (or any user chain when `chain` is
  /// given: evaluation starts there and RETURN from it ends with kAccept).
  std::vector<NfOutcome> EvaluateTable(NfTable table, NfHook hook, const Packet& packet,
                                       const NfContext& ctx, const NfEvalOptions& options = {},
                                       absl::string_view chain = {}) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;  // the parsed rules, shared by copies
  std::shared_ptr<const Ipsets> ipsets_;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_NETFILTER_H_
