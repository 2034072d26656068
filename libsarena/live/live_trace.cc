#include "libsarena/live/live_trace.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/collect/collect.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/drop_trace.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/report.h"
#include "libsarena/live/drop_names.h"
#include "libsarena/live/netns_scan.h"
#include "libsarena/live/probe.h"

namespace sarena::live {
namespace {

// A namespace of the live node, as the snapshot names it.
struct Place {
  std::string id;    // "node:<node>" | "pod:<ns>/<name>"
  std::string path;  // where it is on this machine
  std::optional<diag::EndpointSpec> spec;  // the walk's name for a source there
};

double MsBetween(uint64_t a, uint64_t b) { return static_cast<double>(b - a) / 1e6; }

// Which namespace owns `ip`: the caller's first, then the node's pods, then any named one.
absl::StatusOr<const NetnsInfo*> OwnerOf(const std::vector<NetnsInfo>& all,
                                         const std::vector<std::string>& pods,
                                         const net::Ipv4& ip) {
  std::vector<const NetnsInfo*> cur, pod, other;
  for (const NetnsInfo& n : all) {
    if (std::find(n.addrs.begin(), n.addrs.end(), ip) == n.addrs.end()) continue;
    if (n.current) {
      cur.push_back(&n);
    } else if (std::find(pods.begin(), pods.end(), n.name) != pods.end()) {
      pod.push_back(&n);
    } else {
      other.push_back(&n);
    }
  }
  for (const auto* set : {&cur, &pod, &other}) {
    if (set->size() == 1) return set->front();
    if (set->size() > 1) {
      std::vector<std::string> names;
      for (const NetnsInfo* n : *set) names.push_back(n->path);
      return absl::FailedPreconditionError(absl::StrCat(
          "--src ", ip.to_string(), " is an address of ", set->size(),
          " network namespaces (", absl::StrJoin(names, ", "),
          "): run sarena-diag inside the node namespace whose pod it is (ip netns exec NODE ...)"));
    }
  }
  return absl::NotFoundError(absl::StrCat("--src ", ip.to_string(),
                                          ": no network namespace of this machine has it (the "
                                          "caller's or one under /var/run/netns)"));
}

// Drop counters of the sarena datapath pinned under `bpffs`; nullopt when not a sarena node.
std::optional<std::vector<datapath::DropCounter>> ReadDatapathDrops(const std::string& bpffs) {
  if (bpffs.empty() || access(bpffs.c_str(), F_OK) != 0) return std::nullopt;
  auto maps = datapath::Maps::OpenPinned(bpffs);
  if (!maps.ok()) return std::nullopt;
  auto drops = maps->drops.ReadAll();
  if (!drops.ok()) return std::nullopt;
  return *std::move(drops);
}

// Whether a traced drop is the probe's (or about it): the probe's packet or its reply, an ICMP
// error between the two addresses, or any packet of the two addresses (ARP included) that died
// in a namespace of the node.
bool IsProbes(const datapath::DropTraceEvent& d, const model::ProbeOutcome& p, uint8_t proto,
              uint16_t dport, bool in_node) {
  if (d.eth_proto != 0x0800) return in_node;
  if (d.proto == 1) return true;  // ICMP between the two addresses (errors about the probe)
  if (d.proto != proto) return in_node;
  bool fwd = d.sport == p.sport && d.dport == dport;
  bool rev = d.sport == dport && d.dport == p.sport;
  return fwd || rev;
}

// What the ring holds now (waiting at most `wait_ms` for the first event), in a bounded number
// of datapath::DropTraceProgram::Drain reads: the tracer is filtered to the probe's addresses, so
// a read that comes back full is already unusual, and four are a full ring's worth several times
// over.
absl::StatusOr<std::vector<datapath::DropTraceEvent>> DrainBounded(
    datapath::DropTraceProgram& tracer, int wait_ms) {
  std::vector<datapath::DropTraceEvent> all;
  for (int i = 0; i < 4; ++i) {
    SARENA_ASSIGN_OR_RETURN(datapath::DropTraceBatch batch, tracer.Drain(i == 0 ? wait_ms : 0));
    all.insert(all.end(), std::make_move_iterator(batch.drops.begin()),
               std::make_move_iterator(batch.drops.end()));
    if (!batch.more) break;
  }
  return all;
}

}  // namespace

absl::StatusOr<LiveResult> TraceLive(const LiveOptions& opt) {
  const uint64_t t0 = MonotonicNs();
  SARENA_ASSIGN_OR_RETURN(diag::Query query, diag::ParseQuery(opt.src, opt.dst));
  if (query.src.kind != diag::EndpointSpec::Kind::kIp ||
      query.dst.kind != diag::EndpointSpec::Kind::kIp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--live takes addresses: --src '", opt.src, "' --dst '", opt.dst,
        "' (pod:/node:/svc: names need a snapshot; the live trace finds the namespace by address)"));
  }
  if (query.proto != 6 && query.proto != 17) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dst '", opt.dst, "': --live probes tcp or udp, not ",
                     model::ProtoName(query.proto)));
  }
  const net::Ipv4 src = query.src.ip;
  const net::Ipv4 dst = query.dst.ip;
  // Every namespace has its own 127.0.0.0/8, so a loopback source names no namespace: the scan
  // leaves loopback out on purpose (NetnsInfo::addrs), and says so here rather than "no
  // namespace has it".
  if (src.is_loopback()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--src ", src.to_string(),
        " is a loopback address: every network namespace has its own 127.0.0.0/8, so it names "
        "none; --live needs the pod's or the node's own address (e.g. the pod IP, or the node's "
        "InternalIP) as --src"));
  }

  // The kfree_skb tracer loads (BTF, verifier) while the snapshot is collected.
  auto tracer_future = std::async(std::launch::async, [&] {
    return datapath::DropTraceProgram::Start(src == dst ? std::vector<net::Ipv4>{src}
                                                        : std::vector<net::Ipv4>{src, dst});
  });

  // 1. The namespaces, and which owns --src.
  SARENA_ASSIGN_OR_RETURN(std::vector<NetnsInfo> all, ScanNetns());
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> pod_names, VethPeerNetnsNames());
  SARENA_ASSIGN_OR_RETURN(const NetnsInfo* owner, OwnerOf(all, pod_names, src));

  // 2. The node's snapshot.
  LiveResult res;
  collect::CollectOptions copt;
  std::string dir = opt.snapshot_dir;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sarena-live-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp ", tmpl, ": ", strerror(errno)));
    }
    dir = tmpl;
  } else {
    res.snapshot_dir = dir;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } cleanup{opt.snapshot_dir.empty() ? dir : ""};
  copt.out_dir = dir;
  copt.node = opt.node;
  if (copt.node.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    copt.node = host;
  }
  for (const std::string& n : pod_names) {
    copt.fallback_pods.push_back({"netns", n, absl::StrCat("/var/run/netns/", n)});
  }
  copt.sarena_socket = opt.sarena_socket;
  copt.bpffs = opt.bpffs;
  copt.programs = opt.programs;
  SARENA_ASSIGN_OR_RETURN(collect::CollectReport report, collect::Collect(copt));
  const uint64_t t_collected = MonotonicNs();
  res.collect_ms = MsBetween(t0, t_collected);

  // Places: inode -> the snapshot's name for it.
  std::map<uint64_t, Place> places;
  places[all[0].inode] = Place{absl::StrCat("node:", copt.node), all[0].path,
                               diag::EndpointSpec{diag::EndpointSpec::Kind::kNode, "", copt.node,
                                                  {}}};
  for (const auto& p : report.pods) {
    places[p.inode] = Place{absl::StrCat("pod:", p.spec.namespace_, "/", p.spec.name),
                            p.spec.netns,
                            diag::EndpointSpec{diag::EndpointSpec::Kind::kPod, p.spec.namespace_,
                                               p.spec.name, {}}};
  }
  std::map<uint64_t, std::string> paths;
  for (const NetnsInfo& n : all) paths[n.inode] = n.path;

  // 3. The tracer and the datapath's counters, then 4. the probe.
  SARENA_ASSIGN_OR_RETURN(datapath::DropTraceProgram tracer, tracer_future.get());
  // Whatever the collect's own traffic left.
  SARENA_RETURN_IF_ERROR(DrainBounded(tracer, 0).status());
  auto dp_before = ReadDatapathDrops(opt.bpffs);
  ProbeOptions popt;
  popt.netns = owner->path;
  popt.src = src;
  popt.dst = dst;
  popt.dport = query.dport;
  popt.proto = query.proto;
  popt.size = query.proto == 17 ? opt.size : 0;
  popt.count = opt.count;
  popt.timeout_ms = opt.timeout_ms;
  const uint64_t probe_start = MonotonicNs();
  SARENA_ASSIGN_OR_RETURN(ProbeResult probe, SendProbe(popt));
  // Drops still in flight (a reply's, an ICMP error's) come within a few ms; keep a short window.
  constexpr int kWindowMs = 30;
  SARENA_ASSIGN_OR_RETURN(std::vector<datapath::DropTraceEvent> raw,
                          DrainBounded(tracer, kWindowMs));
  usleep(kWindowMs * 1000);
  SARENA_ASSIGN_OR_RETURN(std::vector<datapath::DropTraceEvent> more, DrainBounded(tracer, 0));
  raw.insert(raw.end(), more.begin(), more.end());
  auto dp_after = ReadDatapathDrops(opt.bpffs);
  model::LiveEvidence& ev = res.evidence;
  ev.window_ms = MsBetween(probe.ended_ns, MonotonicNs());
  ev.probe = probe.outcome;
  auto owner_place = places.find(owner->inode);
  ev.probe.place = owner_place != places.end() ? owner_place->second.id : "";

  // Kernel drops of the probe, merged.
  std::map<uint64_t, std::string> symbols;
  for (const datapath::DropTraceEvent& d : raw) {
    if (d.ts_ns < probe_start) continue;
    // After a completed handshake the socket is closed: the teardown's drops are not the probe's.
    if (probe.outcome.result == "connected" && query.proto == 6 && d.ts_ns > probe.ended_ns) {
      continue;
    }
    auto pl = places.find(d.netns_inode);
    if (!IsProbes(d, ev.probe, query.proto, query.dport, pl != places.end())) continue;
    model::KernelDrop k;
    k.reason_code = d.reason;
    k.reason = DropReasonName(d.reason);
    auto sym = symbols.find(d.location);
    if (sym == symbols.end()) sym = symbols.emplace(d.location, KernelSymbol(d.location)).first;
    k.location = sym->second;
    k.netns_inode = d.netns_inode;
    if (pl != places.end()) {
      k.place = pl->second.id;
      k.node = copt.node;
      k.netns_path = pl->second.path;
    } else if (auto p = paths.find(d.netns_inode); p != paths.end()) {
      k.netns_path = p->second;
    }
    k.ifindex = d.ifindex;
    k.device = d.ifname;
    k.eth_proto = d.eth_proto;
    k.proto = d.proto;
    k.src = d.src;
    k.dst = d.dst;
    k.sport = d.sport;
    k.dport = d.dport;
    k.tcp_flags = d.tcp_flags;
    auto same = [&](const model::KernelDrop& o) {
      return std::tie(o.reason_code, o.netns_inode, o.ifindex, o.eth_proto, o.proto, o.sport,
                      o.dport, o.tcp_flags) == std::tie(k.reason_code, k.netns_inode, k.ifindex,
                                                        k.eth_proto, k.proto, k.sport, k.dport,
                                                        k.tcp_flags) &&
             o.src == k.src && o.dst == k.dst;
    };
    auto it = std::find_if(ev.kernel.begin(), ev.kernel.end(), same);
    if (it != ev.kernel.end()) {
      ++it->count;
    } else {
      ev.kernel.push_back(std::move(k));
    }
  }
  // The sarena datapath's own drops (counter deltas over the probe).
  if (dp_before && dp_after && dp_before->size() == dp_after->size()) {
    ev.datapath_read = true;
    for (size_t r = 1; r < dp_after->size(); ++r) {
      uint64_t n = (*dp_after)[r].packets - (*dp_before)[r].packets;
      if (n == 0) continue;
      model::DatapathDrop d;
      d.reason = datapath::DropReasonName(static_cast<uint32_t>(r));
      d.proto = query.proto;
      d.src = src;
      d.dst = dst;
      d.sport = ev.probe.sport;
      d.dport = query.dport;
      d.count = static_cast<uint32_t>(n);
      ev.datapath.push_back(std::move(d));
    }
  }

  // 5. The walk of the same packet, and the join.
  SARENA_ASSIGN_OR_RETURN(res.snapshot, model::Snapshot::Open(dir));
  if (owner_place != places.end() && owner_place->second.spec) {
    query.src = *owner_place->second.spec;
  }
  query.sport = ev.probe.sport;
  query.ttl = opt.ttl;
  // UDP: the size the probe sent (0 resolved to the route's MTU); TCP: --size as given (0 =
  // the walk's own full size, the source device's MTU).
  query.size = query.proto == 17 ? ev.probe.size : opt.size;
  SARENA_ASSIGN_OR_RETURN(auto plugin,
                          diag::SelectPlugin(opt.cni, *res.snapshot, {copt.node}));
  diag::TraceOptions topt;
  topt.reply = opt.reply;
  SARENA_ASSIGN_OR_RETURN(res.trace, diag::Trace(*res.snapshot, query, *plugin, topt));
  res.joined = diag::JoinEvidence(res.trace.graph, ev);
  res.total_ms = MsBetween(t0, MonotonicNs());
  return res;
}

std::string LiveText(const LiveResult& r) {
  std::string s = absl::StrCat("cni plugin: ", r.trace.plugin, "\n", diag::ToText(r.trace.graph),
                               diag::EvidenceText(r.joined));
  if (!r.joined.agree) {
    int n = 0;
    for (const diag::EvidenceItem& it : r.joined.items) {
      if (it.outcome != diag::EvidenceItem::Outcome::kAgreed) ++n;
    }
    absl::StrAppend(&s, "DISAGREEMENT: the kernel and the model disagree (", n,
                    " finding", n == 1 ? "" : "s", " marked !!",
                    r.joined.probe_disagrees ? ", and the probe's result contradicts the verdict"
                                             : "",
                    "): trust the kernel, and report the model's gap\n");
  }
  return s;
}

}  // namespace sarena::live
