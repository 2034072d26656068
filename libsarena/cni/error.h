// CNI error codes and the error result JSON (CNI spec, "Error" result type and the well-known
// error codes; 1.0.0 and 1.1.0).
//
// Inside libsarena a CNI failure is an absl::Status that carries the CNI code as a payload
// (MakeCniError / CniCodeOf), so library functions keep returning absl::Status and the plugin
// executable turns any Status into the spec's error object at the very end.
#ifndef LIBSARENA_CNI_ERROR_H_
#define LIBSARENA_CNI_ERROR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::cni {

/// CNI error codes. 1-99 are reserved by the spec (only those listed are defined there);
/// 100 and above are sarena's own.
enum class ErrorCode : uint32_t {
  // --- CNI spec, "Error" section ---
  kIncompatibleVersion = 1,    // cniVersion not supported, or the command needs a newer one
  kUnsupportedField = 2,       // a config field is not supported; msg names key and value
  kUnknownContainer = 3,       // container unknown or does not exist
  kInvalidEnvironment = 4,     // invalid necessary env variable; msg names the variable(s)
  kIoFailure = 5,              // e.g. reading the network config from stdin failed
  kDecodingFailure = 6,        // e.g. the network config is not valid JSON
  kInvalidNetworkConfig = 7,   // a config field is missing or invalid; msg names it and value
  kTryAgainLater = 11,         // transient: the daemon is unreachable / not ready yet
  kPluginNotAvailable = 50,    // STATUS: the plugin cannot serve ADD now
  kLimitedConnectivity = 51,   // STATUS: not available AND existing pods may lose connectivity
  // --- sarena (100+) ---
  kInternal = 100,             // unexpected failure in sarena-cni or sarenad (bug, kernel error)
  kIpamExhausted = 101,        // no free address left in the node's pod CIDR
  kInterfaceExists = 102,      // ADD: the attachment or CNI_IFNAME already exists in the netns
  kDatapathFailure = 103,      // sarenad could not program the datapath (veth, route, BPF map)
  kCheckFailed = 104,          // CHECK: live state or prevResult differs from what ADD made
  kProtocolError = 105,        // sarenad's reply is malformed or does not match the request
  kUntrustedDaemon = 106,      // daemonSocket's directory is writable by others / not root's,
                               // or the peer on it is not root: nothing was sent to it
};

/// Lower-case summary used as the spec's "msg" prefix when none is given, e.g.
/// kInvalidNetworkConfig -> "invalid network config". Unknown codes -> "error".
absl::string_view ToString(ErrorCode code);

/// The CNI code a plain absl::StatusCode maps to when no explicit code is attached:
/// kOk -> 0; kNotFound -> 3; kUnavailable, kDeadlineExceeded, kAborted -> 11;
/// kResourceExhausted -> 101; kAlreadyExists -> 102; kInvalidArgument -> 7;
/// kFailedPrecondition -> 11 (the daemon is not ready yet); everything else -> 100.
ErrorCode DefaultCniCode(absl::StatusCode code);

/// A non-OK Status with `code` (the absl code) and `message`, carrying `cni_code` as payload.
absl::Status MakeCniError(ErrorCode cni_code, absl::StatusCode code, absl::string_view message);
/// Same with a raw numeric CNI code (e.g. received from the daemon). 0 attaches nothing.
absl::Status MakeCniError(uint32_t cni_code, absl::StatusCode code, absl::string_view message);

/// Returns `status` with `cni_code` attached (replacing any earlier one); OK stays OK.
absl::Status WithCniCode(absl::Status status, ErrorCode cni_code);

/// Returns `status` with a longer description attached for the error object's "details"
/// (e.g. the JSON parser's message with its position marker); OK stays OK.
absl::Status WithCniDetails(absl::Status status, absl::string_view details);

/// The details attached with WithCniDetails, or "".
std::string CniDetailsOf(const absl::Status& status);

/// The CNI code of `status`: its payload when present, else DefaultCniCode(status.code()).
/// 0 for OK.
uint32_t CniCodeOf(const absl::Status& status);

/// The spec's error object: {"cniVersion", "code", "msg", "details"}.
struct Error {
  std::string cni_version;  // the protocol version of this output
  uint32_t code = 0;        // ErrorCode value (or any daemon-provided code)
  std::string msg;          // short characterization; sarena's names the field and value
  std::string details;      // longer description (may be empty)
};

/// Builds the error object for a non-OK `status`: code = CniCodeOf(status), msg =
/// status.message(), details = `details`, or CniDetailsOf(status) when `details` is empty.
/// `cni_version` is the version to report.
Error ErrorFromStatus(const absl::Status& status, absl::string_view cni_version,
                      absl::string_view details = {});

/// Serializes to one-line JSON, e.g.
/// {"cniVersion":"1.1.0","code":7,"msg":"invalid mtu 20: must be 68..65535","details":""}.
std::string ErrorToJson(const Error& error);

/// Parses an error object (what another plugin or our own binary printed).
/// Errors: kInvalidArgument naming the problem when the text is not JSON, not an object, or a
/// field has the wrong type; missing fields stay empty / 0.
absl::StatusOr<Error> ParseErrorJson(absl::string_view json);

}  // namespace sarena::cni

#endif  // LIBSARENA_CNI_ERROR_H_
