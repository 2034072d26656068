// The CNI execution protocol's environment variables (CNI spec, "Execution Protocol" /
// "Parameters"): CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH —
// parsed and validated before anything uses them.
#ifndef LIBSARENA_CNI_ENV_H_
#define LIBSARENA_CNI_ENV_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::cni {

/// The CNI verbs (CNI_COMMAND).
enum class Command { kAdd, kDel, kCheck, kVersion, kStatus, kGc };

/// "ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC".
absl::string_view ToString(Command command);

/// Parses CNI_COMMAND (exact, upper case as the spec writes them). Errors (CNI code 4,
/// kInvalidArgument): "unknown CNI_COMMAND 'X'" / "CNI_COMMAND is not set".
absl::StatusOr<Command> ParseCommand(absl::string_view text);

/// The first spec version that defines `command`: CHECK 0.4.0, GC and STATUS 1.1.0, others 0.1.0.
absl::string_view MinimumVersionFor(Command command);

/// Checks that `cni_version` (a parseable version string) allows `command`.
/// Errors: CNI code 1, kInvalidArgument "CNI_COMMAND 'GC' needs cniVersion 1.1.0 or later,
/// the network config has '1.0.0'"; CNI code 6 when `cni_version` does not parse.
absl::Status CheckCommandVersion(Command command, absl::string_view cni_version);

/// The byte offset of the first byte that does not start a well-formed UTF-8 sequence in `text`
/// (RFC 3629: no overlong forms, no surrogates U+D800..U+DFFF, nothing above U+10FFFF, no
/// truncated sequence), or std::nullopt when all of `text` is valid UTF-8.
std::optional<size_t> FirstInvalidUtf8(absl::string_view text);

/// Checks that the value of the environment variable `variable` (e.g. "CNI_IFNAME", or
/// "CNI_ARGS K8S_POD_NAME") is valid UTF-8. Everything sarena-cni passes on to sarenad travels in
/// protobuf `string` fields, which must be UTF-8: without this check the daemon cannot decode the
/// request and the plugin would report "try again later" (11) forever.
/// Errors: CNI code 4, kInvalidArgument "invalid <variable> '<value, \xNN-escaped>': not valid
/// UTF-8 (byte 0xNN at offset N)".
absl::Status ValidateUtf8(absl::string_view variable, absl::string_view value);

/// CNI_CONTAINERID: non-empty, `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$` (spec, "Parameters").
/// Errors: CNI code 4, kInvalidArgument "invalid CNI_CONTAINERID '<v>': <reason>".
absl::Status ValidateContainerId(absl::string_view container_id);

/// CNI_IFNAME: a Linux interface name (spec, "Parameters"; libcni's ValidateInterfaceName and the
/// kernel's dev_valid_name()) — valid UTF-8 (see ValidateUtf8), non-empty, at most 15 bytes
/// (IFNAMSIZ - 1), not "." or "..", no '/', ':', control character or whitespace (ASCII or
/// Unicode White_Space, e.g. U+00A0, as Go's unicode.IsSpace).
/// Errors: CNI code 4, kInvalidArgument "invalid CNI_IFNAME '<v>': <reason>" (the value
/// C-escaped; for bad UTF-8 the message of ValidateUtf8, \xNN-escaped).
absl::Status ValidateIfname(absl::string_view ifname);

/// CNI_NETNS: an absolute path (e.g. /var/run/netns/x or /proc/<pid>/ns/net), valid UTF-8 (it is
/// sent to sarenad in a protobuf string). Existence is checked by sarenad when it opens it.
/// Errors: CNI code 4 "invalid CNI_NETNS '<v>': ...".
absl::Status ValidateNetns(absl::string_view netns);

/// CNI_ARGS: "KEY=VALUE" pairs separated by ';' (spec; keys from the Kubernetes convention).
struct CniArgs {
  std::string pod_namespace;           // K8S_POD_NAMESPACE
  std::string pod_name;                // K8S_POD_NAME
  std::string pod_infra_container_id;  // K8S_POD_INFRA_CONTAINER_ID
  std::string pod_uid;                 // K8S_POD_UID
  bool ignore_unknown = false;         // IgnoreUnknown=1|true (libcni convention)
  /// Keys sarena does not know (kept only when ignore_unknown), in input order.
  std::vector<std::pair<std::string, std::string>> unknown;
};

/// Parses CNI_ARGS. Empty text -> defaults; empty segments (";;") are skipped; a value may
/// contain '='. Errors (CNI code 4, kInvalidArgument): a segment without '=' or with an empty
/// key ("invalid CNI_ARGS pair 'X': want KEY=VALUE"); a key or value that is not valid UTF-8
/// ("invalid CNI_ARGS K8S_POD_NAME 'web\\xff': not valid UTF-8 (byte 0xff at offset 3)", the
/// whole-text offset for a bad key); an unknown key when IgnoreUnknown is not
/// set ("CNI_ARGS key 'X' is unknown ... set IgnoreUnknown=1"); an IgnoreUnknown value that is
/// not a boolean.
absl::StatusOr<CniArgs> ParseCniArgs(absl::string_view text);

/// The validated environment of one plugin invocation.
struct Environment {
  Command command = Command::kVersion;
  std::string container_id;  // CNI_CONTAINERID ("" when the command does not need it)
  std::string netns;         // CNI_NETNS ("" when absent: allowed for DEL, STATUS, GC, VERSION)
  std::string ifname;        // CNI_IFNAME
  std::string args_text;     // CNI_ARGS as given
  CniArgs args;              // CNI_ARGS parsed
  std::string path;          // CNI_PATH (unused: sarena-cni delegates to no other plugin)
};

/// Returns the value of an environment variable, std::nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(absl::string_view name)>;

/// Reads and validates the environment for the command in CNI_COMMAND. Required per command
/// (spec 1.1.0): ADD and CHECK need CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME; DEL needs
/// CNI_CONTAINERID and CNI_IFNAME (CNI_NETNS optional, validated when set); VERSION, STATUS
/// and GC need only CNI_COMMAND (other variables are ignored). An empty value counts as unset.
/// Errors: CNI code 4, kInvalidArgument; every invalid variable is named in one message,
/// joined by "; " (e.g. "CNI_CONTAINERID is not set; invalid CNI_IFNAME 'a/b': contains '/'").
absl::StatusOr<Environment> ParseEnvironment(const EnvLookup& lookup);

/// ParseEnvironment over the process environment (getenv).
absl::StatusOr<Environment> ParseProcessEnvironment();

}  // namespace sarena::cni

#endif  // LIBSARENA_CNI_ENV_H_
