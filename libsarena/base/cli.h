// Command-line helpers shared by the executables (sarenad, sarena, sarena-diag, sarena-cni):
// one --help/--version printer (HelpText over a ProgramDoc), two flag parsers over one token
// scan, command matching, and text tables. Nothing here prints an error: a failure is reported
// by rpc::ReportCliError (libsarena/rpc/cli_output.h), text or the -o json object.
//
// The two parsers (docs/architecture.md "The command lines"):
//  - ParseProgramFlags: Abseil flags (ABSL_FLAG(type, pod_cidr, ...)), typed and documented with
//    dashes (--pod-cidr): the identifier's '_' is '-' on the command line and in --help. A
//    program's flags are the ABSL_FLAGs defined in its own sources (ProgramDoc::flag_sources) and
//    in libsarena/, never Abseil's own (--flagfile, --helpfull, ...). sarenad and sarena: one
//    process-wide set of flags each.
//  - ParseFlagTable: a table of FlagDocs (documented as ProgramDoc::extra_flags), for a program
//    whose commands each take their own set and repeat flags, which process-global Abseil flags
//    cannot express: sarena-diag.
#ifndef LIBSARENA_BASE_CLI_H_
#define LIBSARENA_BASE_CLI_H_

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena {

/// Rewrites "--pod-cidr=X" / "--pod-cidr" into "--pod_cidr=X" / "--pod_cidr" (the flag name
/// only, never its value) so the documented dashed flags map onto Abseil flag identifiers.
/// Arguments after a bare "--" are left alone. Returns storage for argv-style use.
std::vector<std::string> NormalizeFlagDashes(int argc, char** argv);

/// argv-style pointers into `args` (valid while `args` lives).
std::vector<char*> ArgvOf(std::vector<std::string>& args);

/// The project version (CMake's PROJECT_VERSION, e.g. "0.1.0").
std::string ProjectVersion();

/// The flag as typed, without dashes: "pod_cidr" -> "pod-cidr".
std::string DashedFlagName(absl::string_view identifier);

/// One flag as --help documents it.
struct FlagDoc {
  std::string name;           // as typed, without leading dashes: "pod-cidr", "o"
  std::string type;           // "string", "bool", "uint32", "duration", ... ("" = no value)
  std::string default_value;  // as the flag parses it; "" when empty
  std::string help;           // one or more sentences; wrapped by HelpText
};

/// A titled group of flags in --help, by name as typed ("pod-cidr").
struct FlagGroup {
  std::string title;
  std::vector<std::string> flags;
};

/// A subcommand in --help: "endpoint get ID" and what it does.
struct SubcommandDoc {
  std::string synopsis;
  std::string help;
};

/// What --help and --version say about one program.
struct ProgramDoc {
  std::string name;                // "sarenad" (also the first word of --version)
  std::string summary;             // one line: what the program is
  std::vector<std::string> usage;  // synopsis lines, each starting with the program name
  std::string description;         // paragraphs ("\n\n"-separated), wrapped
  std::vector<SubcommandDoc> subcommands;
  /// Path fragments of the files whose ABSL_FLAGs belong to the program, matched against
  /// absl::CommandLineFlag::Filename(), e.g. "tools/sarenad/". "libsarena/" is always included.
  std::vector<std::string> flag_sources;
  std::vector<FlagDoc> extra_flags;  // flags of the program not defined with ABSL_FLAG
  /// Groups in print order; flags of no group are printed last under "Other flags" (so a new
  /// flag is always listed). --help and --version are always listed, under "General".
  std::vector<FlagGroup> groups;
  std::string epilog;  // exit status, environment, files (wrapped)
};

/// The ABSL_FLAGs of the program (see ProgramDoc::flag_sources), sorted by name.
std::vector<FlagDoc> AbseilFlagDocs(const std::vector<std::string>& flag_sources);

/// Every flag of the program: its Abseil flags, extra_flags, and --help/--version; by name.
std::vector<FlagDoc> ProgramFlags(const ProgramDoc& doc);

/// The --help text: "Usage:" lines, summary, description, subcommands, then every flag of
/// ProgramFlags(doc) by group as "  --name=TYPE  (default: V)" with the help wrapped beneath
/// (the layout help2man reads). Lines are at most ~80 columns except long synopses.
std::string HelpText(const ProgramDoc& doc);

/// The --version text: "<name> <ProjectVersion()>\n".
std::string VersionText(const ProgramDoc& doc);

/// What the arguments ask for besides running: --help/-h/--helpfull/--helpshort, or --version
/// (first one wins; nothing after a bare "--" counts).
enum class HelpRequest { kNone, kHelp, kVersion };
HelpRequest FindHelpRequest(const std::vector<std::string>& args);

/// When `args` (argv without argv[0]) ask for --help or --version (FindHelpRequest), prints
/// HelpText or VersionText of `doc` on stdout and returns true (the caller exits 0).
bool PrintHelpIfAsked(const std::vector<std::string>& args, const ProgramDoc& doc);

/// Parses `args` (argv without argv[0]) into the program's Abseil flags and returns the
/// positional arguments in order. Flags may come before, between or after positionals:
/// "--name=V", "--name V", "-o V" (one dash works too), "-oV" (a one-letter flag with its value
/// attached, as kubectl's "-ojson"), booleans as "--name", "--name=false",
/// "--no-name"/"--noname"; '-' and '_' are the same in names; everything after "--" is
/// positional. The token scan is the one ParseFlagTable uses. Errors (kInvalidArgument, naming the flag as typed and the value): a flag that is
/// not the program's, a missing value, a value its type does not parse.
absl::StatusOr<std::vector<std::string>> ParseProgramFlags(const std::vector<std::string>& args,
                                                           const ProgramDoc& doc);

/// The flags of a program that parses against its own table (ProgramDoc::extra_flags, e.g.
/// sarena-diag), as ParseFlagTable returns them.
struct ParsedFlagTable {
  /// Each flag given, by its FlagDoc::name ("probe-timeout", "o"), with every value in
  /// command-line order (a repeated flag has several); a switch (type "" or "bool") given
  /// without "=V" has the value "true".
  std::map<std::string, std::vector<std::string>> values;
  /// The arguments that are not flags, in order (everything after a bare "--" included).
  std::vector<std::string> positional;
};

/// How ParseFlagTable scans.
struct FlagTableOptions {
  /// The first positional argument ends the flags: it and everything after it are
  /// ParsedFlagTable::positional, unparsed (for the flags before a command word, e.g.
  /// "sarena-diag -o json trace ...": the command's own table parses the rest).
  bool stop_at_positional = false;
};

/// Parses `args` (argv without argv[0], or a subcommand's arguments) against `flags`, with the
/// same token scan as ParseProgramFlags: "--name=V", "--name V", "-o V" (one or two dashes),
/// "-oV" (a one-letter valued flag with its value attached: "-ojson"), a switch (FlagDoc::type
/// "" or "bool") as "--name" or "--name=V"; '-' and '_' are the same in names; everything after
/// "--" is positional (see FlagTableOptions for stopping at the first positional). A flag is looked up before its value is taken, so an
/// unknown flag is "unknown flag --bogus" wherever it stands (also last).
/// Errors (kInvalidArgument, naming the flag as typed): "unknown flag --NAME" for a name not in
/// `flags`; "flag --NAME needs a value" when a valued flag is the last argument. Values are not
/// checked here (the caller knows their ranges).
absl::StatusOr<ParsedFlagTable> ParseFlagTable(const std::vector<std::string>& args,
                                               const std::vector<FlagDoc>& flags,
                                               FlagTableOptions options = {});

/// Whether `args` ask for JSON output: "-o json", "--o json", "-o=json", "-ojson", "--output
/// json" or "--output=json" before any bare "--" (the last such flag wins). For reporting a flag error
/// in the requested shape before (or although) the flags parsed.
bool AsksForJsonOutput(const std::vector<std::string>& args);

/// `value` of an output flag (`typed` as typed: "-o", "--output") checked against the formats
/// the program or command prints, `allowed` in order. Error (kInvalidArgument): "invalid -o
/// 'yaml': expected text, json or dot". The one wording of a bad -o in every executable.
absl::Status CheckOutputFormat(absl::string_view typed, absl::string_view value,
                               const std::vector<std::string>& allowed);

/// One command of a program that takes command words and at most one argument: words
/// "endpoint get", arg "ID" (arg "" = takes no argument).
struct CommandSpec {
  std::string words;
  std::string arg;
};

/// Which of `commands` the positional arguments (ParseProgramFlags's result) name: its index.
/// Errors (kInvalidArgument; each ends with the commands' usage "status | endpoint get ID | ...
/// (see <program> --help)"): "missing command" (none given); "<words>: missing the <ARG>
/// argument (usage: <program> <words> <ARG>)" when a command's argument is absent (e.g.
/// `endpoint get`); "<words>: the <ARG> argument is empty (usage: ...)" when it is "" (e.g.
/// `endpoint get ""`); "<words>: unexpected argument '<x>'" after a complete command; "'<words>'
/// needs a subcommand" for the first word(s) of commands only (e.g. `endpoint`); "unknown
/// command '<args>'" otherwise.
absl::StatusOr<size_t> MatchCommand(const std::vector<std::string>& positional,
                                    const std::vector<CommandSpec>& commands,
                                    absl::string_view program);

/// A text table whose columns are as wide as their widest cell (nothing is ever truncated),
/// separated by two spaces; the last column is not padded.
class TextTable {
 public:
  /// `header` names the columns; `right_aligned[i]` right-aligns column i (numbers).
  explicit TextTable(std::vector<std::string> header, std::vector<bool> right_aligned = {});
  /// A row; missing cells are empty, extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  /// The header and rows, one line each, each ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace sarena

#endif  // LIBSARENA_BASE_CLI_H_
