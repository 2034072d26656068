#include "libsarena/collect/collect.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libsarena/base/file.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/subprocess.h"
#include "libsarena/collect/cluster_maps.h"
#include "libsarena/datapath/datapath.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/model/proto_json.h"
#include "libsarena/model/sarena_node.pb.h"
#include "libsarena/model/snapshot.h"
#include "libsarena/model/snapshot_layout.h"
#include "libsarena/net/ip.h"
#include "libsarena/rpc/client.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::collect {
namespace {

std::string NetnsPath(const std::string& netns) {
  if (netns.empty() || absl::StrContains(netns, "/")) return netns;
  return absl::StrCat("/var/run/netns/", netns);
}

void ReadTree(const std::string& dir, const std::string& key,
              std::map<std::string, std::string>* out) {
  absl::StatusOr<std::vector<std::string>> names = ListDir(dir);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    std::string path = absl::StrCat(dir, "/", name);
    // Device names with dots are written with '/' in sysctl keys.
    std::string k = absl::StrCat(key, ".", absl::StrReplaceAll(name, {{".", "/"}}));
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      ReadTree(path, k, out);
      continue;
    }
    if (!(st.st_mode & S_IRUSR)) continue;
    absl::StatusOr<std::string> value = ReadFileToString(path);  // write-only keys fail here
    if (!value.ok()) continue;
    (*out)[k] = std::string(absl::StripTrailingAsciiWhitespace(*value));
  }
}

// In the current netns: every BPF program attached at a device hook, as sarena-programs.json.
int ProgramsJson() {
  snapshot::v1::SarenaProgramsFile file;
  // if_nameindex asks the kernel over netlink, so it sees this netns (/sys would show the mount
  // namespace's).
  struct if_nameindex* ifs = if_nameindex();
  if (!ifs) return 1;
  for (struct if_nameindex* i = ifs; i->if_index != 0; ++i) {
    const int ifindex = static_cast<int>(i->if_index);
    for (const datapath::HookProgram& h : datapath::AttachedPrograms(ifindex)) {
      snapshot::v1::AttachedProgram* p = file.add_programs();
      p->set_ifname(i->if_name);
      p->set_ifindex(i->if_index);
      p->set_direction(std::string(bpf::ToString(h.direction)));
      p->set_mode(std::string(bpf::ToString(h.program.mode)));
      p->set_prog(h.program.name);
      p->set_id(h.program.prog_id);
    }
  }
  if_freenameindex(ifs);
  const std::string out = model::PrintProtoJson(file);
  return write(STDOUT_FILENO, out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1;
}

// One entry of the pinned endpoint map, with what the daemon knows about it.
struct EndpointRow {
  std::string ip;
  bool in_map = false;
  uint32_t host_ifindex = 0;
  std::string pod_mac, host_mac;
  uint32_t endpoint_id = 0;
  // The daemon's record of the endpoint (names, netns, counters), when it has one.
  const snapshot::v1::Endpoint* record = nullptr;
};

// The endpoint list as sarena-endpoints.json, from the map (authoritative for what the programs
// do) joined with the daemon's records (names, netns) by IP.
absl::StatusOr<snapshot::v1::SarenaEndpointsFile> EndpointsFromMap(
    const std::string& pin_root, const snapshot::v1::SarenaEndpointsFile& daemon,
    std::vector<std::string>* notes) {
  SARENA_ASSIGN_OR_RETURN(datapath::Maps maps, datapath::Maps::OpenPinned(pin_root));
  std::map<std::string, EndpointRow> rows;
  SARENA_RETURN_IF_ERROR(
      maps.endpoints.ForEach([&](const datapath::EndpointKey& k, const datapath::Endpoint& e) {
        std::optional<net::Ipv4> ip = datapath::EndpointKeyIpv4(k);
        if (!ip) return true;
        EndpointRow& r = rows[ip->to_string()];
        r.ip = ip->to_string();
        r.in_map = true;
        r.host_ifindex = e.ifindex;
        r.pod_mac = net::FormatMac(datapath::ToMac(e.pod_mac));
        r.host_mac = net::FormatMac(datapath::ToMac(e.host_mac));
        r.endpoint_id = e.endpoint_id;
        return true;
      }));
  // The programs read an IPv4 endpoint's slot copy (sarena_lxc4) before the hash: where the slot
  // holds the address, its copy is what they deliver with, whatever the hash says (a hash entry
  // edited or deleted behind sarenad's back keeps its old copy in the slot until sarenad's next
  // start rebuilds the slots).
  auto from_slot = [&](const std::string& key, EndpointRow* r) -> absl::Status {
    absl::StatusOr<net::Ipv4> ip = net::ParseIpv4(key, "endpoint ip");
    if (!ip.ok()) return absl::OkStatus();  // not IPv4: no slot
    SARENA_ASSIGN_OR_RETURN(std::optional<datapath::Endpoint> slot, maps.endpoints.SlotCopy(*ip));
    if (!slot) return absl::OkStatus();
    const std::string pod_mac = net::FormatMac(datapath::ToMac(slot->pod_mac));
    const std::string host_mac = net::FormatMac(datapath::ToMac(slot->host_mac));
    if (!r->in_map) {
      notes->push_back(absl::StrCat("endpoint ", key, " has no entry in the pinned endpoint hash ("
                                    SARENA_MAP_ENDPOINTS ") but its slot copy in "
                                    SARENA_MAP_ENDPOINT_SLOTS " still serves it: the programs use "
                                    "the slot (sarenad rebuilds the slots from the hash when it starts)"));
    } else if (r->host_ifindex != slot->ifindex || r->pod_mac != pod_mac ||
               r->host_mac != host_mac || r->endpoint_id != slot->endpoint_id) {
      notes->push_back(absl::StrCat("endpoint ", key, ": the slot copy in " SARENA_MAP_ENDPOINT_SLOTS
                                    " differs from its entry in " SARENA_MAP_ENDPOINTS
                                    "; the programs use the slot's"));
    }
    r->ip = key;
    r->in_map = true;
    r->host_ifindex = slot->ifindex;
    r->pod_mac = pod_mac;
    r->host_mac = host_mac;
    r->endpoint_id = slot->endpoint_id;
    return absl::OkStatus();
  };
  for (auto& [key, r] : rows) SARENA_RETURN_IF_ERROR(from_slot(key, &r));
  for (const snapshot::v1::Endpoint& e : daemon.endpoints()) {
    if (e.ip().empty()) continue;
    auto it = rows.find(e.ip());
    if (it == rows.end()) {
      EndpointRow slot_row;
      SARENA_RETURN_IF_ERROR(from_slot(e.ip(), &slot_row));
      if (slot_row.in_map) it = rows.emplace(e.ip(), std::move(slot_row)).first;
    }
    if (it == rows.end()) {
      notes->push_back(absl::StrCat("sarenad records endpoint ", e.ip(),
                                    " but the pinned endpoint map has no entry for it"));
      continue;
    }
    it->second.record = &e;
  }
  snapshot::v1::SarenaEndpointsFile out;
  for (const auto& [ip, r] : rows) {
    snapshot::v1::Endpoint* e = out.add_endpoints();
    if (r.record) *e = *r.record;
    // What the programs use, from the map.
    e->set_ip(r.ip);
    e->set_pod_mac(r.pod_mac);
    e->set_host_ifindex(r.host_ifindex);
    e->set_host_mac(r.host_mac);
    e->set_endpoint_id(r.endpoint_id);
  }
  return out;
}

// sarenad's endpoint records (pod names, netns paths, container ids: what only the daemon knows),
// asked over its socket with the RPC client. sarenad's Endpoint and the file's have the same
// field numbers, so a record converts by its wire form.
absl::StatusOr<snapshot::v1::SarenaEndpointsFile> DaemonEndpoints(const std::string& socket) {
  SARENA_ASSIGN_OR_RETURN(rpc::Client client, rpc::Client::Connect(socket));
  rpc::v1::Request request;
  request.mutable_endpoint_list();
  SARENA_ASSIGN_OR_RETURN(rpc::v1::Response response, client.CallChecked(request));
  snapshot::v1::SarenaEndpointsFile records;
  if (!records.ParseFromString(response.endpoint_list().SerializeAsString())) {
    return absl::DataLossError("sarenad's endpoint list does not convert to sarena-endpoints.json");
  }
  return records;
}

struct Job {
  absl::string_view file;
  std::vector<std::string> argv;
  bool required;
};

// What one network namespace's part of the snapshot is made of: the iproute2 (and, on the node,
// bridge and iptables-save) dumps, then the IPv4 sysctls read by a child inside the netns.
std::vector<Job> NetnsJobs(bool node) {
  std::vector<Job> jobs = {
      {model::kIpLinkFile, {"ip", "-j", "-d", "link", "show"}, true},
      {model::kIpAddrFile, {"ip", "-j", "addr", "show"}, true},
      {model::kIpRouteFile, {"ip", "-j", "route", "show", "table", "all"}, true},
      {model::kIpRuleFile, {"ip", "-j", "rule", "show"}, false},
      {model::kIpNeighFile, {"ip", "-j", "neigh", "show"}, false},
  };
  if (node) {
    jobs.push_back({model::kBridgeFdbFile, {"bridge", "-j", "fdb", "show"}, false});
    jobs.push_back({model::kIptablesFile, {"iptables-save"}, false});
  }
  return jobs;
}

int PrintIpv4Sysctls() {
  auto text = ReadIpv4Sysctls();
  if (!text.ok()) return 1;
  return write(STDOUT_FILENO, text->data(), text->size()) == static_cast<ssize_t>(text->size())
             ? 0
             : 1;
}

// The children that collect one netns (NetnsJobs, then the sysctl reader), appended to `specs`.
void AddNetnsChildren(const std::string& netns, bool node, std::vector<ChildSpec>* specs) {
  for (Job& j : NetnsJobs(node)) {
    std::string name = j.argv.front();
    specs->push_back(ChildSpec{netns, ExecArgv(j.argv), {}, std::move(name)});
  }
  specs->push_back(ChildSpec{netns, PrintIpv4Sysctls, {}, "ipv4 sysctl reader"});
}

// Writes one netns's files from what its children (AddNetnsChildren, same order) printed.
absl::Status WriteNetns(const std::vector<ChildOutput>& outputs, const std::string& abs_dir,
                        const std::string& rel_dir, bool node, CollectReport* report) {
  SARENA_RETURN_IF_ERROR(MakeDirs(abs_dir, 0755));
  const std::vector<Job> jobs = NetnsJobs(node);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    ChildOutput o = outputs[i];
    std::string rel = absl::StrCat(rel_dir, "/", j.file);
    if (o.exit_code == kChildNetnsFailed) {
      return absl::NotFoundError(
          absl::StrCat("collect ", rel, ": ", absl::StripTrailingAsciiWhitespace(o.err)));
    }
    if (o.exit_code != 0) {
      std::string why = absl::StrCat("'", absl::StrJoin(j.argv, " "), "' exited ", o.exit_code,
                                     ": ", absl::StripTrailingAsciiWhitespace(o.err));
      if (j.required) return absl::InternalError(absl::StrCat("collect ", rel, ": ", why));
      report->skipped.push_back(absl::StrCat(rel, ": ", why));
      continue;
    }
    if (absl::EndsWith(j.file, ".json") && absl::StripAsciiWhitespace(o.out).empty()) {
      o.out = "[]\n";  // iproute2 prints nothing for an empty list on some versions
    }
    SARENA_RETURN_IF_ERROR(WriteFile(absl::StrCat(abs_dir, "/", j.file), o.out));
    report->written.push_back(rel);
  }
  const ChildOutput& sys = outputs[jobs.size()];
  std::string rel = absl::StrCat(rel_dir, "/", model::kSysctlFile);
  if (sys.exit_code == 0) {
    SARENA_RETURN_IF_ERROR(WriteFile(absl::StrCat(abs_dir, "/", model::kSysctlFile), sys.out));
    report->written.push_back(rel);
  } else {
    report->skipped.push_back(absl::StrCat(rel, ": cannot read /proc/sys/net/ipv4"));
  }
  return absl::OkStatus();
}

// The number of children AddNetnsChildren starts for one netns.
size_t NetnsChildCount(bool node) { return NetnsJobs(node).size() + 1; }

}  // namespace

absl::StatusOr<PodNetnsSpec> ParsePodNetnsSpec(absl::string_view text) {
  size_t eq = text.find('=');
  size_t slash = text.find('/');
  if (eq == absl::string_view::npos || slash == absl::string_view::npos || slash > eq ||
      slash == 0 || slash + 1 == eq || eq + 1 == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid --pod '", text, "': expected NAMESPACE/NAME=NETNS"));
  }
  PodNetnsSpec p;
  p.namespace_ = std::string(text.substr(0, slash));
  p.name = std::string(text.substr(slash + 1, eq - slash - 1));
  p.netns = std::string(text.substr(eq + 1));
  return p;
}

absl::StatusOr<std::string> ReadIpv4Sysctls(const std::string& proc_sys_net_ipv4) {
  struct stat st;
  if (stat(proc_sys_net_ipv4.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("read sysctls '", proc_sys_net_ipv4, "': ", strerror(errno)));
  }
  std::map<std::string, std::string> values;
  ReadTree(proc_sys_net_ipv4, "net.ipv4", &values);
  // br_netfilter's switches (bridged traffic through iptables) live beside it when loaded.
  std::string bridge = proc_sys_net_ipv4.substr(0, proc_sys_net_ipv4.rfind('/')) + "/bridge";
  ReadTree(bridge, "net.bridge", &values);
  std::string out;
  for (const auto& [k, v] : values) {
    std::string value = absl::StrReplaceAll(v, {{"\n", " "}});
    absl::StrAppend(&out, k, " = ", value, "\n");
  }
  return out;
}

absl::StatusOr<CollectReport> Collect(const CollectOptions& options) {
  if (options.out_dir.empty()) return absl::InvalidArgumentError("collect: --out is required");
  CollectReport report;
  std::string node = options.node;
  if (node.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) {
      return absl::InternalError(absl::StrCat("gethostname: ", strerror(errno)));
    }
    node = host;
  }
  if (node.empty() || absl::StrContains(node, "/") || node == "." || node == "..") {
    return absl::InvalidArgumentError(absl::StrCat("invalid node name '", node, "'"));
  }
  std::string netns = NetnsPath(options.node_netns);
  if (!netns.empty() && access(netns.c_str(), R_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("node network namespace '", options.node_netns, "': ", strerror(errno)));
  }
  std::string rel_node = model::NodeDir(node);
  std::string abs_node = absl::StrCat(options.out_dir, "/", rel_node);

  // sarena endpoints: the daemon's records, and the pinned map the programs actually use. Asked
  // first because the daemon's records name pods whose namespaces are collected below.
  std::vector<PodNetnsSpec> pods = options.pods;
  std::string ep_rel = absl::StrCat(rel_node, "/", model::kSarenaEndpointsFile);
  std::optional<snapshot::v1::SarenaEndpointsFile> daemon;
  std::string daemon_skipped;
  if (!options.sarena_socket.empty() && access(options.sarena_socket.c_str(), F_OK) == 0) {
    absl::StatusOr<snapshot::v1::SarenaEndpointsFile> records =
        DaemonEndpoints(options.sarena_socket);
    if (records.ok()) {
      daemon = *std::move(records);
    } else {
      daemon_skipped = absl::StrCat(ep_rel, " (daemon records): ", records.status().message());
    }
  } else {
    daemon_skipped =
        absl::StrCat(ep_rel, " (daemon records): no sarenad socket at ", options.sarena_socket);
  }
  if (options.pods_from_endpoints && daemon) {
    // The pods' netns paths as the daemon recorded them.
    for (const snapshot::v1::Endpoint& e : daemon->endpoints()) {
      if (e.netns().empty() || e.pod_namespace().empty() || e.pod_name().empty()) continue;
      bool dup = false;
      for (const auto& p : pods) {
        if (p.namespace_ == e.pod_namespace() && p.name == e.pod_name()) dup = true;
      }
      if (!dup) pods.push_back(PodNetnsSpec{e.pod_namespace(), e.pod_name(), e.netns()});
    }
  }
  const size_t first_fallback = pods.size();
  pods.insert(pods.end(), options.fallback_pods.begin(), options.fallback_pods.end());

  // Every child process of the snapshot starts at once and runs concurrently: the node's dumps,
  // the BPF program query, then each pod's dumps. A pod namespace that cannot be opened is
  // skipped; a fallback pod whose namespace (by inode) is already collected is left out.
  struct PodPlan {
    std::string skipped;  // why it is not collected; empty = collected
    bool duplicate = false;
    uint64_t inode = 0;
    size_t first_child = 0;
  };
  std::vector<PodPlan> plans(pods.size());
  std::vector<ChildSpec> specs;
  AddNetnsChildren(netns, true, &specs);
  const size_t programs_child = specs.size();
  if (options.programs) specs.push_back(ChildSpec{netns, ProgramsJson, {}, "BPF program lister"});
  for (size_t i = 0; i < pods.size(); ++i) {
    PodPlan& plan = plans[i];
    std::string path = NetnsPath(pods[i].netns);
    struct stat sb = {};
    if (access(path.c_str(), R_OK) != 0 || stat(path.c_str(), &sb) != 0) {
      plan.skipped = absl::StrCat(model::PodDir(node, pods[i].namespace_, pods[i].name),
                                  ": netns '", pods[i].netns, "': ", strerror(errno));
      continue;
    }
    plan.inode = static_cast<uint64_t>(sb.st_ino);
    if (i >= first_fallback &&
        std::any_of(plans.begin(), plans.begin() + static_cast<std::ptrdiff_t>(i),
                    [&](const PodPlan& c) {
                      return c.skipped.empty() && !c.duplicate && c.inode == plan.inode;
                    })) {
      plan.duplicate = true;  // already collected under the endpoint list's (or the caller's) name
      continue;
    }
    plan.first_child = specs.size();
    AddNetnsChildren(path, false, &specs);
  }
  SARENA_ASSIGN_OR_RETURN(std::vector<ChildOutput> outputs, RunChildren(specs));
  auto slice = [&outputs](size_t first, size_t count) {
    return std::vector<ChildOutput>(outputs.begin() + static_cast<std::ptrdiff_t>(first),
                                    outputs.begin() + static_cast<std::ptrdiff_t>(first + count));
  };

  SARENA_RETURN_IF_ERROR(
      WriteNetns(slice(0, NetnsChildCount(true)), abs_node, rel_node, true, &report));
  if (!daemon_skipped.empty()) report.skipped.push_back(daemon_skipped);
  std::optional<snapshot::v1::SarenaEndpointsFile> endpoints = daemon;
  if (!options.bpffs.empty() && access(options.bpffs.c_str(), F_OK) == 0) {
    std::vector<std::string> notes;
    auto from_map = EndpointsFromMap(options.bpffs,
                                     daemon ? *daemon : snapshot::v1::SarenaEndpointsFile(), &notes);
    if (from_map.ok()) {
      endpoints = std::move(*from_map);
      for (const auto& n : notes) report.skipped.push_back(absl::StrCat(ep_rel, ": ", n));
    } else {
      report.skipped.push_back(absl::StrCat(ep_rel, " (endpoint map at ", options.bpffs,
                                            "): ", from_map.status().message()));
    }
  }
  if (endpoints) {
    SARENA_RETURN_IF_ERROR(
        WriteFile(absl::StrCat(options.out_dir, "/", ep_rel), model::PrintProtoJson(*endpoints)));
    report.written.push_back(ep_rel);
  }
  // The cluster datapath maps (tunnel, peer, overlay config, node counters), when pinned.
  if (!options.bpffs.empty() && access(options.bpffs.c_str(), F_OK) == 0) {
    std::string rel = absl::StrCat(rel_node, "/", model::kSarenaClusterFile);
    std::vector<std::string> notes;
    auto maps = ReadClusterMaps(options.bpffs, &notes);
    if (!maps.ok()) {
      report.skipped.push_back(absl::StrCat(rel, ": ", maps.status().message()));
    } else if (maps->empty()) {
      report.skipped.push_back(
          absl::StrCat(rel, ": no cluster map pinned at ", options.bpffs, " (one-node sarenad)"));
    } else {
      SARENA_RETURN_IF_ERROR(
          WriteFile(absl::StrCat(options.out_dir, "/", rel), FormatClusterMaps(*maps)));
      report.written.push_back(rel);
      for (const auto& n : notes) report.skipped.push_back(absl::StrCat(rel, ": ", n));
    }
  }
  if (options.programs) {
    const ChildOutput& o = outputs[programs_child];
    std::string rel = absl::StrCat(rel_node, "/", model::kSarenaProgramsFile);
    if (o.exit_code == 0) {
      SARENA_RETURN_IF_ERROR(WriteFile(absl::StrCat(options.out_dir, "/", rel), o.out));
      report.written.push_back(rel);
    } else {
      report.skipped.push_back(absl::StrCat(rel, ": BPF program query failed"));
    }
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodPlan& plan = plans[i];
    if (!plan.skipped.empty()) {
      report.skipped.push_back(plan.skipped);
      continue;
    }
    if (plan.duplicate) continue;
    std::string rel = model::PodDir(node, pods[i].namespace_, pods[i].name);
    absl::Status st = WriteNetns(slice(plan.first_child, NetnsChildCount(false)),
                                 absl::StrCat(options.out_dir, "/", rel), rel, false, &report);
    if (!st.ok()) {
      report.skipped.push_back(absl::StrCat(rel, ": ", st.message()));
      continue;
    }
    report.pods.push_back(CollectReport::PodNetns{pods[i], plan.inode});
  }
  return report;
}

}  // namespace sarena::collect
