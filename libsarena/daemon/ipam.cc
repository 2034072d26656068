#include "libsarena/daemon/ipam.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/file.h"

namespace sarena::daemon {
namespace {

constexpr size_t kMaxReportedProblems = 10;

std::string FormatIp(uint32_t ip_host_order) { return net::Ipv4(ip_host_order).to_string(); }

std::string FileContent(const EndpointKey& key) {
  return absl::StrCat(key.container_id, "\n", key.ifname);
}

// Parses "<containerID>\n<ifname>" (optionally "\r\n" separated, optionally one trailing line
// break). Returns kInvalidArgument with the reason.
absl::StatusOr<EndpointKey> ParseFileContent(absl::string_view content) {
  absl::string_view rest = content;
  if (!absl::ConsumeSuffix(&rest, "\r\n")) absl::ConsumeSuffix(&rest, "\n");
  size_t nl = rest.find('\n');
  if (nl == absl::string_view::npos) {
    return absl::InvalidArgumentError("expected two lines \"<containerID>\\n<ifname>\"");
  }
  absl::string_view id = rest.substr(0, nl);
  absl::ConsumeSuffix(&id, "\r");
  absl::string_view ifname = rest.substr(nl + 1);
  if (ifname.find('\n') != absl::string_view::npos) {
    return absl::InvalidArgumentError("more than two lines");
  }
  EndpointKey key{std::string(id), std::string(ifname)};
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  return key;
}

}  // namespace

Ipam::Ipam(IpamOptions options, std::string dir, UniqueFd lock_fd)
    : options_(std::move(options)), dir_(std::move(dir)), lock_fd_(std::move(lock_fd)) {
  const uint32_t len = options_.pod_cidr.prefix_length();
  const uint32_t network = options_.pod_cidr.address().to_uint();
  const uint32_t host_mask = len == 0 ? 0xffffffffu : (len == 32 ? 0u : (1u << (32 - len)) - 1);
  const uint32_t broadcast = network | host_mask;
  if (len <= 30) {
    first_ = network + 1;
    last_ = broadcast - 1;
  } else {  // /31 and /32: every address is a host address (RFC 3021).
    first_ = network;
    last_ = broadcast;
  }
  uint64_t cap = static_cast<uint64_t>(last_) - first_ + 1;
  const uint32_t gw = options_.gateway.to_uint();
  if (gw >= first_ && gw <= last_) --cap;
  capacity_ = static_cast<uint32_t>(cap);
}

Ipam::~Ipam() = default;

bool Ipam::Allocatable(uint32_t ip) const {
  return ip >= first_ && ip <= last_ && ip != options_.gateway.to_uint();
}

absl::StatusOr<std::unique_ptr<Ipam>> Ipam::Open(IpamOptions options) {
  const net::Ipv4Prefix& cidr = options.pod_cidr;
  if (cidr.address() != cidr.canonical().address()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid pod CIDR '", cidr.to_string(),
                                                   "': host bits set (the network is ",
                                                   cidr.canonical().to_string(), ")"));
  }
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("invalid state_dir '': must not be empty");
  }
  std::string dir = absl::StrCat(options.state_dir, "/ipam");
  SARENA_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  SARENA_ASSIGN_OR_RETURN(UniqueFd lock, LockDir(dir));
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> temps, RemoveTemporaries(dir));
  for (const std::string& t : temps) {
    SARENA_LOG(Warning, "IPAM: removed incomplete allocation file '", dir, "/", t,
               "' left by an interrupted write");
  }
  std::unique_ptr<Ipam> ipam(new Ipam(std::move(options), std::move(dir), std::move(lock)));
  SARENA_RETURN_IF_ERROR(ipam->Load());
  SARENA_LOG(Info, "IPAM: pod CIDR ", ipam->pod_cidr().to_string(), ", gateway ",
             ipam->gateway().to_string(), ", ", ipam->InUse(), " of ", ipam->capacity(),
             " addresses in use (state '", ipam->dir(), "')");
  return ipam;
}

absl::Status Ipam::Load() {
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir_));
  std::vector<std::string> problems;
  std::map<EndpointKey, std::string> file_of_key;
  absl::MutexLock lock(&mu_);
  for (const std::string& name : names) {
    if (name == kLockName) continue;
    const std::string path = absl::StrCat(dir_, "/", name);
    boost::system::error_code ec;
    net::Ipv4 ip = boost::asio::ip::make_address_v4(name, ec);
    if (ec || ip.to_string() != name) {
      problems.push_back(absl::StrCat("unexpected file '", path, "': name is not an IPv4 address"));
      continue;
    }
    absl::StatusOr<std::string> content = ReadFileToString(path);
    if (!content.ok()) {
      problems.push_back(std::string(content.status().message()));
      continue;
    }
    absl::StatusOr<EndpointKey> key = ParseFileContent(*content);
    if (!key.ok()) {
      problems.push_back(absl::StrCat("allocation file '", path, "' has content ",
                                      QuoteContent(*content), ": ", key.status().message()));
      continue;
    }
    const uint32_t v = ip.to_uint();
    const std::string cidr = options_.pod_cidr.to_string();
    if (!net::Contains(options_.pod_cidr, ip)) {
      problems.push_back(absl::StrCat("allocation file '", path, "' (", key->ToString(),
                                      "): ", name, " is outside pod CIDR ", cidr,
                                      " (was --pod-cidr changed?)"));
      continue;
    }
    if (!Allocatable(v)) {
      absl::string_view what = v == options_.gateway.to_uint() ? "the gateway (node IP)"
                               : v < first_                    ? "the network address"
                                                               : "the broadcast address";
      problems.push_back(absl::StrCat("allocation file '", path, "' (", key->ToString(),
                                      "): ", name, " is ", what, " of pod CIDR ", cidr,
                                      " and never allocatable"));
      continue;
    }
    auto [it, inserted] = file_of_key.emplace(*key, path);
    if (!inserted) {
      problems.push_back(absl::StrCat("allocation files '", it->second, "' and '", path,
                                      "' both belong to ", key->ToString()));
      continue;
    }
    by_key_[*key] = v;
    by_ip_[v] = *key;
  }
  if (problems.empty()) return absl::OkStatus();
  const size_t n = problems.size();
  if (n > kMaxReportedProblems) {
    problems.resize(kMaxReportedProblems);
    problems.push_back(absl::StrCat("and ", n - kMaxReportedProblems, " more"));
  }
  return absl::DataLossError(absl::StrCat("load IPAM state '", dir_, "': ", n,
                                          " corrupt allocation file(s) (left untouched; fix or ",
                                          "remove them by hand): ", absl::StrJoin(problems, "; ")));
}

absl::StatusOr<net::Ipv4> Ipam::Allocate(const EndpointKey& key) {
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  absl::MutexLock lock(&mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) return net::Ipv4(it->second);

  for (uint64_t candidate = first_; candidate <= last_;) {
    const std::optional<uint32_t> free = LowestFree(candidate);
    if (!free) break;
    const uint32_t ip = *free;
    absl::Status st = CreateFileExclusive(dir_, FormatIp(ip), FileContent(key));
    if (st.ok()) {
      by_key_[key] = ip;
      by_ip_[ip] = key;
      return net::Ipv4(ip);
    }
    if (st.code() != absl::StatusCode::kAlreadyExists) return st;
    // The file appeared behind our back (an operator, or a second process ignoring the lock):
    // never overwrite it; skip the address.
    SARENA_LOG(Warning, "IPAM: allocation file for ", FormatIp(ip),
               " exists but was not loaded; skipping that address: ", st.message());
    candidate = static_cast<uint64_t>(ip) + 1;
  }
  return absl::ResourceExhaustedError(absl::StrCat("pod CIDR ", options_.pod_cidr.to_string(),
                                                   " exhausted (", by_ip_.size(),
                                                   " addresses in use)"));
}

absl::Status Ipam::CheckClaim(absl::string_view verb, const EndpointKey& key, uint32_t want,
                              bool* held) const {
  *held = false;
  const std::string ip = FormatIp(want);
  if (!Allocatable(want)) {
    return absl::InvalidArgumentError(absl::StrCat(
        verb, " ", ip, " for ", key.ToString(), ": not allocatable in pod CIDR ",
        options_.pod_cidr.to_string(), " (gateway ", options_.gateway.to_string(), ")"));
  }
  auto where = [&](uint32_t v, const EndpointKey& owner) {
    return record_backed_.count(owner)
               ? absl::StrCat("the endpoint record of ", owner.ToString())
               : absl::StrCat("'", dir_, "/", FormatIp(v), "'");
  };
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    if (it->second == want) {
      *held = true;
      return absl::OkStatus();
    }
    return absl::AlreadyExistsError(absl::StrCat(verb, " ", ip, " for ", key.ToString(),
                                                 ": the key holds ", FormatIp(it->second), " (",
                                                 where(it->second, key), ")"));
  }
  if (auto it = by_ip_.find(want); it != by_ip_.end()) {
    return absl::AlreadyExistsError(absl::StrCat(verb, " ", ip, " for ", key.ToString(), ": ",
                                                 where(want, it->second), " allocates it to ",
                                                 it->second.ToString()));
  }
  return absl::OkStatus();
}

absl::Status Ipam::Claim(const EndpointKey& key, const net::Ipv4& ip) {
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  const uint32_t want = ip.to_uint();
  absl::MutexLock lock(&mu_);
  bool held = false;
  SARENA_RETURN_IF_ERROR(CheckClaim("claim", key, want, &held));
  if (held) return absl::OkStatus();
  SARENA_RETURN_IF_ERROR(CreateFileExclusive(dir_, FormatIp(want), FileContent(key)));
  by_key_[key] = want;
  by_ip_[want] = key;
  return absl::OkStatus();
}

absl::Status Ipam::Adopt(const EndpointKey& key, const net::Ipv4& ip) {
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  const uint32_t want = ip.to_uint();
  absl::MutexLock lock(&mu_);
  bool held = false;
  SARENA_RETURN_IF_ERROR(CheckClaim("adopt", key, want, &held));
  if (held) return absl::OkStatus();
  by_key_[key] = want;
  by_ip_[want] = key;
  record_backed_.insert(key);
  return absl::OkStatus();
}

std::optional<uint32_t> Ipam::LowestFree(uint64_t candidate) const {
  const uint32_t gw = options_.gateway.to_uint();
  auto used = by_ip_.lower_bound(static_cast<uint32_t>(candidate));
  while (candidate <= last_) {
    while (used != by_ip_.end() && used->first < candidate) ++used;
    if (candidate == gw || (used != by_ip_.end() && used->first == candidate)) {
      ++candidate;
      continue;
    }
    return static_cast<uint32_t>(candidate);
  }
  return std::nullopt;
}

absl::StatusOr<net::Ipv4> Ipam::Reserve(const EndpointKey& key) {
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  absl::MutexLock lock(&mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) return net::Ipv4(it->second);
  const std::optional<uint32_t> ip = LowestFree(first_);
  if (!ip) {
    return absl::ResourceExhaustedError(absl::StrCat("pod CIDR ", options_.pod_cidr.to_string(),
                                                     " exhausted (", by_ip_.size(),
                                                     " addresses in use)"));
  }
  by_key_[key] = *ip;
  by_ip_[*ip] = key;
  record_backed_.insert(key);
  return net::Ipv4(*ip);
}

absl::StatusOr<std::optional<net::Ipv4>> Ipam::Release(const EndpointKey& key) {
  SARENA_RETURN_IF_ERROR(ValidateEndpointKey(key));
  absl::MutexLock lock(&mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::optional<net::Ipv4>();
  const uint32_t ip = it->second;
  if (!record_backed_.erase(key)) {
    SARENA_ASSIGN_OR_RETURN(bool existed, RemoveFileDurable(dir_, FormatIp(ip)));
    if (!existed) {
      SARENA_LOG(Warning, "IPAM: allocation file '", dir_, "/", FormatIp(ip), "' of ",
                 key.ToString(), " was already gone");
    }
  }
  by_key_.erase(it);
  by_ip_.erase(ip);
  return std::optional<net::Ipv4>(net::Ipv4(ip));
}

std::optional<net::Ipv4> Ipam::Lookup(const EndpointKey& key) const {
  absl::MutexLock lock(&mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  return net::Ipv4(it->second);
}

std::vector<IpamAllocation> Ipam::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<IpamAllocation> out;
  out.reserve(by_ip_.size());
  for (const auto& [ip, key] : by_ip_) {
    out.push_back(IpamAllocation{net::Ipv4(ip), key, record_backed_.count(key) == 0});
  }
  return out;
}

uint32_t Ipam::InUse() const {
  absl::MutexLock lock(&mu_);
  return static_cast<uint32_t>(by_ip_.size());
}

uint32_t Ipam::FreeCount() const { return capacity_ - InUse(); }

}  // namespace sarena::daemon
