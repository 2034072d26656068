// The issue 3 scale benchmark of the diagnoser: load a (generated) snapshot directory and trace
// random queries through it with the library calls sarena-diag makes (Snapshot::Open,
// ParseQuery, SelectPlugin("auto"), Trace), reporting load wall/CPU time, trace latency per
// query kind and peak RSS, and the verdict mix of the first-touch pass: per query kind the
// verdict counts and the most frequent WARNING-or-worse "code LEVEL" with the number of queries
// carrying it and one example message (the generated cluster is healthy: each finding there must
// be one an expert agrees with), then "MIX reachable=N degraded=N unreachable=N".
//
//   diag_scale_bench --snapshot DIR [--queries 10000] [--seed 1] [--batch 50] [--repeat 1]
//                    [--load_only]
//
// Query kinds (a fifth of the queries each, interleaved):
//   same_node   pod -> pod on the same node           pod:NS/A -> pod:NS/B:8080/tcp
//   cross_node  pod -> pod on another node            pod:NS/A -> pod:NS/B:8080/tcp
//   cluster_ip  pod -> a Service's ClusterIP          pod:NS/A -> svc:NS/S:80/tcp (all backends)
//   node_to_pod node -> pod (kubelet probe path)      node:N   -> pod:NS/B:8080/tcp
//   external    pod -> an address outside the cluster pod:NS/A -> 93.184.216.34:443/tcp
//
// A snapshot parses a node's files when a trace first reaches it and keeps them, so a query is
// timed twice: "first touch" (the nodes and pod namespaces it reaches parsed by the query itself)
// and "warm" (the same query again, everything cached — the walk alone). To bound memory the
// cache is dropped after every --batch queries (Snapshot::ClearCache), so first-touch times are
// those of a fresh process on a loaded snapshot. --repeat runs the warm pass that many times.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libsarena/base/file.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/netfilter.h"
#include "libsarena/model/snapshot.h"

namespace {

using sarena::diag::EndpointSpec;

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double CpuNow() {  // process CPU time, all threads
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double PeakRssMib() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // KiB -> MiB
}
double CurrentRssMib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1048576.0);
}

struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) {
    return static_cast<size_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
};

enum Kind { kSameNode, kCrossNode, kClusterIp, kNodeToPod, kExternal, kKinds };
constexpr const char* kKindNames[kKinds] = {"same_node", "cross_node", "cluster_ip", "node_to_pod",
                                            "external"};

struct Item {
  Kind kind;
  std::string src, dst;
  sarena::diag::Query query;
};

struct Stats {
  std::vector<double> us;
  void Add(double v) { us.push_back(v); }
  double Pct(double p) {
    if (us.empty()) return 0;
    std::sort(us.begin(), us.end());
    size_t i = static_cast<size_t>(p / 100.0 * (us.size() - 1) + 0.5);
    return us[std::min(i, us.size() - 1)];
  }
  double Mean() const {
    double s = 0;
    for (double v : us) s += v;
    return us.empty() ? 0 : s / us.size();
  }
};

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "diag_scale_bench: %s\n", msg.c_str());
  std::exit(2);
}

// What sarena-diag trace does after loading: nodes of the query for --cni auto, SelectPlugin,
// Trace. Returns the verdict (and, when `suspicions` is given, the findings), or dies on an error
// (a generated snapshot must answer every query).
sarena::diag::Verdict RunOne(const sarena::model::Snapshot& snap, const Item& it,
                             std::vector<sarena::diag::Suspicion>* suspicions = nullptr) {
  const auto& cluster = snap.cluster();
  std::vector<std::string> nodes;
  for (const EndpointSpec* e : {&it.query.src, &it.query.dst}) {
    if (e->kind == EndpointSpec::Kind::kPod) {
      if (const auto* p = cluster.FindPod(e->namespace_, e->name)) nodes.push_back(p->node_name);
    } else if (e->kind == EndpointSpec::Kind::kNode) {
      nodes.push_back(e->name);
    } else if (e->kind == EndpointSpec::Kind::kIp) {
      if (const auto* p = cluster.FindPodByIp(e->ip)) nodes.push_back(p->node_name);
      if (const auto* n = cluster.FindNodeByIp(e->ip)) nodes.push_back(n->name);
    }
  }
  auto plugin = sarena::diag::SelectPlugin("auto", snap, nodes);
  if (!plugin.ok()) Die(absl::StrCat(it.src, " -> ", it.dst, ": ", plugin.status().ToString()));
  auto result = sarena::diag::Trace(snap, it.query, **plugin, {});
  if (!result.ok()) Die(absl::StrCat(it.src, " -> ", it.dst, ": ", result.status().ToString()));
  std::vector<sarena::diag::Suspicion> found = result->graph.Suspicions();
  sarena::diag::Verdict v = sarena::diag::ComputeVerdict(found);
  if (suspicions) *suspicions = std::move(found);
  return v;
}

// The verdict mix of the first-touch pass: per query kind, the WARNING-or-worse findings by
// "code LEVEL" with how many queries carry them and one example message, so that a false alarm
// on the (healthy) generated cluster shows up as a number.
struct Mix {
  struct Code {
    size_t queries = 0;
    std::string example;  // "SRC -> DST: message"
  };
  std::map<std::string, Code> codes;  // "mtu_mismatch WARNING" -> ...
  void Add(const Item& it, const std::vector<sarena::diag::Suspicion>& found) {
    std::map<std::string, const sarena::diag::Suspicion*> once;
    for (const auto& s : found) {
      if (s.level == sarena::diag::Level::kInfo) continue;
      once.emplace(absl::StrCat(s.code, " ", sarena::diag::ToString(s.level)), &s);
    }
    for (const auto& [key, s] : once) {
      Code& c = codes[key];
      if (c.queries++ == 0) c.example = absl::StrCat(it.src, " -> ", it.dst, ": ", s->message);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  size_t queries = 10000, batch = 50, repeat = 1;
  bool load_only = false;
  size_t node_loads = 20;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      size_t eq = a.find('=');
      if (eq != std::string::npos) return a.substr(eq + 1);
      if (i + 1 >= argc) Die(absl::StrCat(a, " needs a value"));
      return argv[++i];
    };
    std::string name = a.substr(0, a.find('='));
    if (name == "--snapshot") {
      dir = value();
    } else if (name == "--queries") {
      if (!absl::SimpleAtoi(value(), &queries) || queries == 0) Die("invalid --queries");
    } else if (name == "--batch") {
      if (!absl::SimpleAtoi(value(), &batch) || batch == 0) Die("invalid --batch");
    } else if (name == "--node_loads") {
      if (!absl::SimpleAtoi(value(), &node_loads)) Die("invalid --node_loads");
    } else if (name == "--load_only") {
      load_only = true;
    } else if (name == "--repeat") {
      if (!absl::SimpleAtoi(value(), &repeat) || repeat == 0) Die("invalid --repeat");
    } else if (name == "--seed") {
      if (!absl::SimpleAtoi(value(), &seed)) Die("invalid --seed");
    } else {
      Die(absl::StrCat("unknown argument ", a,
                       "\nusage: diag_scale_bench --snapshot DIR [--queries N] [--batch B] [--repeat R] [--seed S] [--load_only]"));
    }
  }
  if (dir.empty()) Die("--snapshot DIR is required");

  // --- Load. ---
  double w0 = Now(), c0 = CpuNow();
  auto snap_or = sarena::model::Snapshot::Open(dir);
  double load_wall = Now() - w0, load_cpu = CpuNow() - c0;
  if (!snap_or.ok()) Die(snap_or.status().ToString());
  const sarena::model::Snapshot& snap = **snap_or;
  double rss_after_load = CurrentRssMib(), peak_after_load = PeakRssMib();
  const auto& cluster = snap.cluster();
  std::printf("load: wall %.3f s, cpu %.3f s (%zu pods, %zu nodes, %zu services, %zu node dirs); "
              "RSS after load %.0f MiB, peak so far %.0f MiB\n",
              load_wall, load_cpu, cluster.pods().size(), cluster.nodes().size(),
              cluster.services().size(), snap.node_names().size(), rss_after_load, peak_after_load);

  if (load_only) return 0;

  // --- One node's iptables-save parsed on its own: what every first touch costs when the
  // nodes' rulesets differ (here they are identical and parsed once). ---
  {
    auto text = sarena::ReadFileToString(
        absl::StrCat(dir, "/nodes/", snap.node_names().front(), "/iptables-save.txt"));
    if (text.ok()) {
      double t = Now(), c = CpuNow();
      auto nf = sarena::model::Netfilter::Parse(*text);
      if (!nf.ok()) Die(nf.status().ToString());
      std::printf("iptables-save of one node: %zu rules, %.1f MB, parsed in %.0f ms wall / %.0f ms CPU\n",
                  nf->rule_count(), text->size() / 1e6, (Now() - t) * 1e3, (CpuNow() - c) * 1e3);
    }
  }

  // --- First touch of single nodes (the first one also parses the shared iptables ruleset). ---
  Rng rng{seed};
  Stats node_load;
  double first_node_ms = 0;
  for (size_t i = 0; i < node_loads + 1; ++i) {
    const std::string& n = snap.node_names()[rng.Below(snap.node_names().size())];
    double t = Now();
    auto st = snap.Node(n);
    double ms = (Now() - t) * 1e3;
    if (!st.ok()) Die(st.status().ToString());
    if (i == 0) {
      first_node_ms = ms;
    } else {
      node_load.Add(ms * 1e3);
    }
  }
  std::printf("node first touch: first node %.1f ms (parses the shared iptables-save), then p50 %.2f "
              "ms / p99 %.2f ms per node; RSS %.0f MiB with %zu nodes cached\n",
              first_node_ms, node_load.Pct(50) / 1e3, node_load.Pct(99) / 1e3, CurrentRssMib(),
              snap.cached_nodes());
  snap.ClearCache();

  // --- Queries. ---
  std::vector<const sarena::model::Pod*> pods;
  for (const auto& p : cluster.pods()) {
    if (!p.host_network && p.pod_ip && !p.node_name.empty()) pods.push_back(&p);
  }
  if (pods.size() < 2 || cluster.services().empty()) Die("snapshot has too few pods or no services");
  auto pod_spec = [](const sarena::model::Pod* p) {
    return absl::StrCat("pod:", p->namespace_, "/", p->name);
  };
  std::vector<Item> items;
  items.reserve(queries);
  for (size_t i = 0; i < queries; ++i) {
    Item it;
    it.kind = static_cast<Kind>(i % kKinds);
    const sarena::model::Pod* a = pods[rng.Below(pods.size())];
    switch (it.kind) {
      case kSameNode: {
        std::vector<const sarena::model::Pod*> on = cluster.PodsOnNode(a->node_name);
        const sarena::model::Pod* b = a;
        for (int tries = 0; b == a && tries < 100; ++tries) b = on[rng.Below(on.size())];
        it.src = pod_spec(a);
        it.dst = absl::StrCat(pod_spec(b), ":8080/tcp");
        break;
      }
      case kCrossNode: {
        const sarena::model::Pod* b = a;
        while (b->node_name == a->node_name) b = pods[rng.Below(pods.size())];
        it.src = pod_spec(a);
        it.dst = absl::StrCat(pod_spec(b), ":8080/tcp");
        break;
      }
      case kClusterIp: {
        const auto& s = cluster.services()[rng.Below(cluster.services().size())];
        it.src = pod_spec(a);
        it.dst = absl::StrCat("svc:", s.namespace_, "/", s.name, ":", s.ports.front().port, "/tcp");
        break;
      }
      case kNodeToPod: {
        const auto& n = cluster.nodes()[rng.Below(cluster.nodes().size())];
        it.src = absl::StrCat("node:", n.name);
        it.dst = absl::StrCat(pod_spec(a), ":8080/tcp");
        break;
      }
      case kExternal:
        it.src = pod_spec(a);
        it.dst = "93.184.216.34:443/tcp";
        break;
      default:
        break;
    }
    auto q = sarena::diag::ParseQuery(it.src, it.dst);
    if (!q.ok()) Die(q.status().ToString());
    it.query = *q;
    items.push_back(std::move(it));
  }

  Stats cold[kKinds], warm[kKinds], cold_all, warm_all;
  std::map<std::string, size_t> verdicts[kKinds];
  Mix mix[kKinds];
  std::vector<sarena::diag::Suspicion> found;
  size_t max_cached_nodes = 0, max_cached_pods = 0;
  double max_rss_batch = 0;
  double q0 = Now(), qc0 = CpuNow();
  for (size_t b0 = 0; b0 < items.size(); b0 += batch) {
    size_t b1 = std::min(items.size(), b0 + batch);
    for (size_t i = b0; i < b1; ++i) {  // first touch
      double t = Now();
      sarena::diag::Verdict v = RunOne(snap, items[i], &found);
      double us = (Now() - t) * 1e6;
      mix[items[i].kind].Add(items[i], found);
      cold[items[i].kind].Add(us);
      cold_all.Add(us);
      ++verdicts[items[i].kind][std::string(sarena::diag::ToString(v))];
    }
    if (b0 == 0 && repeat > 1) std::fprintf(stderr, "warm pass starts\n");
    for (size_t r = 0; r < repeat; ++r) {
      for (size_t i = b0; i < b1; ++i) {  // warm: the same queries, everything cached
        double t = Now();
        RunOne(snap, items[i]);
        double us = (Now() - t) * 1e6;
        warm[items[i].kind].Add(us);
        warm_all.Add(us);
      }
    }
    max_cached_nodes = std::max(max_cached_nodes, snap.cached_nodes());
    max_cached_pods = std::max(max_cached_pods, snap.cached_pods());
    max_rss_batch = std::max(max_rss_batch, CurrentRssMib());
    snap.ClearCache();
    if ((b0 / batch) % 20 == 19) {
      std::fprintf(stderr, "  %zu/%zu queries, %.0f s\n", b1, items.size(), Now() - q0);
    }
  }
  double q_wall = Now() - q0, q_cpu = CpuNow() - qc0;

  std::printf("\n%zu queries in batches of %zu (cache dropped after each batch): %.1f s wall, %.1f s "
              "CPU; at most %zu nodes / %zu pod netns cached, RSS at most %.0f MiB at a batch end\n",
              items.size(), batch, q_wall, q_cpu, max_cached_nodes, max_cached_pods, max_rss_batch);
  std::printf("\n%-12s %6s | %12s %12s | %12s %12s %12s | %s\n", "kind", "n", "warm p50 us",
              "warm p99 us", "first p50 us", "first p99 us", "first mean", "verdicts");
  auto row = [](const char* name, Stats& c, Stats& w, const std::map<std::string, size_t>* v) {
    std::string vs;
    if (v) {
      for (const auto& [k, n] : *v) absl::StrAppend(&vs, vs.empty() ? "" : " ", k, "=", n);
    }
    std::printf("%-12s %6zu | %12.1f %12.1f | %12.0f %12.0f %12.0f | %s\n", name, w.us.size(),
                w.Pct(50), w.Pct(99), c.Pct(50), c.Pct(99), c.Mean(), vs.c_str());
  };
  for (int k = 0; k < kKinds; ++k) row(kKindNames[k], cold[k], warm[k], &verdicts[k]);
  row("overall", cold_all, warm_all, nullptr);
  // The verdict mix: a healthy generated cluster should show only findings an expert agrees with.
  std::printf("\nverdict mix (first-touch pass; WARNING or worse, queries per code, most frequent first):\n");
  size_t degraded = 0, unreachable = 0, reachable = 0;
  for (int k = 0; k < kKinds; ++k) {
    for (const auto& [name, n] : verdicts[k]) {
      if (name == "reachable") reachable += n;
      if (name == "degraded") degraded += n;
      if (name == "unreachable") unreachable += n;
    }
    std::vector<std::pair<std::string, const Mix::Code*>> top;
    for (const auto& [key, c] : mix[k].codes) top.emplace_back(key, &c);
    std::stable_sort(top.begin(), top.end(),
                     [](const auto& a, const auto& b) { return a.second->queries > b.second->queries; });
    std::string vs;
    for (const auto& [name, n] : verdicts[k]) absl::StrAppend(&vs, vs.empty() ? "" : " ", name, "=", n);
    std::printf("  %-12s %s\n", kKindNames[k], vs.c_str());
    for (size_t i = 0; i < top.size() && i < 5; ++i) {
      std::printf("    %-32s %5zu  e.g. %.300s\n", top[i].first.c_str(), top[i].second->queries,
                  top[i].second->example.c_str());
    }
  }
  std::printf("MIX reachable=%zu degraded=%zu unreachable=%zu\n", reachable, degraded, unreachable);
  std::printf("\npeak RSS (ru_maxrss): %.0f MiB\n", PeakRssMib());
  // One machine-readable line for scripts.
  std::printf("RESULT load_wall_s=%.3f load_cpu_s=%.3f warm_p50_us=%.1f warm_p99_us=%.1f "
              "first_p50_us=%.0f first_p99_us=%.0f peak_rss_mib=%.0f\n",
              load_wall, load_cpu, warm_all.Pct(50), warm_all.Pct(99), cold_all.Pct(50),
              cold_all.Pct(99), PeakRssMib());
  return 0;
}
