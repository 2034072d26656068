// The issue 8 scale and propagation benchmark's measuring side (bench/cluster_scale.sh drives it):
// writes simulated node records straight into etcd and times what real sarenads make of them by
// reading their pinned BPF maps (sarena_tun) and, for the converge step, the node's routes.
//
//   cluster_scale_tool populate  --etcd EP --count N [--first 1] [--cluster_cidr 10.0.0.0/8]
//                                [--mask_len 24] [--underlay_base 172.16.0.0] [--lease_ttl 3600s]
//       Writes /sarena/v1/config (create-if-absent), and per simulated node i in
//       [first, first+count): its pod CIDR claim, its node id claim (id i) and its node record
//       "sim-%05d" (address underlay_base + i, pod CIDR = the i-th /mask_len of the cluster CIDR,
//       tunnel mode, port 8472, MTU 1500), bound to one shared lease of --lease_ttl (0: no lease;
//       the agent does not look at leases, only at the records' presence). Transactions of
//       42 nodes (126 puts: etcd's default --max-txn-ops is 128). Prints one JSON line.
//   cluster_scale_tool converge  --bpffs DIR --count N [--first 1] [...same layout flags]
//                                --t0_ns T [--pid PID] [--timeout 60s]
//       Run inside the node's netns. Polls DIR/sarena_tun until every simulated node's pod CIDR
//       and underlay /32 are there (lookups from a cursor, in key order, 1 ms apart), then dumps
//       the main table until every pod CIDR has its proto 93 route (every 5 ms). Times are from
//       T (CLOCK_REALTIME ns, taken by the script just before it started sarenad). Prints one
//       JSON line with both times and sarenad's VmRSS/VmHWM (kB) from /proc/PID/status.
//   cluster_scale_tool change    --etcd EP --bpffs DIR --changes 50 [--count N] [--first 1]
//                                [...layout flags] [--new_underlay_base 172.20.0.0]
//                                [--gap 200ms]
//       For each change j: a simulated node spread over the registry gets a new, unique underlay
//       address (put of its record, same lease); timed from just before the put to the moment
//       the pinned tunnel map shows the new underlay for its pod CIDR (lookup every 50 µs).
//       Prints per-change lines and a JSON summary (p50/p99/max, also put->applied).
//   cluster_scale_tool watch-joins --etcd EP --bpffs DIR1,DIR2,... --joins K
//       Real joins: prints "ready" once its watch on /sarena/v1/nodes/ is open; the script then
//       starts K new sarenads. Each new node record is timestamped when the watch delivers it
//       (after the commit, as the peers' own watches see it) and timed to its pod CIDR in every
//       listed peer's tunnel map. Prints per-join lines and a JSON summary.
//   cluster_scale_tool sync-cost --bpffs DIR [--changes 20]
//       Run inside the node's netns: times what every Overlay::Sync reads before writing
//       (the whole peer map, the whole tunnel map, a main-table route dump), --changes times.
//   cluster_scale_tool propagate --etcd EP --bpffs DIR1,DIR2,... --joins J [--first 1001]
//                                [...layout flags] [--gap 300ms]
//       For each join: a NEW node's claims and record (one transaction, like the real agent's
//       last step, the claims being written by the same txn for brevity); timed from just before
//       the txn (and from its response = etcd commit) to the pod CIDR present in every listed
//       peer's tunnel map. Prints per-(join, peer) samples and a JSON summary.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "libsarena/cluster/cluster.pb.h"
#include "libsarena/cluster/etcd_client.h"
#include "libsarena/cluster/records.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/maps.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/socket.h"

ABSL_FLAG(std::string, etcd, "", "etcd endpoint, unix:///DIR/etcd.sock:2379");
ABSL_FLAG(std::string, bpffs, "", "a node's bpffs pin dir (propagate: comma-separated list)");
ABSL_FLAG(int, count, 5000, "simulated nodes in the registry");
ABSL_FLAG(int, first, 1, "index (and node id) of the first simulated node");
ABSL_FLAG(std::string, cluster_cidr, "10.0.0.0/8", "cluster CIDR the pod CIDRs come from");
ABSL_FLAG(int, mask_len, 24, "prefix length of each pod CIDR");
ABSL_FLAG(std::string, underlay_base, "172.16.0.0", "simulated node i has underlay base + i");
ABSL_FLAG(std::string, new_underlay_base, "172.20.0.0", "change j moves a node to base + j + 1");
ABSL_FLAG(std::string, name_prefix, "sim-", "name of simulated node i: prefix + %05d");
ABSL_FLAG(absl::Duration, lease_ttl, absl::Seconds(3600), "TTL of the shared lease (0: none)");
ABSL_FLAG(int64_t, t0_ns, 0, "converge: CLOCK_REALTIME ns when sarenad was started");
ABSL_FLAG(int, pid, 0, "converge: sarenad's pid (RSS)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(60), "give up after this long");
ABSL_FLAG(int, changes, 50, "change: number of underlay changes");
ABSL_FLAG(int, joins, 20, "propagate: number of new nodes");
ABSL_FLAG(absl::Duration, gap, absl::Milliseconds(200), "pause between two changes / joins");

namespace {

using sarena::net::Ipv4;
using sarena::net::Ipv4Prefix;
namespace etcd = sarena::cluster::etcd;
namespace v1 = sarena::cluster::v1;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void Die(const absl::Status& st) {
  std::fprintf(stderr, "cluster_scale_tool: %s\n", st.ToString().c_str());
  std::exit(1);
}
template <typename T>
T OrDie(absl::StatusOr<T> v) {
  if (!v.ok()) Die(v.status());
  return *std::move(v);
}

/// The layout of the simulated registry (same flags in every subcommand).
struct Layout {
  Ipv4Prefix cluster;
  int mask_len = 24;
  Ipv4 underlay_base;
  std::string prefix;

  static Layout FromFlags() {
    Layout l;
    l.cluster = OrDie(sarena::net::ParseIpv4Prefix(absl::GetFlag(FLAGS_cluster_cidr),
                                                   "--cluster_cidr"))
                    .canonical();
    l.mask_len = absl::GetFlag(FLAGS_mask_len);
    if (l.mask_len < l.cluster.prefix_length() || l.mask_len > 30) {
      Die(absl::InvalidArgumentError(absl::StrCat("invalid --mask_len ", l.mask_len)));
    }
    l.underlay_base = OrDie(sarena::net::ParseIpv4(absl::GetFlag(FLAGS_underlay_base),
                                                   "--underlay_base"));
    l.prefix = absl::GetFlag(FLAGS_name_prefix);
    return l;
  }
  std::string Name(int i) const { return absl::StrFormat("%s%05d", prefix, i); }
  Ipv4Prefix Cidr(int i) const {
    return Ipv4Prefix(Ipv4(cluster.network().to_uint() +
                           (static_cast<uint32_t>(i) << (32 - mask_len))),
                      static_cast<unsigned short>(mask_len));
  }
  Ipv4 Underlay(int i) const { return Ipv4(underlay_base.to_uint() + static_cast<uint32_t>(i)); }
  std::string Record(int i, const Ipv4& underlay) const {
    v1::NodeRecord rec;
    rec.set_name(Name(i));
    rec.set_node_id(static_cast<uint32_t>(i));
    rec.set_boot_id(absl::StrCat("simulated-", i));
    auto* a = rec.add_addresses();
    a->set_family(v1::IPV4);
    a->set_address(underlay.to_string());
    auto* c = rec.add_pod_cidrs();
    c->set_family(v1::IPV4);
    c->set_cidr(Cidr(i).to_string());
    rec.set_tunnel_port(8472);
    rec.set_mtu(1500);
    rec.set_routing_mode("tunnel");
    return sarena::cluster::RecordToJson(rec);
  }
};

std::string Claim(const std::string& name) {
  v1::PodCidrClaim c;
  c.set_node_name(name);
  c.set_claimed_at(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
  return sarena::cluster::RecordToJson(c);
}

void AddPut(etcd::TxnRequest* txn, const std::string& key, const std::string& value,
            int64_t lease) {
  etcd::PutRequest* p = txn->add_success()->mutable_request_put();
  p->set_key(key);
  p->set_value(value);
  p->set_lease(lease);
}

/// Claims + record of node i, appended to `txn`.
void AddNode(etcd::TxnRequest* txn, const Layout& l, int i, int64_t lease) {
  const std::string name = l.Name(i);
  AddPut(txn, sarena::cluster::PodCidrKey(l.Cidr(i)), Claim(name), 0);
  AddPut(txn, sarena::cluster::NodeIdKey(static_cast<uint32_t>(i)), Claim(name), 0);
  AddPut(txn, sarena::cluster::NodeKey(name), l.Record(i, l.Underlay(i)), lease);
}

int64_t GrantLease(sarena::cluster::EtcdClient& c) {
  const absl::Duration ttl = absl::GetFlag(FLAGS_lease_ttl);
  if (ttl <= absl::ZeroDuration()) return 0;
  return OrDie(c.LeaseGrant(ttl)).id();
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

std::string Summary(const std::vector<double>& v) {
  return absl::StrFormat(
      "{\"n\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"min_ms\":%.3f}",
      static_cast<int>(v.size()), Pct(v, 50), Pct(v, 99),
      v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()),
      v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()));
}

sarena::datapath::TunnelMap OpenTunnels(const std::string& bpffs, absl::Time deadline) {
  for (;;) {
    auto m = sarena::datapath::OpenPinnedMap<sarena::datapath::TunnelMap>(
        bpffs, sarena::bpf::PinAccess::kReadOnly);
    if (m.ok()) return *std::move(m);
    if (!absl::IsNotFound(m.status()) || absl::Now() > deadline) Die(m.status());
    absl::SleepFor(absl::Milliseconds(1));
  }
}

std::optional<Ipv4> TunnelUnderlay(const sarena::datapath::TunnelMap& m, const Ipv4Prefix& p) {
  auto t = m.Get(p);
  if (!t.ok()) return std::nullopt;
  return sarena::datapath::TunnelUnderlayIpv4(*t);
}

std::pair<long, long> RssKb(int pid) {
  long rss = -1, hwm = -1;
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::strtol(line.c_str() + 6, nullptr, 10);
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return {rss, hwm};
}

int Populate() {
  const Layout l = Layout::FromFlags();
  const int first = absl::GetFlag(FLAGS_first), count = absl::GetFlag(FLAGS_count);
  auto client = OrDie(sarena::cluster::EtcdClient::Create(absl::GetFlag(FLAGS_etcd)));
  const absl::Time start = absl::Now();
  v1::ClusterConfig cfg;
  cfg.set_cluster_cidr(l.cluster.to_string());
  cfg.set_node_mask_len(static_cast<uint32_t>(l.mask_len));
  cfg.set_routing_mode("tunnel");
  cfg.set_tunnel_port(8472);
  cfg.set_vni(1);
  OrDie(client->PutIfAbsent(sarena::cluster::kConfigKey, sarena::cluster::RecordToJson(cfg)));
  const int64_t lease = GrantLease(*client);
  int64_t revision = 0;
  constexpr int kNodesPerTxn = 42;  // 3 puts each: <= 128 ops (etcd --max-txn-ops default)
  for (int i = first; i < first + count; i += kNodesPerTxn) {
    etcd::TxnRequest txn;
    for (int k = i; k < std::min(i + kNodesPerTxn, first + count); ++k) AddNode(&txn, l, k, lease);
    etcd::TxnResponse r = OrDie(client->Txn(txn, absl::Seconds(30)));
    revision = r.header().revision();
  }
  std::printf(
      "{\"populated\":%d,\"first\":\"%s\",\"last\":\"%s\",\"lease\":%lld,\"revision\":%lld,"
      "\"seconds\":%.3f}\n",
      count, l.Name(first).c_str(), l.Name(first + count - 1).c_str(),
      static_cast<long long>(lease), static_cast<long long>(revision),
      absl::ToDoubleSeconds(absl::Now() - start));
  return 0;
}

int Converge() {
  const Layout l = Layout::FromFlags();
  const int first = absl::GetFlag(FLAGS_first), count = absl::GetFlag(FLAGS_count);
  const int64_t t0 = absl::GetFlag(FLAGS_t0_ns);
  if (t0 == 0) Die(absl::InvalidArgumentError("--t0_ns is required"));
  const absl::Time deadline = absl::Now() + absl::GetFlag(FLAGS_timeout);
  std::vector<Ipv4Prefix> want;  // key order of the tunnel map is irrelevant; the sync's is sorted
  for (int i = first; i < first + count; ++i) {
    want.push_back(l.Cidr(i));
    want.push_back(Ipv4Prefix(l.Underlay(i), 32));
  }
  std::sort(want.begin(), want.end(), [](const Ipv4Prefix& a, const Ipv4Prefix& b) {
    return std::make_pair(a.network().to_uint(), a.prefix_length()) <
           std::make_pair(b.network().to_uint(), b.prefix_length());
  });
  auto tun = OpenTunnels(absl::GetFlag(FLAGS_bpffs), deadline);
  const int64_t t_map = NowNs();
  size_t cursor = 0;
  int64_t first_seen = 0;
  while (cursor < want.size()) {
    while (cursor < want.size() && tun.Get(want[cursor]).ok()) ++cursor;
    if (cursor > 0 && first_seen == 0) first_seen = NowNs();
    if (cursor == want.size()) break;
    if (absl::Now() > deadline) {
      std::printf("{\"error\":\"timeout: %zu of %zu tunnel entries, missing %s\"}\n", cursor,
                  want.size(), want[cursor].to_string().c_str());
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  const int64_t t_tun = NowNs();
  std::set<uint64_t> cidrs;
  for (int i = first; i < first + count; ++i) {
    cidrs.insert(uint64_t{l.Cidr(i).network().to_uint()} << 8 | l.mask_len);
  }
  auto sock = OrDie(sarena::nl::Socket::Open());
  size_t routes = 0;
  int dumps = 0;
  for (;;) {
    auto list = OrDie(sock.ListRoutes());
    ++dumps;
    routes = 0;
    for (const auto& r : list) {
      if (r.protocol != sarena::nl::RouteProtocol::kSarena) continue;
      if (cidrs.count(uint64_t{r.dst.network().to_uint()} << 8 | r.dst.prefix_length())) ++routes;
    }
    if (routes == cidrs.size()) break;
    if (absl::Now() > deadline) {
      std::printf("{\"error\":\"timeout: %zu of %zu routes\"}\n", routes, cidrs.size());
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  const int64_t t_routes = NowNs();
  auto [rss, hwm] = absl::GetFlag(FLAGS_pid) ? RssKb(absl::GetFlag(FLAGS_pid))
                                             : std::pair<long, long>{-1, -1};
  std::printf(
      "{\"peers\":%d,\"tunnel_entries\":%zu,\"routes\":%zu,\"map_pinned_ms\":%.1f,"
      "\"first_entry_ms\":%.1f,\"tunnels_done_ms\":%.1f,\"converged_ms\":%.1f,"
      "\"converged_unix_ns\":%lld,\"route_dumps\":%d,\"vmrss_kb\":%ld,\"vmhwm_kb\":%ld}\n",
      count, want.size(), routes, (t_map - t0) / 1e6, (first_seen - t0) / 1e6,
      (t_tun - t0) / 1e6, (t_routes - t0) / 1e6, static_cast<long long>(t_routes), dumps, rss,
      hwm);
  return 0;
}

int Change() {
  const Layout l = Layout::FromFlags();
  const int first = absl::GetFlag(FLAGS_first), count = absl::GetFlag(FLAGS_count);
  const int n = absl::GetFlag(FLAGS_changes);
  const Ipv4 base = OrDie(sarena::net::ParseIpv4(absl::GetFlag(FLAGS_new_underlay_base),
                                                 "--new_underlay_base"));
  auto client = OrDie(sarena::cluster::EtcdClient::Create(absl::GetFlag(FLAGS_etcd)));
  auto tun = OpenTunnels(absl::GetFlag(FLAGS_bpffs), absl::Now() + absl::Seconds(5));
  std::vector<double> total, after_put, put;
  for (int j = 0; j < n; ++j) {
    const int i = first + static_cast<int>((int64_t{j} * 997 + 13) % count);
    const std::string key = sarena::cluster::NodeKey(l.Name(i));
    auto cur = OrDie(client->Range(key));
    if (cur.kvs_size() != 1) Die(absl::NotFoundError(absl::StrCat("no record at ", key)));
    const int64_t lease = cur.kvs(0).lease();
    const Ipv4 moved(base.to_uint() + static_cast<uint32_t>(j) + 1);
    const std::string value = l.Record(i, moved);
    const absl::Time deadline = absl::Now() + absl::GetFlag(FLAGS_timeout);
    const int64_t t0 = NowNs();
    OrDie(client->Put(key, value, lease));
    const int64_t t_put = NowNs();
    for (;;) {
      std::optional<Ipv4> u = TunnelUnderlay(tun, l.Cidr(i));
      if (u && *u == moved) break;
      if (absl::Now() > deadline) {
        Die(absl::DeadlineExceededError(absl::StrCat("change ", j, ": ", l.Name(i), " -> ",
                                                     moved.to_string(), " not applied")));
      }
      struct timespec ts = {0, 50000};
      nanosleep(&ts, nullptr);
    }
    const int64_t t1 = NowNs();
    total.push_back((t1 - t0) / 1e6);
    after_put.push_back((t1 - t_put) / 1e6);
    put.push_back((t_put - t0) / 1e6);
    std::printf("change %d %s %s put_ms %.3f applied_ms %.3f\n", j, l.Name(i).c_str(),
                moved.to_string().c_str(), put.back(), total.back());
    std::fflush(stdout);
    absl::SleepFor(absl::GetFlag(FLAGS_gap));
  }
  std::printf("{\"changes\":%s,\"put_to_applied\":%s,\"put\":%s}\n", Summary(total).c_str(),
              Summary(after_put).c_str(), Summary(put).c_str());
  return 0;
}

int Propagate() {
  const Layout l = Layout::FromFlags();
  const int first = absl::GetFlag(FLAGS_first), joins = absl::GetFlag(FLAGS_joins);
  auto client = OrDie(sarena::cluster::EtcdClient::Create(absl::GetFlag(FLAGS_etcd)));
  std::vector<sarena::datapath::TunnelMap> peers;
  std::vector<std::string> dirs = absl::StrSplit(absl::GetFlag(FLAGS_bpffs), ',',
                                                 absl::SkipEmpty());
  for (const std::string& d : dirs) peers.push_back(OpenTunnels(d, absl::Now() + absl::Seconds(5)));
  const int64_t lease = GrantLease(*client);
  std::vector<double> pair_ms, pair_commit_ms, all_ms, all_commit_ms, commit_ms;
  for (int j = 0; j < joins; ++j) {
    const int i = first + j;
    etcd::TxnRequest txn;
    AddNode(&txn, l, i, lease);
    const absl::Time deadline = absl::Now() + absl::GetFlag(FLAGS_timeout);
    std::vector<int64_t> seen(peers.size(), 0);
    size_t left = peers.size();
    const int64_t t0 = NowNs();
    OrDie(client->Txn(txn));
    const int64_t t_commit = NowNs();
    while (left > 0) {
      for (size_t p = 0; p < peers.size(); ++p) {
        if (seen[p] == 0 && peers[p].Get(l.Cidr(i)).ok()) {
          seen[p] = NowNs();
          --left;
        }
      }
      if (left == 0) break;
      if (absl::Now() > deadline) {
        Die(absl::DeadlineExceededError(
            absl::StrCat("join ", l.Name(i), ": ", left, " peers never showed it")));
      }
      struct timespec ts = {0, 100000};
      nanosleep(&ts, nullptr);
    }
    const int64_t last = *std::max_element(seen.begin(), seen.end());
    for (size_t p = 0; p < peers.size(); ++p) {
      pair_ms.push_back((seen[p] - t0) / 1e6);
      pair_commit_ms.push_back((seen[p] - t_commit) / 1e6);
    }
    all_ms.push_back((last - t0) / 1e6);
    all_commit_ms.push_back((last - t_commit) / 1e6);
    commit_ms.push_back((t_commit - t0) / 1e6);
    std::printf("join %d %s %s txn_ms %.3f all_peers_ms %.3f\n", j, l.Name(i).c_str(),
                l.Cidr(i).to_string().c_str(), commit_ms.back(), all_ms.back());
    std::fflush(stdout);
    absl::SleepFor(absl::GetFlag(FLAGS_gap));
  }
  std::printf(
      "{\"peers\":%zu,\"joins\":%d,\"pair_from_put\":%s,\"pair_from_commit\":%s,"
      "\"every_peer_from_put\":%s,\"every_peer_from_commit\":%s,\"txn\":%s}\n",
      peers.size(), joins, Summary(pair_ms).c_str(), Summary(pair_commit_ms).c_str(),
      Summary(all_ms).c_str(), Summary(all_commit_ms).c_str(), Summary(commit_ms).c_str());
  return 0;
}

// What one Overlay::Sync reads from the kernel before it writes anything, whatever changed:
// the whole peer map, the whole tunnel map (GET_NEXT_KEY + LOOKUP per entry) and a dump of the
// main routing table. Timed here on the daemon's own pinned maps, in its netns.
int SyncCost() {
  const std::string bpffs = absl::GetFlag(FLAGS_bpffs);
  auto tun = OpenTunnels(bpffs, absl::Now() + absl::Seconds(5));
  auto peers = OrDie(sarena::datapath::OpenPinnedMap<sarena::datapath::PeerMap>(
      bpffs, sarena::bpf::PinAccess::kReadOnly));
  auto sock = OrDie(sarena::nl::Socket::Open());
  std::vector<double> t_peers, t_tun, t_routes;
  size_t n_peers = 0, n_tun = 0, n_routes = 0;
  for (int r = 0; r < absl::GetFlag(FLAGS_changes); ++r) {
    int64_t a = NowNs();
    n_peers = OrDie(peers.Entries()).size();
    int64_t b = NowNs();
    n_tun = OrDie(tun.Entries()).size();
    int64_t c = NowNs();
    n_routes = OrDie(sock.ListRoutes()).size();
    int64_t d = NowNs();
    t_peers.push_back((b - a) / 1e6);
    t_tun.push_back((c - b) / 1e6);
    t_routes.push_back((d - c) / 1e6);
  }
  std::printf(
      "{\"peer_map_entries\":%zu,\"peer_map_read\":%s,\"tunnel_map_entries\":%zu,"
      "\"tunnel_map_read\":%s,\"routes\":%zu,\"route_dump\":%s}\n",
      n_peers, Summary(t_peers).c_str(), n_tun, Summary(t_tun).c_str(), n_routes,
      Summary(t_routes).c_str());
  return 0;
}

// Real joins: a watch on /sarena/v1/nodes/ (own thread) timestamps each NEW node record
// (create_revision == mod_revision) as it arrives — that is after its commit, as every peer's
// own watch sees it; the main thread then polls every listed peer's tunnel map for the joiner's
// pod CIDR. The script starts the joining sarenads while this runs.
int WatchJoins() {
  const int joins = absl::GetFlag(FLAGS_joins);
  auto client = OrDie(sarena::cluster::EtcdClient::Create(absl::GetFlag(FLAGS_etcd)));
  std::vector<sarena::datapath::TunnelMap> peers;
  std::vector<std::string> dirs = absl::StrSplit(absl::GetFlag(FLAGS_bpffs), ',',
                                                 absl::SkipEmpty());
  for (const std::string& d : dirs) peers.push_back(OpenTunnels(d, absl::Now() + absl::Seconds(5)));
  const std::string prefix(sarena::cluster::kNodesPrefix);
  auto watch = OrDie(client->OpenWatch(prefix, sarena::cluster::PrefixRangeEnd(prefix), 0));
  std::printf("ready\n");
  std::fflush(stdout);
  struct Joined {
    std::string name;
    Ipv4Prefix cidr;
    int64_t seen_ns;
  };
  absl::Mutex mu;
  std::vector<Joined> queue;
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    while (!stop.load()) {
      auto b = watch->Next(absl::Milliseconds(100));
      const int64_t now = NowNs();
      if (!b.ok()) {
        if (absl::IsDeadlineExceeded(b.status())) continue;
        Die(b.status());
      }
      for (const auto& ev : b->events) {
        if (ev.type() != etcd::Event::PUT || ev.kv().create_revision() != ev.kv().mod_revision()) {
          continue;
        }
        auto node = sarena::cluster::ParseNodeRecord(ev.kv().key(), ev.kv().value());
        if (!node.ok() || node->pod_cidrs.empty()) continue;
        absl::MutexLock l(&mu);
        queue.push_back({node->name, node->pod_cidrs[0], now});
      }
    }
  });
  std::vector<double> pair_ms, all_ms;
  const absl::Time deadline = absl::Now() + absl::GetFlag(FLAGS_timeout);
  for (int j = 0; j < joins; ++j) {
    Joined jn;
    for (;;) {
      {
        absl::MutexLock l(&mu);
        if (static_cast<int>(queue.size()) > j) {
          jn = queue[j];
          break;
        }
      }
      if (absl::Now() > deadline) Die(absl::DeadlineExceededError("too few real joins seen"));
      absl::SleepFor(absl::Microseconds(200));
    }
    std::vector<int64_t> seen(peers.size(), 0);
    size_t left = peers.size();
    while (left > 0) {
      for (size_t p = 0; p < peers.size(); ++p) {
        if (seen[p] == 0 && peers[p].Get(jn.cidr).ok()) {
          seen[p] = NowNs();
          --left;
        }
      }
      if (left == 0) break;
      if (absl::Now() > deadline) {
        Die(absl::DeadlineExceededError(
            absl::StrCat("join ", jn.name, ": ", left, " peers never showed it")));
      }
      struct timespec ts = {0, 100000};
      nanosleep(&ts, nullptr);
    }
    int64_t last = 0;
    for (int64_t t : seen) {
      pair_ms.push_back(std::max<int64_t>(0, t - jn.seen_ns) / 1e6);
      last = std::max(last, t);
    }
    all_ms.push_back(std::max<int64_t>(0, last - jn.seen_ns) / 1e6);
    std::printf("real join %d %s %s all_peers_ms %.3f\n", j, jn.name.c_str(),
                jn.cidr.to_string().c_str(), all_ms.back());
    std::fflush(stdout);
  }
  stop = true;
  watcher.join();
  std::printf("{\"peers\":%zu,\"real_joins\":%d,\"pair_from_watch_event\":%s,"
              "\"every_peer_from_watch_event\":%s}\n",
              peers.size(), joins, Summary(pair_ms).c_str(), Summary(all_ms).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const std::string cmd = args.size() > 1 ? args[1] : "";
  if (cmd == "populate") return Populate();
  if (cmd == "converge") return Converge();
  if (cmd == "change") return Change();
  if (cmd == "propagate") return Propagate();
  if (cmd == "sync-cost") return SyncCost();
  if (cmd == "watch-joins") return WatchJoins();
  std::fprintf(stderr,
               "usage: cluster_scale_tool populate|converge|change|propagate|sync-cost|watch-joins "
               "[flags]\n");
  return 2;
}
