#include "libsarena/daemon/state_store.h"

#include <google/protobuf/util/json_util.h>
#include <openssl/sha.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/file.h"
#include "libsarena/net/ip.h"
#include "sarena/abi.h"

namespace sarena::daemon {
namespace {

constexpr size_t kMaxReportedProblems = 10;
constexpr absl::string_view kSuffix = ".json";
constexpr absl::string_view kHashedPrefix = "sha256-";
constexpr size_t kNameMax = 255;  // NAME_MAX (limits.h), bytes of one path component

std::string HashedFileName(const EndpointKey& key) {
  const std::string input = absl::StrCat(key.container_id, "/", key.ifname);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return absl::StrCat(kHashedPrefix,
                      absl::BytesToHexString(absl::string_view(
                          reinterpret_cast<const char*>(digest), sizeof digest)),
                      kSuffix);
}

// Inverse of EndpointStore::FileName for the plain form; kInvalidArgument when `name` is not
// one; std::nullopt for the hashed form (its key is the record's ref, checked after parsing).
absl::StatusOr<std::optional<EndpointKey>> KeyFromFileName(absl::string_view name) {
  absl::string_view stem = name;
  if (!absl::ConsumeSuffix(&stem, kSuffix)) {
    return absl::InvalidArgumentError("name does not end in .json");
  }
  if (absl::StartsWith(stem, kHashedPrefix) && stem.find(':') == absl::string_view::npos) {
    return std::optional<EndpointKey>();
  }
  size_t colon = stem.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError("name is not <containerID>:<ifname>.json");
  }
  EndpointKey key{std::string(stem.substr(0, colon)), std::string(stem.substr(colon + 1))};
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  return std::optional<EndpointKey>(std::move(key));
}

}  // namespace

absl::Status ValidateEndpointRecord(const v1::Endpoint& r) {
  auto bad = [](absl::string_view field, absl::string_view value, absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", field, " '", absl::CEscape(value), "': ", why));
  };
  if (!net::ParseIpv4(r.ip()).ok()) return bad("ip", r.ip(), "not an IPv4 address");
  if (r.prefix_len() != 32) return bad("prefix_len", absl::StrCat(r.prefix_len()), "must be 32");
  if (!net::ParseIpv4(r.gateway()).ok()) {
    return bad("gateway", r.gateway(), "not an IPv4 address");
  }
  if (!net::ParseMac(r.pod_mac()).ok()) return bad("pod_mac", r.pod_mac(), "not a MAC address");
  if (!r.host_mac().empty() && !net::ParseMac(r.host_mac()).ok()) {
    return bad("host_mac", r.host_mac(), "not a MAC address");
  }
  if (r.host_ifname().empty() || r.host_ifname().size() > 15 ||
      r.host_ifname().find_first_of("/: \t\n") != std::string::npos) {
    return bad("host_ifname", r.host_ifname(), "not an interface name (1..15 bytes)");
  }
  if (r.endpoint_id() == 0 || r.endpoint_id() >= SARENA_MAX_ENDPOINTS) {
    return bad("endpoint_id", absl::StrCat(r.endpoint_id()),
               absl::StrCat("must be 1..", SARENA_MAX_ENDPOINTS - 1));
  }
  if (r.mtu() < 68 || r.mtu() > 65535) {
    return bad("mtu", absl::StrCat(r.mtu()), "must be 68..65535");
  }
  return absl::OkStatus();
}

EndpointStore::EndpointStore(std::string dir, UniqueFd lock_fd)
    : dir_(std::move(dir)), lock_fd_(std::move(lock_fd)) {}

std::string EndpointStore::FileName(const EndpointKey& key) {
  std::string plain = absl::StrCat(key.container_id, ":", key.ifname, kSuffix);
  if (plain.size() <= kNameMax) return plain;
  return HashedFileName(key);
}

std::string EndpointStore::PathOf(const EndpointKey& key) const {
  return absl::StrCat(dir_, "/", FileName(key));
}

absl::StatusOr<std::unique_ptr<EndpointStore>> EndpointStore::Open(EndpointStoreOptions options) {
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("invalid state_dir '': must not be empty");
  }
  std::string dir = absl::StrCat(options.state_dir, "/endpoints");
  SARENA_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  SARENA_ASSIGN_OR_RETURN(UniqueFd lock, LockDir(dir));
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> temps, RemoveTemporaries(dir));
  for (const std::string& t : temps) {
    SARENA_LOG(Warning, "endpoint store: removed incomplete record '", dir, "/", t,
               "' left by an interrupted write");
  }
  std::unique_ptr<EndpointStore> store(new EndpointStore(std::move(dir), std::move(lock)));
  SARENA_RETURN_IF_ERROR(store->Load());
  return store;
}

absl::Status EndpointStore::Load() {
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir_));
  std::vector<std::string> problems;
  absl::MutexLock lock(&mu_);
  google::protobuf::util::JsonParseOptions parse_options;
  parse_options.ignore_unknown_fields = true;
  for (const std::string& name : names) {
    if (name == kLockName) continue;
    const std::string path = absl::StrCat(dir_, "/", name);
    absl::StatusOr<std::optional<EndpointKey>> key = KeyFromFileName(name);
    if (!key.ok()) {
      problems.push_back(absl::StrCat("unexpected file '", path, "': ", key.status().message()));
      continue;
    }
    absl::StatusOr<std::string> content = ReadFileToString(path);
    if (!content.ok()) {
      problems.push_back(std::string(content.status().message()));
      continue;
    }
    v1::Endpoint ep;
    auto st = google::protobuf::util::JsonStringToMessage(*content, &ep, parse_options);
    if (!st.ok()) {
      problems.push_back(absl::StrCat("endpoint record '", path, "' has content ",
                                      QuoteContent(*content), ": not an Endpoint in JSON (",
                                      st.message().as_string(), ")"));
      continue;
    }
    EndpointKey recorded = EndpointKey::FromProto(ep.ref());
    const bool name_matches = key->has_value()
                                  ? recorded == **key
                                  : ValidateEndpointKey(recorded).ok() &&
                                        FileName(recorded) == name;
    if (!name_matches) {
      problems.push_back(absl::StrCat("endpoint record '", path, "' has content ",
                                      QuoteContent(*content), ": its ref '", recorded.ToString(),
                                      "' does not match the file name"));
      continue;
    }
    if (absl::Status st = ValidateEndpointRecord(ep); !st.ok()) {
      problems.push_back(absl::StrCat("endpoint record '", path, "' has content ",
                                      QuoteContent(*content), ": ", st.message()));
      continue;
    }
    records_[recorded] = std::move(ep);
  }
  if (problems.empty()) return absl::OkStatus();
  const size_t n = problems.size();
  if (n > kMaxReportedProblems) {
    problems.resize(kMaxReportedProblems);
    problems.push_back(absl::StrCat("and ", n - kMaxReportedProblems, " more"));
  }
  return absl::DataLossError(absl::StrCat("load endpoint records '", dir_, "': ", n,
                                          " corrupt record(s) (left untouched; fix or ",
                                          "remove them by hand): ", absl::StrJoin(problems, "; ")));
}

absl::Status EndpointStore::Put(const v1::Endpoint& endpoint) {
  if (!endpoint.has_ref()) {
    return absl::InvalidArgumentError("store endpoint record: ref is missing");
  }
  EndpointKey key = EndpointKey::FromProto(endpoint.ref());
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  v1::Endpoint record = endpoint;
  record.clear_counters();
  google::protobuf::util::JsonPrintOptions print_options;
  print_options.preserve_proto_field_names = true;
  print_options.add_whitespace = true;
  std::string json;
  auto st = google::protobuf::util::MessageToJsonString(record, &json, print_options);
  if (!st.ok()) {
    return absl::InternalError(
        absl::StrCat("encode endpoint record '", key.ToString(), "': ", st.message().as_string()));
  }
  absl::MutexLock lock(&mu_);
  SARENA_RETURN_IF_ERROR(WriteFileAtomic(dir_, FileName(key), json));
  records_[key] = std::move(record);
  return absl::OkStatus();
}

absl::StatusOr<bool> EndpointStore::Delete(const EndpointKey& key) {
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  absl::MutexLock lock(&mu_);
  SARENA_ASSIGN_OR_RETURN(bool existed, RemoveFileDurable(dir_, FileName(key)));
  bool known = records_.erase(key) > 0;
  if (known && !existed) {
    SARENA_LOG(Warning, "endpoint store: record file of ", key.ToString(), " was already gone");
  }
  return known || existed;
}

std::optional<v1::Endpoint> EndpointStore::Get(const EndpointKey& key) const {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<v1::Endpoint> EndpointStore::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Endpoint> out;
  out.reserve(records_.size());
  for (const auto& [key, ep] : records_) out.push_back(ep);
  return out;
}

size_t EndpointStore::size() const {
  absl::MutexLock lock(&mu_);
  return records_.size();
}

}  // namespace sarena::daemon
