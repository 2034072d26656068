// The sarena CNI plugin as a library function (the C++ counterpart of the CNI project's
// skel.PluginMain): CNI spec 1.0.0 / 1.1.0, also the 0.3.x and 0.4.0 result shapes.
// tools/sarena-cni is main() around PluginMain; tests run it in-process against a scripted
// daemon (tests/unit/plugin_test.cc).
//
// Environment + stdin -> libsarena/cni (validation, config, result JSON) ->
// libsarena/rpc Client (sarenad does the work) -> stdout. stdout carries only the spec's
// JSON (a result for ADD, the version object for VERSION, an error object on failure; nothing
// for DEL/CHECK/STATUS/GC success). Logs go to the config's logFile, or stderr when it is ""
// or cannot be opened — never to stdout. Exit status 0 on success, 1 on error.
//
// Error codes (see libsarena/cni/error.h for the full list):
//   ADD/DEL/CHECK/GC with sarenad unreachable (socket missing, refused, died mid-request,
//   timed out) -> 11 "try again later": the runtime retries (kubelet retries failed
//   ADD and DEL). DEL deliberately does NOT report success when sarenad is unreachable: the
//   IP allocation and endpoint record live in sarenad, and a false success would make the
//   runtime forget the attachment and leak them (until a later GC). DEL of an attachment that
//   sarenad no longer knows (existed=false, or a NotFound error) succeeds (idempotent).
//   STATUS with sarenad unreachable or not ready -> 50 "plugin not available" (existing pods keep
//   forwarding: the BPF datapath is pinned and runs without the daemon, hence 50, not 51).
//   A daemonSocket whose directory is group/other-writable or owned by another user than root
//   (or the plugin's own uid when it is not root), or whose peer (SO_PEERCRED) is not such a
//   uid -> 106 "untrusted daemon socket" naming the path (STATUS: 50), nothing sent. A reply of
//   the wrong kind, a garbage or oversized frame -> 105 naming the socket path.
//   Errors reported by sarenad keep the CNI code it chose (v1::Error.cni_code), or the default
//   mapping of its absl::StatusCode (libsarena/cni/error.h, DefaultCniCode).
#ifndef LIBSARENA_PLUGIN_PLUGIN_H_
#define LIBSARENA_PLUGIN_PLUGIN_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/base/log.h"
#include "libsarena/cni/env.h"

namespace sarena::plugin {

/// What a CNI plugin process gets from its runtime and gives back (CNI spec, "Overview" and
/// "Section 2: Execution Protocol": parameters in CNI_* environment variables, the network
/// configuration on stdin, the result or error JSON on stdout, exit status 0 or 1).
struct PluginIo {
  /// The environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH).
  cni::EnvLookup getenv;
  /// The whole of stdin, or the error reading it (CNI code 5 "I/O failure").
  absl::StatusOr<std::string> stdin_text;
  /// Receives stdout's one JSON document (without the trailing newline), at most once.
  std::function<void(const std::string&)> write_stdout;
  /// Where logs go before the configuration is read and when it has no logFile (or it cannot be
  /// opened); never stdout. sarena-cni passes stderr. The global sink is reset when PluginMain
  /// returns.
  LogSink log_sink;
};

/// Runs one CNI command (ADD, DEL, CHECK, STATUS, GC, VERSION) of the sarena plugin: parses and
/// validates the environment and configuration, asks sarenad over daemonSocket, writes the
/// result (ADD), the version object (VERSION) or an error object, and returns the exit status
/// (0 success, 1 error). Never throws; every failure is an error object with a CNI code.
int PluginMain(const PluginIo& io);

}  // namespace sarena::plugin

#endif  // LIBSARENA_PLUGIN_PLUGIN_H_
