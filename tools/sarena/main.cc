// sarena: the operator CLI. Talks to sarenad over its socket (status, endpoints with counters)
// and reads the pinned BPF maps directly (drop counters). Thin: flags -> libsarena -> print.
//   sarena [--socket PATH] status
//   sarena [--socket PATH] endpoint list [-o table|json]
//   sarena [--bpffs DIR] drops [-o table|json]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/cli.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/rpc/client.h"

ABSL_FLAG(std::string, socket, "/run/sarena/sarenad.sock", "sarenad's unix socket");
ABSL_FLAG(std::string, bpffs, "/sys/fs/bpf/sarena", "bpffs directory of the datapath's pins");
ABSL_FLAG(std::string, o, "table", "Output: table | json");

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

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "sarena [--socket PATH] [--bpffs DIR] [-o table|json] status | endpoint list | drops");
  std::vector<std::string> raw = sarena::NormalizeFlagDashes(argc, argv);
  std::vector<char*> av = sarena::ArgvOf(raw);
  std::vector<char*> args = absl::ParseCommandLine(static_cast<int>(raw.size()), av.data());
  std::vector<std::string> cmd(args.begin() + 1, args.end());
  if (cmd.size() == 1 && cmd[0] == "status") return Status();
  if (cmd.size() == 2 && cmd[0] == "endpoint" && cmd[1] == "list") return EndpointList();
  if (cmd.size() == 1 && cmd[0] == "drops") return Drops();
  std::fprintf(stderr, "usage: %s\n", absl::ProgramUsageMessage().data());
  return 2;
}
