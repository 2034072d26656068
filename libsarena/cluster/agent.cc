#include "libsarena/cluster/agent.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "libsarena/base/log.h"
#include "libsarena/cluster/etcd_client.h"

namespace sarena::cluster {
namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

bool Retryable(const absl::Status& st) {
  return st.code() == absl::StatusCode::kUnavailable ||
         st.code() == absl::StatusCode::kDeadlineExceeded;
}

absl::Duration NextBackoff(absl::Duration b, absl::Duration cap = kMaxBackoff) {
  return b <= absl::ZeroDuration() ? kMinBackoff : std::min(b * 2, cap);
}

std::string NowRfc3339() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

std::string ReadBootId() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(f, id);
  return std::string(absl::StripAsciiWhitespace(id));
}

std::string ClaimValue(const std::string& node_name) {
  v1::PodCidrClaim c;
  c.set_node_name(node_name);
  c.set_claimed_at(NowRfc3339());
  return RecordToJson(c);
}

/// Owner named by a claim value (PodCidrClaim and NodeIdClaim share the field); error when
/// corrupt.
absl::StatusOr<std::string> ClaimOwner(const etcd::KeyValue& kv) {
  v1::PodCidrClaim c;
  if (auto st = RecordFromJson(kv.value(), &c, kv.key()); !st.ok()) return st;
  if (c.node_name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("corrupt claim at ", kv.key(), ": no node_name"));
  }
  return c.node_name();
}

/// Claims one key among `candidates` (in order) for `name`, reusing an existing claim of `name`
/// among `existing` (the prefix's current keys). Returns the key claimed, or nullopt when every
/// candidate is taken.
absl::StatusOr<std::optional<std::string>> ClaimOne(
    EtcdClient& client, const etcd::RangeResponse& existing, const std::string& name,
    const std::function<std::optional<std::string>(size_t)>& candidate, size_t n_candidates,
    absl::Duration timeout) {
  std::set<std::string> taken;
  for (const auto& kv : existing.kvs()) {
    auto owner = ClaimOwner(kv);
    if (!owner.ok()) {
      SARENA_LOG(Warning, "cluster: skipping ", owner.status().message(),
                 " (the key stays claimed)");
    } else if (*owner == name) {
      return std::optional<std::string>(kv.key());
    }
    taken.insert(kv.key());
  }
  for (size_t i = 0; i < n_candidates; ++i) {
    auto key = candidate(i);
    if (!key || taken.count(*key)) continue;
    etcd::KeyValue cur;
    auto won = client.PutIfAbsent(*key, ClaimValue(name), 0, &cur, timeout);
    if (!won.ok()) return won.status();
    if (*won) return key;
    // Lost a race: it may be ours from a concurrent attempt of this very node.
    auto owner = ClaimOwner(cur);
    if (owner.ok() && *owner == name) return key;
  }
  return std::optional<std::string>();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Agent::Agent(AgentOptions options, ApplyFn apply)
    : opts_(std::move(options)), apply_(std::move(apply)) {
  status_.endpoints = opts_.endpoints;
  status_.last_contact = absl::InfinitePast();
}

Agent::~Agent() { Stop(); }

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(AgentOptions options, ApplyFn apply) {
  if (auto st = ValidateNodeName(options.node_name); !st.ok()) return st;
  if (auto eps = ParseEndpoints(options.endpoints); !eps.ok()) return eps.status();
  if (options.node_mask_len < 1 || options.node_mask_len > 32) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid node_mask_len ", options.node_mask_len, ": must be 1..32"));
  }
  if (options.routing_mode != "tunnel" && options.routing_mode != "native" &&
      options.routing_mode != "hybrid") {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid routing_mode '", options.routing_mode, "': expected tunnel, native or hybrid"));
  }
  if (options.underlay.is_unspecified()) {
    return absl::InvalidArgumentError("invalid underlay 0.0.0.0: the node's address is needed");
  }
  if (options.lease_ttl < absl::Seconds(2)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid lease_ttl ",
                                                   absl::FormatDuration(options.lease_ttl),
                                                   ": etcd's minimum is 2s"));
  }
  if (options.peer_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("invalid peer_grace: negative");
  }
  if (options.boot_id.empty()) options.boot_id = ReadBootId();
  if (!apply) return absl::InvalidArgumentError("invalid apply: no callback");
  return std::unique_ptr<Agent>(new Agent(std::move(options), std::move(apply)));
}

absl::StatusOr<Registration> Agent::RegisterOnce(EtcdClient& client) {
  const absl::Duration t = opts_.call_timeout;
  // 1. The cluster config.
  std::optional<net::Ipv4Prefix> cluster_cidr;
  int mask_len = opts_.node_mask_len;
  auto cfg_kv = client.Range(kConfigKey, {}, 0, 0, t);
  if (!cfg_kv.ok()) return cfg_kv.status();
  if (cfg_kv->kvs_size() == 0 && opts_.cluster_cidr) {
    v1::ClusterConfig cfg;
    cfg.set_cluster_cidr(opts_.cluster_cidr->canonical().to_string());
    cfg.set_node_mask_len(static_cast<uint32_t>(opts_.node_mask_len));
    cfg.set_routing_mode(opts_.routing_mode);
    cfg.set_tunnel_port(opts_.tunnel_port);
    cfg.set_vni(opts_.vni);
    auto created = client.PutIfAbsent(kConfigKey, RecordToJson(cfg), 0, nullptr, t);
    if (!created.ok()) return created.status();
    if (*created) SARENA_LOG(Info, "cluster: wrote ", kConfigKey, " ", RecordToJson(cfg));
    cfg_kv = client.Range(kConfigKey, {}, 0, 0, t);
    if (!cfg_kv.ok()) return cfg_kv.status();
  }
  if (cfg_kv->kvs_size() > 0) {
    v1::ClusterConfig cfg;
    absl::Status st = RecordFromJson(cfg_kv->kvs(0).value(), &cfg, kConfigKey);
    absl::StatusOr<net::Ipv4Prefix> cidr =
        st.ok() ? net::ParseIpv4Prefix(cfg.cluster_cidr(), "cluster_cidr") : st;
    if (!cidr.ok() || cfg.node_mask_len() < cidr->prefix_length() || cfg.node_mask_len() > 32) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the cluster config at ", kConfigKey, " is unusable (",
          cidr.ok() ? absl::StrCat("node_mask_len ", cfg.node_mask_len()) : cidr.status().message(),
          "); fix or delete it"));
    }
    if (opts_.cluster_cidr && opts_.cluster_cidr->canonical() != cidr->canonical()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cluster CIDR ", opts_.cluster_cidr->canonical().to_string(), " differs from ",
          cidr->canonical().to_string(), " in ", kConfigKey));
    }
    cluster_cidr = cidr->canonical();
    mask_len = static_cast<int>(cfg.node_mask_len());
  }
  // 2. The pod CIDR.
  auto cidr_claims = client.RangePrefix(kPodCidrsPrefix, t);
  if (!cidr_claims.ok()) return cidr_claims.status();
  Registration reg;
  if (opts_.pod_cidr) {
    net::Ipv4Prefix want = opts_.pod_cidr->canonical();
    if (cluster_cidr && (want.prefix_length() < cluster_cidr->prefix_length() ||
                         !net::Contains(*cluster_cidr, want.network()))) {
      return absl::InvalidArgumentError(absl::StrCat("pod CIDR ", want.to_string(),
                                                     " is not inside the cluster CIDR ",
                                                     cluster_cidr->to_string()));
    }
    etcd::KeyValue cur;
    auto won = client.PutIfAbsent(PodCidrKey(want), ClaimValue(opts_.node_name), 0, &cur, t);
    if (!won.ok()) return won.status();
    if (!*won) {
      auto owner = ClaimOwner(cur);
      if (!owner.ok() || *owner != opts_.node_name) {
        return absl::AlreadyExistsError(absl::StrCat(
            "pod CIDR ", want.to_string(), " is claimed by ",
            owner.ok() ? absl::StrCat("node '", *owner, "'") : "a corrupt claim", " (",
            PodCidrKey(want), ")"));
      }
    }
    reg.pod_cidr = want;
  } else {
    if (!cluster_cidr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no cluster CIDR: give one (--cluster-cidr) or a pod CIDR, or write ", kConfigKey));
    }
    const int bits = mask_len - cluster_cidr->prefix_length();
    const size_t count = bits >= 24 ? (size_t{1} << 24) : (size_t{1} << bits);
    const uint32_t base = cluster_cidr->network().to_uint();
    auto candidate = [&](size_t i) -> std::optional<std::string> {
      uint32_t addr = base + static_cast<uint32_t>(i << (32 - mask_len));
      return PodCidrKey(net::Ipv4Prefix(net::Ipv4(addr), static_cast<unsigned short>(mask_len)));
    };
    auto key = ClaimOne(client, *cidr_claims, opts_.node_name, candidate, count, t);
    if (!key.ok()) return key.status();
    if (!*key) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cluster CIDR ", cluster_cidr->to_string(), " is exhausted: all ", count, " /",
          mask_len, " pod CIDRs are claimed (sarena node delete releases a node's)"));
    }
    auto cidr = PodCidrFromKey(**key);
    if (!cidr.ok()) return cidr.status();
    reg.pod_cidr = *cidr;
  }
  // 3. The node id.
  auto id_claims = client.RangePrefix(kNodeIdsPrefix, t);
  if (!id_claims.ok()) return id_claims.status();
  auto id_candidate = [](size_t i) -> std::optional<std::string> {
    return NodeIdKey(static_cast<uint32_t>(i + 1));
  };
  auto id_key = ClaimOne(client, *id_claims, opts_.node_name, id_candidate, kMaxNodeId, t);
  if (!id_key.ok()) return id_key.status();
  if (!*id_key) {
    return absl::ResourceExhaustedError(
        absl::StrCat("every node id 1..", kMaxNodeId, " is claimed under ", kNodeIdsPrefix));
  }
  auto id = NodeIdFromKey(**id_key);
  if (!id.ok()) return id.status();
  reg.node_id = *id;
  // 4. Lease + record.
  auto lease = client.LeaseGrant(opts_.lease_ttl, t);
  if (!lease.ok()) return lease.status();
  v1::NodeRecord rec;
  rec.set_name(opts_.node_name);
  rec.set_node_id(reg.node_id);
  rec.set_boot_id(opts_.boot_id);
  auto* a = rec.add_addresses();
  a->set_family(v1::IPV4);
  a->set_address(opts_.underlay.to_string());
  auto* c = rec.add_pod_cidrs();
  c->set_family(v1::IPV4);
  c->set_cidr(reg.pod_cidr.to_string());
  rec.set_tunnel_port(opts_.tunnel_port);
  rec.set_mtu(opts_.mtu);
  rec.set_routing_mode(opts_.routing_mode);
  auto put = client.Put(NodeKey(opts_.node_name), RecordToJson(rec), lease->id(), t);
  if (!put.ok()) return put.status();
  SARENA_LOG(Info, "cluster: registered node '", opts_.node_name, "' (node id ", reg.node_id,
             ", pod CIDR ", reg.pod_cidr.to_string(), ", lease ", lease->id(), " TTL ",
             lease->ttl(), "s) at revision ", put->header().revision());
  absl::MutexLock l(&mu_);
  status_.registration = reg;
  status_.lease_id = lease->id();
  status_.registered = true;
  status_.connected = true;
  status_.last_contact = absl::Now();
  status_.last_error.clear();
  return reg;
}

absl::StatusOr<Registration> Agent::Register(absl::Duration timeout) {
  auto client = EtcdClient::Create(opts_.endpoints);
  if (!client.ok()) return client.status();
  absl::Time deadline = absl::Now() + timeout;
  absl::Duration backoff;
  for (int attempt = 1;; ++attempt) {
    auto reg = RegisterOnce(**client);
    if (reg.ok() || !Retryable(reg.status())) {
      if (!reg.ok()) {
        absl::MutexLock l(&mu_);
        status_.last_error = std::string(reg.status().message());
      }
      return reg;
    }
    backoff = NextBackoff(backoff);
    {
      absl::MutexLock l(&mu_);
      status_.connected = false;
      status_.last_error = std::string(reg.status().message());
    }
    if (absl::Now() + backoff > deadline) {
      SARENA_LOG(Error, "cluster: registration failed after ", attempt,
                 " attempts: ", reg.status().message());
      return reg;
    }
    SARENA_LOG(Warning, "cluster: etcd ", opts_.endpoints, " unreachable (attempt ", attempt,
               "): ", reg.status().message(), "; retrying in ", absl::FormatDuration(backoff));
    if (stop_.WaitForNotificationWithTimeout(backoff)) {
      return absl::CancelledError("cluster: agent stopped during registration");
    }
  }
}

void Agent::Start() {
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void Agent::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

absl::Status Agent::Deregister(absl::Duration timeout) {
  int64_t lease = 0;
  {
    absl::MutexLock l(&mu_);
    lease = status_.lease_id;
  }
  if (lease == 0) return absl::FailedPreconditionError("cluster: not registered");
  auto client = EtcdClient::Create(opts_.endpoints);
  if (!client.ok()) return client.status();
  absl::Status st = (*client)->LeaseRevoke(lease, timeout);
  if (st.ok() || st.code() == absl::StatusCode::kNotFound) {
    absl::MutexLock l(&mu_);
    status_.registered = false;
    status_.lease_id = 0;
    SARENA_LOG(Info, "cluster: deregistered node '", opts_.node_name, "' (lease ", lease,
               " revoked)");
    return absl::OkStatus();
  }
  return st;
}

AgentStatus Agent::status() const {
  absl::MutexLock l(&mu_);
  return status_;
}

// The agent thread. All peer-table state is local to it; status_ is published under mu_.
void Agent::Run() {
  auto created = EtcdClient::Create(opts_.endpoints);
  if (!created.ok()) return;  // validated in Create
  EtcdClient& client = **created;
  const absl::Duration t = opts_.call_timeout;
  const absl::Duration keepalive_every = opts_.lease_ttl / 3;

  PeerTable table;
  std::unique_ptr<Watch> watch;
  bool need_list = true;
  bool dirty = false;
  bool listed_once = false;
  int64_t revision = 0;
  absl::Time next_keepalive = absl::Now() + keepalive_every;
  absl::Time next_etcd_try = absl::InfinitePast();
  absl::Time next_apply = absl::InfinitePast();
  absl::Duration etcd_backoff, apply_backoff;
  int etcd_failures = 0;

  auto contact = [&]() {
    etcd_backoff = absl::ZeroDuration();
    if (etcd_failures > 0) {
      SARENA_LOG(Info, "cluster: etcd ", opts_.endpoints, " reachable again after ",
                 etcd_failures, " failed attempts");
    }
    etcd_failures = 0;
    absl::MutexLock l(&mu_);
    status_.connected = true;
    status_.last_contact = absl::Now();
  };
  auto etcd_failed = [&](absl::string_view what, const absl::Status& st) {
    etcd_backoff = NextBackoff(etcd_backoff, opts_.max_retry_backoff);
    next_etcd_try = absl::Now() + etcd_backoff;
    ++etcd_failures;
    SARENA_LOG(Warning, "cluster: ", what, " failed (attempt ", etcd_failures, "): ", st.message(),
               "; retrying in ", absl::FormatDuration(etcd_backoff));
    absl::MutexLock l(&mu_);
    if (Retryable(st)) status_.connected = false;
    status_.last_error = absl::StrCat(what, ": ", st.message());
  };
  // Upserts one node from its record; returns false when the record is corrupt (skipped).
  bool quiet = false;  // during a full list: one summary line instead of one per peer
  auto upsert = [&](const etcd::KeyValue& kv) {
    auto node = ParseNodeRecord(kv.key(), kv.value());
    if (!node.ok()) {
      SARENA_LOG(Warning, "cluster: skipping ", node.status().message());
      return false;
    }
    if (node->name == opts_.node_name) return true;
    node->mod_revision = kv.mod_revision();
    auto it = table.peers.find(node->name);
    absl::Time now = absl::Now();
    if (it == table.peers.end()) {
      node->last_update = now;
      if (!quiet) {
        SARENA_LOG(Info, "cluster: peer '", node->name, "' added (", node->underlay.to_string(),
                   ", node id ", node->node_id, ")");
      }
      table.peers.emplace(node->name, std::move(*node));
      dirty = true;
    } else if (!it->second.SameContent(*node) || it->second.lost) {
      if (it->second.lost) {
        SARENA_LOG(Info, "cluster: peer '", node->name, "' re-registered within its grace period");
      } else if (it->second.underlay != node->underlay) {
        SARENA_LOG(Info, "cluster: peer '", node->name, "' moved from ",
                   it->second.underlay.to_string(), " to ", node->underlay.to_string());
      }
      node->last_update = now;
      it->second = std::move(*node);
      dirty = true;
    } else {
      it->second.mod_revision = node->mod_revision;  // same content re-put: nothing to apply
    }
    return true;
  };
  auto mark_lost = [&](const std::string& name) {
    auto it = table.peers.find(name);
    if (it == table.peers.end() || it->second.lost) return;
    it->second.lost = true;
    it->second.lost_since = absl::Now();
    SARENA_LOG(Info, "cluster: peer '", name, "' lost (record deleted); withdrawn in ",
               absl::FormatDuration(opts_.peer_grace), " unless it re-registers");
    dirty = true;
  };
  auto name_of = [](absl::string_view key) {
    absl::ConsumePrefix(&key, kNodesPrefix);
    return std::string(key);
  };

  while (!stop_.HasBeenNotified()) {
    absl::Time now = absl::Now();
    // 1. Lease keepalive; re-register when the lease was lost.
    if (now >= next_keepalive && now >= next_etcd_try) {
      int64_t lease = 0;
      {
        absl::MutexLock l(&mu_);
        lease = status_.lease_id;
      }
      absl::Status st = absl::OkStatus();
      if (lease != 0) st = client.LeaseKeepAlive(lease, t).status();
      if (lease == 0 || st.code() == absl::StatusCode::kNotFound) {
        if (lease != 0) {
          SARENA_LOG(Warning, "cluster: lease ", lease, " of node '", opts_.node_name,
                     "' was lost; registering again");
        }
        {
          absl::MutexLock l(&mu_);
          status_.registered = false;
        }
        std::optional<Registration> before;
        {
          absl::MutexLock l(&mu_);
          before = status_.registration;
        }
        auto again = RegisterOnce(client);
        st = again.status();
        if (again.ok() && before &&
            (again->pod_cidr != before->pod_cidr || again->node_id != before->node_id)) {
          SARENA_LOG(Error, "cluster: re-registration changed node '", opts_.node_name,
                     "' from pod CIDR ", before->pod_cidr.to_string(), " / node id ",
                     before->node_id, " to ", again->pod_cidr.to_string(), " / node id ",
                     again->node_id, " (its claims were released meanwhile)");
        }
      }
      if (st.ok()) {
        contact();
        next_keepalive = absl::Now() + keepalive_every;
      } else {
        etcd_failed("lease keepalive", st);
        next_keepalive = next_etcd_try;
        // Over TCP a partitioned watch connection may never see a FIN: do not trust it while
        // etcd does not answer; it reopens from the last revision once etcd does.
        if (Retryable(st)) watch.reset();
      }
    }
    // 2. Full list at revision R (first time, after compaction).
    if (need_list && absl::Now() >= next_etcd_try) {
      auto list = client.RangePrefix(kNodesPrefix, t);
      if (!list.ok()) {
        etcd_failed("listing nodes", list.status());
      } else {
        contact();
        std::set<std::string> present;
        quiet = true;
        for (const auto& kv : list->kvs()) {
          present.insert(name_of(kv.key()));  // a corrupt record still means "present"
          upsert(kv);
        }
        quiet = false;
        std::vector<std::string> gone;
        for (const auto& [name, peer] : table.peers) {
          if (!present.count(name)) gone.push_back(name);
        }
        for (const auto& name : gone) mark_lost(name);
        revision = list->header().revision();
        table.revision = revision;
        need_list = false;
        listed_once = true;
        dirty = true;
        watch.reset();
        SARENA_LOG(Info, "cluster: listed ", list->kvs_size(), " node records at revision ",
                   revision, " (", table.peers.size(), " peers)");
      }
    }
    // 3. Watch from R+1.
    if (!need_list && !watch && absl::Now() >= next_etcd_try) {
      auto w = client.OpenWatch(kNodesPrefix, PrefixRangeEnd(kNodesPrefix), revision + 1, t);
      if (w.ok()) {
        watch = std::move(*w);
        contact();
      } else if (w.status().code() == absl::StatusCode::kOutOfRange) {
        SARENA_LOG(Info, "cluster: revision ", revision + 1, " compacted (",
                   w.status().message(), "); listing again");
        need_list = true;
      } else {
        etcd_failed("opening the node watch", w.status());
      }
    }
    // 4. Events. Do not sit out the wait with a table to apply (the first list, a change whose
    // apply is due): that cost every join ~100 ms (docs/benchmarks.md, Cluster scale).
    absl::Duration wait = (dirty && listed_once && absl::Now() >= next_apply)
                              ? absl::ZeroDuration()
                              : absl::Milliseconds(100);
    if (watch) {
      auto batch = watch->Next(wait);
      if (batch.ok()) {
        contact();
        for (const auto& ev : batch->events) {
          if (ev.type() == etcd::Event::DELETE) {
            mark_lost(name_of(ev.kv().key()));
          } else {
            upsert(ev.kv());
          }
        }
        revision = std::max(revision, batch->revision);
      } else if (batch.status().code() == absl::StatusCode::kOutOfRange) {
        SARENA_LOG(Info, "cluster: node watch compacted (", batch.status().message(),
                   "); listing again");
        watch.reset();
        need_list = true;
      } else if (batch.status().code() != absl::StatusCode::kDeadlineExceeded) {
        watch.reset();
        etcd_failed("node watch", batch.status());
      }
    } else {
      stop_.WaitForNotificationWithTimeout(wait);
    }
    // 5. Grace expiry.
    now = absl::Now();
    for (auto it = table.peers.begin(); it != table.peers.end();) {
      if (it->second.lost && now - it->second.lost_since >= opts_.peer_grace) {
        SARENA_LOG(Info, "cluster: peer '", it->first, "' withdrawn (lost for ",
                   absl::FormatDuration(now - it->second.lost_since), ")");
        it = table.peers.erase(it);
        dirty = true;
      } else {
        ++it;
      }
    }
    // 6. Apply.
    if (dirty && listed_once && now >= next_apply) {
      table.revision = revision;
      absl::Status st = apply_(table);
      if (st.ok()) {
        dirty = false;
        apply_backoff = absl::ZeroDuration();
        absl::MutexLock l(&mu_);
        status_.synced = true;
        status_.peers = table;
        status_.revision = revision;
      } else {
        apply_backoff = NextBackoff(apply_backoff);
        next_apply = now + apply_backoff;
        SARENA_LOG(Warning, "cluster: applying the peer table (", table.peers.size(),
                   " peers, revision ", revision, ") failed: ", st.message(), "; retrying in ",
                   absl::FormatDuration(apply_backoff));
        absl::MutexLock l(&mu_);
        status_.last_error = absl::StrCat("apply: ", st.message());
      }
    } else {
      absl::MutexLock l(&mu_);
      status_.revision = revision;
    }
  }
}

// ---------------------------------------------------------------------------------------------

absl::StatusOr<std::vector<NodeListing>> ListNodes(const std::string& endpoints,
                                                   absl::Duration timeout) {
  auto client = EtcdClient::Create(endpoints);
  if (!client.ok()) return client.status();
  std::map<std::string, NodeListing> by_name;
  auto nodes = (*client)->RangePrefix(kNodesPrefix, timeout);
  if (!nodes.ok()) return nodes.status();
  for (const auto& kv : nodes->kvs()) {
    absl::string_view name = kv.key();
    absl::ConsumePrefix(&name, kNodesPrefix);
    NodeListing& n = by_name[std::string(name)];
    n.name = std::string(name);
    n.has_record = true;
    auto parsed = ParseNodeRecord(kv.key(), kv.value(), &n.record);
    if (!parsed.ok()) {
      n.error = std::string(parsed.status().message());
      (void)RecordFromJson(kv.value(), &n.record, kv.key());
    }
    if (kv.lease() != 0) {
      auto ttl = (*client)->LeaseTimeToLive(kv.lease(), timeout);
      if (ttl.ok()) {
        n.live = true;
        n.lease_ttl_left = *ttl;
      } else if (ttl.status().code() != absl::StatusCode::kNotFound) {
        return ttl.status();
      }
    }
  }
  for (absl::string_view prefix : {kPodCidrsPrefix, kNodeIdsPrefix}) {
    auto claims = (*client)->RangePrefix(prefix, timeout);
    if (!claims.ok()) return claims.status();
    for (const auto& kv : claims->kvs()) {
      auto owner = ClaimOwner(kv);
      if (!owner.ok()) continue;
      NodeListing& n = by_name[*owner];
      n.name = *owner;
      if (prefix == kPodCidrsPrefix) {
        auto cidr = PodCidrFromKey(kv.key());
        if (cidr.ok()) n.claimed_pod_cidrs.push_back(cidr->to_string());
      } else {
        auto id = NodeIdFromKey(kv.key());
        if (id.ok()) n.claimed_node_ids.push_back(*id);
      }
    }
  }
  std::vector<NodeListing> out;
  for (auto& [name, n] : by_name) out.push_back(std::move(n));
  return out;
}

absl::StatusOr<DeleteNodeResult> DeleteNode(const std::string& endpoints, const std::string& name,
                                            absl::Duration timeout) {
  if (auto st = ValidateNodeName(name); !st.ok()) return st;
  auto client = EtcdClient::Create(endpoints);
  if (!client.ok()) return client.status();
  DeleteNodeResult res;
  auto rec = (*client)->Range(NodeKey(name), {}, 0, 0, timeout);
  if (!rec.ok()) return rec.status();
  const int64_t lease = rec->kvs_size() > 0 ? rec->kvs(0).lease() : 0;
  auto del = (*client)->DeleteRange(NodeKey(name), {}, timeout);
  if (!del.ok()) return del.status();
  res.record_deleted = del->deleted() > 0;
  for (absl::string_view prefix : {kPodCidrsPrefix, kNodeIdsPrefix}) {
    auto claims = (*client)->RangePrefix(prefix, timeout);
    if (!claims.ok()) return claims.status();
    for (const auto& kv : claims->kvs()) {
      auto owner = ClaimOwner(kv);
      if (!owner.ok() || *owner != name) continue;
      auto gone = (*client)->DeleteIfModRevision(kv.key(), kv.mod_revision(), timeout);
      if (!gone.ok()) return gone.status();
      if (!*gone) continue;
      if (prefix == kPodCidrsPrefix) {
        auto cidr = PodCidrFromKey(kv.key());
        res.released_pod_cidrs.push_back(cidr.ok() ? cidr->to_string() : kv.key());
      } else {
        auto id = NodeIdFromKey(kv.key());
        if (id.ok()) res.released_node_ids.push_back(*id);
      }
    }
  }
  // Last, the record's lease: a node still running notices at its next keepalive and registers
  // from scratch (new claims) instead of keeping a lease whose record and claims are gone.
  if (lease != 0) {
    absl::Status st = (*client)->LeaseRevoke(lease, timeout);
    if (!st.ok() && st.code() != absl::StatusCode::kNotFound) return st;
    res.lease_revoked = st.ok();
  }
  if (!res.record_deleted && res.released_pod_cidrs.empty() && res.released_node_ids.empty()) {
    return absl::NotFoundError(absl::StrCat("node '", name, "' has no record and no claim in etcd"));
  }
  SARENA_LOG(Info, "cluster: deleted node '", name, "'");
  return res;
}

}  // namespace sarena::cluster
