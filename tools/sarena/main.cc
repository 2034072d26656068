// sarena: the operator CLI. Talks to sarenad over its socket (status, endpoints with counters)
// and reads the pinned BPF maps directly (drop counters). Thin: flags -> libsarena -> print.
//   sarena [--socket PATH] status
//   sarena [--socket PATH] endpoint list [-o table|json]
//   sarena [--socket PATH] endpoint get ID [-o table|json]
//   sarena [--bpffs DIR] drops [-o table|json]
//   sarena [--bpffs DIR] monitor [--type drop|trace] [--endpoint ID] [-o json] [--count N]
//          [--duration D]
//   sarena [--etcd-endpoints E] node list [-o table|json]
//   sarena --etcd-endpoints E node delete NAME [-o table|json]
// -o json prints one protobuf message in protobuf's JSON mapping (see Doc() below), or on failure
// one sarena.rpc.v1.CliError object {"code", "message"} on stdout; `sarena --help` lists all.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "libsarena/base/cli.h"
#include "libsarena/base/numbers.h"
#include "libsarena/cluster/agent.h"
#include "libsarena/cluster/etcd_client.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/monitor.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/rpc/cli_output.h"
#include "libsarena/rpc/client.h"

ABSL_FLAG(std::string, socket, "/run/sarena/sarenad.sock",
          "sarenad's unix socket (sarenad --socket), for status and endpoint");
ABSL_FLAG(std::string, bpffs, "/sys/fs/bpf/sarena",
          "bpffs directory of the datapath's pinned maps (sarenad --bpffs), for drops");
ABSL_FLAG(std::string, o, "table",
          "Output: table (text for people) | json (one protobuf message in protobuf's JSON "
          "mapping; on failure one {\"code\", \"message\"} object, also on stdout)");
ABSL_FLAG(std::string, type, "drop",
          "monitor: event type, drop (every drop) or trace (--endpoint's packets)");
ABSL_FLAG(std::string, endpoint, "",
          "monitor: only this endpoint id's events (required with --type trace)");
ABSL_FLAG(uint64_t, count, 0, "monitor: stop after this many events (0 = no limit)");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "monitor: stop after this long, e.g. 30s (0 = until interrupted)");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "etcd endpoints for `node list|delete`: unix:///path/etcd.sock:2379 or http://host:port, "
          "comma-separated (node list: default $SARENA_ETCD_ENDPOINTS; node delete needs the "
          "flag)");

namespace {

using sarena::rpc::v1::Request;
using sarena::rpc::v1::Response;

constexpr int kExitUsage = 2;

bool JsonOutput() { return absl::GetFlag(FLAGS_o) == "json"; }

// A failed command: with -o json one CliError object on stdout (so `sarena -o json ... | jq`
// always reads JSON), else "sarena: <message>" on stderr. Returns the exit status `code`.
int Fail(const absl::Status& st, int code = 1) {
  return sarena::rpc::ReportCliError("sarena", st, JsonOutput(), code);
}

// Prints `m` as JSON (-o json) or the text `text` renders.
int Print(const google::protobuf::Message& m, const std::string& text) {
  std::fputs(JsonOutput() ? sarena::rpc::MessageToJson(m).c_str() : text.c_str(), stdout);
  return 0;
}

// `hint`, unless `st` is EACCES/EPERM (kPermissionDenied) or this user may not open `path`
// (Client::Connect reports EACCES as kUnavailable): sarenad's socket (0600) and the datapath's
// pins (0600) are root's, so the thing to do is to run as root.
std::string HintFor(const absl::Status& st, const std::string& path, std::string hint) {
  const bool denied = st.code() == absl::StatusCode::kPermissionDenied ||
                      (::access(path.c_str(), R_OK | W_OK) != 0 && errno == EACCES);
  if (!denied) return hint;
  return "sarenad's socket and the datapath's pins are root's only: run sarena as root (sudo)";
}

absl::StatusOr<Response> Call(const Request& req) {
  const std::string socket = absl::GetFlag(FLAGS_socket);
  auto client = sarena::rpc::Client::Connect(socket);
  if (!client.ok()) {
    return sarena::rpc::WithHint(
        client.status(),
        HintFor(client.status(), socket,
                "is sarenad running, and is this its socket? (sarena --socket PATH, as sarenad "
                "--socket)"));
  }
  auto resp = client->Call(req);
  if (!resp.ok()) return sarena::rpc::WithHint(resp.status(), absl::StrCat("sarenad at ", socket));
  if (resp->has_error()) return sarena::rpc::StatusFromError(resp->error());
  return resp;
}

// What to do when the pinned maps under `bpffs` cannot be opened (drops, monitor).
std::string BpffsHint(const std::string& bpffs) {
  return absl::StrCat("is the sarena datapath loaded with its pins under ", bpffs,
                      "? (sarena --bpffs DIR, as sarenad --bpffs)");
}

std::string Time(int64_t unix_seconds) {
  return absl::FormatTime("%H:%M:%S", absl::FromUnixSeconds(unix_seconds), absl::LocalTimeZone());
}

int Status() {
  Request req;
  req.mutable_status();
  auto resp = Call(req);
  if (!resp.ok()) return Fail(resp.status());
  if (JsonOutput()) return Print(resp->status(), "");
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
  sarena::TextTable peers({"PEER", "ID", "UNDERLAY", "POD-CIDRS", "MODE", "UPDATED", "TX-PKTS",
                           "RX-PKTS", "STATE"},
                          {false, true, false, false, false, false, true, true, false});
  for (const auto& p : c.peers()) {
    peers.AddRow({p.name(), absl::StrCat(p.node_id()), p.underlay(),
                  absl::StrJoin(p.pod_cidrs(), ","), p.mode(), Time(p.last_update_unix()),
                  absl::StrCat(p.tx_packets()), absl::StrCat(p.rx_packets()),
                  p.lost() ? absl::StrCat("lost since ", Time(p.lost_since_unix())) : "alive"});
  }
  std::fputs(peers.Render().c_str(), stdout);
  return 0;
}

absl::StatusOr<Response> ListEndpoints() {
  Request req;
  req.mutable_endpoint_list();
  return Call(req);
}

int EndpointList() {
  auto resp = ListEndpoints();
  if (!resp.ok()) return Fail(resp.status());
  sarena::TextTable t({"ID", "CONTAINER", "IF", "POD", "IP", "HOST-IF", "POD-MAC", "RX-PKTS",
                       "RX-BYTES", "TX-PKTS", "TX-BYTES"},
                      {true, false, false, false, false, false, false, true, true, true, true});
  for (const auto& e : resp->endpoint_list().endpoints()) {
    t.AddRow({absl::StrCat(e.endpoint_id()), e.ref().container_id(), e.ref().ifname(),
              e.pod_name().empty() ? "-" : absl::StrCat(e.pod_namespace(), "/", e.pod_name()),
              e.ip(), e.host_ifname(), e.pod_mac(), absl::StrCat(e.counters().rx_packets()),
              absl::StrCat(e.counters().rx_bytes()), absl::StrCat(e.counters().tx_packets()),
              absl::StrCat(e.counters().tx_bytes())});
  }
  return Print(resp->endpoint_list(), t.Render());
}

// `endpoint get ID`: ID is an endpoint id, a container id or a unique prefix of one, or the pod's
// namespace/name (rpc::FindEndpoint).
int EndpointGet(const std::string& id) {
  auto resp = ListEndpoints();
  if (!resp.ok()) return Fail(resp.status());
  auto e = sarena::rpc::FindEndpoint(resp->endpoint_list(), id);
  if (!e.ok()) return Fail(e.status());
  return Print(*e, sarena::rpc::MessageToText(*e));
}

int Drops() {
  const std::string bpffs = absl::GetFlag(FLAGS_bpffs);
  const std::string hint = BpffsHint(bpffs);
  auto maps = sarena::datapath::Maps::OpenPinned(bpffs);
  if (!maps.ok()) {
    return Fail(sarena::rpc::WithHint(maps.status(), HintFor(maps.status(), bpffs, hint)));
  }
  auto drops = maps->drops.ReadAll();
  if (!drops.ok()) return Fail(sarena::rpc::WithHint(drops.status(), hint));
  sarena::rpc::v1::DropList list;
  sarena::TextTable t({"REASON", "PACKETS", "BYTES", "MEANING"}, {false, true, true, false});
  for (size_t i = 1; i < drops->size(); ++i) {
    const auto& d = (*drops)[i];
    sarena::rpc::v1::DropCount* c = list.add_drops();
    c->set_reason(sarena::datapath::DropReasonName(static_cast<uint32_t>(i)));
    c->set_code(static_cast<uint32_t>(i));
    c->set_packets(d.packets);
    c->set_bytes(d.bytes);
    c->set_description(sarena::datapath::DropReasonDescription(static_cast<uint32_t>(i)));
    t.AddRow({c->reason(), absl::StrCat(d.packets), absl::StrCat(d.bytes), c->description()});
  }
  return Print(list, t.Render());
}

// The etcd endpoints of `node list|delete`: --etcd-endpoints, else (with `from_env`)
// $SARENA_ETCD_ENDPOINTS. Errors are bad usage (kInvalidArgument, exit 2), before anything is
// dialled: none given, or a value that is no endpoint list (cluster::ParseEndpoints), naming
// where it came from and the value, e.g. "invalid --etcd-endpoints 'notaurl': invalid etcd
// endpoint 'notaurl': expected unix:///path or http://host:port (https is not supported)".
absl::StatusOr<std::string> EtcdEndpoints(bool from_env) {
  std::string e = absl::GetFlag(FLAGS_etcd_endpoints);
  std::string source = "--etcd-endpoints";
  if (e.empty() && from_env) {
    const char* env = std::getenv("SARENA_ETCD_ENDPOINTS");
    if (env != nullptr) e = env;
    source = "$SARENA_ETCD_ENDPOINTS";
  }
  if (e.empty()) {
    return absl::InvalidArgumentError(
        from_env ? "no etcd endpoints: pass --etcd-endpoints or set SARENA_ETCD_ENDPOINTS"
                 : "node delete needs --etcd-endpoints");
  }
  if (auto parsed = sarena::cluster::ParseEndpoints(e); !parsed.ok() || parsed->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", source, " '", e, "': ",
                     parsed.ok() ? "no endpoint in it" : parsed.status().message()));
  }
  return e;
}

int NodeList() {
  auto eps = EtcdEndpoints(/*from_env=*/true);
  if (!eps.ok()) return Fail(eps.status(), kExitUsage);  // none or malformed: usage
  auto nodes = sarena::cluster::ListNodes(*eps);
  if (!nodes.ok()) {
    return Fail(sarena::rpc::WithHint(
        nodes.status(), absl::StrCat("is etcd reachable at ", *eps, "? (--etcd-endpoints)")));
  }
  sarena::cluster::v1::NodeList list;
  sarena::TextTable t({"NAME", "NODE-ID", "UNDERLAY", "POD-CIDRS", "MODE", "MTU", "LEASE", "NOTE"},
                      {false, true, false, false, false, true, false, false});
  for (const auto& n : *nodes) {
    sarena::cluster::v1::NodeListEntry* entry = list.add_nodes();
    entry->set_name(n.name);
    entry->set_live(n.live);
    entry->set_lease_ttl_seconds(
        n.live ? static_cast<int32_t>(absl::ToInt64Seconds(n.lease_ttl_left)) : 0);
    if (n.has_record) *entry->mutable_record() = n.record;
    entry->set_error(n.error);
    for (const auto& c : n.claimed_pod_cidrs) entry->add_claimed_pod_cidrs(c);
    for (uint32_t id : n.claimed_node_ids) entry->add_claimed_node_ids(id);
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
    t.AddRow({n.name, id, addr.empty() ? "-" : addr, cidrs.empty() ? "-" : cidrs,
              n.record.routing_mode().empty() ? "-" : n.record.routing_mode(),
              n.has_record ? absl::StrCat(n.record.mtu()) : "-", lease, note});
  }
  return Print(list, t.Render());
}

int NodeDelete(const std::string& name) {
  auto parsed_eps = EtcdEndpoints(/*from_env=*/false);
  if (!parsed_eps.ok()) return Fail(parsed_eps.status(), kExitUsage);
  const std::string& eps = *parsed_eps;
  auto res = sarena::cluster::DeleteNode(eps, name);
  if (!res.ok()) {
    return Fail(absl::IsNotFound(res.status()) || absl::IsInvalidArgument(res.status())
                    ? res.status()
                    : sarena::rpc::WithHint(res.status(), absl::StrCat("is etcd reachable at ", eps,
                                                                       "? (--etcd-endpoints)")));
  }
  sarena::cluster::v1::NodeDeleteResult out;
  out.set_name(name);
  out.set_record_deleted(res->record_deleted);
  out.set_lease_revoked(res->lease_revoked);
  for (const auto& c : res->released_pod_cidrs) out.add_released_pod_cidrs(c);
  for (uint32_t id : res->released_node_ids) out.add_released_node_ids(id);
  return Print(
      out,
      absl::StrCat("deleted node ", name, ": record ", res->record_deleted ? "deleted" : "absent",
                   res->lease_revoked ? " (lease revoked)" : "", ", released pod CIDRs [",
                   absl::StrJoin(res->released_pod_cidrs, ","), "], node ids [",
                   absl::StrJoin(res->released_node_ids, ","), "]\n"));
}

// `monitor`: live datapath events (libsarena/datapath/monitor.h; schema in docs/monitor.md).
volatile int g_monitor_stop = 0;
int Monitor() {
  sarena::datapath::MonitorOptions opts{.pin_root = absl::GetFlag(FLAGS_bpffs)};
  if (const absl::Duration d = absl::GetFlag(FLAGS_duration); d < absl::ZeroDuration()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
                    "invalid --duration '", absl::FormatDuration(d),
                    "': negative (want 0 = until interrupted, or how long, e.g. 30s)")),
                kExitUsage);
  }
  auto type = sarena::datapath::ParseEventType(absl::GetFlag(FLAGS_type));
  if (!type.ok()) return Fail(type.status(), kExitUsage);
  opts.type = *type;
  if (const std::string ep = absl::GetFlag(FLAGS_endpoint); !ep.empty()) {
    const std::optional<uint64_t> id = sarena::ParseCanonicalUint(ep, UINT32_MAX);
    if (!id) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--endpoint '", ep, "': an endpoint id")),
                  kExitUsage);
    }
    opts.endpoint = static_cast<uint32_t>(*id);
  }
  auto mon = sarena::datapath::Monitor::Open(opts);
  if (!mon.ok()) {
    // Bad usage (--type trace without --endpoint) is no fault of the datapath: no hint at it.
    if (absl::IsInvalidArgument(mon.status())) return Fail(mon.status(), kExitUsage);
    return Fail(sarena::rpc::WithHint(mon.status(), BpffsHint(opts.pin_root)));
  }
  struct sigaction sa = {};
  sa.sa_handler = [](int) { g_monitor_stop = 1; };  // no SA_RESTART: the poll returns at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  absl::Status st = sarena::datapath::RunMonitor(
      **mon, {.json = JsonOutput(), .count = absl::GetFlag(FLAGS_count),
              .duration = absl::GetFlag(FLAGS_duration), .stop = &g_monitor_stop},
      [](absl::string_view line) {
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
      });
  return st.ok() ? 0 : Fail(st);
}

// The subcommands: what --help lists and what main() dispatches, from one table.
struct Command {
  sarena::CommandSpec spec;  // words, and the one argument's name ("" for none)
  const char* help;
  int (*run)(const std::vector<std::string>& cmd);  // cmd: the positional words, args last
};

const std::vector<Command>& Commands() {
  static const std::vector<Command>* commands = new std::vector<Command>{
      {{"status", ""},
       "Is sarenad ready; pod CIDR, node IP, endpoints, free IPs, attach mode; in a cluster the "
       "node, etcd and every peer (--socket).",
       [](const std::vector<std::string>&) { return Status(); }},
      {{"endpoint list", ""}, "Every endpoint with its BPF packet/byte counters (--socket).",
       [](const std::vector<std::string>&) { return EndpointList(); }},
      {{"endpoint get", "ID"},
       "One endpoint, every field and counter. ID: the endpoint id, the container id or a unique "
       "prefix of it, or the pod's NAMESPACE/NAME (--socket).",
       [](const std::vector<std::string>& cmd) { return EndpointGet(cmd[2]); }},
      {{"drops", ""}, "The datapath's drop counters by reason (--bpffs).",
       [](const std::vector<std::string>&) { return Drops(); }},
      {{"monitor", ""},
       "Live datapath events, one line each (-o json: one JSON object per line, "
       "docs/monitor.md): every drop with reason, ifindex, endpoint and 5-tuple (--type drop), "
       "or one endpoint's packets (--type trace --endpoint ID); --count N, --duration D "
       "(--bpffs).",
       [](const std::vector<std::string>&) { return Monitor(); }},
      {{"node list", ""},
       "Every node of the cluster in etcd: record, lease, claims (--etcd-endpoints or "
       "$SARENA_ETCD_ENDPOINTS).",
       [](const std::vector<std::string>&) { return NodeList(); }},
      {{"node delete", "NAME"},
       "Deletes a node's record and releases its pod CIDR and node id claims "
       "(--etcd-endpoints).",
       [](const std::vector<std::string>& cmd) { return NodeDelete(cmd[2]); }},
  };
  return *commands;
}

std::vector<sarena::SubcommandDoc> SubcommandDocs() {
  std::vector<sarena::SubcommandDoc> docs;
  for (const Command& c : Commands()) {
    docs.push_back({c.spec.arg.empty() ? c.spec.words : absl::StrCat(c.spec.words, " ", c.spec.arg),
                    c.help});
  }
  return docs;
}

// What `sarena --help` says.
const sarena::ProgramDoc& Doc() {
  static const sarena::ProgramDoc* doc = new sarena::ProgramDoc{
      .name = "sarena",
      .summary = "The sarena operator CLI: asks sarenad (over its unix socket) for its status and "
                 "endpoints, reads the datapath's pinned BPF maps for drop counters, and lists or "
                 "deletes the nodes of a cluster in etcd.",
      .usage = {"sarena [flags] COMMAND [ARGS]"},
      .description =
          "Flags may come before or after the command. -o json prints one protobuf message in "
          "protobuf's JSON mapping (proto field names; 64-bit integers as strings): status: "
          "sarena.rpc.v1.StatusResponse, endpoint list: sarena.rpc.v1.EndpointListResponse, "
          "endpoint get: sarena.rpc.v1.Endpoint, drops: sarena.rpc.v1.DropList, node list: "
          "sarena.cluster.v1.NodeList, node delete: sarena.cluster.v1.NodeDeleteResult "
          "(libsarena/rpc/proto/sarenad.proto, libsarena/cluster/proto/cluster.proto).",
      .subcommands = SubcommandDocs(),
      .flag_sources = {"tools/sarena/"},
      .groups = {{"Output", {"o"}},
                 {"Where to look", {"socket", "bpffs", "etcd-endpoints"}},
                 {"Monitor", {"type", "endpoint", "count", "duration"}}},
      .epilog = "Exit status: 0 success, 1 failure (the message names the socket, pin or etcd "
                "endpoint that failed and what to do), 2 bad usage. With -o json a failure prints "
                "{\"code\": \"<absl status code, e.g. NOT_FOUND>\", \"message\": \"...\"} "
                "(sarena.rpc.v1.CliError) on stdout.\n",
  };
  return *doc;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (sarena::PrintHelpIfAsked(args, Doc())) return 0;
  absl::StatusOr<std::vector<std::string>> parsed = sarena::ParseProgramFlags(args, Doc());
  if (!parsed.ok()) {
    // A bad flag before `-o json` stops the parse: the error object is still JSON then.
    if (sarena::AsksForJsonOutput(args)) absl::SetFlag(&FLAGS_o, "json");
    return Fail(
        absl::InvalidArgumentError(absl::StrCat(parsed.status().message(), " (see --help)")),
        kExitUsage);
  }
  const std::vector<std::string>& cmd = *parsed;
  if (absl::Status st =
          sarena::CheckOutputFormat("-o", absl::GetFlag(FLAGS_o), {"table", "json"});
      !st.ok()) {
    absl::SetFlag(&FLAGS_o, "table");
    return Fail(st, kExitUsage);
  }
  std::vector<sarena::CommandSpec> specs;
  for (const Command& c : Commands()) specs.push_back(c.spec);
  absl::StatusOr<size_t> which = sarena::MatchCommand(cmd, specs, "sarena");
  if (!which.ok()) return Fail(which.status(), kExitUsage);
  return Commands()[*which].run(cmd);
}
