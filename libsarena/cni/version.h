// CNI spec versions sarena-cni speaks, and which commands each version allows
// (CNI spec: "Version" / VERSION command; CHECK arrived in 0.4.0, GC and STATUS in 1.1.0).
#ifndef LIBSARENA_CNI_VERSION_H_
#define LIBSARENA_CNI_VERSION_H_

#include <array>
#include <compare>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::cni {

/// The spec versions sarena-cni implements, oldest first (the VERSION command's
/// "supportedVersions").
inline constexpr std::array<absl::string_view, 5> kSupportedVersions = {"0.3.0", "0.3.1", "0.4.0",
                                                                        "1.0.0", "1.1.0"};
/// The newest supported version: reported when no usable version was requested.
inline constexpr absl::string_view kLatestVersion = "1.1.0";

/// A semantic version "MAJOR.MINOR.PATCH" (CNI versions always have three parts).
struct SpecVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;

  /// Parses "1.0.0". Errors: kInvalidArgument "invalid cniVersion '<text>': want
  /// MAJOR.MINOR.PATCH" carrying CNI code 6 (decoding failure of a version string).
  static absl::StatusOr<SpecVersion> Parse(absl::string_view text);
  std::string ToString() const;
  auto operator<=>(const SpecVersion&) const = default;
};

/// True when `version` is one of kSupportedVersions (exact string match).
bool IsSupportedVersion(absl::string_view version);

/// Checks that `version` is supported. Errors: kInvalidArgument with CNI code 1
/// "incompatible CNI version: cniVersion '<v>' is not supported (supported: 0.3.0, ...)".
absl::Status CheckSupportedVersion(absl::string_view version);

/// The VERSION command's output, e.g.
/// {"cniVersion":"1.1.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}.
/// `cni_version` is the version of this output: the requested one when supported, else
/// kLatestVersion.
std::string VersionJson(absl::string_view requested_version);

}  // namespace sarena::cni

#endif  // LIBSARENA_CNI_VERSION_H_
