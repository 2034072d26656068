// What the `sarena` CLI prints from sarenad's answers: the -o json rendering of its messages
// (protobuf's JSON mapping), the one JSON error object of -o json mode (sarena, sarena-diag and
// sarenad report failures through ReportCliError), and the lookup of one endpoint for `sarena
// endpoint get ID`; CommandOutput, the result and failure printer of sarena-diag's commands and
// sarenad's failure report.
#ifndef LIBSARENA_RPC_CLI_OUTPUT_H_
#define LIBSARENA_RPC_CLI_OUTPUT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "libsarena/base/cli.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::rpc {

/// `message` in protobuf's JSON mapping (https://protobuf.dev/programming-guides/proto3/#json)
/// as -o json prints it: indented, proto field names (snake_case), fields at their default
/// value printed too (so every field of the schema is present; 64-bit integers are strings,
/// enums names), ending in '\n'.
std::string MessageToJson(const google::protobuf::Message& message);

/// `message` as "field: value" lines, every field of the schema in declaration order (defaults
/// included), nested messages flattened as "parent.field", repeated fields comma-separated,
/// names aligned: the text of `sarena endpoint get`.
std::string MessageToText(const google::protobuf::Message& message);

/// The -o json error object of a failed command: {"code": "<absl::StatusCode name, e.g.
/// NOT_FOUND>", "message": "<status message>"} (v1::CliError).
v1::CliError CliErrorOf(const absl::Status& status);

/// How sarena, sarena-diag and sarenad report a failure (the one error shape of -o json): with
/// `json` (the command line asked for -o json), MessageToJson(CliErrorOf(status)) on stdout,
/// i.e. {"code": "<absl::StatusCode name>", "message": "<status message>"}, and nothing on
/// stderr (so `... -o json | jq` always reads JSON); otherwise "<program>: <status message>"
/// on stderr and nothing on stdout. Returns `exit_code` (the caller's exit status: 1 failure,
/// 2 bad usage), so a caller writes `return ReportCliError(...)`.
int ReportCliError(absl::string_view program, const absl::Status& status, bool json, int exit_code);

/// How one command of a sarena executable that parses its own flags (sarena-diag,
/// sarena-diag-live) writes its result and reports a failure, in the one shape ReportCliError
/// prints; also how sarenad reports the failure that ends it. Cheap to copy; holds no stream.
class CommandOutput {
 public:
  /// For the program `doc` describes, run with `argc`/`argv` (main's): messages are prefixed with
  /// doc.name; failures are the -o json error object when the arguments ask for -o json
  /// (sarena::AsksForJsonOutput on the raw arguments, so that a flag error is reported so too);
  /// a usage error in text mode ends with doc.usage as "usage:\n  <line>\n...(see <name>
  /// --help)\n".
  CommandOutput(const ProgramDoc& doc, int argc, char** argv);

  /// Whether failures are reported as the -o json error object.
  bool json() const { return json_; }
  /// ReportCliError(program, status, json, exit_code): returns `exit_code`.
  int Fail(int exit_code, const absl::Status& status) const;
  /// A failure with only a message: kInvalidArgument when `exit_code` is 2 (bad input), else
  /// kUnknown. Returns `exit_code`.
  int Fail(int exit_code, absl::string_view message) const;
  /// Bad usage, exit status 2 (kInvalidArgument): text mode prints "<program>: <message>" and the
  /// usage lines on stderr; -o json prints the error object with "<message> (see <program>
  /// --help)". Returns 2.
  int FailUsage(absl::string_view message) const;
  /// Writes `text` to stdout and flushes it; returns 0 (FinishStdout checks the write).
  int Print(absl::string_view text) const;
  /// `exit_code`, or 1 when anything written to stdout did not get out (a full disk, a closed
  /// pipe): flushes stdout and checks its error flag, so output lost is never exit 0. The
  /// failure is "<program>: write standard output: <strerror>" on stderr even under -o json
  /// (stdout is what failed); a nonzero `exit_code` is kept.
  int FinishStdout(int exit_code) const;

 private:
  std::string program_;
  bool json_ = false;
  std::string usage_;
};

/// `status` with " — <what_to_do>" appended to its message; same code. OK stays OK.
absl::Status WithHint(const absl::Status& status, absl::string_view what_to_do);

/// The one endpoint of `list` that `id` names, tried in this order: its endpoint id (decimal),
/// its container id, its pod "namespace/name", a prefix of its container id.
/// Errors: kNotFound "no endpoint matches '<id>' ..." when nothing matches; kInvalidArgument
/// "'<id>' is ambiguous: ..." naming the candidates when a step matches more than one endpoint
/// (a container attached twice, a short prefix); kInvalidArgument when `id` is empty.
absl::StatusOr<v1::Endpoint> FindEndpoint(const v1::EndpointListResponse& list,
                                          absl::string_view id);

}  // namespace sarena::rpc

#endif  // LIBSARENA_RPC_CLI_OUTPUT_H_
