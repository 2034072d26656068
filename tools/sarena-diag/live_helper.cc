#include "tools/sarena-diag/live_helper.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libsarena/diag/cli.h"

#ifndef SARENA_DIAG_LIBEXEC_FROM_BIN
#error "SARENA_DIAG_LIBEXEC_FROM_BIN must be defined by the build (tools/CMakeLists.txt)"
#endif

namespace sarena_diag {

std::vector<std::string> LiveHelperCandidates(const std::string& exe_dir) {
  const std::filesystem::path dir(exe_dir);
  std::vector<std::string> out;
  for (const std::filesystem::path& d : {dir, dir / SARENA_DIAG_LIBEXEC_FROM_BIN}) {
    // Lexically: the directory comes from /proc/self/exe, which has no symlink left to resolve.
    std::string p = (d / sarena::diag::kLiveHelperName).lexically_normal().string();
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  }
  return out;
}

int ExecLiveHelper(char** argv, const sarena::rpc::CommandOutput& out) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return out.Fail(sarena::diag::kExitFailure,
                    absl::NotFoundError(absl::StrCat(
                        "collect, drops and trace --live run in ", sarena::diag::kLiveHelperName,
                        ", looked for next to this executable, but /proc/self/exe cannot be read: ",
                        ec.message())));
  }
  const std::vector<std::string> candidates = LiveHelperCandidates(self.parent_path().string());
  for (const std::string& path : candidates) {
    execv(path.c_str(), argv);
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) continue;
    return out.Fail(sarena::diag::kExitFailure,
                    absl::StrCat("cannot run ", path, ": ", std::strerror(err)));
  }
  return out.Fail(
      sarena::diag::kExitFailure,
      absl::NotFoundError(absl::StrCat(
          "collect, drops and trace --live read the kernel and run in ",
          sarena::diag::kLiveHelperName, ", which is missing: looked for ",
          absl::StrJoin(candidates, " and "), " (install it there with sarena-diag, or build the ",
          sarena::diag::kLiveHelperName, " target); trace on a snapshot and codes need no helper")));
}

}  // namespace sarena_diag
