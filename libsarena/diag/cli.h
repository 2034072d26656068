// sarena-diag's command line, the one definition its two executables share (docs/diagnoser.md
// "Two executables"): sarena-diag runs the offline commands (trace on a snapshot, codes) and links
// no libbpf; the commands that read the kernel (collect, drops, trace --live) run in
// sarena-diag-live, which sarena-diag execs with the same arguments. Both parse the same flag
// tables with sarena::ParseFlagTable (libsarena/base/cli.h) and print the same --help, so the
// user sees one command.
#ifndef LIBSARENA_DIAG_CLI_H_
#define LIBSARENA_DIAG_CLI_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libsarena/base/cli.h"

namespace sarena::diag {

/// sarena-diag's exit status for bad input: unknown pod / Service / node, a malformed snapshot
/// file, an unanswerable query, bad flags.
inline constexpr int kExitBadInput = 2;
/// sarena-diag's exit status for any other failure: the environment (no BTF, no CAP_BPF, a
/// missing helper), the kernel, I/O (a failed write to stdout included).
inline constexpr int kExitFailure = 1;

/// The file name of the executable that runs the kernel-reading commands.
inline constexpr char kLiveHelperName[] = "sarena-diag-live";

/// The flags of `trace` on a snapshot (each FlagDoc as --help prints it).
const std::vector<FlagDoc>& TraceFlags();
/// The flags only `trace --live` takes (--live itself, --probe-timeout, --count).
const std::vector<FlagDoc>& LiveFlags();
/// The names of collect's flags `trace --live` also takes (for the snapshot it collects).
const std::vector<std::string>& LiveCollectFlagNames();
/// The flags of `collect`.
const std::vector<FlagDoc>& CollectFlags();
/// The flags of `drops` (its --netns repeats and means "only these").
const std::vector<FlagDoc>& DropsFlags();
/// The flags of `codes` (-o / --output).
const std::vector<FlagDoc>& CodesFlags();

/// The names of `flags`, in order.
std::vector<std::string> FlagNames(const std::vector<FlagDoc>& flags);

/// What `sarena-diag --help` (and `sarena-diag-live --help`) prints: every command, every flag
/// once. The program name is "sarena-diag" whichever executable prints it.
const ProgramDoc& DiagProgramDoc();

/// One command's flags: those given before the command word and after it, parsed together by
/// one sarena::ParseFlagTable call against the command's table (a flag given again later wins;
/// --pod and --netns keep every value).
class CommandArgs {
 public:
  CommandArgs() = default;
  /// The flags as ParseFlagTable returned them (ParsedFlagTable::values).
  explicit CommandArgs(std::map<std::string, std::vector<std::string>> values)
      : values_(std::move(values)) {}
  /// The last value of flag `name` (as typed, without dashes: "probe-timeout"), or `def` when
  /// it was not given. A switch given as "--name" has the value "true".
  std::string Get(const std::string& name, const std::string& def = "") const;
  /// Every value of flag `name` in command-line order; empty when it was not given.
  std::vector<std::string> All(const std::string& name) const;
  /// Whether flag `name` was given (whatever its value).
  bool Has(const std::string& name) const;
  /// The first flag given (in name order) that is not in `known`, or "" when there is none.
  std::string Unknown(const std::vector<std::string>& known) const;
  /// The output format -o (or --output; -o wins), `def` when neither is given. Error
  /// (kInvalidArgument) when it is not one of `allowed`: "invalid -o 'X': expected text, json or
  /// dot" (the allowed ones in order).
  absl::StatusOr<std::string> OutputFormat(const std::string& def,
                                           const std::vector<std::string>& allowed) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

/// A parsed sarena-diag command line.
struct CommandLine {
  /// The command word: "trace", "collect", "drops", "codes" or "help" (help's arguments are not
  /// parsed).
  std::string command;
  CommandArgs args;
};

/// Parses sarena-diag's arguments (argv without argv[0]): flags may stand before the command
/// word ("sarena-diag -o json trace ..."); those before it and after it are one parse against
/// the command's table (trace's includes --live's flags). Errors (kInvalidArgument, the message
/// a usage error prints, rpc::CommandOutput::FailUsage): a flag before the command that no
/// command takes, as sarena::ParseFlagTable words it; "missing command"; "unknown command 'X'";
/// "<command>: unknown flag --X", "<command>: flag --X needs a value", "<command>: unexpected
/// argument 'X'".
absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

/// Whether the arguments name a command that reads the kernel, run by sarena-diag-live:
/// `collect` and `drops` whatever their flags (so their --help and flag errors come from the
/// helper too), and `trace` whose flags parse and include --live. False for everything else,
/// bad command lines included (sarena-diag reports those itself, as the helper would).
bool RunsOnLiveNode(const std::vector<std::string>& args);

/// `text` as an unsigned decimal at most `max` into `*out`; false (and `*out` unchanged) when it
/// is not one written canonically (base/numbers.h: no sign, no leading zero, no space, no junk)
/// or exceeds `max`.
bool ParseUintFlag(const std::string& text, uint32_t max, uint32_t* out);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_CLI_H_
