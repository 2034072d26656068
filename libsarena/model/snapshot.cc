#include "libsarena/model/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/proto_json.h"
#include "libsarena/model/sarena_node.pb.h"

namespace sarena::model {

absl::StatusOr<std::vector<SarenaEndpoint>> ParseSarenaEndpoints(absl::string_view json,
                                                                 absl::string_view file) {
  snapshot::v1::SarenaEndpointsFile f;
  // Legacy shapes (early collectors): a bare array of endpoints, or the list under "items".
  ProtoJsonLegacy legacy{.root_list_field = "endpoints", .root_aliases = {{"items", "endpoints"}}};
  SARENA_RETURN_IF_ERROR(ParseProtoJson(json, file, &f, legacy));
  std::vector<SarenaEndpoint> out;
  out.reserve(f.endpoints_size());
  // sarenad keys an endpoint by its ref, its BPF endpoint map by the pod address, and the host
  // veth belongs to one pod: a second entry with any of these keys contradicts the first.
  absl::flat_hash_map<std::string, int> by_ref, by_ip, by_host_ifname;
  auto unique = [&](absl::flat_hash_map<std::string, int>& seen, const std::string& key, int i,
                    absl::string_view field, absl::string_view what) -> absl::Status {
    auto [it, inserted] = seen.try_emplace(key, i);
    if (inserted) return absl::OkStatus();
    return ProtoFieldError(file, absl::StrCat("endpoints[", i, "].", field),
                           absl::StrCat("duplicate ", what, " '", key, "': endpoints[", it->second,
                                        "] has it too"));
  };
  for (int i = 0; i < f.endpoints_size(); ++i) {
    const snapshot::v1::Endpoint& e = f.endpoints(i);
    const std::string p = absl::StrCat("endpoints[", i, "]");
    SarenaEndpoint ep;
    ep.container_id = e.ref().container_id();
    ep.ifname = e.ref().ifname();
    SARENA_ASSIGN_OR_RETURN(ep.ip, Ipv4Field(e.ip(), file, p + ".ip", /*skip_ipv6=*/true));
    SARENA_ASSIGN_OR_RETURN(ep.gateway,
                            Ipv4Field(e.gateway(), file, p + ".gateway", /*skip_ipv6=*/true));
    SARENA_ASSIGN_OR_RETURN(ep.pod_mac, MacField(e.pod_mac(), file, p + ".pod_mac"));
    SARENA_ASSIGN_OR_RETURN(ep.host_mac, MacField(e.host_mac(), file, p + ".host_mac"));
    ep.host_ifname = e.host_ifname();
    ep.host_ifindex = e.host_ifindex();
    ep.endpoint_id = e.endpoint_id();
    ep.mtu = e.mtu();
    ep.pod_namespace = e.pod_namespace();
    ep.pod_name = e.pod_name();
    if (!ep.container_id.empty()) {
      SARENA_RETURN_IF_ERROR(unique(by_ref, absl::StrCat(ep.container_id, "/", ep.ifname), i,
                                    "ref", "endpoint ref (containerId/ifname)"));
    }
    if (ep.ip) SARENA_RETURN_IF_ERROR(unique(by_ip, ep.ip->to_string(), i, "ip", "address"));
    if (!ep.host_ifname.empty()) {
      SARENA_RETURN_IF_ERROR(
          unique(by_host_ifname, ep.host_ifname, i, "host_ifname", "host interface"));
    }
    out.push_back(std::move(ep));
  }
  return out;
}

namespace {

// Reads `abs_dir/name`; NotFound -> recorded as missing (when `record`), returns nullopt.
absl::StatusOr<std::optional<std::string>> ReadOptional(const std::string& abs_dir,
                                                        const std::string& rel_dir,
                                                        absl::string_view name, bool record,
                                                        std::vector<std::string>* missing) {
  auto text = ReadFileToString(absl::StrCat(abs_dir, "/", name));
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      if (record) missing->push_back(absl::StrCat(rel_dir, "/", name));
      return std::optional<std::string>();
    }
    return text.status();
  }
  return std::optional<std::string>(std::move(*text));
}

// Parsed iptables rulesets of a snapshot, shared between nodes whose iptables-save.txt is the
// same file (a hard link: same device, inode, size and mtime — no read at all) or has the same
// text (read and compared, not parsed again). kube-proxy writes the same Service rules on every
// node, so a large cluster's nodes often carry identical rulesets.
struct RulesetCache {
  struct FileKey {
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns;
    bool operator==(const FileKey& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
    }
    template <typename H>
    friend H AbslHashValue(H h, const FileKey& k) {
      return H::combine(std::move(h), k.dev, k.ino, k.size, k.mtime_ns);
    }
  };
  std::mutex mu;
  absl::flat_hash_map<FileKey, Netfilter> by_file;
  absl::flat_hash_map<size_t, std::vector<Netfilter>> by_content;  // hash of the text

  // The rules of `path` (`rel` in errors); nullopt when the file does not exist.
  absl::StatusOr<std::optional<Netfilter>> Load(const std::string& path, const std::string& rel) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return std::optional<Netfilter>();
      return ErrnoStatus(errno, absl::StrCat("read file '", path, "'"));
    }
    FileKey key{st.st_dev, st.st_ino, st.st_size,
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    {
      std::lock_guard<std::mutex> lock(mu);
      if (auto it = by_file.find(key); it != by_file.end()) return std::optional<Netfilter>(it->second);
    }
    auto text = ReadFileToString(path);
    if (!text.ok()) {
      if (absl::IsNotFound(text.status())) return std::optional<Netfilter>();
      return text.status();
    }
    size_t h = absl::Hash<absl::string_view>{}(*text);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (auto it = by_content.find(h); it != by_content.end()) {
        for (const Netfilter& nf : it->second) {
          if (nf.text() == *text) {
            by_file.emplace(key, nf);
            return std::optional<Netfilter>(nf);
          }
        }
      }
    }
    SARENA_ASSIGN_OR_RETURN(Netfilter nf, Netfilter::Parse(*text, rel));
    std::lock_guard<std::mutex> lock(mu);
    by_file.emplace(key, nf);
    by_content[h].push_back(nf);
    return std::optional<Netfilter>(std::move(nf));
  }
};

absl::Status LoadNetnsDirCached(const std::string& abs_dir, const std::string& rel_dir,
                                bool with_iptables, NetnsState* state, RulesetCache* rulesets);

}  // namespace

absl::Status LoadNetnsDir(const std::string& abs_dir, const std::string& rel_dir,
                          bool with_iptables, NetnsState* state) {
  return LoadNetnsDirCached(abs_dir, rel_dir, with_iptables, state, nullptr);
}

namespace {

absl::Status LoadNetnsDirCached(const std::string& abs_dir, const std::string& rel_dir,
                                bool with_iptables, NetnsState* state, RulesetCache* rulesets) {
  state->dir = rel_dir;
  auto rel = [&](absl::string_view name) { return absl::StrCat(rel_dir, "/", name); };
  struct JsonFile {
    absl::string_view name;
    absl::Status (Netstack::*parse)(absl::string_view, absl::string_view);
    bool record;
  };
  const JsonFile files[] = {
      {kIpLinkFile, &Netstack::ParseLinks, true},
      {kIpAddrFile, &Netstack::ParseAddrs, true},
      {kIpRouteFile, &Netstack::ParseRoutes, true},
      {kIpRuleFile, &Netstack::ParseRules, with_iptables},  // pods rarely have custom rules
      {kIpNeighFile, &Netstack::ParseNeighbors, true},
      {kBridgeFdbFile, &Netstack::ParseFdb, with_iptables},
      {kSysctlFile, &Netstack::ParseSysctls, true},
  };
  for (const JsonFile& f : files) {
    SARENA_ASSIGN_OR_RETURN(auto text,
                            ReadOptional(abs_dir, rel_dir, f.name, f.record, &state->missing_files));
    if (!text) continue;
    SARENA_RETURN_IF_ERROR((state->netstack.*f.parse)(*text, rel(f.name)));
  }
  state->netstack.Finalize();
  std::optional<Netfilter> nf;
  if (rulesets != nullptr) {
    SARENA_ASSIGN_OR_RETURN(nf, rulesets->Load(absl::StrCat(abs_dir, "/", kIptablesFile),
                                               rel(kIptablesFile)));
    if (!nf && with_iptables) state->missing_files.push_back(rel(kIptablesFile));
  } else {
    SARENA_ASSIGN_OR_RETURN(auto ipt, ReadOptional(abs_dir, rel_dir, kIptablesFile, with_iptables,
                                                   &state->missing_files));
    if (ipt) {
      SARENA_ASSIGN_OR_RETURN(nf, Netfilter::Parse(*ipt, rel(kIptablesFile)));
    }
  }
  if (nf) {
    SARENA_ASSIGN_OR_RETURN(auto sets, ReadOptional(abs_dir, rel_dir, kIpsetFile, false,
                                                    &state->missing_files));
    if (sets) {
      SARENA_ASSIGN_OR_RETURN(Ipsets parsed, Ipsets::Parse(*sets, rel(kIpsetFile)));
      nf->SetIpsets(std::move(parsed));
    }
    state->netfilter = std::move(nf);
  }
  return absl::OkStatus();
}

}  // namespace

struct Snapshot::Cache {
  RulesetCache rulesets;  // kept by ClearCache()
  std::mutex mu;
  absl::flat_hash_map<std::string, std::unique_ptr<NodeState>> nodes;
  absl::flat_hash_map<std::string, std::unique_ptr<NetnsState>> pods;  // "ns/name"
};

Snapshot::Snapshot() : cache_(std::make_unique<Cache>()) {}
Snapshot::~Snapshot() = default;

absl::StatusOr<std::unique_ptr<Snapshot>> Snapshot::Open(absl::string_view dir,
                                                         SnapshotOptions options) {
  std::error_code ec;
  std::filesystem::path root{std::string(dir)};
  if (!std::filesystem::is_directory(root, ec)) {
    if (std::filesystem::exists(root, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "open snapshot '", dir, "': not a directory (a snapshot is a directory; see "
          "docs/diag-snapshot.md)"));
    }
    return absl::NotFoundError(absl::StrCat("open snapshot '", dir, "': no such directory"));
  }
  std::unique_ptr<Snapshot> s(new Snapshot());
  s->dir_ = std::string(dir);
  std::filesystem::path cluster_dir = root / std::string(kClusterDir);
  if (std::filesystem::is_directory(cluster_dir, ec)) {
    SARENA_ASSIGN_OR_RETURN(s->cluster_, Cluster::Load(cluster_dir.string()));
  } else {
    for (absl::string_view f :
         {kPodsFile, kNodesFile, kServicesFile, kEndpointSlicesFile, kIpPoolsFile}) {
      s->cluster_.mutable_files().missing.push_back(ClusterPath(f));
    }
    s->cluster_.Finalize();
  }
  std::filesystem::path nodes_dir = root / std::string(kNodesDir);
  if (std::filesystem::is_directory(nodes_dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(nodes_dir, ec)) {
      if (entry.is_directory(ec)) s->node_names_.push_back(entry.path().filename().string());
    }
    std::sort(s->node_names_.begin(), s->node_names_.end());
    for (const std::string& n : s->node_names_) {
      if (!std::filesystem::exists(nodes_dir / n / std::string(kIpLinkFile), ec)) {
        s->nodes_without_links_.push_back(n);
      }
    }
  }
  if (options.eager) {
    for (const std::string& n : s->node_names_) {
      SARENA_RETURN_IF_ERROR(s->Node(n).status());
    }
  }
  return s;
}

std::unique_ptr<Snapshot> Snapshot::FromParts(std::string dir, Cluster cluster,
                                              std::vector<std::unique_ptr<NodeState>> nodes) {
  std::unique_ptr<Snapshot> s(new Snapshot());
  s->dir_ = std::move(dir);
  s->cluster_ = std::move(cluster);
  for (auto& n : nodes) {
    s->node_names_.push_back(n->name);
    if (!n->netstack.Has(NetstackSource::kLinks)) s->nodes_without_links_.push_back(n->name);
    std::string name = n->name;
    s->cache_->nodes.emplace(std::move(name), std::move(n));
  }
  std::sort(s->node_names_.begin(), s->node_names_.end());
  std::sort(s->nodes_without_links_.begin(), s->nodes_without_links_.end());
  return s;
}

std::vector<std::pair<std::string, std::string>> Snapshot::PodDirsOn(
    absl::string_view node) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (dir_.empty()) return out;
  const std::string pods = absl::StrCat(dir_, "/", NodeDir(node), "/", kPodsDir);
  absl::StatusOr<std::vector<std::string>> namespaces = ListDir(pods);
  if (!namespaces.ok()) return out;  // no pods/ directory
  for (const std::string& ns : *namespaces) {
    absl::StatusOr<std::vector<std::string>> names = ListDir(absl::StrCat(pods, "/", ns));
    if (!names.ok()) continue;  // not a directory
    for (const std::string& name : *names) {
      std::error_code ec;
      if (std::filesystem::is_directory(absl::StrCat(pods, "/", ns, "/", name), ec)) {
        out.emplace_back(ns, name);
      }
    }
  }
  return out;
}

bool Snapshot::HasNodeDir(absl::string_view node) const {
  return std::binary_search(node_names_.begin(), node_names_.end(), node);
}

absl::StatusOr<const NodeState*> Snapshot::Node(absl::string_view node) const {
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->nodes.find(node);
    if (it != cache_->nodes.end()) return it->second.get();
  }
  if (!HasNodeDir(node) || node.find('/') != absl::string_view::npos || node == ".." ||
      node == ".") {
    return absl::NotFoundError(
        absl::StrCat("node '", node, "': no directory ", NodeDir(node), " in snapshot"));
  }
  auto state = std::make_unique<NodeState>();
  state->name = std::string(node);
  state->id = absl::StrCat("node:", node);
  std::string rel = NodeDir(node);
  std::string abs = absl::StrCat(dir_, "/", rel);
  SARENA_RETURN_IF_ERROR(
      LoadNetnsDirCached(abs, rel, /*with_iptables=*/true, state.get(), &cache_->rulesets));
  auto text = ReadFileToString(absl::StrCat(abs, "/", kSarenaEndpointsFile));
  if (text.ok()) {
    SARENA_ASSIGN_OR_RETURN(state->sarena_endpoints,
                            ParseSarenaEndpoints(*text, absl::StrCat(rel, "/", kSarenaEndpointsFile)));
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  } else {
    state->missing_files.push_back(absl::StrCat(rel, "/", kSarenaEndpointsFile));
  }
  auto cluster_text = ReadFileToString(absl::StrCat(abs, "/", kSarenaClusterFile));
  if (cluster_text.ok()) {
    SARENA_ASSIGN_OR_RETURN(state->sarena_cluster,
                            ParseSarenaCluster(*cluster_text, absl::StrCat(rel, "/", kSarenaClusterFile)));
  } else if (!absl::IsNotFound(cluster_text.status())) {
    return cluster_text.status();
  }
  std::lock_guard<std::mutex> lock(cache_->mu);
  auto [it, inserted] = cache_->nodes.emplace(std::string(node), std::move(state));
  return it->second.get();  // if another thread won the race, its copy is kept
}

absl::StatusOr<const NetnsState*> Snapshot::PodNetns(absl::string_view namespace_,
                                                     absl::string_view pod,
                                                     absl::string_view node) const {
  std::string key = absl::StrCat(namespace_, "/", pod);
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->pods.find(key);
    if (it != cache_->pods.end()) return it->second.get();
  }
  auto bad = [](absl::string_view s) {
    return s.empty() || s.find('/') != absl::string_view::npos || s == "." || s == "..";
  };
  if (bad(namespace_) || bad(pod)) {
    return absl::InvalidArgumentError(absl::StrCat("pod '", key, "': invalid name"));
  }
  std::vector<std::string> candidates;
  if (!node.empty()) {
    candidates.emplace_back(node);
  } else if (const Pod* p = cluster_.FindPod(namespace_, pod); p != nullptr && !p->node_name.empty()) {
    candidates.push_back(p->node_name);
  }
  if (candidates.empty()) candidates = node_names_;
  std::error_code ec;
  for (const std::string& n : candidates) {
    if (bad(n)) continue;
    std::string rel = PodDir(n, namespace_, pod);
    std::string abs = absl::StrCat(dir_, "/", rel);
    if (!std::filesystem::is_directory(abs, ec)) continue;
    auto state = std::make_unique<NetnsState>();
    state->id = absl::StrCat("pod:", key);
    SARENA_RETURN_IF_ERROR(LoadNetnsDir(abs, rel, /*with_iptables=*/false, state.get()));
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto [it, inserted] = cache_->pods.emplace(key, std::move(state));
    return it->second.get();
  }
  return absl::NotFoundError(
      absl::StrCat("pod '", key, "': no directory ",
                   PodDir(candidates.size() == 1 ? candidates[0] : "*", namespace_, pod),
                   " in snapshot"));
}

void Snapshot::ClearCache() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->nodes.clear();
  cache_->pods.clear();
}

size_t Snapshot::cached_nodes() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->nodes.size();
}

size_t Snapshot::cached_pods() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->pods.size();
}

absl::StatusOr<std::string> Snapshot::ReadFile(absl::string_view relative_path) const {
  if (relative_path.empty() || relative_path[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("read snapshot file '", relative_path, "': must be a relative path"));
  }
  for (absl::string_view part : absl::StrSplit(relative_path, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("read snapshot file '", relative_path, "': '..' not allowed"));
    }
  }
  return ReadFileToString(absl::StrCat(dir_, "/", relative_path));
}

}  // namespace sarena::model
