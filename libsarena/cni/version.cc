#include "libsarena/cni/version.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/json.h"

namespace sarena::cni {

absl::StatusOr<SpecVersion> SpecVersion::Parse(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  SpecVersion v;
  int* out[3] = {&v.major, &v.minor, &v.patch};
  bool ok = parts.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    ok = !parts[i].empty() && parts[i].find_first_not_of("0123456789") == absl::string_view::npos &&
         parts[i].size() <= 6 && absl::SimpleAtoi(parts[i], out[i]);
  }
  if (!ok) {
    return MakeCniError(ErrorCode::kDecodingFailure, absl::StatusCode::kInvalidArgument,
                        absl::StrCat("invalid cniVersion '", text, "': want MAJOR.MINOR.PATCH"));
  }
  return v;
}

std::string SpecVersion::ToString() const { return absl::StrCat(major, ".", minor, ".", patch); }

bool IsSupportedVersion(absl::string_view version) {
  for (absl::string_view v : kSupportedVersions) {
    if (v == version) return true;
  }
  return false;
}

absl::Status CheckSupportedVersion(absl::string_view version) {
  if (IsSupportedVersion(version)) return absl::OkStatus();
  return MakeCniError(ErrorCode::kIncompatibleVersion, absl::StatusCode::kInvalidArgument,
                      absl::StrCat("incompatible CNI version: cniVersion '", version,
                                   "' is not supported (supported: ",
                                   absl::StrJoin(kSupportedVersions, ", "), ")"));
}

std::string VersionJson(absl::string_view requested_version) {
  JsonObject o;
  o.Set("cniVersion",
        IsSupportedVersion(requested_version) ? requested_version : kLatestVersion);
  std::vector<std::string> versions(kSupportedVersions.begin(), kSupportedVersions.end());
  o.Set("supportedVersions", versions);
  return o.ToJson();
}

}  // namespace sarena::cni
