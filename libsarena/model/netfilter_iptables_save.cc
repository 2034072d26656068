// The iptables-save text format (legacy and nft backends print the same): "*table" sections,
// ":CHAIN POLICY [p:b]" chain lines, "-A CHAIN ..." rule lines tokenized with iptables' quoting,
// COMMIT; the basic options of a rule line and the dispatch of "-m MODULE" / "-j TARGET" option
// groups to the match modules (netfilter_match_*.cc) and targets (netfilter_targets.cc).
#include <deque>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/netfilter_rules.h"

namespace sarena::model {

namespace {

using internal::Chain;
using internal::IptRule;
using internal::MatchModule;
using internal::Opt;
using internal::Table;
using internal::TargetKind;

// The match modules the model implements ("-m NAME", lowercased).
constexpr MatchModule kMatchModules[] = {
    {"tcp", internal::ParseProtoModule},
    {"udp", internal::ParseProtoModule},
    {"sctp", internal::ParseProtoModule},
    {"udplite", internal::ParseProtoModule},
    {"multiport", internal::ParseMultiportModule},
    {"addrtype", internal::ParseAddrtypeModule},
    {"comment", internal::ParseAlwaysTrueModule},
    {"limit", internal::ParseAlwaysTrueModule},
    {"hashlimit", internal::ParseAlwaysTrueModule},
    {"mark", internal::ParseMarkModule},
    {"connmark", internal::ParseMarkModule},
    {"conntrack", internal::ParseConntrackModule},
    {"state", internal::ParseConntrackModule},
    {"statistic", internal::ParseStatisticModule},
    {"rpfilter", internal::ParseRpfilterModule},
    {"iprange", internal::ParseIprangeModule},
    {"icmp", internal::ParseIcmpModule},
    {"set", internal::ParseSetModule},
    {"pkttype", internal::ParsePkttypeModule},
};

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
      SARENA_RETURN_IF_ERROR(ParseOption(tok, invert, invert ? invert_at : i_, &proto, rule));
      invert = false;
    }
    return absl::OkStatus();
  }

 private:
  // The option at token i_ (`tok`, "!" before it at token `from` when `invert`); *proto: the
  // rule's protocol so far (for the options of an implicit protocol module).
  absl::Status ParseOption(absl::string_view tok, bool invert, size_t from, uint8_t* proto,
                           IptRule* rule) {
    if (tok == "-s" || tok == "--source" || tok == "-d" || tok == "--destination") {
      SARENA_ASSIGN_OR_RETURN(absl::string_view v, Value(tok));
      return internal::ParseAddressOption(tok, v, invert, Span(from, i_), rule);
    }
    if (tok == "-i" || tok == "--in-interface" || tok == "-o" || tok == "--out-interface") {
      SARENA_ASSIGN_OR_RETURN(absl::string_view v, Value(tok));
      internal::ParseInterfaceOption(tok, v, invert, Span(from, i_), rule);
      return absl::OkStatus();
    }
    if (tok == "-p" || tok == "--protocol") {
      SARENA_ASSIGN_OR_RETURN(absl::string_view v, Value(tok));
      SARENA_ASSIGN_OR_RETURN(uint8_t p,
                              internal::ParseProtocolOption(v, invert, Span(from, i_), rule));
      if (p != 0 && !invert) *proto = p;
      return absl::OkStatus();
    }
    if (tok == "-f" || tok == "--fragment") {
      ++i_;
      internal::ParseFragmentOption(invert, Span(from, i_), rule);
      return absl::OkStatus();
    }
    if (tok == "-m" || tok == "--match") {
      SARENA_ASSIGN_OR_RETURN(absl::string_view mod, Value(tok));
      std::vector<Opt> opts = Options();
      return AddModule(mod, opts, rule, Span(from, i_));
    }
    if (tok == "-j" || tok == "--jump" || tok == "-g" || tok == "--goto") {
      SARENA_ASSIGN_OR_RETURN(absl::string_view name, Value(tok));
      std::vector<Opt> opts = Options();
      return internal::ParseTarget(name, tok == "-g" || tok == "--goto", opts, Span(from, i_),
                                   &rule->target);
    }
    if (tok == "-c" || tok == "--set-counters") {
      i_ += 3;
      return absl::OkStatus();
    }
    if (absl::StartsWith(tok, "--")) {
      // Options of an implicit protocol module (-p tcp --dport 80 without -m tcp).
      std::vector<Opt> opts = Options(invert);
      return AddModule(*proto == kProtoUdp ? "udp" : *proto == kProtoSctp ? "sctp" : "tcp", opts,
                       rule, Span(from, i_));
    }
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", tok, "'"));
  }

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

  // "-m <mod_in> <opts>": the module's parser, or one unknown match when the model does not
  // implement the module (physdev, owner, socket, recent, u32, length, ttl, tos, dscp,
  // policy, string, time, bpf, cgroup, ...; evaluated per NfEvalOptions::unknown_match).
  static absl::Status AddModule(absl::string_view mod_in, const std::vector<Opt>& opts,
                                IptRule* rule, absl::string_view span) {
    std::string mod = absl::AsciiStrToLower(mod_in);
    for (const MatchModule& m : kMatchModules) {
      if (m.name == mod) return m.parse(mod, opts, span, rule);
    }
    rule->matches.push_back(internal::UnknownMatch(span));
    return absl::OkStatus();
  }

  const std::vector<absl::string_view>& t_;
  size_t i_;
  absl::string_view line_;
  std::deque<std::string>* store_;
};

// "[pkts:bytes] -A ..." (iptables-save -c): the line without its counters.
absl::string_view StripCounters(absl::string_view line) {
  if (line[0] == '[' && line.find(']') != absl::string_view::npos && line.size() > 1 &&
      line[1] != ']') {
    size_t close = line.find(']');
    if (line.substr(1, close - 1).find(':') != absl::string_view::npos &&
        line.substr(close + 1).find("-A") != absl::string_view::npos) {
      line = absl::StripAsciiWhitespace(line.substr(close + 1));
    }
  }
  return line;
}

// ":CHAIN POLICY [p:b]" (line `line_no`) into `table`.
absl::Status ParseChainLine(absl::string_view line, int line_no, Table* table) {
  std::vector<absl::string_view> parts = absl::StrSplit(line.substr(1), ' ', absl::SkipEmpty());
  if (parts.empty()) return absl::InvalidArgumentError("empty chain declaration");
  std::string name(parts[0]);
  Chain* c = nullptr;
  if (auto it = table->by_name.find(name); it != table->by_name.end()) {
    c = &table->chains[it->second];
  } else {
    table->by_name.emplace(name, table->chains.size());
    table->chains.emplace_back();
    c = &table->chains.back();
    c->name = name;
  }
  c->line = line_no;
  c->policy_text = std::string(line);
  if (parts.size() >= 2 && parts[1] != "-") {
    c->builtin = true;
    if (parts[1] == "ACCEPT") c->policy = NfVerdict::kAccept;
    else if (parts[1] == "DROP") c->policy = NfVerdict::kDrop;
    else if (parts[1] == "QUEUE") c->policy = NfVerdict::kQueue;
    else {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid policy '", parts[1], "' for chain ", name));
    }
  }
  return absl::OkStatus();
}

// Resolves the jump/goto targets of `table`'s rules to chain indexes; indexes long chains.
void ResolveJumps(Table* table) {
  for (Chain& c : table->chains) {
    internal::IndexChain(&c);
    for (IptRule& r : c.rules) {
      if (r.target.kind != TargetKind::kJump && r.target.kind != TargetKind::kGoto) continue;
      auto it = table->by_name.find(r.target.name);
      r.target.chain = it == table->by_name.end() ? -1 : static_cast<int>(it->second);
    }
  }
}

// "-A CHAIN ..." (line `line_no`) into `table` (`table_id`); the names of the targets used into
// `target_names`.
absl::Status ParseRuleLine(absl::string_view line, int line_no, NfTable table_id, Table* table,
                           std::vector<absl::string_view>* toks, std::deque<std::string>* strings,
                           absl::flat_hash_set<std::string>* target_names) {
  SARENA_RETURN_IF_ERROR(Tokenize(line, toks, strings));
  if (toks->size() < 2) return absl::InvalidArgumentError("rule without a chain");
  absl::string_view chain = (*toks)[1];
  auto it = table->by_name.find(chain);
  if (it == table->by_name.end()) {
    return absl::InvalidArgumentError(absl::StrCat("rule for undeclared chain '", chain,
                                                   "' in table ", ToString(table_id)));
  }
  IptRule rule;
  rule.line = line_no;
  rule.text = line;
  RuleParser rp(*toks, 2, line, strings);
  SARENA_RETURN_IF_ERROR(rp.Parse(&rule));
  Chain& c = table->chains[it->second];
  rule.number = static_cast<int>(c.rules.size()) + 1;
  if (!rule.target.name.empty()) target_names->insert(std::string(rule.target.name));
  c.rules.push_back(std::move(rule));
  return absl::OkStatus();
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
    line = StripCounters(line);
    absl::Status st;
    if (line[0] == '*') {
      auto t = TableFromName(line.substr(1));
      if (!t.ok()) return err(t.status().message());
      cur_id = *t;
      cur = &im.tables[static_cast<int>(cur_id)];
      cur->present = true;
    } else if (line == "COMMIT") {
      if (cur == nullptr) return err("COMMIT outside a table");
      cur = nullptr;
    } else if (line[0] == ':') {
      if (cur == nullptr) return err("chain declaration outside a table");
      st = ParseChainLine(line, line_no, cur);
    } else if (absl::StartsWith(line, "-A ") || absl::StartsWith(line, "-I ")) {
      if (cur == nullptr) return err("rule outside a table (missing '*table' line)");
      st = ParseRuleLine(line, line_no, cur_id, cur, &toks, &im.strings, &im.target_names);
      if (st.ok()) ++im.rule_count;
    } else {
      return err(absl::StrCat("unexpected line '", line.substr(0, 60), "'"));
    }
    if (!st.ok()) return err(st.message());
  }
  if (cur != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("parse ", file_name, ": table ",
                                                   ToString(cur_id), " has no COMMIT at end of input"));
  }
  for (Table& t : im.tables) ResolveJumps(&t);
  Netfilter nf;
  nf.impl_ = std::move(impl);
  return nf;
}

}  // namespace sarena::model
