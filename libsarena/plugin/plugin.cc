#include "libsarena/plugin/plugin.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "libsarena/base/log.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/cni/config.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/result.h"
#include "libsarena/cni/version.h"
#include "libsarena/rpc/client.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::plugin {
namespace {

namespace v1 = rpc::v1;
using rpc::Client;

constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
constexpr absl::Duration kCallTimeout = absl::Seconds(60);
constexpr absl::Duration kStatusTimeout = absl::Seconds(10);

// Sends `request` to sarenad. Unreachable daemon / broken transport -> `unreachable_code`;
// malformed or mismatched replies -> 105; daemon-reported errors keep their CNI code.
absl::StatusOr<v1::Response> CallDaemon(Client& client, const v1::Request& request,
                                        cni::ErrorCode unreachable_code, absl::Duration timeout) {
  absl::StatusOr<v1::Response> response = client.Call(request, timeout);
  if (!response.ok()) {
    const absl::Status& s = response.status();
    if (absl::IsDataLoss(s) || absl::IsResourceExhausted(s)) {
      return cni::WithCniCode(s, cni::ErrorCode::kProtocolError);
    }
    return cni::WithCniCode(s, unreachable_code);
  }
  if (response->has_error()) return rpc::StatusFromError(response->error());
  // A reply of another kind (or none) than the request's: 105, naming the socket.
  absl::Status kind = rpc::CheckResponseKind(request, *response, client.socket_path());
  if (!kind.ok()) return kind;
  return response;
}

absl::StatusOr<Client> ConnectDaemon(const cni::NetConf& conf, cni::ErrorCode unreachable_code) {
  // Checks the socket's directory and the peer's uid (SO_PEERCRED) before sending anything.
  absl::StatusOr<Client> client = Client::ConnectTrusted(conf.daemon_socket, kConnectTimeout);
  if (!client.ok() && cni::CniCodeOf(client.status()) ==
                          static_cast<uint32_t>(cni::ErrorCode::kUntrustedDaemon)) {
    // Not transient: retrying does not help until the node is fixed. STATUS still says 50.
    absl::Status s = cni::WithCniDetails(
        client.status(),
        "daemonSocket must be in a directory owned by root (or by the plugin's own user when it "
        "is not root) that only its owner can write, and be served by root; nothing was sent");
    return unreachable_code == cni::ErrorCode::kPluginNotAvailable
               ? cni::WithCniCode(s, unreachable_code)
               : s;
  }
  if (!client.ok()) {
    return cni::WithCniDetails(
        cni::WithCniCode(
            absl::Status(client.status().code(),
                         absl::StrCat("sarenad is not reachable: ", client.status().message())),
            unreachable_code),
        "sarenad must run on this node and listen on the network config's daemonSocket; "
        "nothing was changed, retry when it is up");
  }
  return client;
}

absl::Status ProtocolError(absl::string_view message) {
  return cni::MakeCniError(cni::ErrorCode::kProtocolError, absl::StatusCode::kInternal, message);
}

v1::EndpointRef Ref(const cni::Environment& env) {
  v1::EndpointRef ref;
  ref.set_container_id(env.container_id);
  ref.set_ifname(env.ifname);
  return ref;
}

cni::EndpointInfo ToEndpointInfo(const v1::Endpoint& e) {
  return cni::EndpointInfo{
      .container_id = e.ref().container_id(),
      .ifname = e.ref().ifname(),
      .netns = e.netns(),
      .ip = e.ip(),
      .prefix_len = e.prefix_len() == 0 ? 32 : e.prefix_len(),
      .gateway = e.gateway(),
      .pod_mac = e.pod_mac(),
      .host_ifname = e.host_ifname(),
      .host_mac = e.host_mac(),
      .mtu = e.mtu(),
  };
}

// ADD: sarenad creates the veth pair, address, routes, endpoint-map entry; rolls back itself.
absl::StatusOr<std::string> Add(const cni::Environment& env, const cni::NetConf& conf) {
  SARENA_LOG(Info, "ADD container=", env.container_id, " ifname=", env.ifname,
             " netns=", env.netns, " pod=", env.args.pod_namespace, "/", env.args.pod_name);
  absl::StatusOr<Client> client = ConnectDaemon(conf, cni::ErrorCode::kTryAgainLater);
  if (!client.ok()) return client.status();
  v1::Request req;
  auto* add = req.mutable_endpoint_add();
  *add->mutable_ref() = Ref(env);
  add->set_netns(env.netns);
  add->set_mtu(conf.mtu.value_or(0));
  add->set_network_name(conf.name);
  add->set_pod_namespace(env.args.pod_namespace);
  add->set_pod_name(env.args.pod_name);
  absl::StatusOr<v1::Response> resp =
      CallDaemon(*client, req, cni::ErrorCode::kTryAgainLater, kCallTimeout);
  if (!resp.ok()) return resp.status();
  if (!resp->has_endpoint_add() || resp->endpoint_add().endpoint().ip().empty()) {
    return ProtocolError("sarenad answered ADD without an endpoint address");
  }
  cni::EndpointInfo ep = ToEndpointInfo(resp->endpoint_add().endpoint());
  if (ep.ifname.empty()) ep.ifname = env.ifname;
  if (ep.netns.empty()) ep.netns = env.netns;
  SARENA_LOG(Info, "ADD container=", env.container_id, " ifname=", env.ifname, " -> ip=", ep.ip,
             "/", ep.prefix_len, " gw=", ep.gateway, " host_ifname=", ep.host_ifname);
  cni::Result result = cni::BuildResult(ep, conf.dns);
  // Chained after another plugin: pass its result on with ours appended (spec, ADD).
  if (conf.prev_result) result = cni::MergeResults(*conf.prev_result, result);
  return cni::ResultToJson(result, conf.cni_version);
}

// DEL: idempotent in sarenad (existed=false when already gone).
absl::Status Del(const cni::Environment& env, const cni::NetConf& conf) {
  SARENA_LOG(Info, "DEL container=", env.container_id, " ifname=", env.ifname,
             " netns=", env.netns.empty() ? "(none)" : env.netns);
  absl::StatusOr<Client> client = ConnectDaemon(conf, cni::ErrorCode::kTryAgainLater);
  if (!client.ok()) return client.status();
  v1::Request req;
  auto* del = req.mutable_endpoint_del();
  *del->mutable_ref() = Ref(env);
  del->set_netns(env.netns);
  absl::StatusOr<v1::Response> resp =
      CallDaemon(*client, req, cni::ErrorCode::kTryAgainLater, kCallTimeout);
  if (!resp.ok() && absl::IsNotFound(resp.status())) {
    // Whatever is gone (endpoint, netns) needs no removal: DEL succeeds (spec, DEL).
    SARENA_LOG(Info, "DEL container=", env.container_id, " ifname=", env.ifname,
               " -> nothing to remove: ", resp.status().message());
    return absl::OkStatus();
  }
  if (!resp.ok()) return resp.status();
  if (!resp->has_endpoint_del()) return ProtocolError("sarenad answered DEL with another kind");
  SARENA_LOG(Info, "DEL container=", env.container_id, " ifname=", env.ifname,
             resp->endpoint_del().existed() ? " -> removed" : " -> already gone");
  return absl::OkStatus();
}

// CHECK: sarenad verifies the live state; then prevResult is compared with sarenad's record.
absl::Status Check(const cni::Environment& env, const cni::NetConf& conf) {
  SARENA_LOG(Info, "CHECK container=", env.container_id, " ifname=", env.ifname,
             " netns=", env.netns);
  absl::StatusOr<Client> client = ConnectDaemon(conf, cni::ErrorCode::kTryAgainLater);
  if (!client.ok()) return client.status();
  v1::Request req;
  auto* check = req.mutable_endpoint_check();
  *check->mutable_ref() = Ref(env);
  check->set_netns(env.netns);
  absl::StatusOr<v1::Response> resp =
      CallDaemon(*client, req, cni::ErrorCode::kTryAgainLater, kCallTimeout);
  if (!resp.ok()) return resp.status();

  v1::Request list_req;
  list_req.mutable_endpoint_list();
  resp = CallDaemon(*client, list_req, cni::ErrorCode::kTryAgainLater, kCallTimeout);
  if (!resp.ok()) return resp.status();
  for (const v1::Endpoint& e : resp->endpoint_list().endpoints()) {
    if (e.ref().container_id() != env.container_id || e.ref().ifname() != env.ifname) continue;
    cni::EndpointInfo live = ToEndpointInfo(e);
    if (live.netns.empty()) live.netns = env.netns;
    absl::Status s = cni::CheckPrevResult(*conf.prev_result, live);
    if (!s.ok()) return s;
    SARENA_LOG(Info, "CHECK container=", env.container_id, " ifname=", env.ifname, " -> ok");
    return absl::OkStatus();
  }
  return cni::MakeCniError(cni::ErrorCode::kUnknownContainer, absl::StatusCode::kNotFound,
                           absl::StrCat("CHECK: sarenad has no endpoint for CNI_CONTAINERID '",
                                        env.container_id, "' CNI_IFNAME '", env.ifname, "'"));
}

// STATUS (1.1.0): ready to serve ADD?
absl::Status Status(const cni::NetConf& conf) {
  absl::StatusOr<Client> client = ConnectDaemon(conf, cni::ErrorCode::kPluginNotAvailable);
  if (!client.ok()) return client.status();
  v1::Request req;
  req.mutable_status();
  absl::StatusOr<v1::Response> resp =
      CallDaemon(*client, req, cni::ErrorCode::kPluginNotAvailable, kStatusTimeout);
  if (!resp.ok()) {
    // Whatever went wrong, STATUS reports "not available" (50) unless sarenad said 51.
    uint32_t code = cni::CniCodeOf(resp.status());
    if (code == static_cast<uint32_t>(cni::ErrorCode::kLimitedConnectivity)) return resp.status();
    return cni::WithCniCode(resp.status(), cni::ErrorCode::kPluginNotAvailable);
  }
  const v1::StatusResponse& st = resp->status();
  if (!st.ready()) {
    return cni::MakeCniError(
        cni::ErrorCode::kPluginNotAvailable, absl::StatusCode::kUnavailable,
        absl::StrCat("sarenad at '", conf.daemon_socket, "' is not ready to add pods",
                     st.not_ready_reason().empty() ? "" : ": ", st.not_ready_reason()));
  }
  SARENA_LOG(Info, "STATUS ready pod_cidr=", st.pod_cidr(), " endpoints=", st.endpoints(),
             " ips_free=", st.ips_free());
  // A full pool is not "unavailable": STATUS failing would mark the whole node's network not
  // ready. ADD reports the exhaustion itself (code 101).
  if (st.ips_free() == 0 && !st.pod_cidr().empty()) {
    SARENA_LOG(Warning, "STATUS: no free address left in pod CIDR ", st.pod_cidr());
  }
  return absl::OkStatus();
}

// GC (1.1.0): remove every endpoint not in cni.dev/valid-attachments.
absl::Status Gc(const cni::NetConf& conf) {
  absl::StatusOr<Client> client = ConnectDaemon(conf, cni::ErrorCode::kTryAgainLater);
  if (!client.ok()) return client.status();
  v1::Request req;
  auto* gc = req.mutable_gc();
  gc->set_network_name(conf.name);  // GC is per network: the daemon keeps other networks' pods
  for (const cni::Attachment& a : conf.valid_attachments) {
    v1::EndpointRef* ref = gc->add_valid();
    ref->set_container_id(a.container_id);
    ref->set_ifname(a.ifname);
  }
  absl::StatusOr<v1::Response> resp =
      CallDaemon(*client, req, cni::ErrorCode::kTryAgainLater, kCallTimeout);
  if (!resp.ok()) return resp.status();
  std::vector<std::string> removed;
  for (const v1::EndpointRef& r : resp->gc().removed()) {
    removed.push_back(absl::StrCat(r.container_id(), "/", r.ifname()));
  }
  SARENA_LOG(Info, "GC kept ", conf.valid_attachments.size(), " attachment(s), removed ",
             removed.size(), removed.empty() ? "" : ": ", absl::StrJoin(removed, ", "));
  return absl::OkStatus();
}

// Opens the log file (append); -1 when it cannot (the caller keeps stderr).
int OpenLog(const std::string& path) {
  if (path.empty()) return -1;
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

int Fail(const PluginIo& io, const absl::Status& status, absl::string_view cni_version) {
  cni::Error e = cni::ErrorFromStatus(status, cni_version);
  SARENA_LOG(Error, "error code ", e.code, ": ", e.msg);
  io.write_stdout(cni::ErrorToJson(e));
  return 1;
}

}  // namespace

int PluginMain(const PluginIo& io) {
  SetLogSink(io.log_sink);
  absl::Cleanup reset_sink = [] { SetLogSink(nullptr); };
  const absl::StatusOr<std::string>& input = io.stdin_text;
  std::string peeked = input.ok() ? cni::PeekCniVersion(*input) : "";
  // Errors are reported in the requested version when we speak it, else in our newest.
  std::string out_version =
      cni::IsSupportedVersion(peeked) ? peeked : std::string(cni::kLatestVersion);

  absl::StatusOr<cni::Environment> env = cni::ParseEnvironment(io.getenv);
  if (!env.ok()) return Fail(io, env.status(), out_version);
  if (env->command == cni::Command::kVersion) {
    io.write_stdout(cni::VersionJson(peeked));
    return 0;
  }
  if (!input.ok()) return Fail(io, input.status(), out_version);

  absl::StatusOr<cni::NetConf> conf = cni::ParseNetConf(*input, env->command);
  if (!conf.ok()) return Fail(io, conf.status(), out_version);

  UniqueFd log_fd(OpenLog(conf->log_file));
  if (log_fd) {
    SetLogSink(FdLogSink(log_fd.get()));
  } else if (!conf->log_file.empty()) {
    SARENA_LOG(Warning, "cannot open logFile '", conf->log_file, "': ", strerror(errno),
               "; logging to stderr");
  }

  absl::Status status;
  switch (env->command) {
    case cni::Command::kAdd: {
      absl::StatusOr<std::string> result = Add(*env, *conf);
      if (!result.ok()) {
        status = result.status();
        break;
      }
      io.write_stdout(*result);
      break;
    }
    case cni::Command::kDel:
      status = Del(*env, *conf);
      break;
    case cni::Command::kCheck:
      status = Check(*env, *conf);
      break;
    case cni::Command::kStatus:
      status = Status(*conf);
      break;
    case cni::Command::kGc:
      status = Gc(*conf);
      break;
    case cni::Command::kVersion:
      break;
  }
  int rc = status.ok() ? 0 : Fail(io, status, conf->cni_version);
  SetLogSink(nullptr);  // before log_fd closes
  return rc;
}

}  // namespace sarena::plugin
