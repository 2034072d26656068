#include "libsarena/datapath/naming.h"

#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sarena::datapath {

std::string HostVethName(absl::string_view container_id, absl::string_view ifname) {
  // '/' can appear in neither a container ID (^[a-zA-Z0-9][a-zA-Z0-9_.-]*$) nor an interface
  // name, so (container_id, ifname) -> input is injective: "podA"+"eth0" and "podAe"+"th0" hash
  // different strings (issue 10: the separator-less form let one DEL take another pod's veth).
  std::string input = absl::StrCat(container_id, "/", ifname);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return absl::StrCat("lxc", hex.substr(0, 11));
}

std::string VethOwnerAlias(absl::string_view container_id, absl::string_view ifname) {
  constexpr size_t kMaxAlias = 255;  // IFALIASZ - 1 (include/uapi/linux/if.h)
  std::string suffix = absl::StrCat("/", ifname);
  std::string out = "sarena:";
  const size_t room = kMaxAlias - out.size() - suffix.size();
  absl::StrAppend(&out, container_id.substr(0, room), suffix);
  return out;
}

bool IsVethOwnerAlias(absl::string_view alias) { return absl::StartsWith(alias, "sarena:"); }

std::string RetiredVethName(uint64_t n) {
  return absl::StrCat(kRetiredVethPrefix, absl::Hex(n & 0xffffffffffULL));
}

}  // namespace sarena::datapath
