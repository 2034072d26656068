// Writes a generated Calico cluster snapshot directory in the format sarena-diag reads
// (docs/diag-snapshot.md; docs/architecture.md "The diagnoser's contract") for the issue 3 scale
// benchmark:
//
//   gen_cluster_snapshot_tool --out DIR [--nodes 5000] [--pods_per_node 30] [--services 10000]
//                             [--seed 1] [--nodes_per_rack 250] [--pod_netns] [--hardlink]
//
// The cluster (deterministic for a given seed and sizes):
//   * nodes in racks of --nodes_per_rack, one /24 per rack (10.20.<rack>.0/24, gateway .1): the
//     underlay has several subnets, so IPIP CrossSubnet really encapsulates between racks;
//   * three Calico IP pools that select every node, picked per namespace (as
//     cni.projectcalico.org/ipv4pools does): ipip-cs-pool 10.64.0.0/13 (ipipMode CrossSubnet),
//     vxlan-pool 10.72.0.0/13 (vxlanMode Always), bgp-pool 10.80.0.0/13 (no encapsulation);
//     every node owns one /26 block of each pool (tunl0 and vxlan.calico take the block's first
//     address, as Calico's tunnel-address allocation does);
//   * per node: the block routes towards every other node as BIRD / Felix install them (IPIP:
//     "via <node> dev tunl0 proto bird onlink" across racks, "via <node> dev eth0 proto bird" in
//     the rack; VXLAN: "via <vtep> dev vxlan.calico proto 80 onlink" with a PERMANENT neighbour
//     and an fdb entry per remote VTEP; BGP: "via <node> dev eth0 proto bird", onlink across
//     racks — the fabric is assumed to carry them), blackhole routes for its own blocks, a
//     "<pod ip> dev cali<hash> scope link" route per local pod (veth "cali" +
//     sha1("<ns>.<pod>")[:11]), `ip -j` JSON exactly as iproute2 prints it (compact), sysctl -a
//     text, and kube-proxy's iptables-save (iptables mode) for all Services;
//   * Services: ClusterIP (85 %), NodePort (12 %), LoadBalancer (3 %, a third with
//     loadBalancerSourceRanges), 20 % with a second port; 0–30 ready endpoints each
//     (mean ≈ 5.3) from one Deployment; the other pods belong to Deployments without a Service.
//     externalTrafficPolicy is Cluster everywhere, so kube-proxy's rules are the same on every
//     node: nodes/<node>/iptables-save.txt is written once and hard-linked (--hardlink), as are
//     the per-pod files that are byte-identical (ip-rule.json, ip-neigh.json, sysctl.txt);
//   * pods.json / nodes.json / services.json / endpointslices.json as `kubectl get -A -o json`
//     prints them (4-space indentation, sorted keys), ippools.json as `calicoctl get ippools -o
//     json` does.
//
// Not modelled (differences from a production node): Felix's per-workload filter chains
// (cali-tw-*/cali-fw-*, which would make iptables-save differ per node), ipsets, WireGuard,
// IPv6 pod addresses, hostNetwork DaemonSet pods.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/uuid/detail/sha1.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "libsarena/model/snapshot_layout.h"

ABSL_FLAG(std::string, out, "", "Snapshot directory to create (must not exist or be empty)");
ABSL_FLAG(int, nodes, 5000, "Number of nodes");
ABSL_FLAG(int, pods_per_node, 30, "Workload pods per node (<= 60)");
ABSL_FLAG(int, services, 10000, "Number of Services");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the generator (same seed and sizes = same snapshot)");
ABSL_FLAG(int, nodes_per_rack, 250, "Nodes per rack subnet (<= 250)");
ABSL_FLAG(bool, pod_netns, true, "Write nodes/<node>/pods/<ns>/<pod>/ for every pod");
ABSL_FLAG(bool, hardlink, true,
          "Write byte-identical files once and hard-link them (iptables-save.txt of every node, "
          "the identical per-pod files)");

namespace model = sarena::model;

namespace {

// ---------------------------------------------------------------------------------------------
// Deterministic randomness (xoshiro256** seeded by splitmix64; no std distributions, whose
// results differ between standard libraries).

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t Next() {
    uint64_t r = Rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return r;
  }
  // Uniform in [0, n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  std::string Chars(absl::string_view alphabet, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(alphabet[Below(alphabet.size())]);
    return s;
  }
  std::string Hex(int n) { return Chars("0123456789abcdef", n); }
  std::string Uid() {
    return absl::StrCat(Hex(8), "-", Hex(4), "-4", Hex(3), "-", Chars("89ab", 1), Hex(3), "-",
                        Hex(12));
  }
  std::string Mac(uint8_t first) {
    std::string s = absl::StrFormat("%02x", first);
    for (int i = 0; i < 5; ++i) absl::StrAppendFormat(&s, ":%02x", Below(256));
    return s;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Kubernetes' name suffix alphabet (k8s.io/apimachinery/pkg/util/rand: no vowels, no 0/1/3).
constexpr absl::string_view kSuffixChars = "bcdfghjklmnpqrstvwxz2456789";

std::string Ip(uint32_t a) {
  return absl::StrCat(a >> 24, ".", (a >> 16) & 255, ".", (a >> 8) & 255, ".", a & 255);
}
constexpr uint32_t IpOf(int a, int b, int c, int d) {
  return (static_cast<uint32_t>(a) << 24) | (b << 16) | (c << 8) | d;
}

std::string Sha1Hex(absl::string_view s) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(s.data(), s.size());
  boost::uuids::detail::sha1::digest_type d;
  sha.get_digest(d);
  std::string out;
  for (int i = 0; i < 5; ++i) absl::StrAppendFormat(&out, "%08x", static_cast<unsigned>(d[i]));
  return out;
}

// Calico's host-side veth name: "cali" + sha1("<namespace>.<pod>")[:11].
std::string CalicoVeth(absl::string_view ns, absl::string_view pod) {
  return absl::StrCat("cali", Sha1Hex(absl::StrCat(ns, ".", pod)).substr(0, 11));
}

// kube-proxy's chain-name hash shape: 16 characters of base32 of a hash of the port name (it uses
// sha256; sha1 gives the same shape and is at hand in Boost).
std::string ChainHash(absl::string_view key) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(key.data(), key.size());
  boost::uuids::detail::sha1::digest_type d;
  sha.get_digest(d);
  uint8_t bytes[20];
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) bytes[4 * i + j] = static_cast<uint8_t>(d[i] >> (24 - 8 * j));
  }
  constexpr absl::string_view kB32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5 && out.size() < 16) {
      out.push_back(kB32[(acc >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Files.

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gen_cluster_snapshot: %s\n", what.c_str());
  std::exit(1);
}

void MkdirP(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return;
  size_t slash = path.rfind('/');
  if (errno == ENOENT && slash != std::string::npos && slash > 0) {
    MkdirP(path.substr(0, slash));
    if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return;
  }
  Die(absl::StrCat("mkdir ", path, ": ", std::strerror(errno)));
}

void WriteFile(const std::string& path, absl::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die(absl::StrCat("create ", path, ": ", std::strerror(errno)));
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(absl::StrCat("write ", path, ": ", std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) Die(absl::StrCat("close ", path, ": ", std::strerror(errno)));
}

// Writes `data` to `path`, as a hard link of `*first` when hard links are on and `*first` is
// set (else writes it and remembers the path in `*first`).
void WriteShared(const std::string& path, absl::string_view data, std::string* first,
                 bool hardlink) {
  if (hardlink && !first->empty()) {
    if (::link(first->c_str(), path.c_str()) == 0) return;
    if (errno != EXDEV && errno != EMLINK && errno != EPERM) {
      Die(absl::StrCat("link ", *first, " -> ", path, ": ", std::strerror(errno)));
    }
  }
  WriteFile(path, data);
  if (first->empty()) *first = path;
}

// Streams a large file in 8 MiB writes.
class BigWriter {
 public:
  explicit BigWriter(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) Die(absl::StrCat("create ", path, ": ", std::strerror(errno)));
  }
  std::string& buf() { return buf_; }
  void MaybeFlush() {
    if (buf_.size() >= (8u << 20)) Flush();
  }
  void Close() {
    Flush();
    if (std::fclose(f_) != 0) Die(absl::StrCat("close ", path_, ": ", std::strerror(errno)));
  }

 private:
  void Flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) {
      Die(absl::StrCat("write ", path_, ": ", std::strerror(errno)));
    }
    written_ += buf_.size();
    buf_.clear();
  }
  std::string path_;
  FILE* f_;
  std::string buf_;
  size_t written_ = 0;
};

// kubectl's JSON layout: 4-space indentation, "key": value, empty {} / [] inline. Keys are
// written in the order given (callers pass them sorted, as kubectl prints them).
class Pretty {
 public:
  explicit Pretty(std::string* out, int depth = 0) : out_(out) { first_.push_back(true); depth_ = depth; }
  Pretty& Obj(absl::string_view key = {}) { return Open(key, '{'); }
  Pretty& Arr(absl::string_view key = {}) { return Open(key, '['); }
  Pretty& End() {
    char close = closers_.back();
    closers_.pop_back();
    bool empty = first_.back();
    first_.pop_back();
    --depth_;
    if (!empty) Newline();
    out_->push_back(close);
    return *this;
  }
  Pretty& Str(absl::string_view key, absl::string_view v) {
    Key(key);
    out_->push_back('"');
    out_->append(v.data(), v.size());
    out_->push_back('"');
    return *this;
  }
  Pretty& Raw(absl::string_view key, absl::string_view v) {
    Key(key);
    out_->append(v.data(), v.size());
    return *this;
  }
  Pretty& Int(absl::string_view key, int64_t v) { return Raw(key, absl::StrCat(v)); }
  Pretty& Bool(absl::string_view key, bool v) { return Raw(key, v ? "true" : "false"); }
  Pretty& EmptyObj(absl::string_view key) { return Raw(key, "{}"); }

 private:
  Pretty& Open(absl::string_view key, char c) {
    Key(key);
    out_->push_back(c);
    closers_.push_back(c == '{' ? '}' : ']');
    first_.push_back(true);
    ++depth_;
    return *this;
  }
  void Newline() {
    out_->push_back('\n');
    out_->append(static_cast<size_t>(depth_) * 4, ' ');
  }
  void Key(absl::string_view key) {
    if (first_.size() > 1) {
      if (!first_.back()) out_->push_back(',');
      first_.back() = false;
      Newline();
    }
    if (!key.empty()) {
      out_->push_back('"');
      out_->append(key.data(), key.size());
      out_->append("\": ");
    }
  }
  std::string* out_;
  int depth_;
  std::vector<bool> first_;
  std::vector<char> closers_;
};

// ---------------------------------------------------------------------------------------------
// The cluster.

struct PoolDef {
  const char* name;
  uint32_t base;
  int prefix;
  const char* ipip;
  const char* vxlan;
  bool nat;
};
constexpr PoolDef kPools[] = {
    {"ipip-cs-pool", IpOf(10, 64, 0, 0), 13, "CrossSubnet", "Never", true},
    {"vxlan-pool", IpOf(10, 72, 0, 0), 13, "Never", "Always", true},
    {"bgp-pool", IpOf(10, 80, 0, 0), 13, "Never", "Never", false},
};
constexpr int kIpip = 0, kVxlan = 1, kBgp = 2;
constexpr const char* kClusterCidr = "10.64.0.0/11";  // kube-proxy --cluster-cidr (all pools)
constexpr int kNamespaces = 200;
constexpr const char* kCreated = "2026-01-05T09:00:00Z";

struct NodeDef {
  std::string name;
  uint32_t ip = 0;
  int rack = 0;
  uint32_t block[3] = {0, 0, 0};  // one /26 per pool
  int next_off[3] = {1, 1, 1};    // next free address in each block (offset 0 = tunnel address)
  std::string eth_mac, vtep_mac, tunl_mac;
  std::vector<int> pods;          // in slot order
};

struct PodDef {
  int ns = 0;
  std::string name, deploy, rs_hash, uid, rs_uid, container_id, mac, veth, sa_suffix;
  int node = 0;
  int pool = 0;
  uint32_t ip = 0;
  int slot = 0;
  int minute = 0;
};

struct SvcDef {
  int ns = 0;
  std::string name, uid, slice_name, slice_uid;
  int type = 0;  // 0 ClusterIP, 1 NodePort, 2 LoadBalancer
  uint32_t cluster_ip = 0;
  int nports = 1;
  int node_port[2] = {0, 0};
  uint32_t lb_ip = 0;
  bool source_ranges = false;
  std::vector<int> backends;  // pod indexes
};

std::string NsName(int ns) { return absl::StrFormat("team-%03d", ns); }

constexpr const char* kWords[] = {"api",     "web",     "auth",   "cart",     "search",
                                  "billing", "orders",  "users",  "catalog",  "gateway",
                                  "notify",  "reports", "ledger", "checkout", "profile"};

struct Cluster {
  std::vector<NodeDef> nodes;
  std::vector<PodDef> pods;
  std::vector<SvcDef> services;
  int nodes_per_rack = 250;
};

Cluster Build(int n_nodes, int ppn, int n_svc, int per_rack, uint64_t seed) {
  Rng rng(seed);
  Cluster c;
  c.nodes_per_rack = per_rack;
  c.nodes.resize(n_nodes);
  for (int i = 0; i < n_nodes; ++i) {
    NodeDef& n = c.nodes[i];
    n.name = absl::StrFormat("node-%05d", i);
    n.rack = i / per_rack;
    n.ip = IpOf(10, 20 + n.rack / 256, n.rack % 256, 2 + i % per_rack);
    for (int k = 0; k < 3; ++k) n.block[k] = kPools[k].base + static_cast<uint32_t>(i) * 64;
    n.eth_mac = rng.Mac(0x02);
    n.vtep_mac = rng.Mac(0x66);
    n.tunl_mac = "0.0.0.0";
  }
  // Deployments: one per Service (replicas drawn below), then workers without a Service.
  struct Deploy {
    int ns;
    std::string name;
    int replicas;
    int svc;  // -1 = none
  };
  std::vector<Deploy> deploys;
  const int total = n_nodes * ppn;
  int placed = 0;
  c.services.resize(n_svc);
  for (int s = 0; s < n_svc; ++s) {
    SvcDef& sv = c.services[s];
    sv.ns = s % kNamespaces;
    sv.name = absl::StrCat(kWords[rng.Below(std::size(kWords))], "-", s);
    uint64_t u = rng.Below(100);
    int replicas = u < 1 ? 0 : u < 11 ? 1 : u < 36 ? 2 : u < 61 ? 3 : u < 81 ? 5 : u < 96 ? 10 : 30;
    replicas = std::min(replicas, total - placed);
    placed += replicas;
    deploys.push_back({sv.ns, sv.name, replicas, s});
  }
  for (int w = 0; placed < total; ++w) {
    int replicas = std::min(10, total - placed);
    placed += replicas;
    deploys.push_back({w % kNamespaces, absl::StrCat("worker-", w), replicas, -1});
  }
  // Scheduling: a shuffled list of (node, slot) seats.
  std::vector<int> seats(total);
  for (int i = 0; i < total; ++i) seats[i] = i / ppn;
  for (int i = total - 1; i > 0; --i) std::swap(seats[i], seats[rng.Below(i + 1)]);
  c.pods.reserve(total);
  for (const Deploy& d : deploys) {
    std::string rs_hash = rng.Chars(kSuffixChars, 10);
    std::string rs_uid = rng.Uid();
    for (int r = 0; r < d.replicas; ++r) {
      PodDef p;
      p.ns = d.ns;
      p.deploy = d.name;
      p.rs_hash = rs_hash;
      p.rs_uid = rs_uid;
      p.name = absl::StrCat(d.name, "-", rs_hash, "-", rng.Chars(kSuffixChars, 5));
      p.uid = rng.Uid();
      p.container_id = rng.Hex(64);
      p.sa_suffix = rng.Chars(kSuffixChars, 5);
      p.mac = rng.Mac(0x0a ^ static_cast<uint8_t>(rng.Below(64) << 2));
      p.veth = CalicoVeth(NsName(p.ns), p.name);
      p.node = seats[c.pods.size()];
      p.pool = p.ns % 3;
      NodeDef& n = c.nodes[p.node];
      p.ip = n.block[p.pool] + static_cast<uint32_t>(n.next_off[p.pool]++);
      p.slot = static_cast<int>(n.pods.size());
      p.minute = static_cast<int>(rng.Below(50));
      n.pods.push_back(static_cast<int>(c.pods.size()));
      if (d.svc >= 0) c.services[d.svc].backends.push_back(static_cast<int>(c.pods.size()));
      c.pods.push_back(std::move(p));
    }
  }
  // Service addresses and types.
  std::unordered_set<uint32_t> used_ips;
  int next_node_port = 30000, lbs = 0;
  for (SvcDef& sv : c.services) {
    sv.uid = rng.Uid();
    sv.slice_name = absl::StrCat(sv.name, "-", rng.Chars(kSuffixChars, 5));
    sv.slice_uid = rng.Uid();
    do {
      sv.cluster_ip = IpOf(10, 96, 0, 0) + 16 + static_cast<uint32_t>(rng.Below((1u << 20) - 32));
    } while (!used_ips.insert(sv.cluster_ip).second);
    sv.nports = rng.Below(100) < 20 ? 2 : 1;
    uint64_t t = rng.Below(100);
    sv.type = t < 85 ? 0 : t < 97 ? 1 : 2;
    if (sv.type != 0) {
      if (next_node_port + sv.nports > 32768) {
        sv.type = 0;
      } else {
        for (int p = 0; p < sv.nports; ++p) sv.node_port[p] = next_node_port++;
      }
    }
    if (sv.type == 2) {
      ++lbs;
      sv.lb_ip = IpOf(172, 30, 0, 0) + static_cast<uint32_t>(lbs);
      sv.source_ranges = rng.Below(3) == 0;
    }
  }
  return c;
}

struct PortDef {
  const char* name;
  int port;
  int target;
};
constexpr PortDef kPorts[] = {{"http", 80, 8080}, {"metrics", 9090, 9090}};

std::string Timestamp(int minute) { return absl::StrFormat("2026-01-05T09:%02d:00Z", 10 + minute % 50); }

// ---------------------------------------------------------------------------------------------
// cluster/*.json

void ListHeader(std::string* out) { out->append("{\n    \"apiVersion\": \"v1\",\n    \"items\": ["); }
void ListFooter(std::string* out, bool any) {
  if (any) out->append("\n    ");
  out->append("],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n");
}

void AppendPod(std::string* out, const Cluster& c, const PodDef& p, int rv) {
  const NodeDef& n = c.nodes[p.node];
  std::string ns = NsName(p.ns);
  std::string ip = Ip(p.ip);
  std::string image = absl::StrCat("registry.example.com/", ns, "/", p.deploy, ":1.", p.minute % 9, ".", p.minute % 4);
  std::string token = absl::StrCat("kube-api-access-", p.sa_suffix);
  std::string t0 = Timestamp(p.minute), t1 = Timestamp(p.minute + 1);
  Pretty j(out, 2);
  j.Obj();
  j.Str("apiVersion", "v1").Str("kind", "Pod");
  j.Obj("metadata");
  j.Obj("annotations")
      .Str("cni.projectcalico.org/containerID", p.container_id)
      .Str("cni.projectcalico.org/podIP", absl::StrCat(ip, "/32"))
      .Str("cni.projectcalico.org/podIPs", absl::StrCat(ip, "/32"))
      .End();
  j.Str("creationTimestamp", t0).Str("generateName", absl::StrCat(p.deploy, "-", p.rs_hash, "-"));
  j.Obj("labels").Str("app", p.deploy).Str("pod-template-hash", p.rs_hash).End();
  j.Str("name", p.name).Str("namespace", ns);
  j.Arr("ownerReferences")
      .Obj()
      .Str("apiVersion", "apps/v1")
      .Bool("blockOwnerDeletion", true)
      .Bool("controller", true)
      .Str("kind", "ReplicaSet")
      .Str("name", absl::StrCat(p.deploy, "-", p.rs_hash))
      .Str("uid", p.rs_uid)
      .End()
      .End();
  j.Str("resourceVersion", absl::StrCat(rv)).Str("uid", p.uid);
  j.End();  // metadata
  j.Obj("spec");
  j.Arr("containers").Obj();
  j.Str("image", image).Str("imagePullPolicy", "IfNotPresent");
  auto probe = [&](absl::string_view key, absl::string_view path) {
    j.Obj(key).Int("failureThreshold", 3);
    j.Obj("httpGet").Str("path", path).Int("port", 8080).Str("scheme", "HTTP").End();
    j.Int("periodSeconds", 10).Int("successThreshold", 1).Int("timeoutSeconds", 1).End();
  };
  j.Str("name", "app");
  j.Arr("ports");
  j.Obj().Int("containerPort", 8080).Str("name", "http").Str("protocol", "TCP").End();
  j.Obj().Int("containerPort", 9090).Str("name", "metrics").Str("protocol", "TCP").End();
  j.End();
  probe("readinessProbe", "/ready");
  j.Obj("resources");
  j.Obj("limits").Str("memory", "512Mi").End();
  j.Obj("requests").Str("cpu", "100m").Str("memory", "256Mi").End();
  j.End();
  j.Str("terminationMessagePath", "/dev/termination-log").Str("terminationMessagePolicy", "File");
  j.Arr("volumeMounts")
      .Obj()
      .Str("mountPath", "/var/run/secrets/kubernetes.io/serviceaccount")
      .Str("name", token)
      .Bool("readOnly", true)
      .End()
      .End();
  j.End().End();  // container, containers
  j.Str("dnsPolicy", "ClusterFirst").Bool("enableServiceLinks", true).Str("nodeName", n.name);
  j.Str("preemptionPolicy", "PreemptLowerPriority").Int("priority", 0);
  j.Str("restartPolicy", "Always").Str("schedulerName", "default-scheduler");
  j.EmptyObj("securityContext");
  j.Str("serviceAccount", "default").Str("serviceAccountName", "default");
  j.Int("terminationGracePeriodSeconds", 30);
  j.Arr("tolerations");
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    j.Obj().Str("effect", "NoExecute").Str("key", key).Str("operator", "Exists");
    j.Int("tolerationSeconds", 300).End();
  }
  j.End();
  j.Arr("volumes").Obj().Str("name", token);
  j.Obj("projected").Int("defaultMode", 420).Arr("sources");
  j.Obj().Obj("serviceAccountToken").Int("expirationSeconds", 3607).Str("path", "token").End().End();
  j.Obj().Obj("configMap").Arr("items").Obj().Str("key", "ca.crt").Str("path", "ca.crt").End().End();
  j.Str("name", "kube-root-ca.crt").End().End();
  j.Obj().Obj("downwardAPI").Arr("items").Obj();
  j.Obj("fieldRef").Str("apiVersion", "v1").Str("fieldPath", "metadata.namespace").End();
  j.Str("path", "namespace").End().End().End().End();
  j.End().End();  // sources, projected
  j.End().End();  // volume, volumes
  j.End();        // spec
  j.Obj("status");
  j.Arr("conditions");
  for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    j.Obj().Raw("lastProbeTime", "null").Str("lastTransitionTime", t1).Str("status", "True");
    j.Str("type", type).End();
  }
  j.End();
  j.Arr("containerStatuses").Obj();
  j.Str("containerID", absl::StrCat("containerd://", p.container_id)).Str("image", image);
  j.Str("imageID", absl::StrCat(image.substr(0, image.rfind(':')), "@sha256:", Sha1Hex(image), Sha1Hex(p.deploy).substr(0, 24)));
  j.EmptyObj("lastState").Str("name", "app").Bool("ready", true).Int("restartCount", 0);
  j.Bool("started", true).Obj("state").Obj("running").Str("startedAt", t1).End().End();
  j.End().End();
  j.Str("hostIP", Ip(n.ip)).Arr("hostIPs").Obj().Str("ip", Ip(n.ip)).End().End();
  j.Str("phase", "Running").Str("podIP", ip).Arr("podIPs").Obj().Str("ip", ip).End().End();
  j.Str("qosClass", "Burstable").Str("startTime", t0);
  j.End();  // status
  j.End();
}

void WritePods(const std::string& path, const Cluster& c) {
  BigWriter w(path);
  ListHeader(&w.buf());
  int rv = 200000;
  for (size_t i = 0; i < c.pods.size(); ++i) {
    if (i) w.buf().push_back(',');
    w.buf().append("\n        ");
    AppendPod(&w.buf(), c, c.pods[i], rv++);
    w.MaybeFlush();
  }
  ListFooter(&w.buf(), !c.pods.empty());
  w.Close();
}

void WriteNodes(const std::string& path, const Cluster& c, Rng& rng) {
  BigWriter w(path);
  ListHeader(&w.buf());
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const NodeDef& n = c.nodes[i];
    if (i) w.buf().push_back(',');
    w.buf().append("\n        ");
    Pretty j(&w.buf(), 2);
    j.Obj().Str("apiVersion", "v1").Str("kind", "Node");
    j.Obj("metadata").Obj("annotations");
    j.Str("node.alpha.kubernetes.io/ttl", "0");
    j.Str("projectcalico.org/IPv4Address", absl::StrCat(Ip(n.ip), "/24"));
    j.Str("projectcalico.org/IPv4IPIPTunnelAddr", Ip(n.block[kIpip]));
    j.Str("projectcalico.org/IPv4VXLANTunnelAddr", Ip(n.block[kVxlan]));
    j.Str("volumes.kubernetes.io/controller-managed-attach-detach", "true");
    j.End();
    j.Str("creationTimestamp", kCreated);
    j.Obj("labels")
        .Str("beta.kubernetes.io/arch", "amd64")
        .Str("beta.kubernetes.io/os", "linux")
        .Str("kubernetes.io/arch", "amd64")
        .Str("kubernetes.io/hostname", n.name)
        .Str("kubernetes.io/os", "linux")
        .Str("node.kubernetes.io/instance-type", "m6i.4xlarge")
        .Str("topology.kubernetes.io/zone", absl::StrFormat("rack-%02d", n.rack))
        .End();
    j.Str("name", n.name).Str("resourceVersion", absl::StrCat(100000 + i)).Str("uid", rng.Uid());
    j.End();
    j.EmptyObj("spec");
    j.Obj("status");
    j.Arr("addresses");
    j.Obj().Str("address", Ip(n.ip)).Str("type", "InternalIP").End();
    j.Obj().Str("address", n.name).Str("type", "Hostname").End();
    j.End();
    auto resources = [&](absl::string_view key, absl::string_view cpu, absl::string_view mem) {
      j.Obj(key).Str("cpu", cpu).Str("ephemeral-storage", "95001842732").Str("hugepages-1Gi", "0");
      j.Str("hugepages-2Mi", "0").Str("memory", mem).Str("pods", "110").End();
    };
    resources("allocatable", "15890m", "63216884Ki");
    resources("capacity", "16", "65023732Ki");
    j.Arr("conditions");
    struct Cond {
      const char *reason, *message, *status, *type;
    };
    for (const Cond& cd : {Cond{"CalicoIsUp", "Calico is running on this node", "False", "NetworkUnavailable"},
                           Cond{"KubeletHasSufficientMemory", "kubelet has sufficient memory available", "False", "MemoryPressure"},
                           Cond{"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "False", "DiskPressure"},
                           Cond{"KubeletHasSufficientPID", "kubelet has sufficient PID available", "False", "PIDPressure"},
                           Cond{"KubeletReady", "kubelet is posting ready status", "True", "Ready"}}) {
      j.Obj().Str("lastHeartbeatTime", "2026-01-05T09:59:00Z").Str("lastTransitionTime", kCreated);
      j.Str("message", cd.message).Str("reason", cd.reason).Str("status", cd.status).Str("type", cd.type).End();
    }
    j.End();
    j.Obj("daemonEndpoints").Obj("kubeletEndpoint").Int("Port", 10250).End().End();
    j.Arr("images");
    for (const char* img : {"docker.io/calico/node:v3.27.0", "docker.io/calico/cni:v3.27.0",
                            "registry.k8s.io/kube-proxy:v1.28.4", "registry.k8s.io/pause:3.9",
                            "registry.k8s.io/coredns/coredns:v1.10.1"}) {
      j.Obj().Arr("names").Raw("", absl::StrCat("\"", img, "\"")).End();
      j.Int("sizeBytes", 10000000 + static_cast<int64_t>(rng.Below(90000000))).End();
    }
    j.End();
    j.Obj("nodeInfo")
        .Str("architecture", "amd64")
        .Str("bootID", rng.Uid())
        .Str("containerRuntimeVersion", "containerd://1.7.2")
        .Str("kernelVersion", "6.1.0-13-amd64")
        .Str("kubeProxyVersion", "v1.28.4")
        .Str("kubeletVersion", "v1.28.4")
        .Str("machineID", rng.Hex(32))
        .Str("operatingSystem", "linux")
        .Str("osImage", "Debian GNU/Linux 12 (bookworm)")
        .Str("systemUUID", rng.Uid())
        .End();
    j.End();  // status
    j.End();
    w.MaybeFlush();
  }
  ListFooter(&w.buf(), !c.nodes.empty());
  w.Close();
}

void WriteServices(const std::string& path, const Cluster& c) {
  BigWriter w(path);
  ListHeader(&w.buf());
  for (size_t i = 0; i < c.services.size(); ++i) {
    const SvcDef& s = c.services[i];
    if (i) w.buf().push_back(',');
    w.buf().append("\n        ");
    Pretty j(&w.buf(), 2);
    j.Obj().Str("apiVersion", "v1").Str("kind", "Service");
    j.Obj("metadata").Str("creationTimestamp", kCreated);
    j.Obj("labels").Str("app", s.name).End();
    j.Str("name", s.name).Str("namespace", NsName(s.ns));
    j.Str("resourceVersion", absl::StrCat(50000 + i)).Str("uid", s.uid).End();
    j.Obj("spec");
    j.Str("clusterIP", Ip(s.cluster_ip)).Arr("clusterIPs").Raw("", absl::StrCat("\"", Ip(s.cluster_ip), "\"")).End();
    if (s.type != 0) j.Str("externalTrafficPolicy", "Cluster");
    j.Str("internalTrafficPolicy", "Cluster");
    j.Arr("ipFamilies").Raw("", "\"IPv4\"").End().Str("ipFamilyPolicy", "SingleStack");
    if (s.source_ranges) j.Arr("loadBalancerSourceRanges").Raw("", "\"198.51.100.0/24\"").End();
    j.Arr("ports");
    for (int p = 0; p < s.nports; ++p) {
      j.Obj().Str("name", kPorts[p].name);
      if (s.node_port[p]) j.Int("nodePort", s.node_port[p]);
      j.Int("port", kPorts[p].port).Str("protocol", "TCP").Int("targetPort", kPorts[p].target).End();
    }
    j.End();
    j.Obj("selector").Str("app", s.name).End();
    j.Str("sessionAffinity", "None");
    j.Str("type", s.type == 0 ? "ClusterIP" : s.type == 1 ? "NodePort" : "LoadBalancer");
    j.End();
    j.Obj("status").Obj("loadBalancer");
    if (s.type == 2) j.Arr("ingress").Obj().Str("ip", Ip(s.lb_ip)).Str("ipMode", "VIP").End().End();
    j.End().End();
    j.End();
    w.MaybeFlush();
  }
  ListFooter(&w.buf(), !c.services.empty());
  w.Close();
}

void WriteSlices(const std::string& path, const Cluster& c) {
  BigWriter w(path);
  ListHeader(&w.buf());
  for (size_t i = 0; i < c.services.size(); ++i) {
    const SvcDef& s = c.services[i];
    if (i) w.buf().push_back(',');
    w.buf().append("\n        ");
    Pretty j(&w.buf(), 2);
    j.Obj().Str("addressType", "IPv4").Str("apiVersion", "discovery.k8s.io/v1");
    j.Arr("endpoints");
    for (int b : s.backends) {
      const PodDef& p = c.pods[b];
      const NodeDef& n = c.nodes[p.node];
      j.Obj().Arr("addresses").Raw("", absl::StrCat("\"", Ip(p.ip), "\"")).End();
      j.Obj("conditions").Bool("ready", true).Bool("serving", true).Bool("terminating", false).End();
      j.Str("nodeName", n.name);
      j.Obj("targetRef").Str("kind", "Pod").Str("name", p.name).Str("namespace", NsName(p.ns));
      j.Str("uid", p.uid).End();
      j.Str("zone", absl::StrFormat("rack-%02d", n.rack)).End();
    }
    j.End();
    j.Str("kind", "EndpointSlice");
    j.Obj("metadata").Str("creationTimestamp", kCreated).Str("generateName", absl::StrCat(s.name, "-"));
    j.Obj("labels")
        .Str("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io")
        .Str("kubernetes.io/service-name", s.name)
        .End();
    j.Str("name", s.slice_name).Str("namespace", NsName(s.ns));
    j.Arr("ownerReferences").Obj().Str("apiVersion", "v1").Bool("blockOwnerDeletion", true);
    j.Bool("controller", true).Str("kind", "Service").Str("name", s.name).Str("uid", s.uid).End().End();
    j.Str("resourceVersion", absl::StrCat(70000 + i)).Str("uid", s.slice_uid).End();
    j.Arr("ports");
    for (int p = 0; p < s.nports; ++p) {
      j.Obj().Str("name", kPorts[p].name).Int("port", kPorts[p].target).Str("protocol", "TCP").End();
    }
    j.End();
    j.End();
    w.MaybeFlush();
  }
  ListFooter(&w.buf(), !c.services.empty());
  w.Close();
}

void WritePools(const std::string& path) {
  std::string out = "{\n    \"apiVersion\": \"projectcalico.org/v3\",\n    \"items\": [";
  int i = 0;
  for (const PoolDef& p : kPools) {
    if (i) out.push_back(',');
    out.append("\n        ");
    Pretty j(&out, 2);
    j.Obj().Str("apiVersion", "projectcalico.org/v3").Str("kind", "IPPool");
    j.Obj("metadata").Str("creationTimestamp", kCreated).Str("name", p.name);
    j.Str("resourceVersion", absl::StrCat(900 + i)).Str("uid", absl::StrFormat("5f0c0000-1d2e-4b3c-9a8b-%012d", i)).End();
    j.Obj("spec").Arr("allowedUses").Raw("", "\"Workload\"").Raw("", "\"Tunnel\"").End();
    j.Int("blockSize", 26).Str("cidr", absl::StrCat(Ip(p.base), "/", p.prefix)).Bool("disabled", false);
    j.Str("ipipMode", p.ipip).Bool("natOutgoing", p.nat).Str("nodeSelector", "all()");
    j.Str("vxlanMode", p.vxlan).End();
    j.End();
    ++i;
  }
  out.append("\n    ],\n    \"kind\": \"IPPoolList\",\n    \"metadata\": {\n        \"resourceVersion\": \"950\"\n    }\n}\n");
  WriteFile(path, out);
}

// ---------------------------------------------------------------------------------------------
// iptables-save (kube-proxy iptables mode + Calico's generic chains).

struct Table {
  std::string name;
  std::vector<std::string> builtin;  // "INPUT ACCEPT"
  std::vector<std::string> chains;   // user chains
  std::vector<std::pair<std::string, std::string>> rules;  // chain, rule text after "-A CHAIN "

  void Add(const std::string& chain, std::string rule) { rules.emplace_back(chain, std::move(rule)); }
  void Chain(std::string name) { chains.push_back(std::move(name)); }
  void Emit(std::string* out) {
    absl::StrAppend(out, "# Generated by iptables-save v1.8.9 (nf_tables) on Mon Jan  5 10:00:00 2026\n*", name, "\n");
    for (const std::string& b : builtin) absl::StrAppend(out, ":", b, " [0:0]\n");
    std::sort(chains.begin(), chains.end());
    chains.erase(std::unique(chains.begin(), chains.end()), chains.end());
    for (const std::string& ch : chains) absl::StrAppend(out, ":", ch, " - [0:0]\n");
    // Rules grouped by chain: built-in chains first (in the order given), then user chains
    // sorted, keeping the order of rules within a chain.
    std::vector<std::string> order;
    for (const std::string& b : builtin) order.push_back(b.substr(0, b.find(' ')));
    order.insert(order.end(), chains.begin(), chains.end());
    std::vector<std::pair<size_t, size_t>> idx;  // (chain order, input order)
    std::unordered_map<std::string, size_t> pos;
    for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
    idx.reserve(rules.size());
    for (size_t i = 0; i < rules.size(); ++i) {
      auto it = pos.find(rules[i].first);
      if (it == pos.end()) Die(absl::StrCat("rule for undeclared chain ", rules[i].first));
      idx.emplace_back(it->second, i);
    }
    std::sort(idx.begin(), idx.end());
    for (const auto& [o, i] : idx) absl::StrAppend(out, "-A ", rules[i].first, " ", rules[i].second, "\n");
    absl::StrAppend(out, "COMMIT\n# Completed on Mon Jan  5 10:00:00 2026\n");
  }
};

std::string Iptables(const Cluster& c, Rng& rng) {
  Table filter{"filter", {"INPUT ACCEPT", "FORWARD ACCEPT", "OUTPUT ACCEPT"}, {}, {}};
  Table nat{"nat", {"PREROUTING ACCEPT", "INPUT ACCEPT", "OUTPUT ACCEPT", "POSTROUTING ACCEPT"}, {}, {}};
  Table mangle{"mangle", {"PREROUTING ACCEPT", "INPUT ACCEPT", "FORWARD ACCEPT", "OUTPUT ACCEPT", "POSTROUTING ACCEPT"}, {}, {}};
  for (const char* ch : {"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY", "KUBE-PROXY-CANARY"}) mangle.Chain(ch);

  // filter: kube-proxy's skeleton, Calico's generic chains.
  for (const char* ch : {"KUBE-EXTERNAL-SERVICES", "KUBE-FIREWALL", "KUBE-FORWARD", "KUBE-KUBELET-CANARY",
                         "KUBE-NODEPORTS", "KUBE-PROXY-CANARY", "KUBE-PROXY-FIREWALL", "KUBE-SERVICES",
                         "cali-FORWARD", "cali-INPUT", "cali-OUTPUT", "cali-from-hep-forward",
                         "cali-to-hep-forward", "cali-wl-to-host"}) {
    filter.Chain(ch);
  }
  filter.Add("INPUT", "-m comment --comment \"cali:Cz_u1IQiXIMmKD4c\" -j cali-INPUT");
  filter.Add("INPUT", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL");
  filter.Add("INPUT", "-m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS");
  filter.Add("INPUT", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes externally visible service portals\" -j KUBE-EXTERNAL-SERVICES");
  filter.Add("INPUT", "-j KUBE-FIREWALL");
  filter.Add("FORWARD", "-m comment --comment \"cali:wUHhoiAYhphO9Mso\" -j cali-FORWARD");
  filter.Add("FORWARD", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL");
  filter.Add("FORWARD", "-m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD");
  filter.Add("FORWARD", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES");
  filter.Add("FORWARD", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes externally visible service portals\" -j KUBE-EXTERNAL-SERVICES");
  filter.Add("OUTPUT", "-m comment --comment \"cali:tVnHkvAo15HuiPy0\" -j cali-OUTPUT");
  filter.Add("OUTPUT", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL");
  filter.Add("OUTPUT", "-m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES");
  filter.Add("OUTPUT", "-j KUBE-FIREWALL");
  filter.Add("KUBE-FIREWALL", "! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP");
  filter.Add("KUBE-FIREWALL", "-m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP");
  filter.Add("KUBE-FORWARD", "-m conntrack --ctstate INVALID -j DROP");
  filter.Add("KUBE-FORWARD", "-m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT");
  filter.Add("KUBE-FORWARD", "-m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT");
  filter.Add("cali-FORWARD", "-m comment --comment \"cali:vjrMJCRpqwy5oRoX\" -j MARK --set-xmark 0x0/0xe0000");
  filter.Add("cali-FORWARD", "-m comment --comment \"cali:A_sPAO0mcxbT9mOV\" -m mark --mark 0x0/0x10000 -j cali-from-hep-forward");
  filter.Add("cali-FORWARD", "-i cali+ -m comment --comment \"cali:8ZoYfO5HKXWbB3pk\" -j ACCEPT");
  filter.Add("cali-FORWARD", "-o cali+ -m comment --comment \"cali:jdEuaPBe14V2hutn\" -j ACCEPT");
  filter.Add("cali-FORWARD", "-i tunl0 -m comment --comment \"cali:Tl2BkfpXp6aHv8Ax\" -j ACCEPT");
  filter.Add("cali-FORWARD", "-i vxlan.calico -m comment --comment \"cali:uP2BGkZU9ocUuGNX\" -j ACCEPT");
  filter.Add("cali-FORWARD", "-m comment --comment \"cali:12bc6HljsMKsmfr-\" -j cali-to-hep-forward");
  filter.Add("cali-INPUT", "-p 4 -s 10.20.0.0/14 -m comment --comment \"cali:PajejrV4aFdkZojI\" -m addrtype --dst-type LOCAL -j ACCEPT");
  filter.Add("cali-INPUT", "-p udp -s 10.20.0.0/14 -m comment --comment \"cali:mEKQxkxO4v8U6WLZ\" -m udp --dport 4789 -m addrtype --dst-type LOCAL -j ACCEPT");
  filter.Add("cali-INPUT", "-i cali+ -m comment --comment \"cali:muqlHIVhb5ozKo9M\" -g cali-wl-to-host");
  filter.Add("cali-wl-to-host", "-m comment --comment \"cali:Ee9Sbo10IpVujdIY\" -j ACCEPT");
  filter.Add("cali-OUTPUT", "-m comment --comment \"cali:Mq1_rAdXXH3YkrzW\" -m mark --mark 0x10000/0x10000 -j ACCEPT");

  // nat skeleton.
  for (const char* ch : {"KUBE-MARK-DROP", "KUBE-MARK-MASQ", "KUBE-NODEPORTS", "KUBE-POSTROUTING",
                         "KUBE-SERVICES", "cali-POSTROUTING", "cali-nat-outgoing"}) {
    nat.Chain(ch);
  }
  nat.Add("PREROUTING", "-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES");
  nat.Add("OUTPUT", "-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES");
  nat.Add("POSTROUTING", "-m comment --comment \"cali:O3lYWMrLQYEMJtB5\" -j cali-POSTROUTING");
  nat.Add("POSTROUTING", "-m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING");
  nat.Add("KUBE-MARK-DROP", "-j MARK --set-xmark 0x8000/0x8000");
  nat.Add("KUBE-MARK-MASQ", "-j MARK --set-xmark 0x4000/0x4000");
  nat.Add("KUBE-POSTROUTING", "-m mark ! --mark 0x4000/0x4000 -j RETURN");
  nat.Add("KUBE-POSTROUTING", "-j MARK --set-xmark 0x4000/0x0");
  nat.Add("KUBE-POSTROUTING", "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully");
  nat.Add("cali-POSTROUTING", "-m comment --comment \"cali:Z-c7XtVd2Bq7s_hA\" -j cali-nat-outgoing");
  for (const PoolDef& p : kPools) {
    if (!p.nat) continue;
    nat.Add("cali-nat-outgoing", absl::StrCat("-s ", Ip(p.base), "/", p.prefix, " ! -d ", kClusterCidr,
                                              " -m comment --comment \"cali:", ChainHash(p.name).substr(0, 16),
                                              "\" -j MASQUERADE --random-fully"));
  }

  // Per Service port, in a shuffled order (kube-proxy walks a map).
  struct SvcPort {
    int svc, port;
  };
  std::vector<SvcPort> ports;
  for (size_t s = 0; s < c.services.size(); ++s) {
    for (int p = 0; p < c.services[s].nports; ++p) ports.push_back({static_cast<int>(s), p});
  }
  for (size_t i = ports.size(); i > 1; --i) std::swap(ports[i - 1], ports[rng.Below(i)]);
  std::vector<std::string> lb_rules;
  for (const SvcPort& sp : ports) {
    const SvcDef& s = c.services[sp.svc];
    const PortDef& port = kPorts[sp.port];
    std::string spn = absl::StrCat(NsName(s.ns), "/", s.name, ":", port.name);
    std::string hash = ChainHash(absl::StrCat(spn, "tcp"));
    std::string svc = absl::StrCat("KUBE-SVC-", hash), ext = absl::StrCat("KUBE-EXT-", hash),
                fw = absl::StrCat("KUBE-FW-", hash);
    std::string cip = Ip(s.cluster_ip);
    int np = s.node_port[sp.port];
    if (s.backends.empty()) {
      filter.Add("KUBE-SERVICES", absl::StrCat("-d ", cip, "/32 -p tcp -m comment --comment \"", spn,
                                               " has no endpoints\" -m tcp --dport ", port.port,
                                               " -j REJECT --reject-with icmp-port-unreachable"));
      if (np) {
        filter.Add("KUBE-EXTERNAL-SERVICES",
                   absl::StrCat("-p tcp -m comment --comment \"", spn, " has no endpoints\" -m addrtype --dst-type LOCAL -m tcp --dport ",
                                np, " -j REJECT --reject-with icmp-port-unreachable"));
      }
      if (s.type == 2) {
        filter.Add("KUBE-EXTERNAL-SERVICES",
                   absl::StrCat("-d ", Ip(s.lb_ip), "/32 -p tcp -m comment --comment \"", spn,
                                " has no endpoints\" -m tcp --dport ", port.port,
                                " -j REJECT --reject-with icmp-port-unreachable"));
      }
      continue;
    }
    nat.Chain(svc);
    nat.Add("KUBE-SERVICES", absl::StrCat("-d ", cip, "/32 -p tcp -m comment --comment \"", spn,
                                          " cluster IP\" -m tcp --dport ", port.port, " -j ", svc));
    nat.Add(svc, absl::StrCat("! -s ", kClusterCidr, " -d ", cip, "/32 -p tcp -m comment --comment \"", spn,
                              " cluster IP\" -m tcp --dport ", port.port, " -j KUBE-MARK-MASQ"));
    if (np || s.type == 2) {
      nat.Chain(ext);
      nat.Add(ext, absl::StrCat("-m comment --comment \"masquerade traffic for ", spn,
                                " external destinations\" -j KUBE-MARK-MASQ"));
      nat.Add(ext, absl::StrCat("-j ", svc));
    }
    if (np) {
      nat.Add("KUBE-NODEPORTS", absl::StrCat("-p tcp -m comment --comment \"", spn, "\" -m tcp --dport ", np,
                                             " -j ", ext));
    }
    if (s.type == 2) {
      std::string lb = Ip(s.lb_ip);
      if (s.source_ranges) {
        nat.Chain(fw);
        lb_rules.push_back(absl::StrCat("-d ", lb, "/32 -p tcp -m comment --comment \"", spn,
                                        " loadbalancer IP\" -m tcp --dport ", port.port, " -j ", fw));
        nat.Add(fw, absl::StrCat("-s 198.51.100.0/24 -m comment --comment \"", spn, " loadbalancer IP\" -j ", ext));
        nat.Add(fw, absl::StrCat("-m comment --comment \"", spn, " loadbalancer IP\" -j KUBE-MARK-DROP"));
        filter.Add("KUBE-PROXY-FIREWALL",
                   absl::StrCat("-d ", lb, "/32 -p tcp -m comment --comment \"", spn, " traffic not accepted by ", fw,
                                "\" -m tcp --dport ", port.port, " -j DROP"));
      } else {
        lb_rules.push_back(absl::StrCat("-d ", lb, "/32 -p tcp -m comment --comment \"", spn,
                                        " loadbalancer IP\" -m tcp --dport ", port.port, " -j ", ext));
      }
    }
    size_t n = s.backends.size();
    for (size_t i = 0; i < n; ++i) {
      const PodDef& p = c.pods[s.backends[i]];
      std::string ep = absl::StrCat(Ip(p.ip), ":", port.target);
      std::string sep = absl::StrCat("KUBE-SEP-", ChainHash(absl::StrCat(spn, "tcp", ep)));
      nat.Chain(sep);
      std::string stat = i + 1 < n ? absl::StrFormat(" -m statistic --mode random --probability %.11f",
                                                     1.0 / static_cast<double>(n - i))
                                   : std::string();
      nat.Add(svc, absl::StrCat("-m comment --comment \"", spn, " -> ", ep, "\"", stat, " -j ", sep));
      nat.Add(sep, absl::StrCat("-s ", Ip(p.ip), "/32 -m comment --comment \"", spn, "\" -j KUBE-MARK-MASQ"));
      nat.Add(sep, absl::StrCat("-p tcp -m comment --comment \"", spn, "\" -m tcp -j DNAT --to-destination ", ep));
    }
  }
  for (std::string& r : lb_rules) nat.Add("KUBE-SERVICES", std::move(r));
  nat.Add("KUBE-SERVICES",
          "-m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" "
          "-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS");
  std::string out;
  mangle.Emit(&out);
  filter.Emit(&out);
  nat.Emit(&out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Per-node and per-pod files (iproute2 6.1 `ip -j` / `bridge -j` output, compact).

constexpr const char* kLinkTail =
    ",\"inet6_addr_gen_mode\":\"eui64\",\"num_tx_queues\":%d,\"num_rx_queues\":%d,\"gso_max_size\":65536,"
    "\"gso_max_segs\":65535,\"tso_max_size\":524280,\"tso_max_segs\":65535,\"gro_max_size\":65536}";

// One `ip -d -j link` object; `extra` goes after "link_type"..."broadcast" (link_netnsid etc.)
// and `linkinfo` before inet6_addr_gen_mode.
void LinkObj(std::string* o, int ifindex, absl::string_view ifname, absl::string_view flags, int mtu,
             absl::string_view qdisc, absl::string_view operstate, int txqlen, absl::string_view link_type,
             absl::string_view address, absl::string_view broadcast, absl::string_view pre, absl::string_view post,
             absl::string_view linkinfo, int min_mtu, int max_mtu, int queues) {
  absl::StrAppend(o, "{\"ifindex\":", ifindex, pre, ",\"ifname\":\"", ifname, "\",\"flags\":[", flags,
                  "],\"mtu\":", mtu, ",\"qdisc\":\"", qdisc, "\",\"operstate\":\"", operstate,
                  "\",\"linkmode\":\"DEFAULT\",\"group\":\"default\",\"txqlen\":", txqlen, ",\"link_type\":\"",
                  link_type, "\",\"address\":\"", address, "\",\"broadcast\":\"", broadcast, "\"", post,
                  ",\"promiscuity\":0,\"allmulti\":0,\"min_mtu\":", min_mtu, ",\"max_mtu\":", max_mtu);
  if (!linkinfo.empty()) absl::StrAppend(o, ",\"linkinfo\":", linkinfo);
  absl::StrAppendFormat(o, kLinkTail, queues, queues);
}

// `ip -j addr` object (same leading fields, addr_info at the end).
void AddrObj(std::string* o, int ifindex, absl::string_view ifname, absl::string_view flags, int mtu,
             absl::string_view qdisc, absl::string_view operstate, int txqlen, absl::string_view link_type,
             absl::string_view address, absl::string_view broadcast, absl::string_view pre, absl::string_view post,
             absl::string_view addr_info) {
  absl::StrAppend(o, "{\"ifindex\":", ifindex, pre, ",\"ifname\":\"", ifname, "\",\"flags\":[", flags,
                  "],\"mtu\":", mtu, ",\"qdisc\":\"", qdisc, "\",\"operstate\":\"", operstate,
                  "\",\"group\":\"default\",\"txqlen\":", txqlen, ",\"link_type\":\"", link_type,
                  "\",\"address\":\"", address, "\",\"broadcast\":\"", broadcast, "\"", post,
                  ",\"addr_info\":[", addr_info, "]}");
}

std::string Inet(absl::string_view local, int prefixlen, absl::string_view scope, absl::string_view label,
                 absl::string_view brd = {}) {
  std::string s = absl::StrCat("{\"family\":\"inet\",\"local\":\"", local, "\",\"prefixlen\":", prefixlen);
  if (!brd.empty()) absl::StrAppend(&s, ",\"broadcast\":\"", brd, "\"");
  absl::StrAppend(&s, ",\"scope\":\"", scope, "\",\"label\":\"", label,
                  "\",\"valid_life_time\":4294967295,\"preferred_life_time\":4294967295}");
  return s;
}
std::string Inet6(absl::string_view local, int prefixlen, absl::string_view scope) {
  return absl::StrCat("{\"family\":\"inet6\",\"local\":\"", local, "\",\"prefixlen\":", prefixlen, ",\"scope\":\"",
                      scope, "\",\"valid_life_time\":4294967295,\"preferred_life_time\":4294967295}");
}

// fe80:: address from a MAC (EUI-64).
std::string LinkLocal(absl::string_view mac) {
  unsigned b[6];
  std::sscanf(std::string(mac).c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]);
  return absl::StrFormat("fe80::%x:%x:%x:%x", ((b[0] ^ 2) << 8) | b[1], (b[2] << 8) | 0xff,
                         0xfe00 | b[3], (b[4] << 8) | b[5]);
}

constexpr const char* kConfKeys[][2] = {
    {"accept_local", "0"}, {"accept_redirects", "1"}, {"accept_source_route", "1"}, {"arp_accept", "0"},
    {"arp_announce", "0"}, {"arp_evict_nocarrier", "1"}, {"arp_filter", "0"}, {"arp_ignore", "0"},
    {"arp_notify", "0"}, {"bc_forwarding", "0"}, {"bootp_relay", "0"}, {"disable_policy", "0"},
    {"disable_xfrm", "0"}, {"drop_gratuitous_arp", "0"}, {"drop_unicast_in_l2_multicast", "0"},
    {"force_igmp_version", "0"}, {"forwarding", "1"}, {"igmpv2_unsolicited_report_interval", "10000"},
    {"igmpv3_unsolicited_report_interval", "1000"}, {"ignore_routes_with_linkdown", "0"},
    {"log_martians", "0"}, {"mc_forwarding", "0"}, {"medium_id", "0"}, {"promote_secondaries", "0"},
    {"proxy_arp", "0"}, {"proxy_arp_pvlan", "0"}, {"route_localnet", "0"}, {"rp_filter", "0"},
    {"secure_redirects", "1"}, {"send_redirects", "1"}, {"shared_media", "1"}, {"src_valid_mark", "0"},
    {"tag", "0"}};
constexpr const char* kNeighKeys[][2] = {
    {"anycast_delay", "100"}, {"app_solicit", "0"}, {"base_reachable_time_ms", "30000"},
    {"delay_first_probe_time", "5"}, {"gc_stale_time", "60"}, {"interval_probe_time_ms", "5000"},
    {"locktime", "100"}, {"mcast_resolicit", "0"}, {"mcast_solicit", "3"}, {"proxy_delay", "80"},
    {"proxy_qlen", "64"}, {"retrans_time_ms", "1000"}, {"ucast_solicit", "3"}, {"unres_qlen", "101"},
    {"unres_qlen_bytes", "212992"}};
constexpr const char* kGlobal[][2] = {
    {"net.bridge.bridge-nf-call-arptables", "1"}, {"net.bridge.bridge-nf-call-ip6tables", "1"},
    {"net.bridge.bridge-nf-call-iptables", "1"}, {"net.bridge.bridge-nf-filter-pppoe-tagged", "0"},
    {"net.bridge.bridge-nf-filter-vlan-tagged", "0"}, {"net.bridge.bridge-nf-pass-vlan-input-dev", "0"},
    {"net.ipv4.fib_multipath_hash_policy", "0"}, {"net.ipv4.fib_multipath_use_neigh", "0"},
    {"net.ipv4.fwmark_reflect", "0"}, {"net.ipv4.icmp_echo_ignore_all", "0"},
    {"net.ipv4.icmp_echo_ignore_broadcasts", "1"}, {"net.ipv4.icmp_ratelimit", "1000"},
    {"net.ipv4.icmp_ratemask", "6168"}, {"net.ipv4.ip_default_ttl", "64"}, {"net.ipv4.ip_dynaddr", "0"},
    {"net.ipv4.ip_early_demux", "1"}, {"net.ipv4.ip_forward", "1"},
    {"net.ipv4.ip_forward_update_priority", "1"}, {"net.ipv4.ip_forward_use_pmtu", "0"},
    {"net.ipv4.ip_local_port_range", "32768\t60999"}, {"net.ipv4.ip_local_reserved_ports", ""},
    {"net.ipv4.ip_no_pmtu_disc", "0"}, {"net.ipv4.ip_nonlocal_bind", "0"},
    {"net.ipv4.ip_unprivileged_port_start", "1024"}, {"net.ipv4.ipfrag_high_thresh", "4194304"},
    {"net.ipv4.ipfrag_low_thresh", "3145728"}, {"net.ipv4.ipfrag_time", "30"},
    {"net.ipv4.neigh.default.gc_interval", "30"}, {"net.ipv4.neigh.default.gc_thresh1", "128"},
    {"net.ipv4.neigh.default.gc_thresh2", "512"}, {"net.ipv4.neigh.default.gc_thresh3", "1024"},
    {"net.ipv4.route.min_adv_mss", "256"}, {"net.ipv4.route.min_pmtu", "552"},
    {"net.ipv4.route.mtu_expires", "600"}, {"net.ipv4.tcp_congestion_control", "cubic"},
    {"net.ipv4.tcp_ecn", "2"}, {"net.ipv4.tcp_fin_timeout", "60"}, {"net.ipv4.tcp_keepalive_time", "7200"},
    {"net.ipv4.tcp_max_syn_backlog", "2048"}, {"net.ipv4.tcp_rmem", "4096\t131072\t6291456"},
    {"net.ipv4.tcp_sack", "1"}, {"net.ipv4.tcp_syncookies", "1"}, {"net.ipv4.tcp_timestamps", "1"},
    {"net.ipv4.tcp_tw_reuse", "2"}, {"net.ipv4.tcp_window_scaling", "1"},
    {"net.ipv4.tcp_wmem", "4096\t16384\t4194304"}, {"net.ipv4.udp_rmem_min", "4096"},
    {"net.ipv4.udp_wmem_min", "4096"}};

// `sysctl -a` lines (sorted as sysctl prints them). `overrides(dev, key)` may change a value.
template <typename F>
std::string Sysctl(const std::vector<std::string>& devs, bool forward, F overrides) {
  std::vector<std::string> lines;
  for (const auto& g : kGlobal) {
    std::string v = g[1];
    if (absl::string_view(g[0]) == "net.ipv4.ip_forward") v = forward ? "1" : "0";
    lines.push_back(absl::StrCat(g[0], " = ", v));
  }
  std::vector<std::string> conf_devs = {"all", "default"};
  conf_devs.insert(conf_devs.end(), devs.begin(), devs.end());
  for (const std::string& d : conf_devs) {
    std::string kd = d;
    std::replace(kd.begin(), kd.end(), '.', '/');
    for (const auto& k : kConfKeys) {
      std::string v = k[1];
      if (absl::string_view(k[0]) == "forwarding") v = forward ? "1" : "0";
      if (d == "all" && (absl::string_view(k[0]) == "accept_redirects" || absl::string_view(k[0]) == "accept_source_route")) v = "0";
      overrides(d, k[0], &v);
      lines.push_back(absl::StrCat("net.ipv4.conf.", kd, ".", k[0], " = ", v));
    }
  }
  std::vector<std::string> neigh_devs = {"default"};
  neigh_devs.insert(neigh_devs.end(), devs.begin(), devs.end());
  for (const std::string& d : neigh_devs) {
    std::string kd = d;
    std::replace(kd.begin(), kd.end(), '.', '/');
    for (const auto& k : kNeighKeys) {
      std::string v = k[1];
      if (absl::StartsWith(d, "cali") && absl::string_view(k[0]) == "proxy_delay") v = "0";
      lines.push_back(absl::StrCat("net.ipv4.neigh.", kd, ".", k[0], " = ", v));
    }
  }
  std::sort(lines.begin(), lines.end());
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

constexpr const char* kVxlanInfo =
    "{\"info_kind\":\"vxlan\",\"info_data\":{\"id\":4096,\"local\":\"%s\",\"link\":\"eth0\",\"port_range\":{\"low\":0,"
    "\"high\":0},\"port\":4789,\"learning\":false,\"ttl\":0,\"df\":\"unset\",\"ageing\":300,\"udp_csum\":true,"
    "\"udp_zero_csum6_tx\":false,\"udp_zero_csum6_rx\":false}}";
constexpr const char* kIpipInfo =
    "{\"info_kind\":\"ipip\",\"info_data\":{\"proto\":\"ipip\",\"remote\":\"any\",\"local\":\"any\",\"ttl\":0,"
    "\"pmtudisc\":true}}";
constexpr const char* kUp = "\"BROADCAST\",\"MULTICAST\",\"UP\",\"LOWER_UP\"";
constexpr const char* kLoFlags = "\"LOOPBACK\",\"UP\",\"LOWER_UP\"";
constexpr int kWorkloadMtu = 1450;  // Felix: the smallest of the enabled encapsulations (VXLAN)

struct Shared {
  std::string iptables_first, pod_rule_first, pod_neigh_first, pod_sysctl_first;
  std::string iptables, pod_rule, pod_neigh, pod_sysctl;
};

void WriteNode(const std::string& root, const Cluster& c, int ni, Shared* sh, bool pod_netns, bool hardlink) {
  const NodeDef& n = c.nodes[ni];
  std::string dir = absl::StrCat(root, "/", model::NodeDir(n.name));
  MkdirP(dir);
  std::string ip = Ip(n.ip);
  uint32_t net = n.ip & 0xffffff00u;
  std::string gw = Ip(net | 1), brd = Ip(net | 255);
  std::string tunl = Ip(n.block[kIpip]), vtep = Ip(n.block[kVxlan]);
  const std::vector<int>& pods = n.pods;

  // ip-link.json / ip-addr.json
  std::string link = "[", addr = "[";
  LinkObj(&link, 1, "lo", kLoFlags, 65536, "noqueue", "UNKNOWN", 1000, "loopback", "00:00:00:00:00:00",
          "00:00:00:00:00:00", "", "", "", 0, 0, 1);
  AddrObj(&addr, 1, "lo", kLoFlags, 65536, "noqueue", "UNKNOWN", 1000, "loopback", "00:00:00:00:00:00",
          "00:00:00:00:00:00", "", "", absl::StrCat(Inet("127.0.0.1", 8, "host", "lo"), ",", Inet6("::1", 128, "host")));
  link += ",";
  addr += ",";
  LinkObj(&link, 2, "eth0", kUp, 1500, "mq", "UP", 1000, "ether", n.eth_mac, "ff:ff:ff:ff:ff:ff", "", "", "", 68,
          9001, 8);
  AddrObj(&addr, 2, "eth0", kUp, 1500, "mq", "UP", 1000, "ether", n.eth_mac, "ff:ff:ff:ff:ff:ff", "", "",
          absl::StrCat(Inet(ip, 24, "global", "eth0", brd), ",", Inet6(LinkLocal(n.eth_mac), 64, "link")));
  link += ",";
  addr += ",";
  LinkObj(&link, 3, "tunl0", "\"NOARP\",\"UP\",\"LOWER_UP\"", 1480, "noqueue", "UNKNOWN", 1000, "ipip", "0.0.0.0",
          "0.0.0.0", "", "", kIpipInfo, 0, 0, 1);
  AddrObj(&addr, 3, "tunl0", "\"NOARP\",\"UP\",\"LOWER_UP\"", 1480, "noqueue", "UNKNOWN", 1000, "ipip", "0.0.0.0",
          "0.0.0.0", "", "", Inet(tunl, 32, "global", "tunl0"));
  link += ",";
  addr += ",";
  LinkObj(&link, 4, "vxlan.calico", kUp, 1450, "noqueue", "UNKNOWN", 1000, "ether", n.vtep_mac, "ff:ff:ff:ff:ff:ff",
          "", "", absl::StrFormat(kVxlanInfo, ip), 68, 65535, 1);
  AddrObj(&addr, 4, "vxlan.calico", kUp, 1450, "noqueue", "UNKNOWN", 1000, "ether", n.vtep_mac, "ff:ff:ff:ff:ff:ff",
          "", "", absl::StrCat(Inet(vtep, 32, "global", "vxlan.calico"), ",", Inet6(LinkLocal(n.vtep_mac), 64, "link")));
  for (int pi : pods) {
    const PodDef& p = c.pods[pi];
    int ifindex = 5 + p.slot;
    std::string pre = ",\"link_index\":2";
    std::string post = absl::StrCat(",\"link_netnsid\":", p.slot);
    link += ",";
    addr += ",";
    LinkObj(&link, ifindex, p.veth, kUp, kWorkloadMtu, "noqueue", "UP", 1000, "ether", "ee:ee:ee:ee:ee:ee",
            "ff:ff:ff:ff:ff:ff", pre, post, "{\"info_kind\":\"veth\"}", 68, 65535, 2);
    AddrObj(&addr, ifindex, p.veth, kUp, kWorkloadMtu, "noqueue", "UP", 1000, "ether", "ee:ee:ee:ee:ee:ee",
            "ff:ff:ff:ff:ff:ff", pre, post, Inet6("fe80::ecee:eeff:feee:eeee", 64, "link"));
  }
  link += "]\n";
  addr += "]\n";
  WriteFile(absl::StrCat(dir, "/", model::kIpLinkFile), link);
  WriteFile(absl::StrCat(dir, "/", model::kIpAddrFile), addr);

  // ip-route.json: main table (in address order, as the kernel's trie prints it), then local.
  std::string r = "[";
  absl::StrAppend(&r, "{\"dst\":\"default\",\"gateway\":\"", gw, "\",\"dev\":\"eth0\",\"protocol\":\"dhcp\",\"prefsrc\":\"",
                  ip, "\",\"metric\":100,\"flags\":[]}");
  absl::StrAppend(&r, ",{\"dst\":\"", Ip(net), "/24\",\"dev\":\"eth0\",\"protocol\":\"kernel\",\"scope\":\"link\",\"prefsrc\":\"",
                  ip, "\",\"flags\":[]}");
  for (int k = 0; k < 3; ++k) {
    for (size_t mi = 0; mi < c.nodes.size(); ++mi) {
      const NodeDef& m = c.nodes[mi];
      std::string block = absl::StrCat(Ip(m.block[k]), "/26");
      if (static_cast<int>(mi) == ni) {
        absl::StrAppend(&r, ",{\"type\":\"blackhole\",\"dst\":\"", block, "\",\"protocol\":\"bird\",\"flags\":[]}");
        for (int pi : pods) {
          const PodDef& p = c.pods[pi];
          if (p.pool != k) continue;
          absl::StrAppend(&r, ",{\"dst\":\"", Ip(p.ip), "\",\"dev\":\"", p.veth, "\",\"scope\":\"link\",\"flags\":[]}");
        }
        continue;
      }
      bool same_rack = m.rack == n.rack;
      if (k == kVxlan) {
        absl::StrAppend(&r, ",{\"dst\":\"", block, "\",\"gateway\":\"", Ip(m.block[kVxlan]),
                        "\",\"dev\":\"vxlan.calico\",\"protocol\":\"80\",\"flags\":[\"onlink\"]}");
      } else if (k == kIpip && !same_rack) {
        absl::StrAppend(&r, ",{\"dst\":\"", block, "\",\"gateway\":\"", Ip(m.ip),
                        "\",\"dev\":\"tunl0\",\"protocol\":\"bird\",\"flags\":[\"onlink\"]}");
      } else {
        absl::StrAppend(&r, ",{\"dst\":\"", block, "\",\"gateway\":\"", Ip(m.ip), "\",\"dev\":\"eth0\",\"protocol\":\"bird\",\"flags\":[",
                        same_rack ? "" : "\"onlink\"", "]}");
      }
    }
  }
  auto local = [&](absl::string_view type, absl::string_view dst, absl::string_view dev, absl::string_view scope,
                   absl::string_view src) {
    absl::StrAppend(&r, ",{\"type\":\"", type, "\",\"dst\":\"", dst, "\",\"dev\":\"", dev,
                    "\",\"table\":\"local\",\"protocol\":\"kernel\",\"scope\":\"", scope, "\",\"prefsrc\":\"", src,
                    "\",\"flags\":[]}");
  };
  local("local", ip, "eth0", "host", ip);
  local("broadcast", brd, "eth0", "link", ip);
  local("local", tunl, "tunl0", "host", tunl);
  local("local", vtep, "vxlan.calico", "host", vtep);
  local("local", "127.0.0.0/8", "lo", "host", "127.0.0.1");
  local("local", "127.0.0.1", "lo", "host", "127.0.0.1");
  local("broadcast", "127.255.255.255", "lo", "link", "127.0.0.1");
  std::vector<std::string> v6devs = {"eth0", "vxlan.calico"};
  for (int pi : pods) v6devs.push_back(c.pods[pi].veth);
  for (const std::string& d : v6devs) {
    absl::StrAppend(&r, ",{\"dst\":\"fe80::/64\",\"dev\":\"", d, "\",\"protocol\":\"kernel\",\"metric\":256,\"flags\":[],\"pref\":\"medium\"}");
  }
  absl::StrAppend(&r, ",{\"type\":\"local\",\"dst\":\"::1\",\"dev\":\"lo\",\"table\":\"local\",\"protocol\":\"kernel\",\"metric\":0,\"flags\":[],\"pref\":\"medium\"}");
  for (const std::string& d : v6devs) {
    absl::StrAppend(&r, ",{\"type\":\"multicast\",\"dst\":\"ff00::/8\",\"dev\":\"", d,
                    "\",\"table\":\"local\",\"protocol\":\"kernel\",\"metric\":256,\"flags\":[],\"pref\":\"medium\"}");
  }
  r += "]\n";
  WriteFile(absl::StrCat(dir, "/", model::kIpRouteFile), r);

  WriteFile(absl::StrCat(dir, "/", model::kIpRuleFile),
            "[{\"priority\":0,\"src\":\"all\",\"table\":\"local\"},{\"priority\":32766,\"src\":\"all\",\"table\":\"main\"},"
            "{\"priority\":32767,\"src\":\"all\",\"table\":\"default\"}]\n");

  // ip-neigh.json: the gateway, a few rack peers, the local pods, every remote VTEP (Felix's
  // PERMANENT entries on vxlan.calico).
  std::string ng = "[";
  absl::StrAppend(&ng, "{\"dst\":\"", gw, "\",\"dev\":\"eth0\",\"lladdr\":\"02:00:0a:14:00:01\",\"state\":[\"REACHABLE\"]}");
  int rack_first = n.rack * c.nodes_per_rack;
  for (int d = 1; d <= 8; ++d) {
    int mi = rack_first + (ni - rack_first + d * 31) % c.nodes_per_rack;
    if (mi == ni || mi >= static_cast<int>(c.nodes.size())) continue;
    absl::StrAppend(&ng, ",{\"dst\":\"", Ip(c.nodes[mi].ip), "\",\"dev\":\"eth0\",\"lladdr\":\"", c.nodes[mi].eth_mac,
                    "\",\"state\":[\"", d % 3 ? "STALE" : "REACHABLE", "\"]}");
  }
  for (int pi : pods) {
    const PodDef& p = c.pods[pi];
    absl::StrAppend(&ng, ",{\"dst\":\"", Ip(p.ip), "\",\"dev\":\"", p.veth, "\",\"lladdr\":\"", p.mac,
                    "\",\"state\":[\"REACHABLE\"]}");
  }
  for (size_t mi = 0; mi < c.nodes.size(); ++mi) {
    if (static_cast<int>(mi) == ni) continue;
    absl::StrAppend(&ng, ",{\"dst\":\"", Ip(c.nodes[mi].block[kVxlan]), "\",\"dev\":\"vxlan.calico\",\"lladdr\":\"",
                    c.nodes[mi].vtep_mac, "\",\"state\":[\"PERMANENT\"]}");
  }
  ng += "]\n";
  WriteFile(absl::StrCat(dir, "/", model::kIpNeighFile), ng);

  // bridge-fdb.json
  std::string fdb = "[";
  auto self = [&](absl::string_view mac, absl::string_view dev) {
    if (fdb.size() > 1) fdb += ",";
    absl::StrAppend(&fdb, "{\"mac\":\"", mac, "\",\"ifname\":\"", dev, "\",\"flags\":[\"self\"],\"state\":\"permanent\"}");
  };
  self("33:33:00:00:00:01", "eth0");
  self("01:00:5e:00:00:01", "eth0");
  self("33:33:00:00:00:01", "vxlan.calico");
  self("01:00:5e:00:00:01", "vxlan.calico");
  for (size_t mi = 0; mi < c.nodes.size(); ++mi) {
    if (static_cast<int>(mi) == ni) continue;
    absl::StrAppend(&fdb, ",{\"mac\":\"", c.nodes[mi].vtep_mac, "\",\"ifname\":\"vxlan.calico\",\"dst\":\"",
                    Ip(c.nodes[mi].ip), "\",\"flags\":[\"self\"],\"state\":\"permanent\"}");
  }
  for (int pi : pods) {
    const std::string& v = c.pods[pi].veth;
    self("33:33:00:00:00:01", v);
    self("01:00:5e:00:00:01", v);
    self("33:33:ff:ee:ee:ee", v);
  }
  fdb += "]\n";
  WriteFile(absl::StrCat(dir, "/", model::kBridgeFdbFile), fdb);

  // sysctl.txt
  std::vector<std::string> devs = {"eth0", "lo", "tunl0", "vxlan.calico"};
  for (int pi : pods) devs.push_back(c.pods[pi].veth);
  WriteFile(absl::StrCat(dir, "/", model::kSysctlFile), Sysctl(devs, true, [](const std::string& d, absl::string_view k, std::string* v) {
              if (absl::StartsWith(d, "cali")) {
                if (k == "proxy_arp" || k == "rp_filter") *v = "1";  // Calico CNI / Felix
              }
            }));

  WriteShared(absl::StrCat(dir, "/", model::kIptablesFile), sh->iptables, &sh->iptables_first, hardlink);

  if (!pod_netns) return;
  for (int pi : pods) {
    const PodDef& p = c.pods[pi];
    std::string pd = absl::StrCat(root, "/", model::PodDir(n.name, NsName(p.ns), p.name));
    MkdirP(pd);
    std::string pip = Ip(p.ip);
    std::string pre = absl::StrCat(",\"link_index\":", 5 + p.slot);
    std::string post = ",\"link_netnsid\":0";
    std::string pl = "[", pa = "[";
    LinkObj(&pl, 1, "lo", kLoFlags, 65536, "noqueue", "UNKNOWN", 1000, "loopback", "00:00:00:00:00:00",
            "00:00:00:00:00:00", "", "", "", 0, 0, 1);
    AddrObj(&pa, 1, "lo", kLoFlags, 65536, "noqueue", "UNKNOWN", 1000, "loopback", "00:00:00:00:00:00",
            "00:00:00:00:00:00", "", "", absl::StrCat(Inet("127.0.0.1", 8, "host", "lo"), ",", Inet6("::1", 128, "host")));
    pl += ",";
    pa += ",";
    LinkObj(&pl, 2, "eth0", kUp, kWorkloadMtu, "noqueue", "UP", 1000, "ether", p.mac, "ff:ff:ff:ff:ff:ff", pre, post,
            "{\"info_kind\":\"veth\"}", 68, 65535, 2);
    AddrObj(&pa, 2, "eth0", kUp, kWorkloadMtu, "noqueue", "UP", 1000, "ether", p.mac, "ff:ff:ff:ff:ff:ff", pre, post,
            absl::StrCat(Inet(pip, 32, "global", "eth0"), ",", Inet6(LinkLocal(p.mac), 64, "link")));
    pl += "]\n";
    pa += "]\n";
    WriteFile(absl::StrCat(pd, "/", model::kIpLinkFile), pl);
    WriteFile(absl::StrCat(pd, "/", model::kIpAddrFile), pa);
    WriteFile(absl::StrCat(pd, "/", model::kIpRouteFile),
              absl::StrCat("[{\"dst\":\"default\",\"gateway\":\"169.254.1.1\",\"dev\":\"eth0\",\"flags\":[]},"
                           "{\"dst\":\"169.254.1.1\",\"dev\":\"eth0\",\"scope\":\"link\",\"flags\":[]},"
                           "{\"type\":\"local\",\"dst\":\"", pip, "\",\"dev\":\"eth0\",\"table\":\"local\",\"protocol\":\"kernel\",\"scope\":\"host\",\"prefsrc\":\"", pip, "\",\"flags\":[]},"
                           "{\"type\":\"local\",\"dst\":\"127.0.0.0/8\",\"dev\":\"lo\",\"table\":\"local\",\"protocol\":\"kernel\",\"scope\":\"host\",\"prefsrc\":\"127.0.0.1\",\"flags\":[]},"
                           "{\"type\":\"local\",\"dst\":\"127.0.0.1\",\"dev\":\"lo\",\"table\":\"local\",\"protocol\":\"kernel\",\"scope\":\"host\",\"prefsrc\":\"127.0.0.1\",\"flags\":[]},"
                           "{\"type\":\"broadcast\",\"dst\":\"127.255.255.255\",\"dev\":\"lo\",\"table\":\"local\",\"protocol\":\"kernel\",\"scope\":\"link\",\"prefsrc\":\"127.0.0.1\",\"flags\":[]},"
                           "{\"dst\":\"fe80::/64\",\"dev\":\"eth0\",\"protocol\":\"kernel\",\"metric\":256,\"flags\":[],\"pref\":\"medium\"},"
                           "{\"type\":\"local\",\"dst\":\"::1\",\"dev\":\"lo\",\"table\":\"local\",\"protocol\":\"kernel\",\"metric\":0,\"flags\":[],\"pref\":\"medium\"},"
                           "{\"type\":\"multicast\",\"dst\":\"ff00::/8\",\"dev\":\"eth0\",\"table\":\"local\",\"protocol\":\"kernel\",\"metric\":256,\"flags\":[],\"pref\":\"medium\"}]\n"));
    WriteShared(absl::StrCat(pd, "/", model::kIpRuleFile), sh->pod_rule, &sh->pod_rule_first, hardlink);
    WriteShared(absl::StrCat(pd, "/", model::kIpNeighFile), sh->pod_neigh, &sh->pod_neigh_first, hardlink);
    WriteShared(absl::StrCat(pd, "/", model::kSysctlFile), sh->pod_sysctl, &sh->pod_sysctl_first, hardlink);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string out = absl::GetFlag(FLAGS_out);
  int n_nodes = absl::GetFlag(FLAGS_nodes), ppn = absl::GetFlag(FLAGS_pods_per_node);
  int n_svc = absl::GetFlag(FLAGS_services), per_rack = absl::GetFlag(FLAGS_nodes_per_rack);
  if (out.empty()) Die("--out is required");
  if (n_nodes < 1 || n_nodes > 8192) Die("--nodes must be 1..8192 (one /26 per node in each /13 pool)");
  if (ppn < 1 || ppn > 60) Die("--pods_per_node must be 1..60");
  if (per_rack < 1 || per_rack > 250) Die("--nodes_per_rack must be 1..250");
  if (n_svc < 0 || n_svc > 200000) Die("--services must be 0..200000");
  bool hardlink = absl::GetFlag(FLAGS_hardlink), pod_netns = absl::GetFlag(FLAGS_pod_netns);

  Cluster c = Build(n_nodes, ppn, n_svc, per_rack, absl::GetFlag(FLAGS_seed));
  Rng rng(absl::GetFlag(FLAGS_seed) ^ 0x5eed5eed5eedULL);
  MkdirP(absl::StrCat(out, "/", model::kClusterDir));
  MkdirP(absl::StrCat(out, "/", model::kNodesDir));
  WritePods(absl::StrCat(out, "/", model::ClusterPath(model::kPodsFile)), c);
  WriteNodes(absl::StrCat(out, "/", model::ClusterPath(model::kNodesFile)), c, rng);
  WriteServices(absl::StrCat(out, "/", model::ClusterPath(model::kServicesFile)), c);
  WriteSlices(absl::StrCat(out, "/", model::ClusterPath(model::kEndpointSlicesFile)), c);
  WritePools(absl::StrCat(out, "/", model::ClusterPath(model::kIpPoolsFile)));

  Shared sh;
  sh.iptables = Iptables(c, rng);
  sh.pod_rule =
      "[{\"priority\":0,\"src\":\"all\",\"table\":\"local\"},{\"priority\":32766,\"src\":\"all\",\"table\":\"main\"},"
      "{\"priority\":32767,\"src\":\"all\",\"table\":\"default\"}]\n";
  sh.pod_neigh =
      "[{\"dst\":\"169.254.1.1\",\"dev\":\"eth0\",\"lladdr\":\"ee:ee:ee:ee:ee:ee\",\"state\":[\"REACHABLE\"]}]\n";
  sh.pod_sysctl = Sysctl({"eth0", "lo"}, false, [](const std::string&, absl::string_view, std::string*) {});
  for (int i = 0; i < n_nodes; ++i) WriteNode(out, c, i, &sh, pod_netns, hardlink);

  size_t backends = 0;
  for (const SvcDef& s : c.services) backends += s.backends.size();
  size_t rules = static_cast<size_t>(std::count(sh.iptables.begin(), sh.iptables.end(), '\n'));
  std::printf("wrote %s: %d nodes, %zu pods, %d services (%zu endpoints), iptables-save %zu lines / %.1f MB\n",
              out.c_str(), n_nodes, c.pods.size(), n_svc, backends, rules, sh.iptables.size() / 1e6);
  // Example queries for scripts: a pod to a pod of another pool on a node in another rack
  // (encapsulated), and to a Service with several endpoints.
  const PodDef& a = c.pods.front();
  const PodDef* other = nullptr;  // another rack and pool if there is one, else another node
  for (const PodDef& b : c.pods) {
    if (b.node == a.node) continue;
    if (c.nodes[b.node].rack != c.nodes[a.node].rack && b.pool != a.pool) {
      other = &b;
      break;
    }
    if (other == nullptr) other = &b;
  }
  if (other != nullptr) {
    std::printf("query cross_node: --src pod:%s/%s --dst pod:%s/%s:8080/tcp\n", NsName(a.ns).c_str(),
                a.name.c_str(), NsName(other->ns).c_str(), other->name.c_str());
  }
  for (const SvcDef& sv : c.services) {
    if (sv.backends.size() >= 3) {
      std::printf("query cluster_ip: --src pod:%s/%s --dst svc:%s/%s:80/tcp\n", NsName(a.ns).c_str(),
                  a.name.c_str(), NsName(sv.ns).c_str(), sv.name.c_str());
      break;
    }
  }
  return 0;
}
