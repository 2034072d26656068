// Private to model/ (not installed: it declares sarena::model::internal): the parsed form of an
// iptables-save dump that Netfilter::Parse builds and Netfilter::Evaluate* walks, and the
// functions the format parser (netfilter_iptables_save.cc) and the evaluator
// (netfilter_eval.cc) share with the match modules and targets.
//
// The layout follows iptables itself (libxt_*.c hold a module's parse, xt_*.c its match): each
// netfilter_match_*.cc holds a family of match modules, each module's option parsing and its
// evaluation side by side; netfilter_targets.cc does the same for the targets.
#ifndef LIBSARENA_MODEL_NETFILTER_RULES_H_
#define LIBSARENA_MODEL_NETFILTER_RULES_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "libsarena/model/netfilter.h"

namespace sarena::model::internal {

// ---------------------------------------------------------------------------------------------
// Parsed representation.

enum class MatchKind : uint8_t {
  kSrc, kDst, kIif, kOif, kProto, kFragment,
  kSport, kDport,          // single range (tcp/udp/sctp module or implicit)
  kTcpFlags,               // mask/comp in a/b
  kMultiport,              // ranges; which = 0 sport, 1 dport, 2 either
  kSrcType, kDstType,      // addrtype: bitmask of RouteType; flags: 1 limit-in, 2 limit-out
  kMark, kConnmark,        // value a, mask b
  kCtState,                // bitmask of states (bit per CtState + 5 SNAT + 6 DNAT)
  kStatistic,              // probability
  kRpfilter,               // flags: 1 loose, 2 validmark, 4 accept-local
  kSrcRange, kDstRange,    // a..b inclusive
  kIcmpType,               // a = type (255 any)
  kPktType,                // a: 0 unicast, 1 broadcast, 2 multicast
  kSet,                    // name = set, a = dimensions, b = bit i set when dimension i is "src"
  kTrue,                   // comment, limit, ... (always matches)
  kUnknown,
};

struct Match {
  MatchKind kind = MatchKind::kTrue;
  bool invert = false;
  uint32_t a = 0, b = 0;
  uint32_t flags = 0;
  double p = 0;
  absl::string_view name;                            // iface pattern
  std::vector<std::pair<uint16_t, uint16_t>> ranges;  // multiport
  absl::string_view text;                            // for notes (into the saved text)
  uint8_t proto = 0;                                 // required protocol (tcp/udp modules)
};

enum class TargetKind : uint8_t {
  kNone,       // no -j: counting rule
  kAccept, kDrop, kReject, kReturn, kQueue,
  kJump, kGoto,
  kDnat, kSnat, kMasquerade, kRedirect,
  kMark, kConnmark, kNotrack,
  kContinue,   // LOG & co: known non-terminating
  kUnknown,
};

struct Target {
  TargetKind kind = TargetKind::kNone;
  absl::string_view name;      // as written (chain name for jump/goto)
  int chain = -1;              // resolved index of the jump/goto target in its table
  uint32_t ip_lo = 0, ip_hi = 0;  // NAT address range (0 = keep)
  uint16_t port_lo = 0, port_hi = 0;
  uint32_t mark_value = 0, mark_mask = 0;  // MARK/CONNMARK: new = (old & ~mask) ^ value
  int connmark_op = 0;         // 0 set-xmark, 1 save-mark, 2 restore-mark
  uint32_t tcpmss = 0;         // TCPMSS: --set-mss value or kNfTcpMssClampToPmtu (NfStep::tcpmss)
  absl::string_view text;
};

struct IptRule {
  std::vector<Match> matches;
  Target target;
  int line = 0;
  int number = 0;              // 1-based in chain
  absl::string_view text;      // the "-A ..." line (into Netfilter::Impl::text)
};

struct Chain {
  std::string name;
  bool builtin = false;
  NfVerdict policy = NfVerdict::kAccept;
  int line = 0;
  std::string policy_text;
  std::vector<IptRule> rules;
  // Index for long chains: rules whose matches include an exact non-inverted "-d a.b.c.d/32"
  // are bucketed by that address, else rules with an exact non-inverted "--dport N" of a
  // protocol module by (protocol, port) (kube-proxy's KUBE-NODEPORTS); the others are
  // "generic". A keyed rule can only match packets with that key. All lists are sorted.
  bool indexed = false;
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> by_dst;
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> by_port;  // proto << 16 | dport
  std::vector<uint32_t> generic;
};

struct Table {
  bool present = false;
  std::vector<Chain> chains;
  absl::flat_hash_map<std::string, size_t> by_name;
  const Chain* Find(absl::string_view name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &chains[it->second];
  }
};

constexpr int kNumTables = 5;

// Builds `c`'s index (chains of 32 rules or more; netfilter_chain_index.cc).
void IndexChain(Chain* c);
// The index of the first rule at or after `from` in `c` that can match `p` (rules.size(): none).
size_t NextRule(const Chain& c, size_t from, const Packet& p);

// ---------------------------------------------------------------------------------------------
// Parsing: shared by the format parser, the match modules and the targets.

// One option of a module: "[!] --name value..."
struct Opt {
  bool invert = false;
  absl::string_view name;
  std::vector<absl::string_view> values;
  size_t first_token = 0, end_token = 0;  // token range, "!" included
};

// The first value of an option ("" when it has none).
inline absl::string_view FirstValue(const Opt& o) {
  return o.values.empty() ? absl::string_view() : o.values[0];
}

// A match the model does not implement (evaluated per NfEvalOptions::unknown_match).
inline Match UnknownMatch(absl::string_view text) {
  Match m;
  m.kind = MatchKind::kUnknown;
  m.text = text;
  return m;
}

// "invalid value for -m <mod> <option>: '<values>'".
absl::Status BadMatchValue(absl::string_view mod, const Opt& o);

// How a module's option parser took one option.
enum class OptParse : uint8_t {
  kKnown,    // the option is the match it filled in
  kUnknown,  // not an option the model implements: one unknown match
  kSkip,     // an option that never changes the verdict: no match
  kBad,      // a malformed value: BadMatchValue
};

// The matches of a module whose every option is one match ("-m mark --mark X", ...):
// `parse_opt(const Opt&, Match*) -> OptParse` fills in each known option's match (its invert,
// proto and text already set).
template <typename ParseOpt>
absl::Status ParseOptionMatches(absl::string_view mod, const std::vector<Opt>& opts,
                                absl::string_view span, uint8_t proto, IptRule* rule,
                                ParseOpt parse_opt) {
  for (const Opt& o : opts) {
    Match m;
    m.invert = o.invert;
    m.proto = proto;
    m.text = span;
    switch (parse_opt(o, &m)) {
      case OptParse::kKnown: break;
      case OptParse::kUnknown: m = UnknownMatch(span); break;
      case OptParse::kSkip: continue;
      case OptParse::kBad: return BadMatchValue(mod, o);
    }
    rule->matches.push_back(std::move(m));
  }
  return absl::OkStatus();
}

// Value parsers (netfilter_values.cc).
bool ParseU32Any(absl::string_view s, uint32_t* out);  // decimal or 0x hex
// "value[/mask]" as iptables prints marks.
bool ParseMarkMask(absl::string_view s, uint32_t* value, uint32_t* mask, uint32_t default_mask);
// "a.b.c.d[/len|/mask]".
bool ParseAddrMask(absl::string_view s, uint32_t* addr, uint32_t* mask);
// "port", "lo:hi", "lo-hi", ":hi", "lo:".
bool ParsePortRange(absl::string_view s, uint16_t* lo, uint16_t* hi);
// A name of a flag list ("SYN", "ESTABLISHED", "LOCAL", ...) and its bits.
struct NamedBits {
  absl::string_view name;  // upper case
  uint32_t bits;
};
// The bits of a comma-separated list of `names` (any case), or 0 with *ok false when one is not
// in `names`.
uint32_t NameListBits(absl::string_view list, absl::Span<const NamedBits> names, bool* ok);

// A match module's parser: appends the module's matches ("-m <mod> <opts>", `mod` lowercased,
// `span` the text of the whole "-m ..." group) to `rule`.
using ModuleParseFn = absl::Status (*)(absl::string_view mod, const std::vector<Opt>& opts,
                                       absl::string_view span, IptRule* rule);
struct MatchModule {
  absl::string_view name;
  ModuleParseFn parse;
};

// The basic options (netfilter_match_basic.cc); `span` is the option's text.
absl::Status ParseAddressOption(absl::string_view opt, absl::string_view value, bool invert,
                                absl::string_view span, IptRule* rule);
void ParseInterfaceOption(absl::string_view opt, absl::string_view value, bool invert,
                          absl::string_view span, IptRule* rule);
// -p: returns the protocol number (0 = all: no match added).
absl::StatusOr<uint8_t> ParseProtocolOption(absl::string_view value, bool invert,
                                            absl::string_view span, IptRule* rule);
void ParseFragmentOption(bool invert, absl::string_view span, IptRule* rule);

// The match modules, one parser per module (each in its family's file).
absl::Status ParseIprangeModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                IptRule*);
absl::Status ParsePkttypeModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                IptRule*);
absl::Status ParseProtoModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                              IptRule*);  // tcp, udp, sctp, udplite
absl::Status ParseMultiportModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                  IptRule*);
absl::Status ParseIcmpModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                             IptRule*);
absl::Status ParseMarkModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                             IptRule*);  // mark, connmark
absl::Status ParseConntrackModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                  IptRule*);  // conntrack, state
absl::Status ParseAddrtypeModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                 IptRule*);
absl::Status ParseRpfilterModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                 IptRule*);
absl::Status ParseSetModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                            IptRule*);
absl::Status ParseStatisticModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                  IptRule*);
absl::Status ParseAlwaysTrueModule(absl::string_view, const std::vector<Opt>&, absl::string_view,
                                   IptRule*);  // comment, limit, hashlimit

// The target of "-j <name> <opts>" / "-g <name>" (netfilter_targets.cc).
absl::Status ParseTarget(absl::string_view name, bool is_goto, const std::vector<Opt>& opts,
                         absl::string_view span, Target* t);

// ---------------------------------------------------------------------------------------------
// Evaluation: shared by the evaluator, the match modules and the targets.

enum class Tri : uint8_t { kNo, kYes, kFork };

// What a match sees besides the match itself.
struct MatchInput {
  const Packet& packet;
  const NfOutcome& out;    // the outcome so far (its NAT flags)
  const NfContext& ctx;
  const Ipsets* ipsets;    // the sets attached with Netfilter::SetIpsets (ctx.ipsets wins)
  std::string* why;        // set when returning kFork
  NfNote::Kind* note_kind; // set when returning kFork
};

// A decided match: r, inverted by "!".
inline Tri Decided(const Match& m, bool r) { return (r != m.invert) ? Tri::kYes : Tri::kNo; }

// The match evaluators, one per family. Each returns kFork (with `why` and `note_kind` set) when
// the model cannot decide.
Tri EvalBasicMatch(const Match& m, const MatchInput& in);     // -s -d -i -o -p -f iprange pkttype
Tri EvalPortMatch(const Match& m, const MatchInput& in);      // tcp udp sctp multiport icmp
Tri EvalConntrackMatch(const Match& m, const MatchInput& in); // conntrack state mark connmark
Tri EvalRouteMatch(const Match& m, const MatchInput& in);     // addrtype rpfilter
Tri EvalSetMatch(const Match& m, const MatchInput& in);       // set
// The probability that a -m statistic match holds ("!" included).
double StatisticProbability(const Match& m);

// Packet rewriting targets (netfilter_targets.cc).
// MARK, CONNMARK, NOTRACK.
void ApplyMangleTarget(const Target& t, Packet* p);
// DNAT, SNAT, MASQUERADE, REDIRECT: rewrites out->packet and sets out->dnat / out->snat.
// Returns false when the kernel drops the packet instead; sets *note (a kNeedsNetstack note's
// detail) when the rewrite could not be modelled exactly.
bool ApplyNatTarget(const Target& t, NfHook hook, const NfContext& ctx, NfOutcome* out,
                    std::string* note);

}  // namespace sarena::model::internal

namespace sarena::model {

struct Netfilter::Impl {
  std::string text;                 // the whole iptables-save text; rules point into it
  std::deque<std::string> strings;  // unescaped tokens and joined texts
  internal::Table tables[internal::kNumTables];
  size_t rule_count = 0;
  absl::flat_hash_set<std::string> target_names;  // every -j/-g target used (HasTarget)
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_NETFILTER_RULES_H_
