#include "libsarena/datapath/naming.h"

#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sarena::datapath {

std::string HostVethName(absl::string_view container_id, absl::string_view ifname) {
  std::string input = absl::StrCat(container_id, ifname);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return absl::StrCat("lxc", hex.substr(0, 11));
}

}  // namespace sarena::datapath
