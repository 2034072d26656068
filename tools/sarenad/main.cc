// sarenad: the node daemon. Owns the eBPF datapath, the host device, IPAM and the endpoint
// table; serves sarena-cni and the sarena CLI on a unix socket. Runs in the foreground and logs
// to stderr. Thin: flags -> libsarena -> serve. A failure that ends it is reported once, as
// sarena's and sarena-diag's are (rpc::CommandOutput): "sarenad: <message>" on stderr, or with
// -o json one {"code", "message"} object on stdout.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/signal_set.hpp>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "libsarena/base/cli.h"
#include "libsarena/base/log.h"
#include "libsarena/daemon/cluster_node.h"
#include "libsarena/daemon/endpoint_manager.h"
#include "libsarena/daemon/instance_lock.h"
#include "libsarena/daemon/metrics_node.h"
#include "libsarena/daemon/metrics_server.h"
#include "libsarena/daemon/server.h"
#include "libsarena/rpc/cli_output.h"

ABSL_FLAG(std::string, pod_cidr, "", "This node's pod CIDR, e.g. 10.244.1.0/24 (required)");
ABSL_FLAG(std::string, node_ip, "",
          "The pods' gateway address put on sarena_host as /32, e.g. 10.244.1.1 (required)");
ABSL_FLAG(std::string, socket, "/run/sarena/sarenad.sock", "Unix socket for sarena-cni/sarena");
ABSL_FLAG(std::string, state_dir, "/var/lib/sarena", "Directory for IPAM and endpoint records");
ABSL_FLAG(std::string, bpffs, "/sys/fs/bpf/sarena",
          "bpffs directory for map and link pins (bpffs is mounted there if absent)");
ABSL_FLAG(uint32_t, mtu, 0,
          "MTU of pod veths, sarena_host and the pod-CIDR route (bytes); 0 = 1500 on one node, "
          "the uplink's MTU (minus 50 with a tunnel) in a cluster");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "Join a cluster on etcd v3: unix:///DIR/etcd.sock:2379 or http://host:port (empty: "
          "one node, --pod-cidr and --node-ip required)");
ABSL_FLAG(std::string, cluster_cidr, "", "Cluster: the CIDR every node's pod CIDR comes from");
ABSL_FLAG(std::string, node_name, "", "Cluster: this node's name (default: the hostname)");
ABSL_FLAG(std::string, uplink, "", "Cluster: the underlay device (its first IPv4 address is "
          "the node's underlay address)");
ABSL_FLAG(std::string, routing_mode, "tunnel", "Cluster: tunnel | native | hybrid");
ABSL_FLAG(uint32_t, tunnel_port, 8472, "Cluster: VXLAN UDP port of sarena_vxlan");
ABSL_FLAG(uint32_t, vni, 1, "Cluster: VXLAN network identifier");
ABSL_FLAG(uint32_t, node_mask_len, 24, "Cluster: prefix length of a claimed pod CIDR");
ABSL_FLAG(absl::Duration, peer_grace, absl::Seconds(30),
          "Cluster: how long a peer whose lease expired keeps its routes before it is withdrawn");
ABSL_FLAG(absl::Duration, lease_ttl, absl::Seconds(10),
          "Cluster: TTL of this node's etcd lease (keepalive every TTL/3)");
ABSL_FLAG(std::string, attach_mode, "auto", "auto | tcx | tc (clsact fallback)");
ABSL_FLAG(bool, redirect_peer, true,
          "Deliver pod-to-pod with bpf_redirect_peer (false: bpf_redirect)");
ABSL_FLAG(bool, tcx_after_reply, true,
          "TCX: guard a new pod veth with a tc copy of from_container and move it to TCX after "
          "the ADD reply (false: attach TCX before; needed when a chained plugin adds an ingress "
          "qdisc, e.g. bandwidth with an egress rate)");
ABSL_FLAG(bool, ip_forward, true,
          "Set net.ipv4.ip_forward=1 (false: only conf.sarena_host.forwarding=1)");
ABSL_FLAG(bool, debug, false, "Debug logging");
ABSL_FLAG(uint32_t, max_connections, 1024, "Most client connections open at once");
ABSL_FLAG(uint32_t, max_connections_per_uid, 32,
          "Most connections open at once per non-root peer uid (0 = no per-uid limit)");
ABSL_FLAG(uint32_t, reserved_root_connections, 128,
          "Of --max-connections, how many only uid 0 (the CNI plugin) may use");
ABSL_FLAG(absl::Duration, idle_timeout, absl::Minutes(2),
          "Close a connection idle this long between requests (0 = never)");
ABSL_FLAG(absl::Duration, io_timeout, absl::Seconds(30),
          "Close a connection whose request or response frame takes longer than this; also the "
          "grace period of a stop before sarenad exits even with a request still stuck");
ABSL_FLAG(std::string, metrics_address, "",
          "Serve Prometheus metrics (GET /metrics) on this TCP address: 127.0.0.1:9964, "
          "[::1]:9964 or :9964 (every address); empty = off (docs/metrics.md)");
ABSL_FLAG(std::string, o, "text",
          "How a failure that ends sarenad (a bad flag included) is reported, once, at exit: "
          "text: \"sarenad: <message>\" on stderr; json: one {\"code\", \"message\"} object "
          "(sarena.rpc.v1.CliError, as sarena -o json prints it) on stdout, the only thing "
          "sarenad writes there. Logs go to stderr either way.");
ABSL_FLAG(std::string, output, "text", "Same as -o (the last of the two given wins).");

namespace {

// Exit status: 2 for a bad flag or flag value (kInvalidArgument, e.g. --node-ip outside or at
// the edge of --pod-cidr), 1 for any other failure (kernel, state directory, bpffs).
int ExitStatusOf(const absl::Status& st) { return absl::IsInvalidArgument(st) ? 2 : 1; }

// The cluster flags, checked, as ClusterNode options (finds the uplink).
absl::StatusOr<std::unique_ptr<sarena::daemon::ClusterNode>> MakeCluster() {
  sarena::daemon::ClusterOptions c;
  c.etcd_endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
  c.node_name = absl::GetFlag(FLAGS_node_name);
  if (c.node_name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) c.node_name = host;
  }
  if (absl::GetFlag(FLAGS_cluster_cidr).empty()) {
    return absl::InvalidArgumentError("--cluster-cidr is required with --etcd-endpoints");
  }
  if (absl::GetFlag(FLAGS_uplink).empty()) {
    return absl::InvalidArgumentError("--uplink is required with --etcd-endpoints");
  }
  if (!absl::GetFlag(FLAGS_node_ip).empty()) {
    return absl::InvalidArgumentError(
        "--node-ip is not used with --etcd-endpoints: the node IP is the first address of the "
        "node's pod CIDR");
  }
  auto cidr = sarena::net::ParseIpv4Prefix(absl::GetFlag(FLAGS_cluster_cidr), "--cluster-cidr");
  if (!cidr.ok()) return cidr.status();
  c.cluster_cidr = *cidr;
  if (!absl::GetFlag(FLAGS_pod_cidr).empty()) {
    auto pod = sarena::net::ParseIpv4Prefix(absl::GetFlag(FLAGS_pod_cidr), "--pod-cidr");
    if (!pod.ok()) return pod.status();
    c.pod_cidr = *pod;
  }
  const uint32_t mask = absl::GetFlag(FLAGS_node_mask_len);
  if (mask < static_cast<uint32_t>(c.cluster_cidr.prefix_length()) || mask > 30) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --node-mask-len '", mask, "': ",
                                                   c.cluster_cidr.prefix_length(), "..30"));
  }
  c.node_mask_len = static_cast<int>(mask);
  c.uplink = absl::GetFlag(FLAGS_uplink);
  auto mode = sarena::datapath::ParseRoutingMode(absl::GetFlag(FLAGS_routing_mode));
  if (!mode.ok()) return mode.status();
  c.mode = *mode;
  const uint32_t port = absl::GetFlag(FLAGS_tunnel_port);
  if (port == 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --tunnel-port '", port, "'"));
  }
  c.tunnel_port = static_cast<uint16_t>(port);
  c.vni = absl::GetFlag(FLAGS_vni);
  // Checked here, before anything is registered in etcd or set up on the node (Overlay::Setup
  // checks it too, but only after the claim, the record and the node datapath exist).
  if (c.vni == 0 || c.vni >= (1u << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid --vni '", c.vni, "': 1..16777215 (24 bits, RFC 7348)"));
  }
  c.peer_grace = absl::GetFlag(FLAGS_peer_grace);
  c.lease_ttl = absl::GetFlag(FLAGS_lease_ttl);
  if (c.lease_ttl < absl::Seconds(2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid --lease-ttl '", absl::FormatDuration(c.lease_ttl), "': at least 2s"));
  }
  if (absl::GetFlag(FLAGS_mtu) != 0) c.mtu = absl::GetFlag(FLAGS_mtu);
  auto node = sarena::daemon::ClusterNode::Create(c);
  // A missing or address-less --uplink is a bad flag value (exit 2), not a node failure.
  if (!node.ok() && (absl::IsNotFound(node.status()) || absl::IsFailedPrecondition(node.status())) &&
      absl::StrContains(node.status().message(), "--uplink")) {
    return absl::InvalidArgumentError(node.status().message());
  }
  return node;
}

// What `sarenad --help` says (every flag above is listed by its name as typed, from the flag
// registry; a flag of no group lands under "Other flags").
const sarena::ProgramDoc& Doc() {
  static const sarena::ProgramDoc* doc = new sarena::ProgramDoc{
      .name = "sarenad",
      .summary = "The sarena node daemon: owns the eBPF CNI datapath, the host device, IPAM and "
                 "the endpoint table, and serves sarena-cni and the sarena CLI on a unix socket.",
      .usage = {"sarenad --pod-cidr CIDR --node-ip IP [flags]",
                "sarenad --etcd-endpoints E --cluster-cidr CIDR --uplink DEV [flags]"},
      .description = "The first form runs one node; the second joins a cluster on etcd. Runs in "
                     "the foreground and logs to stderr; SIGTERM or SIGINT stops it and the "
                     "pinned datapath keeps forwarding.",
      .flag_sources = {"tools/sarenad/"},
      .groups = {{"Node (one node, without --etcd-endpoints)", {"pod-cidr", "node-ip"}},
                 {"Cluster (with --etcd-endpoints)",
                  {"etcd-endpoints", "cluster-cidr", "node-name", "uplink", "routing-mode",
                   "tunnel-port", "vni", "node-mask-len", "peer-grace", "lease-ttl"}},
                 {"Datapath", {"bpffs", "mtu", "attach-mode", "redirect-peer", "tcx-after-reply", "ip-forward"}},
                 {"Socket and state",
                  {"socket", "state-dir", "max-connections", "max-connections-per-uid",
                   "reserved-root-connections", "idle-timeout", "io-timeout"}},
                 {"Observability", {"metrics-address", "debug"}},
                 {"Failure report", {"o", "output"}}},
      .epilog = "Exit status: 0 after a stop, 2 for a bad flag or flag value, 1 for any other "
                "failure (kernel, state directory, bpffs, etcd, a stop that did not finish in "
                "time). The failure is reported once, at exit: \"sarenad: <message>\" on stderr, "
                "or with -o json {\"code\": \"<absl status code, e.g. INVALID_ARGUMENT>\", "
                "\"message\": \"...\"} (sarena.rpc.v1.CliError) on stdout and not on stderr.\n",
  };
  return *doc;
}

// The output flags' values, checked: text or json (which of them is in force is
// sarena::AsksForJsonOutput's answer on the raw arguments, as for every sarena executable).
absl::Status CheckOutputFlags() {
  for (const auto& [flag, typed] :
       {std::pair{&FLAGS_o, "-o"}, std::pair{&FLAGS_output, "--output"}}) {
    absl::Status st = sarena::CheckOutputFormat(typed, absl::GetFlag(*flag), {"text", "json"});
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

// sarenad; every failure that ends it returns out.Fail(...), the one report (rpc::ReportCliError).
int Main(int argc, char** argv, const sarena::rpc::CommandOutput& out) {
  auto fail = [&out](const absl::Status& st) { return out.Fail(ExitStatusOf(st), st); };
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (sarena::PrintHelpIfAsked(args, Doc())) return 0;
  absl::StatusOr<std::vector<std::string>> rest = sarena::ParseProgramFlags(args, Doc());
  if (!rest.ok()) {
    return fail(absl::InvalidArgumentError(absl::StrCat(rest.status().message(), " (see --help)")));
  }
  if (!rest->empty()) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", (*rest)[0], "': sarenad takes flags only (see --help)")));
  }
  if (absl::Status st = CheckOutputFlags(); !st.ok()) return fail(st);
  sarena::SetLogSink(sarena::FdLogSink(STDERR_FILENO));
  if (absl::GetFlag(FLAGS_debug)) sarena::SetMinLogLevel(sarena::LogLevel::kDebug);

  sarena::daemon::DaemonOptions o;
  const bool clustered = !absl::GetFlag(FLAGS_etcd_endpoints).empty();
  std::unique_ptr<sarena::daemon::ClusterNode> cluster;
  if (clustered) {
    absl::StatusOr<std::unique_ptr<sarena::daemon::ClusterNode>> c = MakeCluster();
    if (!c.ok()) return fail(c.status());
    cluster = *std::move(c);
  } else {
    if (absl::GetFlag(FLAGS_pod_cidr).empty() || absl::GetFlag(FLAGS_node_ip).empty()) {
      return fail(absl::InvalidArgumentError(
          "--pod-cidr and --node-ip are required without --etcd-endpoints (see --help)"));
    }
    auto cidr = sarena::net::ParseIpv4Prefix(absl::GetFlag(FLAGS_pod_cidr), "--pod-cidr");
    if (!cidr.ok()) return fail(cidr.status());  // kInvalidArgument naming the flag and value
    auto node_ip = sarena::net::ParseIpv4(absl::GetFlag(FLAGS_node_ip), "--node-ip");
    if (!node_ip.ok()) return fail(node_ip.status());
    o.pod_cidr = *cidr;
    o.node_ip = *node_ip;
  }
  std::optional<boost::asio::ip::tcp::endpoint> metrics_at;
  if (const std::string m = absl::GetFlag(FLAGS_metrics_address); !m.empty()) {
    auto at = sarena::daemon::ParseListenAddress(m, "--metrics-address");
    if (!at.ok()) return fail(at.status());
    // A taken port stops sarenad here, before the node is touched (bound for real below).
    if (absl::Status st = sarena::daemon::CheckListenAddress(*at); !st.ok()) {
      return fail(absl::Status(st.code(), absl::StrCat("--metrics-address ", m, ": ", st.message(),
                                                       " (another process listens there?)")));
    }
    metrics_at = *at;
  }
  const std::string mode = absl::GetFlag(FLAGS_attach_mode);
  if (mode == "auto") {
    o.attach_mode = sarena::bpf::AttachMode::kAuto;
  } else if (mode == "tcx") {
    o.attach_mode = sarena::bpf::AttachMode::kTcx;
  } else if (mode == "tc") {
    o.attach_mode = sarena::bpf::AttachMode::kTc;
  } else {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("invalid --attach-mode '", mode, "': auto, tcx or tc")));
  }
  o.state_dir = absl::GetFlag(FLAGS_state_dir);
  o.bpffs = absl::GetFlag(FLAGS_bpffs);
  o.mtu = absl::GetFlag(FLAGS_mtu) ? absl::GetFlag(FLAGS_mtu) : 1500;
  o.redirect_peer = absl::GetFlag(FLAGS_redirect_peer);
  o.tcx_after_reply = absl::GetFlag(FLAGS_tcx_after_reply);
  o.ip_forward = absl::GetFlag(FLAGS_ip_forward);

  // One sarenad per network namespace, checked before anything on the node is touched.
  auto instance = sarena::daemon::NetnsInstanceLock::Acquire();
  if (!instance.ok()) return fail(instance.status());

  std::unique_ptr<sarena::daemon::EndpointManager> manager;
  sarena::daemon::Handler handler;
  if (clustered) {
    SARENA_LOG(Info, "sarenad starting in a cluster: etcd ", absl::GetFlag(FLAGS_etcd_endpoints),
               ", node ", absl::GetFlag(FLAGS_node_name), ", socket ", absl::GetFlag(FLAGS_socket),
               ", state ", o.state_dir, ", bpffs ", o.bpffs);
    sarena::daemon::ClusterNode* c = cluster.get();
    handler = [c](const sarena::rpc::v1::Request& req, const sarena::daemon::PeerCred& peer) {
      return c->Handle(req, peer);
    };
  } else {
    SARENA_LOG(Info, "sarenad starting: pod CIDR ", o.pod_cidr.to_string(), ", node IP ",
               o.node_ip.to_string(), ", socket ", absl::GetFlag(FLAGS_socket), ", state ",
               o.state_dir, ", bpffs ", o.bpffs);
    auto m = sarena::daemon::EndpointManager::Create(o);
    if (!m.ok()) return fail(m.status());
    manager = *std::move(m);
    sarena::daemon::EndpointManager* mp = manager.get();
    handler = [mp](const sarena::rpc::v1::Request& req, const sarena::daemon::PeerCred& peer) {
      return mp->Handle(req, peer);
    };
  }
  // One fd per connection: make room for --max-connections (+ state files, netlink, maps).
  if (rlimit rl; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  sarena::daemon::ServerOptions so;
  // Metrics read the figures through the same handler (STATUS, EndpointList) and count every
  // CNI request the server executes.
  std::unique_ptr<sarena::daemon::NodeMetrics> node_metrics;
  if (metrics_at) {
    node_metrics = std::make_unique<sarena::daemon::NodeMetrics>(handler, o.bpffs);
    so.observe = node_metrics->observer();
  }
  so.socket_path = absl::GetFlag(FLAGS_socket);
  so.max_connections = absl::GetFlag(FLAGS_max_connections);
  so.max_connections_per_uid = absl::GetFlag(FLAGS_max_connections_per_uid);
  so.reserved_root_connections = absl::GetFlag(FLAGS_reserved_root_connections);
  so.idle_timeout = absl::GetFlag(FLAGS_idle_timeout);
  so.io_timeout = absl::GetFlag(FLAGS_io_timeout);
  const absl::Duration grace =
      (so.io_timeout > absl::ZeroDuration() ? so.io_timeout : absl::Seconds(30)) +
      absl::Seconds(5);
  auto server = sarena::daemon::Server::Create(std::move(so), std::move(handler));
  if (!server.ok()) return fail(server.status());
  std::unique_ptr<sarena::daemon::MetricsServer> metrics_server;
  if (metrics_at) {
    sarena::daemon::NodeMetrics* nm = node_metrics.get();
    auto ms = sarena::daemon::MetricsServer::Create(**server, {.address = *metrics_at},
                                                    [nm] { return nm->Render(); });
    if (!ms.ok()) return fail(ms.status());
    metrics_server = *std::move(ms);
  }
  // In a cluster the socket answers STATUS (not ready, and why) while the node registers and
  // its datapath comes up on this thread; a failure there stops the daemon and is its failure,
  // reported at exit.
  absl::Status bring_up_status;
  std::thread bring_up;
  if (clustered) {
    sarena::daemon::Server* s = server->get();
    sarena::daemon::ClusterNode* c = cluster.get();
    bring_up = std::thread([s, c, o, &bring_up_status] {
      absl::Status st = c->BringUp(o);
      if (st.ok()) {
        SARENA_LOG(Info, "node is up and joined the cluster");
        return;
      }
      if (absl::IsCancelled(st)) {  // a signal stopped the daemon during bring-up
        SARENA_LOG(Info, "bring-up stopped: ", st.message());
        return;
      }
      bring_up_status = std::move(st);
      s->Stop();
    });
  }
  boost::asio::signal_set signals((*server)->io_context(), SIGINT, SIGTERM);
  sarena::daemon::Server* srv = server->get();
  // Ends the process at once with exit status 1, `st` reported as every failure is (_Exit
  // flushes no stdio: an -o json report is flushed here).
  auto fail_now = [out](const absl::Status& st) {
    out.Fail(1, st);
    std::fflush(stdout);
    std::_Exit(1);
  };
  signals.async_wait([srv, grace, &signals, fail_now](const boost::system::error_code& ec,
                                                      int sig) {
    if (ec) return;
    SARENA_LOG(Info, "signal ", sig, ": stopping (the datapath keeps forwarding)");
    srv->Stop();
    // A request stuck in the kernel must not keep sarenad alive: exit after the grace period
    // whatever the worker is doing, or at once on a second signal. The datapath is pinned.
    std::thread([grace, fail_now] {
      absl::SleepFor(grace);
      fail_now(absl::DeadlineExceededError(
          absl::StrCat("stop did not finish within ", absl::FormatDuration(grace),
                       " (a request is stuck); exiting anyway")));
    }).detach();
    signals.async_wait([fail_now](const boost::system::error_code& e, int again) {
      if (e) return;
      fail_now(absl::CancelledError(
          absl::StrCat("signal ", again, " again during the stop: exiting at once")));
    });
  });
  std::signal(SIGPIPE, SIG_IGN);
  SARENA_LOG(Info, "listening on ", absl::GetFlag(FLAGS_socket));
  (*server)->Run();
  // Stop the agent before joining the bring-up thread: a Register still waiting for etcd
  // returns at once instead of holding the stop until the grace period's _Exit.
  if (cluster) cluster->Stop();
  if (bring_up.joinable()) bring_up.join();
  SARENA_LOG(Info, "sarenad stopped");
  if (!bring_up_status.ok()) return fail(bring_up_status);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const sarena::rpc::CommandOutput out(Doc(), argc, argv);
  return out.FinishStdout(Main(argc, argv, out));
}
