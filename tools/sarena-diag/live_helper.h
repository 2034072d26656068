// How sarena-diag runs the commands that read the kernel (collect, drops, trace --live): it
// execs sarena-diag-live, installed under <libexecdir>/sarena/ (not on PATH), with the same
// arguments and argv[0], so messages, --help and exit codes are the helper's and read as
// sarena-diag's. sarena-diag itself then needs no libbpf or libmnl.
#ifndef TOOLS_SARENA_DIAG_LIVE_HELPER_H_
#define TOOLS_SARENA_DIAG_LIVE_HELPER_H_

#include <string>
#include <vector>

#include "libsarena/rpc/cli_output.h"

namespace sarena_diag {

// Where sarena-diag-live is looked for, in order, given the directory of the running
// sarena-diag (from /proc/self/exe, symlinks resolved): that directory itself (the build tree
// puts both in build/tools/), then the libexec directory relative to it as installed
// (bin/../libexec/sarena with GNUInstallDirs' defaults, so a DESTDIR or relocated prefix works).
std::vector<std::string> LiveHelperCandidates(const std::string& exe_dir);

// Replaces this process with the first candidate that exists, argv unchanged. Returns only when
// none could be run: the failure reported through `out` (exit 1; -o json: one {"code",
// "message"} object): kNotFound naming every path searched when none exists, kUnknown with the
// errno text when one exists but cannot be executed.
int ExecLiveHelper(char** argv, const sarena::rpc::CommandOutput& out);

}  // namespace sarena_diag

#endif  // TOOLS_SARENA_DIAG_LIVE_HELPER_H_
