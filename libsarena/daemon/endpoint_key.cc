#include "libsarena/daemon/endpoint_key.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sarena::daemon {
namespace {

bool IsIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

absl::Status ValidateEndpointKey(const EndpointKey& key) {
  const std::string& id = key.container_id;
  auto bad_id = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid container_id '", absl::CEscape(id), "': ", why));
  };
  if (id.empty()) return bad_id("must not be empty");
  if (!absl::ascii_isalnum(static_cast<unsigned char>(id[0]))) {
    return bad_id("must start with a letter or digit (^[a-zA-Z0-9][a-zA-Z0-9_.-]*$)");
  }
  for (char c : id) {
    if (!IsIdChar(c)) return bad_id("must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$");
  }

  const std::string& ifname = key.ifname;
  auto bad_if = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ifname '", absl::CEscape(ifname), "': ", why));
  };
  if (ifname.empty()) return bad_if("must not be empty");
  if (ifname.size() > 15) return bad_if("longer than 15 bytes (IFNAMSIZ - 1)");
  if (ifname == "." || ifname == "..") return bad_if("must not be '.' or '..'");
  for (char c : ifname) {
    if (c == '/' || c == ':' || c == '\0' || absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return bad_if("must not contain '/', ':' or whitespace");
    }
  }
  return absl::OkStatus();
}

}  // namespace sarena::daemon
