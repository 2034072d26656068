// sarenad: the node daemon. Owns the eBPF datapath, the host device, IPAM and the endpoint
// table; serves sarena-cni and the sarena CLI on a unix socket. Runs in the foreground and logs
// to stderr. Thin: flags -> libsarena -> serve.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/signal_set.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "libsarena/base/cli.h"
#include "libsarena/base/log.h"
#include "libsarena/daemon/endpoint_manager.h"
#include "libsarena/daemon/server.h"

ABSL_FLAG(std::string, pod_cidr, "", "This node's pod CIDR, e.g. 10.244.1.0/24 (required)");
ABSL_FLAG(std::string, node_ip, "",
          "The pods' gateway address put on sarena_host as /32, e.g. 10.244.1.1 (required)");
ABSL_FLAG(std::string, socket, "/run/sarena/sarenad.sock", "Unix socket for sarena-cni/sarena");
ABSL_FLAG(std::string, state_dir, "/var/lib/sarena", "Directory for IPAM and endpoint records");
ABSL_FLAG(std::string, bpffs, "/sys/fs/bpf/sarena",
          "bpffs directory for map and link pins (bpffs is mounted there if absent)");
ABSL_FLAG(uint32_t, mtu, 1500, "MTU of pod veths, sarena_host and the pod-CIDR route (bytes)");
ABSL_FLAG(std::string, attach_mode, "auto", "auto | tcx | tc (clsact fallback)");
ABSL_FLAG(bool, redirect_peer, true,
          "Deliver pod-to-pod with bpf_redirect_peer (false: bpf_redirect)");
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

namespace {

// Exit status: 2 for a bad flag or flag value (kInvalidArgument, e.g. --node-ip outside or at
// the edge of --pod-cidr), 1 for any other failure (kernel, state directory, bpffs).
int Fail(const absl::Status& st) {
  sarena::Log(sarena::LogLevel::kError, st.ToString());
  return absl::IsInvalidArgument(st) ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "sarenad --pod-cidr 10.244.1.0/24 --node-ip 10.244.1.1 [--socket PATH] [--state-dir DIR] "
      "[--bpffs DIR] [--mtu N]\nThe sarena node daemon (eBPF CNI datapath). Runs in the "
      "foreground, logs to stderr.");
  std::vector<std::string> args = sarena::NormalizeFlagDashes(argc, argv);
  std::vector<char*> av = sarena::ArgvOf(args);
  absl::ParseCommandLine(static_cast<int>(args.size()), av.data());
  sarena::SetLogSink(sarena::FdLogSink(STDERR_FILENO));
  if (absl::GetFlag(FLAGS_debug)) sarena::SetMinLogLevel(sarena::LogLevel::kDebug);

  sarena::daemon::DaemonOptions o;
  if (absl::GetFlag(FLAGS_pod_cidr).empty() || absl::GetFlag(FLAGS_node_ip).empty()) {
    std::fprintf(stderr, "sarenad: --pod-cidr and --node-ip are required (see --help)\n");
    return 2;
  }
  auto cidr = sarena::net::ParseIpv4Prefix(absl::GetFlag(FLAGS_pod_cidr), "--pod-cidr");
  auto node_ip = sarena::net::ParseIpv4(absl::GetFlag(FLAGS_node_ip), "--node-ip");
  if (!cidr.ok() || !node_ip.ok()) {
    std::fprintf(stderr, "sarenad: %s\n",
                 std::string((!cidr.ok() ? cidr.status() : node_ip.status()).message()).c_str());
    return 2;
  }
  const std::string mode = absl::GetFlag(FLAGS_attach_mode);
  if (mode == "auto") {
    o.attach_mode = sarena::bpf::AttachMode::kAuto;
  } else if (mode == "tcx") {
    o.attach_mode = sarena::bpf::AttachMode::kTcx;
  } else if (mode == "tc") {
    o.attach_mode = sarena::bpf::AttachMode::kTc;
  } else {
    std::fprintf(stderr, "sarenad: invalid --attach-mode '%s': auto, tcx or tc\n", mode.c_str());
    return 2;
  }
  o.pod_cidr = *cidr;
  o.node_ip = *node_ip;
  o.state_dir = absl::GetFlag(FLAGS_state_dir);
  o.bpffs = absl::GetFlag(FLAGS_bpffs);
  o.mtu = absl::GetFlag(FLAGS_mtu);
  o.redirect_peer = absl::GetFlag(FLAGS_redirect_peer);
  o.ip_forward = absl::GetFlag(FLAGS_ip_forward);

  SARENA_LOG(Info, "sarenad starting: pod CIDR ", o.pod_cidr.to_string(), ", node IP ",
             o.node_ip.to_string(), ", socket ", absl::GetFlag(FLAGS_socket), ", state ",
             o.state_dir, ", bpffs ", o.bpffs);
  auto manager = sarena::daemon::EndpointManager::Create(o);
  if (!manager.ok()) return Fail(manager.status());
  sarena::daemon::EndpointManager* m = manager->get();
  // One fd per connection: make room for --max-connections (+ state files, netlink, maps).
  if (rlimit rl; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  sarena::daemon::ServerOptions so;
  so.socket_path = absl::GetFlag(FLAGS_socket);
  so.max_connections = absl::GetFlag(FLAGS_max_connections);
  so.max_connections_per_uid = absl::GetFlag(FLAGS_max_connections_per_uid);
  so.reserved_root_connections = absl::GetFlag(FLAGS_reserved_root_connections);
  so.idle_timeout = absl::GetFlag(FLAGS_idle_timeout);
  so.io_timeout = absl::GetFlag(FLAGS_io_timeout);
  const absl::Duration grace =
      (so.io_timeout > absl::ZeroDuration() ? so.io_timeout : absl::Seconds(30)) +
      absl::Seconds(5);
  auto server = sarena::daemon::Server::Create(
      std::move(so),
      [m](const sarena::rpc::v1::Request& req, const sarena::daemon::PeerCred& peer) {
        return m->Handle(req, peer);
      });
  if (!server.ok()) return Fail(server.status());
  boost::asio::signal_set signals((*server)->io_context(), SIGINT, SIGTERM);
  sarena::daemon::Server* srv = server->get();
  signals.async_wait([srv, grace, &signals](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    SARENA_LOG(Info, "signal ", sig, ": stopping (the datapath keeps forwarding)");
    srv->Stop();
    // A request stuck in the kernel must not keep sarenad alive: exit after the grace period
    // whatever the worker is doing, or at once on a second signal. The datapath is pinned.
    std::thread([grace] {
      absl::SleepFor(grace);
      SARENA_LOG(Error, "stop did not finish within ", absl::FormatDuration(grace),
                 " (a request is stuck); exiting anyway");
      std::_Exit(1);
    }).detach();
    signals.async_wait([](const boost::system::error_code& e, int again) {
      if (e) return;
      SARENA_LOG(Error, "signal ", again, " again: exiting at once");
      std::_Exit(1);
    });
  });
  std::signal(SIGPIPE, SIG_IGN);
  SARENA_LOG(Info, "listening on ", absl::GetFlag(FLAGS_socket));
  (*server)->Run();
  SARENA_LOG(Info, "sarenad stopped");
  return 0;
}
