// The network configuration sarena-cni receives on stdin (CNI spec, "Network configuration
// format" / "Plugin configuration objects"): ONE plugin object into which the runtime has
// injected the list's "name" and the negotiated "cniVersion" (and "prevResult" for CHECK/DEL,
// "cni.dev/valid-attachments" for GC).
//
// Keys sarena-cni reads (all but "type", "name", "cniVersion" optional):
//   type          string  the executable name (normally "sarena-cni")
//   cniVersion    string  one of kSupportedVersions
//   name          string  network name: ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$
//   daemonSocket  string  sarenad's unix socket, absolute (default /run/sarena/sarenad.sock)
//   mtu           integer pod interface MTU, 68..65535 (default: sarenad's --mtu, itself 1500)
//   logFile       string  absolute path of the plugin's log; "" = stderr
//                         (default /var/log/sarena-cni.log)
//   dns           object  copied into the ADD result (nameservers, domain, search, options)
//   prevResult    object  result of the preceding ADD (required for CHECK)
//   cni.dev/valid-attachments  [{containerID, ifname}]  GC: attachments to keep (required for
//                         GC; "cni.dev/attachments", the name in early 1.1 drafts, is accepted)
// Other keys (args, runtimeConfig, capabilities, disableCheck, disableGC, cniVersions, ...)
// are ignored. "ipam" is refused with code 2: sarenad allocates addresses itself.
#ifndef LIBSARENA_CNI_CONFIG_H_
#define LIBSARENA_CNI_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/cni/env.h"
#include "libsarena/cni/result.h"

namespace sarena::cni {

inline constexpr absl::string_view kDefaultDaemonSocket = "/run/sarena/sarenad.sock";
inline constexpr absl::string_view kDefaultLogFile = "/var/log/sarena-cni.log";
/// The MTU the pod gets when the config has none and sarenad runs with its default --mtu.
inline constexpr uint32_t kDefaultMtu = 1500;
/// RFC 791 minimum IPv4 MTU; 65535 the largest IPv4 datagram.
inline constexpr uint32_t kMinMtu = 68;
inline constexpr uint32_t kMaxMtu = 65535;

/// One entry of cni.dev/valid-attachments.
struct Attachment {
  std::string container_id;  // "containerID"
  std::string ifname;        // "ifname"
  bool operator==(const Attachment&) const = default;
};

/// The parsed plugin configuration.
struct NetConf {
  std::string cni_version;
  std::string name;
  std::string type;
  std::string daemon_socket = std::string(kDefaultDaemonSocket);
  /// Unset: sarenad's --mtu applies (1500 by default).
  std::optional<uint32_t> mtu;
  /// "" = log to stderr.
  std::string log_file = std::string(kDefaultLogFile);
  Dns dns;
  std::optional<Result> prev_result;
  /// GC only.
  std::vector<Attachment> valid_attachments;
};

/// Parses and validates the config for `command`.
/// Errors (each an absl::Status carrying the CNI code):
///   6 kDecodingFailure     — not valid JSON, or not a JSON object (msg has the parser's text),
///                            or a cniVersion that is not MAJOR.MINOR.PATCH; refused before
///                            parsing (json.h, CheckJsonText): text that is not UTF-8 ("not valid
///                            UTF-8 at byte offset N") and arrays/objects nested deeper than
///                            kMaxJsonDepth (32) anywhere — prevResult, runtimeConfig, args
///                            included ("nesting deeper than 32 levels at byte offset N");
///   7 kInvalidNetworkConfig — a required key missing ("missing field 'name'"), a key of the
///                            wrong type or value ("field 'mtu' is a string \"x\", want ...",
///                            "invalid mtu 20: must be 68..65535"), a conflist ("plugins") given
///                            instead of one plugin object, CHECK without prevResult, GC without
///                            cni.dev/valid-attachments;
///   2 kUnsupportedField    — "ipam" is present (named with its value);
///   1 kIncompatibleVersion — cniVersion unsupported, or too old for `command` (CHECK needs
///                            0.4.0, STATUS and GC 1.1.0).
/// VERSION never needs a config: callers do not call this for it.
absl::StatusOr<NetConf> ParseNetConf(absl::string_view json, Command command);

/// Best-effort "cniVersion" of a config for reporting errors before (or when) ParseNetConf
/// fails: the string value when the text is a JSON object with a string cniVersion, else "".
std::string PeekCniVersion(absl::string_view json);

/// Validates a network name (spec: ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$). Errors: CNI code 7 naming it.
absl::Status ValidateNetworkName(absl::string_view name);

}  // namespace sarena::cni

#endif  // LIBSARENA_CNI_CONFIG_H_
