#include "libsarena/model/netfilter.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/netstack.h"

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

namespace {

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

absl::StatusOr<NfTable> TableFromName(absl::string_view name) {
  if (name == "raw") return NfTable::kRaw;
  if (name == "mangle") return NfTable::kMangle;
  if (name == "nat") return NfTable::kNat;
  if (name == "filter") return NfTable::kFilter;
  if (name == "security") return NfTable::kSecurity;
  return absl::InvalidArgumentError(absl::StrCat("unknown table '", name, "'"));
}

// Splits an iptables-save rule line into arguments (double quotes group, backslash escapes).
// Tokens are views into `line`; a token that needed unescaping is decoded into `store`.
absl::Status Tokenize(absl::string_view line, std::vector<absl::string_view>* out,
                      std::deque<std::string>* store) {
  out->clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t start = i;
    bool plain = true;  // no quotes: the token is line[start, i)
    std::string decoded;
    bool quoted_only = false;
    absl::string_view quoted_view;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      if (line[i] == '"') {
        size_t qstart = i + 1;
        if (plain) decoded.assign(line.data() + start, i - start);
        quoted_only = plain && i == start;
        plain = false;
        ++i;
        bool closed = false;
        bool escaped = false;
        while (i < line.size()) {
          if (line[i] == '\\' && i + 1 < line.size()) {
            decoded.push_back(line[i + 1]);
            escaped = true;
            i += 2;
            continue;
          }
          if (line[i] == '"') {
            closed = true;
            ++i;
            break;
          }
          decoded.push_back(line[i++]);
        }
        if (!closed) return absl::InvalidArgumentError("unterminated quote");
        if (quoted_only && !escaped) quoted_view = line.substr(qstart, i - 1 - qstart);
        else quoted_only = false;
      } else {
        if (!plain) {
          decoded.push_back(line[i]);
          quoted_only = false;
        }
        ++i;
      }
    }
    if (plain) {
      out->push_back(line.substr(start, i - start));
    } else if (quoted_only) {
      out->push_back(quoted_view);
    } else {
      store->push_back(std::move(decoded));
      out->push_back(store->back());
    }
  }
  return absl::OkStatus();
}

bool ParseU32Any(absl::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) {
    if (!absl::SimpleHexAtoi(s.substr(2), &v)) return false;
  } else if (!absl::SimpleAtoi(s, &v)) {
    return false;
  }
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// "value[/mask]" as iptables prints marks.
bool ParseMarkMask(absl::string_view s, uint32_t* value, uint32_t* mask, uint32_t default_mask) {
  size_t slash = s.find('/');
  if (slash == absl::string_view::npos) {
    *mask = default_mask;
    return ParseU32Any(s, value);
  }
  return ParseU32Any(s.substr(0, slash), value) && ParseU32Any(s.substr(slash + 1), mask);
}

// "a.b.c.d[/len|/mask]".
bool ParseAddrMask(absl::string_view s, uint32_t* addr, uint32_t* mask) {
  size_t slash = s.find('/');
  absl::string_view a = s.substr(0, slash);
  auto ip = net::ParseIpv4(a);
  if (!ip.ok()) return false;
  *addr = ip->to_uint();
  if (slash == absl::string_view::npos) {
    *mask = 0xffffffffu;
    return true;
  }
  absl::string_view m = s.substr(slash + 1);
  if (m.find('.') != absl::string_view::npos) {
    auto mip = net::ParseIpv4(m);
    if (!mip.ok()) return false;
    *mask = mip->to_uint();
  } else {
    uint32_t len = 0;
    if (!absl::SimpleAtoi(m, &len) || len > 32) return false;
    *mask = len == 0 ? 0 : (0xffffffffu << (32 - len));
  }
  *addr &= *mask;
  return true;
}

bool ParsePortRange(absl::string_view s, uint16_t* lo, uint16_t* hi) {
  size_t colon = s.find(':');
  if (colon == absl::string_view::npos) colon = s.find('-');
  uint32_t a = 0, b = 0;
  if (colon == absl::string_view::npos) {
    if (!absl::SimpleAtoi(s, &a) || a > 65535) return false;
    *lo = *hi = static_cast<uint16_t>(a);
    return true;
  }
  absl::string_view l = s.substr(0, colon), h = s.substr(colon + 1);
  if (l.empty()) a = 0;
  else if (!absl::SimpleAtoi(l, &a)) return false;
  if (h.empty()) b = 65535;
  else if (!absl::SimpleAtoi(h, &b)) return false;
  if (a > 65535 || b > 65535) return false;
  *lo = static_cast<uint16_t>(a);
  *hi = static_cast<uint16_t>(b);
  return true;
}

// "ip[-ip][:port[-port]]" (DNAT/SNAT --to-*), or ":port" / "port[-port]" for --to-ports.
bool ParseNatRange(absl::string_view s, Target* t) {
  size_t colon = s.find(':');
  absl::string_view ips = s.substr(0, colon);
  if (!ips.empty()) {
    size_t dash = ips.find('-');
    auto lo = net::ParseIpv4(ips.substr(0, dash));
    if (!lo.ok()) return false;
    t->ip_lo = t->ip_hi = lo->to_uint();
    if (dash != absl::string_view::npos) {
      auto hi = net::ParseIpv4(ips.substr(dash + 1));
      if (!hi.ok()) return false;
      t->ip_hi = hi->to_uint();
    }
  }
  if (colon != absl::string_view::npos) {
    return ParsePortRange(s.substr(colon + 1), &t->port_lo, &t->port_hi);
  }
  return true;
}

uint32_t AddrTypeBits(absl::string_view list, bool* ok) {
  uint32_t bits = 0;
  *ok = true;
  for (absl::string_view t : absl::StrSplit(list, ',')) {
    std::string u = absl::AsciiStrToUpper(t);
    RouteType rt;
    if (u == "UNSPEC") rt = RouteType::kUnspec;
    else if (u == "UNICAST") rt = RouteType::kUnicast;
    else if (u == "LOCAL") rt = RouteType::kLocal;
    else if (u == "BROADCAST") rt = RouteType::kBroadcast;
    else if (u == "ANYCAST") rt = RouteType::kAnycast;
    else if (u == "MULTICAST") rt = RouteType::kMulticast;
    else if (u == "BLACKHOLE") rt = RouteType::kBlackhole;
    else if (u == "UNREACHABLE") rt = RouteType::kUnreachable;
    else if (u == "PROHIBIT") rt = RouteType::kProhibit;
    else if (u == "THROW") rt = RouteType::kThrow;
    else if (u == "NAT") rt = RouteType::kNat;
    else if (u == "XRESOLVE") rt = RouteType::kXresolve;
    else {
      *ok = false;
      return 0;
    }
    bits |= 1u << static_cast<uint32_t>(rt);
  }
  return bits;
}

constexpr uint32_t kCtSnatBit = 1u << 5;
constexpr uint32_t kCtDnatBit = 1u << 6;

uint32_t CtStateBits(absl::string_view list, bool* ok) {
  uint32_t bits = 0;
  *ok = true;
  for (absl::string_view t : absl::StrSplit(list, ',')) {
    std::string u = absl::AsciiStrToUpper(t);
    if (u == "NEW") bits |= 1u << static_cast<int>(CtState::kNew);
    else if (u == "ESTABLISHED") bits |= 1u << static_cast<int>(CtState::kEstablished);
    else if (u == "RELATED") bits |= 1u << static_cast<int>(CtState::kRelated);
    else if (u == "INVALID") bits |= 1u << static_cast<int>(CtState::kInvalid);
    else if (u == "UNTRACKED") bits |= 1u << static_cast<int>(CtState::kUntracked);
    else if (u == "SNAT") bits |= kCtSnatBit;
    else if (u == "DNAT") bits |= kCtDnatBit;
    else {
      *ok = false;
      return 0;
    }
  }
  return bits;
}

uint32_t TcpFlagBits(absl::string_view list, bool* ok) {
  uint32_t bits = 0;
  *ok = true;
  for (absl::string_view t : absl::StrSplit(list, ',')) {
    std::string u = absl::AsciiStrToUpper(t);
    if (u == "FIN") bits |= 0x01;
    else if (u == "SYN") bits |= 0x02;
    else if (u == "RST") bits |= 0x04;
    else if (u == "PSH") bits |= 0x08;
    else if (u == "ACK") bits |= 0x10;
    else if (u == "URG") bits |= 0x20;
    else if (u == "ALL") bits |= 0x3f;
    else if (u == "NONE") bits |= 0;
    else {
      *ok = false;
      return 0;
    }
  }
  return bits;
}

// One option of a module: "[!] --name value..."
struct Opt {
  bool invert = false;
  absl::string_view name;
  std::vector<absl::string_view> values;
  size_t first_token = 0, end_token = 0;  // token range, "!" included
};

class RuleParser {
 public:
  RuleParser(const std::vector<absl::string_view>& toks, size_t start, absl::string_view line,
             std::deque<std::string>* store)
      : t_(toks), i_(start), line_(line), store_(store) {}

  absl::Status Parse(IptRule* rule) {
    bool invert = false;
    size_t invert_at = 0;
    uint8_t proto = 0;
    while (i_ < t_.size()) {
      absl::string_view tok = t_[i_];
      if (tok == "!") {
        invert = true;
        invert_at = i_;
        ++i_;
        continue;
      }
      size_t from = invert ? invert_at : i_;
      if (tok == "-s" || tok == "--source" || tok == "-d" || tok == "--destination") {
        SARENA_ASSIGN_OR_RETURN(absl::string_view v, Value(tok));
        Match m;
        m.kind = (tok == "-s" || tok == "--source") ? MatchKind::kSrc : MatchKind::kDst;
        m.invert = invert;
        if (!ParseAddrMask(v, &m.a, &m.b)) {
          return absl::InvalidArgumentError(absl::StrCat("invalid address '", v, "' for ", tok));
        }
        m.text = Span(from, i_);
        rule->matches.push_back(std::move(m));
      } else if (tok == "-i" || tok == "--in-interface" || tok == "-o" ||
                 tok == "--out-interface") {
        SARENA_ASSIGN_OR_RETURN(absl::string_view v, Value(tok));
        Match m;
        m.kind = (tok == "-i" || tok == "--in-interface") ? MatchKind::kIif : MatchKind::kOif;
        m.invert = invert;
        m.name = v;
        m.text = Span(from, i_);
        rule->matches.push_back(std::move(m));
      } else if (tok == "-p" || tok == "--protocol") {
        SARENA_ASSIGN_OR_RETURN(absl::string_view v, Value(tok));
        auto p = ParseProto(v, "protocol");
        if (!p.ok()) return p.status();
        if (*p != 0) {
          Match m;
          m.kind = MatchKind::kProto;
          m.invert = invert;
          m.a = *p;
          m.text = Span(from, i_);
          rule->matches.push_back(std::move(m));
          if (!invert) proto = *p;
        }
      } else if (tok == "-f" || tok == "--fragment") {
        ++i_;
        Match m;
        m.kind = MatchKind::kFragment;
        m.invert = invert;
        m.text = Span(from, i_);
        rule->matches.push_back(std::move(m));
      } else if (tok == "-m" || tok == "--match") {
        SARENA_ASSIGN_OR_RETURN(absl::string_view mod, Value(tok));
        std::vector<Opt> opts = Options();
        SARENA_RETURN_IF_ERROR(AddModule(mod, opts, proto, rule, Span(from, i_)));
      } else if (tok == "-j" || tok == "--jump" || tok == "-g" || tok == "--goto") {
        SARENA_ASSIGN_OR_RETURN(absl::string_view name, Value(tok));
        std::vector<Opt> opts = Options();
        SARENA_RETURN_IF_ERROR(
            SetTarget(name, tok == "-g" || tok == "--goto", opts, rule, Span(from, i_)));
      } else if (tok == "-c" || tok == "--set-counters") {
        i_ += 3;
      } else if (absl::StartsWith(tok, "--")) {
        // Options of an implicit protocol module (-p tcp --dport 80 without -m tcp).
        std::vector<Opt> opts = Options(invert);
        SARENA_RETURN_IF_ERROR(
            AddModule(proto == kProtoUdp ? "udp" : proto == kProtoSctp ? "sctp" : "tcp", opts,
                      proto, rule, Span(from, i_)));
      } else {
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", tok, "'"));
      }
      invert = false;
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<absl::string_view> Value(absl::string_view opt) {
    if (i_ + 1 >= t_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("option ", opt, " needs a value"));
    }
    absl::string_view v = t_[i_ + 1];
    i_ += 2;
    return v;
  }

  // The text of tokens [from, to) as written in the line (quotes included), or a joined copy
  // when a token had to be unescaped.
  absl::string_view Span(size_t from, size_t to) {
    if (from >= to) return {};
    const char* lb = line_.data();
    const char* le = line_.data() + line_.size();
    bool inside = true;
    for (size_t k = from; k < to; ++k) {
      if (t_[k].data() < lb || t_[k].data() + t_[k].size() > le) inside = false;
    }
    if (inside) {
      const char* b = t_[from].data();
      const char* e = t_[to - 1].data() + t_[to - 1].size();
      if (b > lb && b[-1] == '"') --b;
      if (e < le && *e == '"') ++e;
      return absl::string_view(b, static_cast<size_t>(e - b));
    }
    std::string joined;
    for (size_t k = from; k < to; ++k) {
      if (k > from) joined.push_back(' ');
      joined.append(t_[k].data(), t_[k].size());
    }
    store_->push_back(std::move(joined));
    return store_->back();
  }

  static bool IsBasicOption(absl::string_view s) {
    return s == "-s" || s == "-d" || s == "-i" || s == "-o" || s == "-p" || s == "-f" ||
           s == "-m" || s == "-j" || s == "-g" || s == "-c" || s == "--source" ||
           s == "--destination" || s == "--in-interface" || s == "--out-interface" ||
           s == "--protocol" || s == "--fragment" || s == "--match" || s == "--jump" ||
           s == "--goto";
  }

  // Reads "[!] --opt values..." groups until a basic option.
  std::vector<Opt> Options(bool first_invert = false) {
    std::vector<Opt> out;
    bool invert = first_invert;
    while (i_ < t_.size()) {
      absl::string_view tok = t_[i_];
      if (tok == "!") {
        // "! --opt" or "--opt ! value" (old style); peek.
        if (i_ + 1 < t_.size() && absl::StartsWith(t_[i_ + 1], "--") && !IsBasicOption(t_[i_ + 1])) {
          invert = true;
          ++i_;
          continue;
        }
        if (i_ + 1 < t_.size() && IsBasicOption(t_[i_ + 1])) break;
        if (!out.empty()) {
          out.back().invert = true;
          ++i_;
          continue;
        }
        break;
      }
      if (!absl::StartsWith(tok, "--") || IsBasicOption(tok)) break;
      Opt o;
      o.invert = invert;
      invert = false;
      o.name = tok;
      ++i_;
      while (i_ < t_.size() && !absl::StartsWith(t_[i_], "-") && t_[i_] != "!") {
        o.values.push_back(t_[i_++]);
      }
      out.push_back(std::move(o));
    }
    return out;
  }

  static Match Unknown(absl::string_view text) {
    Match m;
    m.kind = MatchKind::kUnknown;
    m.text = text;
    return m;
  }

  absl::Status AddModule(absl::string_view mod_in, const std::vector<Opt>& opts, uint8_t proto,
                         IptRule* rule, absl::string_view span) {
    std::string mod = absl::AsciiStrToLower(mod_in);
    auto bad = [&](const Opt& o) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid value for -m ", mod, " ", o.name, ": '",
                       absl::StrJoin(o.values, " "), "'"));
    };
    auto first = [](const Opt& o) -> absl::string_view {
      return o.values.empty() ? absl::string_view() : o.values[0];
    };
    if (mod == "tcp" || mod == "udp" || mod == "sctp" || mod == "udplite") {
      uint8_t p = mod == "tcp" ? kProtoTcp : mod == "udp" ? kProtoUdp : mod == "sctp" ? kProtoSctp : 136;
      if (opts.empty()) {
        // "-m tcp" alone only restates the protocol.
        Match m;
        m.kind = MatchKind::kProto;
        m.a = p;
        m.text = span;
        rule->matches.push_back(std::move(m));
      }
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.proto = p;
        m.text = span;
        if (o.name == "--dport" || o.name == "--destination-port" || o.name == "--sport" ||
            o.name == "--source-port") {
          uint16_t lo, hi;
          if (!ParsePortRange(first(o), &lo, &hi)) return bad(o);
          m.kind = (o.name == "--dport" || o.name == "--destination-port") ? MatchKind::kDport
                                                                            : MatchKind::kSport;
          m.a = lo;
          m.b = hi;
        } else if (o.name == "--tcp-flags" && o.values.size() == 2) {
          bool ok1, ok2;
          m.kind = MatchKind::kTcpFlags;
          m.a = TcpFlagBits(o.values[0], &ok1);
          m.b = TcpFlagBits(o.values[1], &ok2);
          if (!ok1 || !ok2) return bad(o);
        } else if (o.name == "--syn") {
          m.kind = MatchKind::kTcpFlags;
          m.a = 0x17;  // FIN,SYN,RST,ACK
          m.b = 0x02;  // SYN
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      (void)proto;
      return absl::OkStatus();
    }
    if (mod == "multiport") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        if (o.name == "--dports" || o.name == "--destination-ports" || o.name == "--sports" ||
            o.name == "--source-ports" || o.name == "--ports") {
          m.kind = MatchKind::kMultiport;
          m.flags = (o.name == "--sports" || o.name == "--source-ports") ? 0
                    : (o.name == "--ports")                               ? 2
                                                                          : 1;
          for (absl::string_view part : absl::StrSplit(first(o), ',')) {
            uint16_t lo, hi;
            if (!ParsePortRange(part, &lo, &hi)) return bad(o);
            m.ranges.emplace_back(lo, hi);
          }
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "addrtype") {
      uint32_t limit = 0;
      for (const Opt& o : opts) {
        if (o.name == "--limit-iface-in") limit |= 1;
        if (o.name == "--limit-iface-out") limit |= 2;
      }
      for (const Opt& o : opts) {
        if (o.name == "--limit-iface-in" || o.name == "--limit-iface-out") continue;
        Match m;
        m.invert = o.invert;
        m.text = span;
        if (o.name == "--src-type" || o.name == "--dst-type") {
          bool ok;
          m.kind = o.name == "--src-type" ? MatchKind::kSrcType : MatchKind::kDstType;
          m.a = AddrTypeBits(first(o), &ok);
          m.flags = limit;
          if (!ok) return bad(o);
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "comment" || mod == "limit" || mod == "hashlimit") {
      // Comments never affect the verdict; limit/hashlimit are assumed under their rate (a
      // single traced packet never exceeds a limit).
      Match m;
      m.kind = MatchKind::kTrue;
      rule->matches.push_back(std::move(m));
      return absl::OkStatus();
    }
    if (mod == "mark" || mod == "connmark") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        if (o.name == "--mark") {
          m.kind = mod == "mark" ? MatchKind::kMark : MatchKind::kConnmark;
          if (!ParseMarkMask(first(o), &m.a, &m.b, 0xffffffffu)) return bad(o);
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "conntrack" || mod == "state") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        if (o.name == "--ctstate" || o.name == "--state") {
          bool ok;
          m.kind = MatchKind::kCtState;
          m.a = CtStateBits(first(o), &ok);
          if (!ok) return bad(o);
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "statistic") {
      Match m;
      m.kind = MatchKind::kStatistic;
      m.text = span;
      absl::string_view mode;
      uint32_t every = 0;
      for (const Opt& o : opts) {
        if (o.name == "--mode") mode = first(o);
        if (o.name == "--probability") {
          if (!absl::SimpleAtod(first(o), &m.p) || m.p < 0 || m.p > 1) return bad(o);
          m.invert = o.invert;
        }
        if (o.name == "--every") {
          if (!absl::SimpleAtoi(first(o), &every) || every == 0) return bad(o);
          m.invert = o.invert;
        }
      }
      if (mode == "nth") m.p = 1.0 / every;
      else if (mode != "random") m.kind = MatchKind::kUnknown;
      rule->matches.push_back(std::move(m));
      return absl::OkStatus();
    }
    if (mod == "rpfilter") {
      Match m;
      m.kind = MatchKind::kRpfilter;
      m.text = span;
      for (const Opt& o : opts) {
        if (o.name == "--loose") m.flags |= 1;
        else if (o.name == "--validmark") m.flags |= 2;
        else if (o.name == "--accept-local") m.flags |= 4;
        else if (o.name == "--invert") m.invert = !m.invert;
        else m.kind = MatchKind::kUnknown;
      }
      rule->matches.push_back(std::move(m));
      return absl::OkStatus();
    }
    if (mod == "iprange") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        if (o.name == "--src-range" || o.name == "--dst-range") {
          m.kind = o.name == "--src-range" ? MatchKind::kSrcRange : MatchKind::kDstRange;
          absl::string_view v = first(o);
          size_t dash = v.find('-');
          auto lo = net::ParseIpv4(v.substr(0, dash));
          auto hi = dash == absl::string_view::npos ? lo : net::ParseIpv4(v.substr(dash + 1));
          if (!lo.ok() || !hi.ok()) return bad(o);
          m.a = lo->to_uint();
          m.b = hi->to_uint();
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "icmp") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        std::string v = absl::AsciiStrToLower(first(o));
        if (o.name == "--icmp-type" && (v == "any" || v == "echo-request" || v == "8" ||
                                        absl::StartsWith(v, "8/"))) {
          m.kind = MatchKind::kIcmpType;
          m.a = v == "any" ? 255 : 8;
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "set") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        if ((o.name == "--match-set" || o.name == "--set") && o.values.size() == 2) {
          m.kind = MatchKind::kSet;
          m.name = o.values[0];
          std::vector<absl::string_view> dirs = absl::StrSplit(o.values[1], ',');
          if (dirs.empty() || dirs.size() > 6) return bad(o);
          m.a = static_cast<uint32_t>(dirs.size());
          for (size_t d = 0; d < dirs.size(); ++d) {
            if (dirs[d] == "src") m.b |= 1u << d;
            else if (dirs[d] != "dst") return bad(o);
          }
        } else if (o.name == "--update-counters" || o.name == "--update-subcounters") {
          continue;  // counters never change the verdict
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    if (mod == "pkttype") {
      for (const Opt& o : opts) {
        Match m;
        m.invert = o.invert;
        m.text = span;
        std::string v = absl::AsciiStrToLower(first(o));
        if (o.name == "--pkt-type" && (v == "unicast" || v == "broadcast" || v == "multicast")) {
          m.kind = MatchKind::kPktType;
          m.a = v == "unicast" ? 0 : v == "broadcast" ? 1 : 2;
        } else {
          m = Unknown(span);
        }
        rule->matches.push_back(std::move(m));
      }
      return absl::OkStatus();
    }
    // Not implemented: set, physdev, owner, socket, recent, u32, length, ttl, tos, dscp, policy,
    // string, time, bpf, cgroup, ... Each option becomes one unknown match (evaluated per
    // NfEvalOptions::unknown_match).
    rule->matches.push_back(Unknown(span));
    return absl::OkStatus();
  }

  absl::Status SetTarget(absl::string_view name, bool is_goto, const std::vector<Opt>& opts,
                         IptRule* rule, absl::string_view span) {
    Target& t = rule->target;
    t.name = name;
    t.text = span;
    auto opt = [&](absl::string_view n) -> const Opt* {
      for (const Opt& o : opts) {
        if (o.name == n) return &o;
      }
      return nullptr;
    };
    auto bad = [&](const Opt& o) {
      return absl::InvalidArgumentError(absl::StrCat("invalid value for -j ", name, " ", o.name,
                                                     ": '", absl::StrJoin(o.values, " "), "'"));
    };
    if (is_goto) {
      t.kind = TargetKind::kGoto;
      return absl::OkStatus();
    }
    if (name == "ACCEPT") t.kind = TargetKind::kAccept;
    else if (name == "DROP") t.kind = TargetKind::kDrop;
    else if (name == "REJECT") t.kind = TargetKind::kReject;
    else if (name == "RETURN") t.kind = TargetKind::kReturn;
    else if (name == "QUEUE" || name == "NFQUEUE") t.kind = TargetKind::kQueue;
    else if (name == "DNAT" || name == "SNAT") {
      t.kind = name == "DNAT" ? TargetKind::kDnat : TargetKind::kSnat;
      const Opt* o = opt(name == "DNAT" ? "--to-destination" : "--to-source");
      if (o == nullptr || o->values.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("-j ", name, " needs ",
                                                       name == "DNAT" ? "--to-destination" : "--to-source"));
      }
      if (!ParseNatRange(o->values[0], &t)) return bad(*o);
    } else if (name == "MASQUERADE" || name == "REDIRECT") {
      t.kind = name == "MASQUERADE" ? TargetKind::kMasquerade : TargetKind::kRedirect;
      if (const Opt* o = opt("--to-ports"); o != nullptr && !o->values.empty()) {
        if (!ParsePortRange(o->values[0], &t.port_lo, &t.port_hi)) return bad(*o);
      }
    } else if (name == "MARK" || name == "CONNMARK") {
      t.kind = name == "MARK" ? TargetKind::kMark : TargetKind::kConnmark;
      bool found = false;
      for (const Opt& o : opts) {
        uint32_t v = 0, m = 0;
        absl::string_view val = o.values.empty() ? absl::string_view() : o.values[0];
        if (o.name == "--set-xmark") {
          if (!ParseMarkMask(val, &v, &m, 0xffffffffu)) return bad(o);
          t.mark_value = v;
          t.mark_mask = m;
          found = true;
        } else if (o.name == "--set-mark") {
          if (!ParseMarkMask(val, &v, &m, 0xffffffffu)) return bad(o);
          t.mark_value = v;  // libxt_MARK: --set-mark v/m == --set-xmark v/(m|v)
          t.mark_mask = m | v;
          found = true;
        } else if (o.name == "--or-mark") {
          if (!ParseU32Any(val, &v)) return bad(o);
          t.mark_value = v;
          t.mark_mask = v;
          found = true;
        } else if (o.name == "--and-mark") {
          if (!ParseU32Any(val, &v)) return bad(o);
          t.mark_value = 0;
          t.mark_mask = ~v;
          found = true;
        } else if (o.name == "--xor-mark") {
          if (!ParseU32Any(val, &v)) return bad(o);
          t.mark_value = v;
          t.mark_mask = 0;
          found = true;
        } else if (o.name == "--save-mark" && t.kind == TargetKind::kConnmark) {
          t.connmark_op = 1;
          found = true;
        } else if (o.name == "--restore-mark" && t.kind == TargetKind::kConnmark) {
          t.connmark_op = 2;
          found = true;
        }
      }
      if (!found) t.kind = TargetKind::kUnknown;
    } else if (name == "TCPMSS") {
      // iptables-extensions(8) TCPMSS: exactly one of --set-mss VALUE / --clamp-mss-to-pmtu;
      // non-terminating. Applied by whoever follows a SYN (NfStep::tcpmss), not here.
      t.kind = TargetKind::kContinue;
      if (opt("--clamp-mss-to-pmtu") != nullptr) {
        t.tcpmss = kNfTcpMssClampToPmtu;
      } else if (const Opt* o = opt("--set-mss")) {
        uint32_t v = 0;
        if (o->values.size() != 1 || !absl::SimpleAtoi(o->values[0], &v) || v == 0 || v > 65535) {
          return bad(*o);
        }
        t.tcpmss = v;
      }
    } else if (name == "NOTRACK" || (name == "CT" && opt("--notrack") != nullptr)) {
      t.kind = TargetKind::kNotrack;
    } else if (name == "LOG" || name == "NFLOG" || name == "ULOG" || name == "TRACE" ||
               name == "AUDIT" || name == "CT" || name == "CHECKSUM" ||
               name == "DSCP" || name == "TOS" || name == "TTL" || name == "CLASSIFY" ||
               name == "SET" || name == "TEE" || name == "IDLETIMER" || name == "LED" ||
               name == "SECMARK" || name == "CONNSECMARK") {
      t.kind = TargetKind::kContinue;
    } else {
      t.kind = TargetKind::kJump;  // a user chain, or an unknown extension if no such chain
    }
    return absl::OkStatus();
  }

  const std::vector<absl::string_view>& t_;
  size_t i_;
  absl::string_view line_;
  std::deque<std::string>* store_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Netfilter::Impl {
  std::string text;                 // the whole iptables-save text; rules point into it
  std::deque<std::string> strings;  // unescaped tokens and joined texts
  Table tables[kNumTables];
  size_t rule_count = 0;
  absl::flat_hash_set<std::string> target_names;  // every -j/-g target used (HasTarget)
};

Netfilter::Netfilter() : impl_(std::make_shared<Impl>()) {}
Netfilter::~Netfilter() = default;
Netfilter::Netfilter(const Netfilter&) = default;
Netfilter& Netfilter::operator=(const Netfilter&) = default;
Netfilter::Netfilter(Netfilter&&) noexcept = default;
Netfilter& Netfilter::operator=(Netfilter&&) noexcept = default;

namespace {

void IndexChain(Chain* c) {
  c->indexed = false;
  c->by_dst.clear();
  c->by_port.clear();
  c->generic.clear();
  if (c->rules.size() < 32) return;
  for (uint32_t i = 0; i < c->rules.size(); ++i) {
    const IptRule& r = c->rules[i];
    bool keyed = false;
    for (const Match& m : r.matches) {
      if (m.kind == MatchKind::kDst && !m.invert && m.b == 0xffffffffu) {
        c->by_dst[m.a].push_back(i);
        keyed = true;
        break;
      }
    }
    if (!keyed) {
      for (const Match& m : r.matches) {
        if (m.kind == MatchKind::kDport && !m.invert && m.a == m.b) {
          c->by_port[(static_cast<uint32_t>(m.proto) << 16) | m.a].push_back(i);
          keyed = true;
          break;
        }
      }
    }
    if (!keyed) c->generic.push_back(i);
  }
  c->indexed = c->generic.size() < c->rules.size();
  if (!c->indexed) c->generic.clear();
}

}  // namespace

absl::StatusOr<Netfilter> Netfilter::Parse(absl::string_view text, absl::string_view file_name) {
  auto impl = std::make_shared<Impl>();
  Impl& im = *impl;
  Table* cur = nullptr;
  NfTable cur_id = NfTable::kFilter;
  int line_no = 0;
  auto err = [&](absl::string_view cause) {
    return absl::InvalidArgumentError(absl::StrCat("parse ", file_name, ": line ", line_no, ": ", cause));
  };
  im.text = std::string(text);
  std::vector<absl::string_view> toks;
  toks.reserve(64);
  for (absl::string_view raw : absl::StrSplit(im.text, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    // "[pkts:bytes] -A ..." (iptables-save -c).
    if (line[0] == '[' && line.find(']') != absl::string_view::npos && line.size() > 1 &&
        line[1] != ']') {
      size_t close = line.find(']');
      if (line.substr(1, close - 1).find(':') != absl::string_view::npos &&
          line.substr(close + 1).find("-A") != absl::string_view::npos) {
        line = absl::StripAsciiWhitespace(line.substr(close + 1));
      }
    }
    if (line[0] == '*') {
      auto t = TableFromName(line.substr(1));
      if (!t.ok()) return err(t.status().message());
      cur_id = *t;
      cur = &im.tables[static_cast<int>(cur_id)];
      cur->present = true;
      continue;
    }
    if (line == "COMMIT") {
      if (cur == nullptr) return err("COMMIT outside a table");
      cur = nullptr;
      continue;
    }
    if (line[0] == ':') {
      if (cur == nullptr) return err("chain declaration outside a table");
      std::vector<absl::string_view> parts = absl::StrSplit(line.substr(1), ' ', absl::SkipEmpty());
      if (parts.empty()) return err("empty chain declaration");
      std::string name(parts[0]);
      Chain* c = nullptr;
      if (auto it = cur->by_name.find(name); it != cur->by_name.end()) {
        c = &cur->chains[it->second];
      } else {
        cur->by_name.emplace(name, cur->chains.size());
        cur->chains.emplace_back();
        c = &cur->chains.back();
        c->name = name;
      }
      c->line = line_no;
      c->policy_text = std::string(line);
      if (parts.size() >= 2 && parts[1] != "-") {
        c->builtin = true;
        if (parts[1] == "ACCEPT") c->policy = NfVerdict::kAccept;
        else if (parts[1] == "DROP") c->policy = NfVerdict::kDrop;
        else if (parts[1] == "QUEUE") c->policy = NfVerdict::kQueue;
        else return err(absl::StrCat("invalid policy '", parts[1], "' for chain ", name));
      }
      continue;
    }
    if (absl::StartsWith(line, "-A ") || absl::StartsWith(line, "-I ")) {
      if (cur == nullptr) return err("rule outside a table (missing '*table' line)");
      absl::Status tst = Tokenize(line, &toks, &im.strings);
      if (!tst.ok()) return err(tst.message());
      if (toks.size() < 2) return err("rule without a chain");
      absl::string_view chain = toks[1];
      auto it = cur->by_name.find(chain);
      if (it == cur->by_name.end()) {
        return err(absl::StrCat("rule for undeclared chain '", chain, "' in table ",
                                ToString(cur_id)));
      }
      IptRule rule;
      rule.line = line_no;
      rule.text = line;
      RuleParser rp(toks, 2, line, &im.strings);
      absl::Status st = rp.Parse(&rule);
      if (!st.ok()) return err(st.message());
      Chain& c = cur->chains[it->second];
      rule.number = static_cast<int>(c.rules.size()) + 1;
      if (!rule.target.name.empty()) im.target_names.insert(std::string(rule.target.name));
      c.rules.push_back(std::move(rule));
      ++im.rule_count;
      continue;
    }
    return err(absl::StrCat("unexpected line '", line.substr(0, 60), "'"));
  }
  if (cur != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("parse ", file_name, ": table ",
                                                   ToString(cur_id), " has no COMMIT at end of input"));
  }
  for (Table& t : im.tables) {
    for (Chain& c : t.chains) {
      IndexChain(&c);
      for (IptRule& r : c.rules) {
        if (r.target.kind != TargetKind::kJump && r.target.kind != TargetKind::kGoto) continue;
        auto it = t.by_name.find(r.target.name);
        r.target.chain = it == t.by_name.end() ? -1 : static_cast<int>(it->second);
      }
    }
  }
  Netfilter nf;
  nf.impl_ = std::move(impl);
  return nf;
}

bool Netfilter::HasTable(NfTable table) const {
  return impl_->tables[static_cast<int>(table)].present;
}

bool Netfilter::HasChain(NfTable table, absl::string_view chain) const {
  return impl_->tables[static_cast<int>(table)].Find(chain) != nullptr;
}

std::vector<std::string> Netfilter::Chains(NfTable table) const {
  std::vector<std::string> out;
  for (const Chain& c : impl_->tables[static_cast<int>(table)].chains) out.push_back(c.name);
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

// ---------------------------------------------------------------------------------------------
// Evaluation.

namespace {

bool IfaceMatches(absl::string_view pattern, absl::string_view name) {
  if (!pattern.empty() && pattern.back() == '+') {
    return absl::StartsWith(name, pattern.substr(0, pattern.size() - 1));
  }
  return pattern == name;
}

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

enum class Tri : uint8_t { kNo, kYes, kFork };

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

  // Next candidate rule index >= from, or rules.size().
  size_t NextRule(const Chain& c, size_t from, const Packet& p) const {
    if (!c.indexed) return from;
    size_t best = c.rules.size();
    auto g = std::lower_bound(c.generic.begin(), c.generic.end(), static_cast<uint32_t>(from));
    if (g != c.generic.end()) best = *g;
    auto first_at = [&](const absl::flat_hash_map<uint32_t, std::vector<uint32_t>>& m,
                        uint32_t key) {
      if (m.empty()) return;
      auto it = m.find(key);
      if (it == m.end()) return;
      auto d = std::lower_bound(it->second.begin(), it->second.end(), static_cast<uint32_t>(from));
      if (d != it->second.end() && *d < best) best = *d;
    };
    first_at(c.by_dst, p.dst.to_uint());
    first_at(c.by_port, (static_cast<uint32_t>(p.proto) << 16) | p.dport);
    return best;
  }

  // Evaluates one known match. Unknown-ish outcomes return kFork with `why` set.
  Tri Eval(const Match& m, const Packet& p, const NfOutcome& out, std::string* why,
           NfNote::Kind* note_kind) const {
    bool r = false;
    switch (m.kind) {
      case MatchKind::kTrue: return Tri::kYes;
      case MatchKind::kSrc: r = (p.src.to_uint() & m.b) == m.a; break;
      case MatchKind::kDst: r = (p.dst.to_uint() & m.b) == m.a; break;
      case MatchKind::kIif: r = IfaceMatches(m.name, ctx_.iif); break;
      case MatchKind::kOif: r = IfaceMatches(m.name, ctx_.oif); break;
      case MatchKind::kProto: r = p.proto == m.a; break;
      case MatchKind::kFragment: r = false; break;  // modelled packets are never fragments
      case MatchKind::kSport:
      case MatchKind::kDport: {
        if (p.proto != m.proto) return Tri::kNo;  // the protocol module never matches others
        uint16_t port = m.kind == MatchKind::kSport ? p.sport : p.dport;
        r = port >= m.a && port <= m.b;
        break;
      }
      case MatchKind::kTcpFlags: {
        if (p.proto != kProtoTcp) return Tri::kNo;
        uint32_t flags = p.tcp_flags ? p.tcp_flags
                                     : p.ct_state == CtState::kNew ? 0x02 : 0x10;  // SYN, else ACK
        r = (flags & m.a) == m.b;
        break;
      }
      case MatchKind::kMultiport: {
        if (p.proto != kProtoTcp && p.proto != kProtoUdp && p.proto != kProtoSctp) return Tri::kNo;
        for (const auto& [lo, hi] : m.ranges) {
          if ((m.flags != 1 && p.sport >= lo && p.sport <= hi) ||
              (m.flags != 0 && p.dport >= lo && p.dport <= hi)) {
            r = true;
            break;
          }
        }
        break;
      }
      case MatchKind::kSrcType:
      case MatchKind::kDstType: {
        if (ctx_.netstack == nullptr) {
          *why = "addrtype needs the node's routes (no netstack given)";
          *note_kind = NfNote::Kind::kNeedsNetstack;
          return Tri::kFork;
        }
        absl::string_view dev;
        if (m.flags & 1) dev = ctx_.iif;
        if (m.flags & 2) dev = ctx_.oif;
        RouteType t = ctx_.netstack->AddressType(m.kind == MatchKind::kSrcType ? p.src : p.dst, dev);
        r = (m.a & (1u << static_cast<uint32_t>(t))) != 0;
        break;
      }
      case MatchKind::kMark: r = (p.mark & m.b) == m.a; break;
      case MatchKind::kConnmark: r = (p.ct_mark & m.b) == m.a; break;
      case MatchKind::kCtState: {
        uint32_t bit = 1u << static_cast<int>(p.ct_state);
        r = (m.a & bit) != 0;
        if (!r && (m.a & kCtSnatBit) && out.snat) r = true;
        if (!r && (m.a & kCtDnatBit) && out.dnat) r = true;
        break;
      }
      case MatchKind::kStatistic: return Tri::kFork;  // handled by the caller
      case MatchKind::kRpfilter: {
        if (ctx_.netstack == nullptr) {
          *why = "rpfilter needs the node's routes (no netstack given)";
          *note_kind = NfNote::Kind::kNeedsNetstack;
          return Tri::kFork;
        }
        RpfResult rr = ctx_.netstack->ReversePathCheck(p.src, p.dst, ctx_.iif,
                                                       (m.flags & 1) ? 2 : 1, (m.flags & 4) != 0,
                                                       (m.flags & 2) ? p.mark : 0);
        r = rr.pass;
        break;
      }
      case MatchKind::kSrcRange: r = p.src.to_uint() >= m.a && p.src.to_uint() <= m.b; break;
      case MatchKind::kDstRange: r = p.dst.to_uint() >= m.a && p.dst.to_uint() <= m.b; break;
      case MatchKind::kIcmpType:
        if (p.proto != kProtoIcmp) return Tri::kNo;
        r = true;  // modelled ICMP packets are echo requests
        break;
      case MatchKind::kPktType: {
        uint32_t d = p.dst.to_uint();
        uint32_t type = (d >> 28) == 0xe ? 2 : d == 0xffffffffu ? 1 : 0;
        if (ctx_.netstack != nullptr && type == 0 &&
            ctx_.netstack->AddressType(p.dst) == RouteType::kBroadcast) {
          type = 1;
        }
        r = type == m.a;
        break;
      }
      case MatchKind::kSet: {
        const Ipsets* sets = ctx_.ipsets != nullptr ? ctx_.ipsets : ipsets_;
        if (sets == nullptr) {
          *why = "ipset contents unknown (no ipset-save.txt for this network namespace)";
          *note_kind = NfNote::Kind::kUnknownMatch;
          return Tri::kFork;
        }
        std::vector<bool> flags(m.a);
        for (uint32_t d = 0; d < m.a; ++d) flags[d] = (m.b >> d) & 1;
        std::optional<bool> t = sets->Test(m.name, flags, p);
        if (!t.has_value()) {
          *why = absl::StrCat("set '", m.name, "' is not in ipset-save.txt or its type (",
                              sets->Type(m.name), ") is not modelled");
          *note_kind = NfNote::Kind::kUnknownMatch;
          return Tri::kFork;
        }
        r = *t;
        break;
      }
      case MatchKind::kUnknown:
        *why = "not implemented by the model";
        *note_kind = NfNote::Kind::kUnknownMatch;
        return Tri::kFork;
    }
    return (r != m.invert) ? Tri::kYes : Tri::kNo;
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

  // Runs a branch until it terminates or forks.
  void Step(Branch br, std::vector<Branch>* work, std::vector<NfOutcome>* results) {
    // Per-rule scratch, hoisted out of the rule loop (it runs once per rule of long chains).
    const Match* undecided[16];
    std::string undecided_why[16];
    NfNote::Kind undecided_kind[16];
    std::string why;
    while (true) {
      const Chain& c = *br.chain;
      br.idx = NextRule(c, br.idx, br.out.packet);
      if (br.idx >= c.rules.size()) {
        // End of chain: implicit RETURN for user chains, policy for base chains.
        if (!br.stack.empty()) {
          Frame f = br.stack.back();
          br.stack.pop_back();
          br.chain = f.chain;
          br.idx = f.next;
          --br.depth;
          continue;
        }
        if (c.builtin && !user_start_) {
          Finish(&br, c.policy, c.policy == NfVerdict::kAccept ? std::nullopt
                                                               : std::optional(PolicyRef(c)),
                 results);
        } else {
          Finish(&br, NfVerdict::kAccept, std::nullopt, results);
        }
        return;
      }
      const IptRule& r = c.rules[br.idx];
      // Deterministic matches first (their order does not change the result); then the
      // undecidable ones (unknown matches, statistic), which fork the branch.
      bool matched = true;
      double branch_p = 1.0;
      size_t n_undecided = 0;
      const Match* statistic = nullptr;
      for (size_t mi = 0; mi < r.matches.size(); ++mi) {
        const Match& m = r.matches[mi];
        if (m.kind == MatchKind::kStatistic) {
          statistic = &m;
          continue;
        }
        why.clear();
        NfNote::Kind nk = NfNote::Kind::kUnknownMatch;
        Tri t = Eval(m, br.out.packet, br.out, &why, &nk);
        if (t == Tri::kYes) continue;
        if (t == Tri::kNo) {
          matched = false;
          break;
        }
        if (n_undecided < 16) {
          undecided_why[n_undecided] = std::move(why);
          undecided_kind[n_undecided] = nk;
          undecided[n_undecided++] = &m;
        }
      }
      for (size_t ui = 0; matched && ui < n_undecided; ++ui) {
        const Match& m = *undecided[ui];
        AddNote(&br.out, undecided_kind[ui], c, r, m.text, undecided_why[ui]);
        NfUnknownMatch policy = opt_.unknown_match;
        if (policy == NfUnknownMatch::kFork && !CanFork()) {
          CapNote(&br, c, r);
          policy = NfUnknownMatch::kAssumeNoMatch;
        }
        if (policy == NfUnknownMatch::kAssumeNoMatch) {
          matched = false;
          break;
        }
        if (policy == NfUnknownMatch::kAssumeMatch) continue;
        UseFork();
        Branch other = br;
        other.idx = br.idx + 1;
        other.out.assumptions.push_back({Ref(c, r), std::string(m.text), false});
        work->push_back(std::move(other));
        br.out.assumptions.push_back({Ref(c, r), std::string(m.text), true});
      }
      if (matched && statistic != nullptr) {
        const Match& m = *statistic;
        double p = m.invert ? 1.0 - m.p : m.p;
        if (p <= 0.0) {
          matched = false;
        } else if (p < 1.0) {
          if (CanFork()) {
            UseFork();
            Branch other = br;  // the "no match" branch continues after this rule
            other.out.probability *= (1.0 - p);
            other.idx = br.idx + 1;
            work->push_back(std::move(other));
            br.out.probability *= p;
            branch_p *= p;
          } else {
            CapNote(&br, c, r);
            if (p < 0.5) {
              matched = false;
              br.out.probability *= (1.0 - p);
            } else {
              br.out.probability *= p;
              branch_p *= p;
            }
          }
        }
      }
      if (!matched) {
        ++br.idx;
        continue;
      }
      // Target.
      const Target& t = r.target;
      NfStep step;
      step.hook = hook_;
      step.rule = Ref(c, r);
      step.target = std::string(t.name);
      step.tcpmss = t.tcpmss;
      step.branch_probability = branch_p;
      br.out.steps.push_back(step);
      Packet& p = br.out.packet;
      switch (t.kind) {
        case TargetKind::kNone:
        case TargetKind::kContinue:
          ++br.idx;
          continue;
        case TargetKind::kAccept:
          Finish(&br, NfVerdict::kAccept, std::nullopt, results);
          return;
        case TargetKind::kDrop:
          Finish(&br, NfVerdict::kDrop, Ref(c, r), results);
          return;
        case TargetKind::kReject:
          Finish(&br, NfVerdict::kReject, Ref(c, r), results);
          return;
        case TargetKind::kQueue:
          Finish(&br, NfVerdict::kQueue, Ref(c, r), results);
          return;
        case TargetKind::kReturn:
          if (br.stack.empty()) {
            if (c.builtin && !user_start_) {
              Finish(&br, c.policy,
                     c.policy == NfVerdict::kAccept ? std::nullopt : std::optional(PolicyRef(c)),
                     results);
            } else {
              Finish(&br, NfVerdict::kAccept, std::nullopt, results);
            }
            return;
          }
          br.chain = br.stack.back().chain;
          br.idx = br.stack.back().next;
          br.stack.pop_back();
          --br.depth;
          continue;
        case TargetKind::kJump:
        case TargetKind::kGoto: {
          const Chain* target = t.chain >= 0 ? &table_.chains[t.chain] : nullptr;
          if (target == nullptr) {
            // Unknown target extension (or a missing chain): non-terminating, noted.
            bool looks_like_chain = t.kind == TargetKind::kGoto;
            AddNote(&br.out,
                    looks_like_chain ? NfNote::Kind::kMissingChain : NfNote::Kind::kUnknownTarget,
                    c, r, t.text,
                    looks_like_chain ? "goto to an undefined chain: ignored"
                                     : "target not implemented by the model (or undefined chain): "
                                       "treated as non-terminating");
            ++br.idx;
            continue;
          }
          if (br.depth + 1 > opt_.max_depth) {
            AddNote(&br.out, NfNote::Kind::kLoop, c, r, t.text,
                    "jump depth limit reached (chain loop?): the packet is dropped");
            Finish(&br, NfVerdict::kDrop, Ref(c, r), results);
            return;
          }
          if (t.kind == TargetKind::kJump) {
            br.stack.push_back({&c, br.idx + 1});
            ++br.depth;
          }
          br.chain = target;
          br.idx = 0;
          continue;
        }
        case TargetKind::kDnat: {
          if (t.ip_lo != 0) p.dst = net::Ipv4(t.ip_lo);
          if (t.port_lo != 0) p.dport = t.port_lo;
          br.out.dnat = true;
          Finish(&br, NfVerdict::kAccept, Ref(c, r), results);
          return;
        }
        case TargetKind::kSnat: {
          if (t.ip_lo != 0) p.src = net::Ipv4(t.ip_lo);
          if (t.port_lo != 0) p.sport = t.port_lo;
          br.out.snat = true;
          Finish(&br, NfVerdict::kAccept, Ref(c, r), results);
          return;
        }
        case TargetKind::kMasquerade: {
          if (ctx_.netstack != nullptr && !ctx_.oif.empty()) {
            auto src = ctx_.netstack->SelectSourceAddress(
                ctx_.oif, ctx_.nexthop ? ctx_.nexthop : std::optional<net::Ipv4>(p.dst),
                Scope::kUniverse);
            if (src) {
              p.src = *src;
            } else {
              AddNote(&br.out, NfNote::Kind::kNeedsNetstack, c, r, t.text,
                      absl::StrCat("no usable address on ", ctx_.oif,
                                   ": the kernel drops the packet"));
              Finish(&br, NfVerdict::kDrop, Ref(c, r), results);
              return;
            }
          } else {
            AddNote(&br.out, NfNote::Kind::kNeedsNetstack, c, r, t.text,
                    "MASQUERADE source unknown without the egress device's addresses");
          }
          if (t.port_lo != 0) p.sport = t.port_lo;
          br.out.snat = true;
          Finish(&br, NfVerdict::kAccept, Ref(c, r), results);
          return;
        }
        case TargetKind::kRedirect: {
          if (hook_ == NfHook::kOutput || ctx_.iif.empty()) {
            p.dst = net::Ipv4(0x7f000001u);
          } else if (ctx_.netstack != nullptr) {
            const Interface* in = ctx_.netstack->FindInterface(ctx_.iif);
            const InterfaceAddress* a = in ? in->PrimaryAddress() : nullptr;
            if (a == nullptr) {
              Finish(&br, NfVerdict::kDrop, Ref(c, r), results);  // no address: NF_DROP
              return;
            }
            p.dst = a->local;
          } else {
            AddNote(&br.out, NfNote::Kind::kNeedsNetstack, c, r, t.text,
                    "REDIRECT address unknown without the ingress device's addresses");
          }
          if (t.port_lo != 0) p.dport = t.port_lo;
          br.out.dnat = true;
          Finish(&br, NfVerdict::kAccept, Ref(c, r), results);
          return;
        }
        case TargetKind::kMark:
          p.mark = (p.mark & ~t.mark_mask) ^ t.mark_value;
          ++br.idx;
          continue;
        case TargetKind::kConnmark:
          if (t.connmark_op == 1) p.ct_mark = p.mark;
          else if (t.connmark_op == 2) p.mark = p.ct_mark;
          else p.ct_mark = (p.ct_mark & ~t.mark_mask) ^ t.mark_value;
          ++br.idx;
          continue;
        case TargetKind::kNotrack:
          p.ct_state = CtState::kUntracked;
          ++br.idx;
          continue;
        case TargetKind::kUnknown:
          AddNote(&br.out, NfNote::Kind::kUnknownTarget, c, r, t.text,
                  "target not implemented by the model: treated as non-terminating");
          ++br.idx;
          continue;
      }
    }
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
