#include "libsarena/diag/plugin.h"

#include <boost/uuid/detail/sha1.hpp>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"

namespace sarena::diag {
namespace {

class GenericPlugin : public Plugin {
 public:
  absl::string_view name() const override { return "generic"; }
};

}  // namespace

std::unique_ptr<Plugin> NewGenericPlugin() { return std::make_unique<GenericPlugin>(); }

std::string CalicoVethName(absl::string_view namespace_, absl::string_view name) {
  std::string key = absl::StrCat(namespace_, ".", name);
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(key.data(), key.size());
  boost::uuids::detail::sha1::digest_type digest;
  sha.get_digest(digest);
  char hex[41];
  for (int i = 0; i < 5; ++i) {
    std::snprintf(hex + 8 * i, 9, "%08x", static_cast<unsigned>(digest[i]));
  }
  return absl::StrCat("cali", absl::string_view(hex, 11));
}

absl::StatusOr<std::unique_ptr<Plugin>> SelectPlugin(absl::string_view cni,
                                                     const model::Snapshot& snapshot,
                                                     const std::vector<std::string>& nodes) {
  if (cni == "calico") return NewCalicoPlugin();
  if (cni == "sarena") return NewSarenaPlugin();
  if (cni == "generic" || cni == "none") return NewGenericPlugin();
  if (cni != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid --cni '", cni, "': expected calico, sarena, generic or auto"));
  }
  std::vector<std::string> candidates = nodes;
  if (candidates.empty()) candidates = snapshot.node_names();
  std::vector<const model::NodeState*> loaded;
  for (const std::string& n : candidates) {
    if (!snapshot.HasNodeDir(n)) continue;
    SARENA_ASSIGN_OR_RETURN(const model::NodeState* st, snapshot.Node(n));
    loaded.push_back(st);
  }
  for (const model::NodeState* st : loaded) {
    if (st->sarena_endpoints || st->netstack.FindInterface("sarena_host")) {
      return NewSarenaPlugin();
    }
  }
  if (snapshot.cluster().has_ip_pools() && !snapshot.cluster().ip_pools().empty()) {
    return NewCalicoPlugin();
  }
  for (const model::NodeState* st : loaded) {
    for (const model::Interface& i : st->netstack.interfaces()) {
      if (absl::StartsWith(i.name, "cali") || i.name == "vxlan.calico") {
        return NewCalicoPlugin();
      }
    }
  }
  return NewGenericPlugin();
}

}  // namespace sarena::diag
