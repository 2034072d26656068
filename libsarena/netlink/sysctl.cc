#include "libsarena/netlink/sysctl.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"

namespace sarena::nl {
namespace {

constexpr absl::string_view kProcSys = "/proc/sys/";

}  // namespace

absl::StatusOr<std::string> SysctlPath(absl::string_view key) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid sysctl key '", key, "': ", why));
  };
  absl::string_view rel = key;
  std::string slashed;
  if (absl::StrContains(rel, '/')) {
    absl::ConsumePrefix(&rel, kProcSys);
    slashed = std::string(rel);
  } else {
    slashed = absl::StrReplaceAll(rel, {{".", "/"}});
  }
  if (slashed.empty()) return bad("empty");
  for (absl::string_view part : absl::StrSplit(slashed, '/')) {
    if (part.empty()) return bad("empty component");
    if (part == "." || part == "..") return bad("'.' and '..' are not allowed");
  }
  return absl::StrCat(kProcSys, slashed);
}

absl::StatusOr<std::string> GetSysctl(absl::string_view key) {
  const std::string what = absl::StrCat("read sysctl '", key, "'");
  SARENA_ASSIGN_OR_RETURN(std::string path, SysctlPath(key));
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, what);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, what);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

absl::Status SetSysctl(absl::string_view key, absl::string_view value) {
  const std::string what = absl::StrCat("write sysctl '", key, "' = '", value, "'");
  SARENA_ASSIGN_OR_RETURN(std::string path, SysctlPath(key));
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, what);
  const std::string data = absl::StrCat(value, "\n");
  ssize_t n;
  do {
    n = write(fd.get(), data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus(errno, what);
  if (static_cast<size_t>(n) != data.size()) {
    return absl::InternalError(absl::StrCat(what, ": short write"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GetSysctl(const Netns& ns, absl::string_view key) {
  return RunInWithResult(ns, [&] { return GetSysctl(key); });
}

absl::Status SetSysctl(const Netns& ns, absl::string_view key, absl::string_view value) {
  return RunIn(ns, [&] { return SetSysctl(key, value); });
}

}  // namespace sarena::nl
