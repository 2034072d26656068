#include "libsarena/base/cli.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "absl/flags/commandlineflag.h"
#include "absl/functional/function_ref.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

#ifndef SARENA_PROJECT_VERSION
#error "SARENA_PROJECT_VERSION must be defined by the build (libsarena/base/CMakeLists.txt)"
#endif

namespace sarena {
namespace {

constexpr size_t kWidth = 80;
constexpr size_t kHelpIndent = 6;

// The Abseil flag type's name as --help prints it.
std::string TypeName(const absl::CommandLineFlag& f) {
  if (f.IsOfType<bool>()) return "bool";
  if (f.IsOfType<std::string>()) return "string";
  if (f.IsOfType<int32_t>()) return "int32";
  if (f.IsOfType<uint32_t>()) return "uint32";
  if (f.IsOfType<int64_t>()) return "int64";
  if (f.IsOfType<uint64_t>()) return "uint64";
  if (f.IsOfType<int16_t>()) return "int16";
  if (f.IsOfType<uint16_t>()) return "uint16";
  if (f.IsOfType<double>()) return "double";
  if (f.IsOfType<float>()) return "float";
  if (f.IsOfType<absl::Duration>()) return "duration";
  if (f.IsOfType<std::vector<std::string>>()) return "list";
  return "value";
}

bool IsProgramFlagFile(const std::string& file, const std::vector<std::string>& sources) {
  if (absl::StrContains(file, "libsarena/")) return true;
  for (const std::string& s : sources) {
    if (!s.empty() && absl::StrContains(file, s)) return true;
  }
  return false;
}

// The program's Abseil flags by identifier ("pod_cidr").
std::map<std::string, absl::CommandLineFlag*> ProgramAbseilFlags(
    const std::vector<std::string>& sources) {
  std::map<std::string, absl::CommandLineFlag*> out;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->IsRetired() || !IsProgramFlagFile(flag->Filename(), sources)) continue;
    out[std::string(name)] = flag;
  }
  return out;
}

// `text` wrapped at kWidth with every line indented by `indent` spaces; "\n" in `text` starts a
// new line (paragraphs are kept).
std::string Wrap(absl::string_view text, size_t indent) {
  std::string out;
  const std::string pad(indent, ' ');
  for (absl::string_view line : absl::StrSplit(absl::StripTrailingAsciiWhitespace(text), '\n')) {
    std::string cur;
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (!cur.empty() && indent + cur.size() + 1 + word.size() > kWidth) {
        absl::StrAppend(&out, pad, cur, "\n");
        cur.clear();
      }
      absl::StrAppend(&cur, cur.empty() ? "" : " ", word);
    }
    absl::StrAppend(&out, cur.empty() ? "" : pad, cur, "\n");
  }
  return out;
}

std::string FlagLine(const FlagDoc& f) {
  std::string line = f.name.size() == 1 ? absl::StrCat("  -", f.name)
                     : f.type == "bool" ? absl::StrCat("  --[no-]", f.name)
                                        : absl::StrCat("  --", f.name);
  if (!f.type.empty() && f.type != "bool") {
    absl::StrAppend(&line, f.name.size() == 1 ? " " : "=", absl::AsciiStrToUpper(f.type));
  }
  if (!f.default_value.empty()) {
    absl::StrAppend(
        &line, "  (default: ",
        f.type == "string" ? absl::StrCat("\"", f.default_value, "\"") : f.default_value, ")");
  } else if (f.type == "string" || f.type == "list") {
    absl::StrAppend(&line, "  (default: none)");
  }
  return line + "\n";
}

bool IsHelpArg(absl::string_view a) {
  return a == "-h" || a == "--help" || a == "-help" || a == "--helpfull" || a == "-helpfull" ||
         a == "--helpshort" || a == "-helpshort";
}

}  // namespace

std::vector<std::string> NormalizeFlagDashes(int argc, char** argv) {
  std::vector<std::string> out;
  bool rest = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i > 0 && !rest && a == "--") rest = true;
    if (i > 0 && !rest && a.size() > 2 && a[0] == '-') {
      size_t start = a.find_first_not_of('-');
      size_t end = std::min(a.find('='), a.size());
      if (start != std::string::npos && start < end) {
        std::replace(a.begin() + static_cast<long>(start), a.begin() + static_cast<long>(end), '-',
                     '_');
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<char*> ArgvOf(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (std::string& s : args) v.push_back(s.data());
  v.push_back(nullptr);
  return v;
}

std::string ProjectVersion() { return SARENA_PROJECT_VERSION; }

std::string DashedFlagName(absl::string_view identifier) {
  return absl::StrReplaceAll(identifier, {{"_", "-"}});
}

std::vector<FlagDoc> AbseilFlagDocs(const std::vector<std::string>& flag_sources) {
  std::vector<FlagDoc> out;
  for (const auto& [name, flag] : ProgramAbseilFlags(flag_sources)) {
    out.push_back(
        FlagDoc{DashedFlagName(name), TypeName(*flag), flag->DefaultValue(), flag->Help()});
  }
  return out;
}

std::vector<FlagDoc> ProgramFlags(const ProgramDoc& doc) {
  std::vector<FlagDoc> out = AbseilFlagDocs(doc.flag_sources);
  out.insert(out.end(), doc.extra_flags.begin(), doc.extra_flags.end());
  out.push_back(FlagDoc{"help", "", "", "Print this help and exit (also -h, --helpfull)."});
  out.push_back(FlagDoc{"version", "", "", "Print the program name and version and exit."});
  std::sort(out.begin(), out.end(),
            [](const FlagDoc& a, const FlagDoc& b) { return a.name < b.name; });
  return out;
}

std::string HelpText(const ProgramDoc& doc) {
  std::string out;
  for (size_t i = 0; i < doc.usage.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "Usage: " : "  or:  ", doc.usage[i], "\n");
  }
  if (!doc.summary.empty()) absl::StrAppend(&out, "\n", Wrap(doc.summary, 0));
  if (!doc.description.empty()) absl::StrAppend(&out, "\n", Wrap(doc.description, 0));
  if (!doc.subcommands.empty()) {
    absl::StrAppend(&out, "\nCommands:\n");
    for (const SubcommandDoc& s : doc.subcommands) {
      absl::StrAppend(&out, "  ", s.synopsis, "\n", Wrap(s.help, kHelpIndent));
    }
  }
  std::vector<FlagDoc> flags = ProgramFlags(doc);
  std::set<std::string> printed;
  auto print_group = [&](const std::string& title, const std::vector<std::string>& names) {
    std::string body;
    for (const std::string& n : names) {
      auto it =
          std::find_if(flags.begin(), flags.end(), [&](const FlagDoc& f) { return f.name == n; });
      if (it == flags.end() || !printed.insert(n).second) continue;
      absl::StrAppend(&body, FlagLine(*it), Wrap(it->help, kHelpIndent));
    }
    if (!body.empty()) absl::StrAppend(&out, "\n", title, ":\n", body);
  };
  for (const FlagGroup& g : doc.groups) print_group(g.title, g.flags);
  std::vector<std::string> rest;
  for (const FlagDoc& f : flags) {
    if (f.name != "help" && f.name != "version" && !printed.count(f.name)) rest.push_back(f.name);
  }
  print_group(doc.groups.empty() ? "Flags" : "Other flags", rest);
  print_group("General", {"help", "version"});
  if (!AbseilFlagDocs(doc.flag_sources).empty()) {
    absl::StrAppend(&out, "\n",
                    Wrap("Flag names take '-' or '_' alike; a value follows '=' or the next "
                         "argument; booleans take --name, --no-name or --name=false.",
                         0));
  }
  if (!doc.epilog.empty()) absl::StrAppend(&out, "\n", Wrap(doc.epilog, 0));
  if (!absl::EndsWith(out, "\n")) out += "\n";
  return out;
}

std::string VersionText(const ProgramDoc& doc) {
  return absl::StrCat(doc.name, " ", ProjectVersion(), "\n");
}

HelpRequest FindHelpRequest(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (IsHelpArg(a)) return HelpRequest::kHelp;
    if (a == "--version" || a == "-version") return HelpRequest::kVersion;
  }
  return HelpRequest::kNone;
}

bool PrintHelpIfAsked(const std::vector<std::string>& args, const ProgramDoc& doc) {
  switch (FindHelpRequest(args)) {
    case HelpRequest::kHelp:
      std::fputs(HelpText(doc).c_str(), stdout);
      return true;
    case HelpRequest::kVersion:
      std::fputs(VersionText(doc).c_str(), stdout);
      return true;
    case HelpRequest::kNone:
      break;
  }
  return false;
}

namespace {

// What a parser's flag table says of one name as typed (dashed, without leading dashes).
struct FlagMatch {
  enum class Kind { kUnknown, kSwitch, kValued, kNegation };
  Kind kind = Kind::kUnknown;
  std::string key;  // what the sink is given: the parser's own name of the flag
};

// The one token scan of ParseProgramFlags and ParseFlagTable: ends at "--" (the rest is
// positional), takes a non-dash argument as positional, splits "--name=value", asks `lookup`
// what the name is (a switch, a flag that needs a value, the negation "--no-NAME" of a switch,
// or unknown), reads a value from the next argument when it needs one, and hands each flag to
// `sink` as (key, name as typed with its dashes, value). A one-dash argument that is no flag but
// starts with a one-letter valued flag is that flag with its value attached: "-ojson" is
// "-o json" (as kubectl takes it). With `stop_at_positional` the first positional argument ends
// the scan: it and everything after it are positional.
absl::StatusOr<std::vector<std::string>> ScanFlags(
    const std::vector<std::string>& args,
    absl::FunctionRef<FlagMatch(const std::string& name)> lookup,
    absl::FunctionRef<absl::Status(const std::string& key, const std::string& typed,
                                   const std::string& value)>
        sink,
    bool stop_at_positional = false) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || (stop_at_positional && (a.size() < 2 || a[0] != '-'))) {
      positional.insert(positional.end(), args.begin() + static_cast<long>(i) + (a == "--"),
                        args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    const bool one_dash = a[1] != '-';
    std::string body = a.substr(one_dash ? 1 : 2);
    std::string value;
    const size_t eq = body.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    std::string name = DashedFlagName(body);
    std::string typed = absl::StrCat(name.size() == 1 ? "-" : "--", name);
    FlagMatch m = lookup(name);
    if (m.kind == FlagMatch::Kind::kNegation) {
      if (has_value) {
        m.kind = FlagMatch::Kind::kUnknown;  // "--no-x=V" is nothing
      } else {
        m.kind = FlagMatch::Kind::kSwitch;
        value = "false";
        has_value = true;
      }
    }
    if (m.kind == FlagMatch::Kind::kUnknown && one_dash && a.size() > 2) {
      // "-ojson": a one-letter flag with its value attached.
      FlagMatch shrt = lookup(a.substr(1, 1));
      if (shrt.kind == FlagMatch::Kind::kValued) {
        m = std::move(shrt);
        typed = absl::StrCat("-", a.substr(1, 1));
        value = a.substr(2);
        has_value = true;
      }
    }
    if (m.kind == FlagMatch::Kind::kUnknown) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", typed));
    }
    if (!has_value) {
      if (m.kind == FlagMatch::Kind::kSwitch) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag ", typed, " needs a value"));
      }
    }
    absl::Status st = sink(m.key, typed, value);
    if (!st.ok()) return st;
  }
  return positional;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseProgramFlags(const std::vector<std::string>& args,
                                                           const ProgramDoc& doc) {
  const std::map<std::string, absl::CommandLineFlag*> flags = ProgramAbseilFlags(doc.flag_sources);
  auto lookup = [&](const std::string& name) {
    const std::string key = absl::StrReplaceAll(name, {{"-", "_"}});
    if (auto it = flags.find(key); it != flags.end()) {
      return FlagMatch{it->second->IsOfType<bool>() ? FlagMatch::Kind::kSwitch
                                                    : FlagMatch::Kind::kValued,
                       key};
    }
    // --no-NAME / --noNAME of a boolean.
    for (absl::string_view prefix : {"no_", "no"}) {
      if (!absl::StartsWith(key, prefix)) continue;
      auto b = flags.find(key.substr(prefix.size()));
      if (b != flags.end() && b->second->IsOfType<bool>()) {
        return FlagMatch{FlagMatch::Kind::kNegation, b->first};
      }
    }
    return FlagMatch{};
  };
  auto sink = [&](const std::string& key, const std::string& typed, const std::string& value) {
    absl::CommandLineFlag* f = flags.at(key);
    std::string err;
    if (f->ParseFrom(value, &err)) return absl::OkStatus();
    // Abseil's own wording names the identifier ('node_mask_len'): keep only its detail.
    if (absl::StrContains(err, "specified for flag")) err.clear();
    return absl::InvalidArgumentError(absl::StrCat("invalid value '", value, "' for ", typed, " (",
                                                   TypeName(*f), ")", err.empty() ? "" : ": ",
                                                   err));
  };
  return ScanFlags(args, lookup, sink);
}

absl::StatusOr<ParsedFlagTable> ParseFlagTable(const std::vector<std::string>& args,
                                               const std::vector<FlagDoc>& flags,
                                               FlagTableOptions options) {
  ParsedFlagTable out;
  auto lookup = [&](const std::string& name) {
    auto it =
        std::find_if(flags.begin(), flags.end(), [&](const FlagDoc& f) { return f.name == name; });
    if (it == flags.end()) return FlagMatch{};
    return FlagMatch{it->type.empty() || it->type == "bool" ? FlagMatch::Kind::kSwitch
                                                            : FlagMatch::Kind::kValued,
                     name};
  };
  auto sink = [&](const std::string& key, const std::string&, const std::string& value) {
    out.values[key].push_back(value);
    return absl::OkStatus();
  };
  absl::StatusOr<std::vector<std::string>> positional =
      ScanFlags(args, lookup, sink, options.stop_at_positional);
  if (!positional.ok()) return positional.status();
  out.positional = *std::move(positional);
  return out;
}

bool AsksForJsonOutput(const std::vector<std::string>& args) {
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    bool matched = false;
    for (absl::string_view flag : {"-o", "--o", "-output", "--output"}) {
      if (a == flag && i + 1 < args.size()) {
        json = args[i + 1] == "json";
        matched = true;
      } else if (absl::StartsWith(a, absl::StrCat(flag, "="))) {
        json = a.substr(flag.size() + 1) == "json";
        matched = true;
      }
    }
    // "-ojson" (the value attached), but not one-dash flags that merely start with 'o'.
    if (!matched && a.size() > 2 && a[0] == '-' && a[1] == 'o' && a != "-output" &&
        !absl::StartsWith(a, "-out")) {
      json = a.substr(2) == "json";
    }
  }
  return json;
}

absl::Status CheckOutputFormat(absl::string_view typed, absl::string_view value,
                               const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return absl::OkStatus();
  std::string expected;
  for (size_t i = 0; i < allowed.size(); ++i) {
    absl::StrAppend(&expected, i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ", allowed[i]);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", typed, " '", value, "': expected ", expected));
}

absl::StatusOr<size_t> MatchCommand(const std::vector<std::string>& positional,
                                    const std::vector<CommandSpec>& commands,
                                    absl::string_view program) {
  std::vector<std::string> usage;
  for (const CommandSpec& c : commands) {
    usage.push_back(c.arg.empty() ? c.words : absl::StrCat(c.words, " ", c.arg));
  }
  const std::string tail =
      absl::StrCat(": ", absl::StrJoin(usage, " | "), " (see ", program, " --help)");
  if (positional.empty()) return absl::InvalidArgumentError(absl::StrCat("missing command", tail));
  bool is_prefix = false;  // the arguments are the first words of some command
  for (size_t i = 0; i < commands.size(); ++i) {
    const CommandSpec& c = commands[i];
    const std::vector<std::string> words = absl::StrSplit(c.words, ' ', absl::SkipEmpty());
    const size_t n = std::min(words.size(), positional.size());
    if (!std::equal(words.begin(), words.begin() + static_cast<long>(n), positional.begin())) {
      continue;
    }
    if (positional.size() < words.size()) {
      is_prefix = true;
      continue;
    }
    const size_t want = words.size() + (c.arg.empty() ? 0 : 1);
    if (positional.size() == want) {
      if (!c.arg.empty() && positional.back().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(c.words, ": the ", c.arg,
                                                       " argument is empty (usage: ", program, " ",
                                                       c.words, " ", c.arg, ")", tail));
      }
      return i;
    }
    if (positional.size() < want) {
      return absl::InvalidArgumentError(absl::StrCat(c.words, ": missing the ", c.arg,
                                                     " argument (usage: ", program, " ", c.words,
                                                     " ", c.arg, ")", tail));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(c.words, ": unexpected argument '", positional[want], "'", tail));
  }
  if (is_prefix) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", absl::StrJoin(positional, " "), "' needs a subcommand", tail));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command '", absl::StrJoin(positional, " "), "'", tail));
}

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_(std::move(right_aligned)) {
  right_.resize(header_.size(), false);
}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c > 0) l += "  ";
      if (right_[c]) {
        absl::StrAppend(&l, pad, cells[c]);
      } else {
        absl::StrAppend(&l, cells[c], last ? "" : pad);
      }
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    absl::StrAppend(&out, l, "\n");
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

}  // namespace sarena
