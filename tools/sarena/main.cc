// sarena: the operator CLI. Talks to sarenad over its socket (status, endpoints with counters)
// and reads the pinned BPF maps directly (drop counters). Thin: flags -> libsarena -> print.
//   sarena [--socket PATH] status
//   sarena [--socket PATH] endpoint list [-o table|json]
//   sarena [--bpffs DIR] drops [-o table|json]
//   sarena [--etcd-endpoints E] node list [-o table|json]
//   sarena --etcd-endpoints E node delete NAME
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/cli.h"
#include "libsarena/cluster/agent.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/rpc/client.h"

ABSL_FLAG(std::string, socket, "/run/sarena/sarenad.sock", "sarenad's unix socket");
ABSL_FLAG(std::string, bpffs, "/sys/fs/bpf/sarena", "bpffs directory of the datapath's pins");
ABSL_FLAG(std::string, o, "table", "Output: table | json");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "etcd endpoints for `node list|delete`: unix:///path/etcd.sock:2379 or http://host:port, "
          "comma-separated (default: $SARENA_ETCD_ENDPOINTS)");

namespace {

using sarena::rpc::v1::Request;
using sarena::rpc::v1::Response;

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "sarena: %s\n", std::string(st.message()).c_str());
  return 1;
}

absl::StatusOr<Response> Call(const Request& req) {
  auto client = sarena::rpc::Client::Connect(absl::GetFlag(FLAGS_socket));
  if (!client.ok()) return client.status();
  auto resp = client->Call(req);
  if (!resp.ok()) return resp.status();
  if (resp->has_error()) return sarena::rpc::StatusFromError(resp->error());
  return resp;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

int Status() {
  Request req;
  req.mutable_status();
  auto resp = Call(req);
  if (!resp.ok()) return Fail(resp.status());
  if (absl::GetFlag(FLAGS_o) == "json") {
    std::printf("%s", ToJson(resp->status()).c_str());
    return 0;
  }
  const auto& s = resp->status();
  std::printf("ready: %s\npod CIDR: %s\nnode IP: %s\nendpoints: %u\nfree IPs: %u\n"
              "attach mode: %s\nversion: %s\n",
              s.ready() ? "yes" : "no", s.pod_cidr().c_str(), s.node_ip().c_str(), s.endpoints(),
              s.ips_free(), s.attach_mode().c_str(), s.version().c_str());
  if (!s.not_ready_reason().empty()) std::printf("not ready: %s\n", s.not_ready_reason().c_str());
  if (!s.has_cluster()) return 0;
  const auto& c = s.cluster();
  std::printf("node: %s (id %u), %s mode, uplink %s %s, VNI %u, UDP %u, cluster CIDR %s\n"
              "etcd: %s, %s, registered %s, peers synced %s, revision %lld, last contact %s\n",
              c.node_name().c_str(), c.node_id(), c.routing_mode().c_str(), c.uplink().c_str(),
              c.underlay().c_str(), c.vni(), c.tunnel_port(), c.cluster_cidr().c_str(),
              c.etcd_endpoints().c_str(), c.etcd_connected() ? "connected" : "NOT CONNECTED",
              c.registered() ? "yes" : "no", c.synced() ? "yes" : "no", (long long)c.revision(),
              c.last_contact_unix() ? absl::FormatTime("%H:%M:%S", absl::FromUnixSeconds(
                                                           c.last_contact_unix()),
                                                       absl::LocalTimeZone())
                                          .c_str()
                                    : "never");
  if (!c.last_error().empty()) std::printf("last error: %s\n", c.last_error().c_str());
  std::printf("%-20s %6s %-15s %-20s %-7s %-9s %10s %10s %s\n", "PEER", "ID", "UNDERLAY",
              "POD-CIDRS", "MODE", "UPDATED", "TX-PKTS", "RX-PKTS", "STATE");
  for (const auto& p : c.peers()) {
    const std::string updated = absl::FormatTime(
        "%H:%M:%S", absl::FromUnixSeconds(p.last_update_unix()), absl::LocalTimeZone());
    std::printf("%-20s %6u %-15s %-20s %-7s %-9s %10llu %10llu %s\n", p.name().c_str(),
                p.node_id(), p.underlay().c_str(), absl::StrJoin(p.pod_cidrs(), ",").c_str(),
                p.mode().c_str(), updated.c_str(), (unsigned long long)p.tx_packets(),
                (unsigned long long)p.rx_packets(),
                p.lost() ? absl::StrCat("lost since ",
                                        absl::FormatTime("%H:%M:%S",
                                                         absl::FromUnixSeconds(p.lost_since_unix()),
                                                         absl::LocalTimeZone()))
                               .c_str()
                         : "alive");
  }
  return 0;
}

int EndpointList() {
  Request req;
  req.mutable_endpoint_list();
  auto resp = Call(req);
  if (!resp.ok()) return Fail(resp.status());
  if (absl::GetFlag(FLAGS_o) == "json") {
    std::printf("%s", ToJson(resp->endpoint_list()).c_str());
    return 0;
  }
  std::printf("%-24s %-6s %-15s %-15s %-17s %10s %12s %10s %12s\n", "CONTAINER", "IF", "IP",
              "HOST-IF", "POD-MAC", "RX-PKTS", "RX-BYTES", "TX-PKTS", "TX-BYTES");
  for (const auto& e : resp->endpoint_list().endpoints()) {
    std::string pod = e.pod_name().empty() ? e.ref().container_id()
                                           : absl::StrCat(e.pod_namespace(), "/", e.pod_name());
    if (pod.size() > 24) pod = pod.substr(0, 24);
    std::printf("%-24s %-6s %-15s %-15s %-17s %10llu %12llu %10llu %12llu\n", pod.c_str(),
                e.ref().ifname().c_str(), e.ip().c_str(), e.host_ifname().c_str(),
                e.pod_mac().c_str(), (unsigned long long)e.counters().rx_packets(),
                (unsigned long long)e.counters().rx_bytes(),
                (unsigned long long)e.counters().tx_packets(),
                (unsigned long long)e.counters().tx_bytes());
  }
  return 0;
}

int Drops() {
  auto maps = sarena::datapath::Maps::FromPinRoot(absl::GetFlag(FLAGS_bpffs));
  if (!maps.ok()) return Fail(maps.status());
  auto drops = maps->ReadDrops();
  if (!drops.ok()) return Fail(drops.status());
  const bool json = absl::GetFlag(FLAGS_o) == "json";
  if (json) std::printf("{\"drops\": [");
  else std::printf("%-18s %12s %14s\n", "REASON", "PACKETS", "BYTES");
  bool first = true;
  for (size_t i = 1; i < drops->size(); ++i) {
    const auto& d = (*drops)[i];
    std::string name = sarena::datapath::DropReasonName(static_cast<uint32_t>(i));
    if (json) {
      std::printf("%s\n  {\"reason\": \"%s\", \"packets\": %llu, \"bytes\": %llu}",
                  first ? "" : ",", name.c_str(), (unsigned long long)d.packets,
                  (unsigned long long)d.bytes);
      first = false;
    } else {
      std::printf("%-18s %12llu %14llu\n", name.c_str(), (unsigned long long)d.packets,
                  (unsigned long long)d.bytes);
    }
  }
  if (json) std::printf("\n]}\n");
  return 0;
}

absl::StatusOr<std::string> EtcdEndpoints() {
  std::string e = absl::GetFlag(FLAGS_etcd_endpoints);
  if (e.empty()) {
    const char* env = std::getenv("SARENA_ETCD_ENDPOINTS");
    if (env != nullptr) e = env;
  }
  if (e.empty()) {
    return absl::InvalidArgumentError(
        "no etcd endpoints: pass --etcd-endpoints or set SARENA_ETCD_ENDPOINTS");
  }
  return e;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') absl::StrAppend(&out, "\\", std::string(1, c));
    else if (static_cast<unsigned char>(c) < 0x20) absl::StrAppendFormat(&out, "\\u%04x", c);
    else out.push_back(c);
  }
  return out + "\"";
}

int NodeList() {
  auto eps = EtcdEndpoints();
  if (!eps.ok()) return Fail(eps.status());
  auto nodes = sarena::cluster::ListNodes(*eps);
  if (!nodes.ok()) return Fail(nodes.status());
  if (absl::GetFlag(FLAGS_o) == "json") {
    std::printf("{\"nodes\": [");
    for (size_t i = 0; i < nodes->size(); ++i) {
      const auto& n = (*nodes)[i];
      std::string cidrs, ids;
      for (const auto& c : n.claimed_pod_cidrs) absl::StrAppend(&cidrs, cidrs.empty() ? "" : ", ", JsonString(c));
      for (uint32_t id : n.claimed_node_ids) absl::StrAppend(&ids, ids.empty() ? "" : ", ", id);
      std::printf("%s\n  {\"name\": %s, \"live\": %s, \"lease_ttl_seconds\": %lld, \"record\": %s, "
                  "\"error\": %s, \"claimed_pod_cidrs\": [%s], \"claimed_node_ids\": [%s]}",
                  i ? "," : "", JsonString(n.name).c_str(), n.live ? "true" : "false",
                  (long long)absl::ToInt64Seconds(n.lease_ttl_left),
                  n.has_record ? sarena::cluster::RecordToJson(n.record).c_str() : "null",
                  JsonString(n.error).c_str(), cidrs.c_str(), ids.c_str());
    }
    std::printf("\n]}\n");
    return 0;
  }
  std::printf("%-24s %-7s %-15s %-20s %-7s %-6s %-9s %s\n", "NAME", "NODE-ID", "UNDERLAY",
              "POD-CIDRS", "MODE", "MTU", "LEASE", "NOTE");
  for (const auto& n : *nodes) {
    std::string addr, cidrs;
    for (const auto& a : n.record.addresses()) absl::StrAppend(&addr, addr.empty() ? "" : ",", a.address());
    for (const auto& c : n.record.pod_cidrs()) absl::StrAppend(&cidrs, cidrs.empty() ? "" : ",", c.cidr());
    if (!n.has_record) {
      for (const auto& c : n.claimed_pod_cidrs) absl::StrAppend(&cidrs, cidrs.empty() ? "" : ",", c);
    }
    std::string id = n.has_record ? absl::StrCat(n.record.node_id())
                                  : (n.claimed_node_ids.empty() ? "-" : absl::StrCat(n.claimed_node_ids[0]));
    std::string lease = n.live ? absl::StrCat("live ", absl::ToInt64Seconds(n.lease_ttl_left), "s")
                               : (n.has_record ? "none" : "expired");
    std::string note = !n.error.empty() ? n.error
                       : n.has_record   ? ""
                                        : "no record: claims kept (sarena node delete releases them)";
    std::printf("%-24s %-7s %-15s %-20s %-7s %-6s %-9s %s\n", n.name.c_str(), id.c_str(),
                addr.empty() ? "-" : addr.c_str(), cidrs.empty() ? "-" : cidrs.c_str(),
                n.record.routing_mode().empty() ? "-" : n.record.routing_mode().c_str(),
                n.has_record ? absl::StrCat(n.record.mtu()).c_str() : "-", lease.c_str(),
                note.c_str());
  }
  return 0;
}

int NodeDelete(const std::string& name) {
  if (absl::GetFlag(FLAGS_etcd_endpoints).empty()) {
    return Fail(absl::InvalidArgumentError("node delete needs --etcd-endpoints"));
  }
  auto res = sarena::cluster::DeleteNode(absl::GetFlag(FLAGS_etcd_endpoints), name);
  if (!res.ok()) return Fail(res.status());
  std::string ids;
  for (uint32_t id : res->released_node_ids) absl::StrAppend(&ids, ids.empty() ? "" : ",", id);
  std::printf("deleted node %s: record %s%s, released pod CIDRs [%s], node ids [%s]\n",
              name.c_str(), res->record_deleted ? "deleted" : "absent",
              res->lease_revoked ? " (lease revoked)" : "",
              absl::StrJoin(res->released_pod_cidrs, ",").c_str(), ids.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "sarena [--socket PATH] [--bpffs DIR] [--etcd-endpoints E] [-o table|json] status | "
      "endpoint list | drops | node list | node delete NAME");
  std::vector<std::string> raw = sarena::NormalizeFlagDashes(argc, argv);
  std::vector<char*> av = sarena::ArgvOf(raw);
  std::vector<char*> args = absl::ParseCommandLine(static_cast<int>(raw.size()), av.data());
  std::vector<std::string> cmd(args.begin() + 1, args.end());
  if (cmd.size() == 1 && cmd[0] == "status") return Status();
  if (cmd.size() == 2 && cmd[0] == "endpoint" && cmd[1] == "list") return EndpointList();
  if (cmd.size() == 1 && cmd[0] == "drops") return Drops();
  if (cmd.size() == 2 && cmd[0] == "node" && cmd[1] == "list") return NodeList();
  if (cmd.size() == 3 && cmd[0] == "node" && cmd[1] == "delete") return NodeDelete(cmd[2]);
  std::fprintf(stderr, "usage: %s\n", absl::ProgramUsageMessage().data());
  return 2;
}
