// The REAL sarena-cni binary against a scripted peer on a real unix socket that speaks sarenad's
// framed protobuf protocol: checks what the plugin sends for each CNI verb (the request fields
// derived from env, CNI_ARGS and config) and how it turns each kind of answer into stdout JSON,
// exit status and CNI error code. The peer does not create anything; the endpoint lifecycle
// against the real sarenad is covered by the privileged end-to-end tests.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/json.h"
#include "libsarena/cni/result.h"
#include "libsarena/rpc/client.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/test_util.h"

namespace sarena::cni {
namespace {

namespace v1 = sarena::rpc::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kPlugin = sarena::testing::BinaryDir() + "/tools/sarena-cni";

// What the peer does with one request: a response, or std::nullopt to hang up without one.
using Script = std::function<std::optional<v1::Response>(const v1::Request&)>;

// Listens on <dir>/sarenad.sock; serves connections one at a time with `script`, recording
// every request.
class ScriptedDaemon {
 public:
  explicit ScriptedDaemon(const std::string& dir) : path_(dir + "/sarenad.sock") {
    listen_fd_.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_.get(), 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedDaemon() {
    ::shutdown(listen_fd_.get(), SHUT_RDWR);  // wakes accept()
    thread_.join();
  }

  void SetScript(Script script) {
    absl::MutexLock lock(&mu_);
    script_ = std::move(script);
  }
  std::vector<v1::Request> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  const std::string& path() const { return path_; }

 private:
  void Serve() {
    while (true) {
      UniqueFd conn(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) return;
      while (true) {
        v1::Request req;
        if (!rpc::ReadFrame(conn.get(), &req, absl::Seconds(10)).ok()) break;
        Script script;
        {
          absl::MutexLock lock(&mu_);
          requests_.push_back(req);
          script = script_;
        }
        std::optional<v1::Response> resp = script(req);
        if (!resp) break;  // hang up mid-request
        if (!rpc::WriteFrame(conn.get(), *resp, absl::Seconds(10)).ok()) break;
      }
    }
  }

  std::string path_;
  UniqueFd listen_fd_;
  std::thread thread_;
  absl::Mutex mu_;
  Script script_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Request> requests_ ABSL_GUARDED_BY(mu_);
};

v1::Endpoint TestEndpoint() {
  v1::Endpoint e;
  e.mutable_ref()->set_container_id("c0ffee01");
  e.mutable_ref()->set_ifname("eth0");
  e.set_netns("/var/run/netns/pod-a");
  e.set_ip("10.244.1.5");
  e.set_prefix_len(32);
  e.set_gateway("10.244.1.1");
  e.set_pod_mac("0a:58:0a:f4:01:05");
  e.set_host_ifname("lxc0123456789a");
  e.set_host_ifindex(42);
  e.set_host_mac("ee:11:22:33:44:55");
  e.set_mtu(1400);
  return e;
}

v1::Response ErrorResponse(absl::StatusCode code, uint32_t cni_code, const std::string& msg) {
  v1::Response r;
  r.mutable_error()->set_code(static_cast<int>(code));
  r.mutable_error()->set_cni_code(cni_code);
  r.mutable_error()->set_message(msg);
  return r;
}

std::string ShellQuote(absl::string_view s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

class CniPluginProtocol : public ::testing::Test {
 protected:
  CniPluginProtocol() { daemon_ = std::make_unique<ScriptedDaemon>(dir_.path()); }

  std::string Config(absl::string_view version = "1.0.0", absl::string_view extra = "") const {
    return absl::StrCat(R"({"cniVersion":")", version, R"(","name":"sarena","type":"sarena-cni",)",
                        R"("daemonSocket":")", daemon_->path(), R"(","logFile":")", dir_.path(),
                        R"(/sarena-cni.log")", extra.empty() ? "" : ",", extra, "}");
  }

  std::map<std::string, std::string> Env(absl::string_view command) const {
    return {{"CNI_COMMAND", std::string(command)},
            {"CNI_CONTAINERID", "c0ffee01"},
            {"CNI_NETNS", "/var/run/netns/pod-a"},
            {"CNI_IFNAME", "eth0"},
            {"CNI_PATH", "/opt/cni/bin"},
            {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=cart-7;"
                         "K8S_POD_INFRA_CONTAINER_ID=c0ffee01"}};
  }

  testing::CommandResult Run(const std::map<std::string, std::string>& env,
                             absl::string_view config) {
    std::string cmd = absl::StrCat("cd ", ShellQuote(dir_.path()), " && exec env -i");
    for (const auto& [k, v] : env) absl::StrAppend(&cmd, " ", k, "=", ShellQuote(v));
    absl::StrAppend(&cmd, " ", kPlugin);
    return testing::Run(cmd, config);
  }

  // Runs and expects failure with `code`; returns the error object.
  Error RunExpectingError(const std::map<std::string, std::string>& env, absl::string_view config,
                          uint32_t code) {
    testing::CommandResult r = Run(env, config);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
    absl::StatusOr<Error> e = ParseErrorJson(r.out);
    EXPECT_TRUE(e.ok()) << e.status() << "\n" << r.out;
    if (!e.ok()) return {};
    EXPECT_EQ(e->code, code) << r.out;
    return *e;
  }

  // Runs and expects success with nothing on stdout (DEL, CHECK, STATUS, GC).
  void RunExpectingSilentSuccess(const std::map<std::string, std::string>& env,
                                 absl::string_view config) {
    testing::CommandResult r = Run(env, config);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "");
  }

  sarena::testing::TempDir dir_{"sarena-cni-plugin-"};  // outlives daemon_, whose socket it holds
  std::unique_ptr<ScriptedDaemon> daemon_;
};

TEST_F(CniPluginProtocol, AddSendsTheAttachmentAndPrintsTheResult) {
  daemon_->SetScript([](const v1::Request& req) -> std::optional<v1::Response> {
    v1::Response r;
    *r.mutable_endpoint_add()->mutable_endpoint() = TestEndpoint();
    return r;
  });
  for (absl::string_view version : {"0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
    SCOPED_TRACE(version);
    testing::CommandResult r = Run(Env("ADD"), Config(version, R"("mtu":1400)"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;  // one JSON line

    // The request carried env, CNI_ARGS and config.
    std::vector<v1::Request> reqs = daemon_->requests();
    ASSERT_FALSE(reqs.empty());
    const v1::EndpointAddRequest& add = reqs.back().endpoint_add();
    EXPECT_EQ(add.ref().container_id(), "c0ffee01");
    EXPECT_EQ(add.ref().ifname(), "eth0");
    EXPECT_EQ(add.netns(), "/var/run/netns/pod-a");
    EXPECT_EQ(add.mtu(), 1400u);
    EXPECT_EQ(add.network_name(), "sarena");
    EXPECT_EQ(add.pod_namespace(), "shop");
    EXPECT_EQ(add.pod_name(), "cart-7");

    // The result, parsed back.
    absl::StatusOr<Result> res = ParseResultJson(r.out);
    ASSERT_TRUE(res.ok()) << res.status() << "\n" << r.out;
    EXPECT_EQ(res->cni_version, version);
    ASSERT_EQ(res->interfaces.size(), 2u);
    EXPECT_EQ(res->interfaces[0].name, "lxc0123456789a");
    EXPECT_EQ(res->interfaces[0].sandbox, "");
    EXPECT_EQ(res->interfaces[1].name, "eth0");
    EXPECT_EQ(res->interfaces[1].mac, "0a:58:0a:f4:01:05");
    EXPECT_EQ(res->interfaces[1].sandbox, "/var/run/netns/pod-a");
    ASSERT_EQ(res->ips.size(), 1u);
    EXPECT_EQ(res->ips[0].address, "10.244.1.5/32");
    EXPECT_EQ(res->ips[0].gateway, "10.244.1.1");
    EXPECT_EQ(res->ips[0].interface, 1u);
    EXPECT_EQ(absl::StrContains(r.out, R"("version":"4")"), version[0] == '0');
    EXPECT_EQ(absl::StrContains(r.out, R"("mtu":1400)"), version == "1.1.0");
  }
  // Without "mtu" in the config the daemon's --mtu applies (0 on the wire).
  ASSERT_EQ(Run(Env("ADD"), Config()).exit_code, 0);
  EXPECT_EQ(daemon_->requests().back().endpoint_add().mtu(), 0u);
}

TEST_F(CniPluginProtocol, AddChainedAfterAnotherPluginPassesItsResultOn) {
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    v1::Response r;
    *r.mutable_endpoint_add()->mutable_endpoint() = TestEndpoint();
    return r;
  });
  testing::CommandResult r = Run(
      Env("ADD"), Config("1.0.0", R"("prevResult":{"cniVersion":"1.0.0",)"
                                  R"("interfaces":[{"name":"dummy0","sandbox":"/x"}],)"
                                  R"("ips":[{"address":"192.168.9.2/24","interface":0}]})"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  absl::StatusOr<Result> res = ParseResultJson(r.out);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->interfaces.size(), 3u);
  EXPECT_EQ(res->interfaces[0].name, "dummy0");
  ASSERT_EQ(res->ips.size(), 2u);
  EXPECT_EQ(res->ips[0].address, "192.168.9.2/24");
  EXPECT_EQ(res->ips[1].address, "10.244.1.5/32");
  EXPECT_EQ(res->ips[1].interface, 2u);
}

TEST_F(CniPluginProtocol, DaemonErrorsKeepTheirCodeAndMessage) {
  // The exhausted pool as sarenad reports it.
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return ErrorResponse(absl::StatusCode::kResourceExhausted, 101,
                         "allocate IP in pod CIDR '10.244.1.0/30': no free address");
  });
  Error e = RunExpectingError(Env("ADD"), Config(), 101);
  EXPECT_THAT(e.msg, HasSubstr("'10.244.1.0/30'"));
  EXPECT_EQ(e.cni_version, "1.0.0");

  // No explicit CNI code: the absl code's default mapping.
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return ErrorResponse(absl::StatusCode::kAlreadyExists, 0,
                         "endpoint 'c0ffee01/eth0' already exists");
  });
  e = RunExpectingError(Env("ADD"), Config(), 102);
  EXPECT_THAT(e.msg, HasSubstr("already exists"));
}

TEST_F(CniPluginProtocol, DaemonDyingMidRequestIsTryAgainLater) {
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return std::nullopt;
  });
  Error e = RunExpectingError(Env("ADD"), Config(), 11);
  EXPECT_THAT(e.msg, HasSubstr(daemon_->path()));
}

TEST_F(CniPluginProtocol, AddWithoutAnAddressIsAProtocolError) {
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    v1::Response r;
    r.mutable_endpoint_add();
    return r;
  });
  RunExpectingError(Env("ADD"), Config(), 105);
}

TEST_F(CniPluginProtocol, DelIsIdempotentAndNeedsNoNetns) {
  std::atomic<bool> existed = true;
  daemon_->SetScript([&existed](const v1::Request&) -> std::optional<v1::Response> {
    v1::Response r;
    r.mutable_endpoint_del()->set_existed(existed);
    return r;
  });
  RunExpectingSilentSuccess(Env("DEL"), Config());
  existed = false;  // the second DEL: already gone, still success
  auto env = Env("DEL");
  env.erase("CNI_NETNS");
  RunExpectingSilentSuccess(env, Config());
  // A daemon that reports "not found" instead of existed=false: still success.
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return ErrorResponse(absl::StatusCode::kNotFound, 3, "netns '/var/run/netns/pod-a' is gone");
  });
  RunExpectingSilentSuccess(Env("DEL"), Config());
  // Other failures are reported: the runtime retries DEL.
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return ErrorResponse(absl::StatusCode::kInternal, 103, "delete endpoint map entry: EPERM");
  });
  Error e = RunExpectingError(Env("DEL"), Config(), 103);
  EXPECT_THAT(e.msg, HasSubstr("EPERM"));
  std::vector<v1::Request> reqs = daemon_->requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].endpoint_del().netns(), "/var/run/netns/pod-a");
  EXPECT_EQ(reqs[1].endpoint_del().netns(), "");
  EXPECT_EQ(reqs[1].endpoint_del().ref().container_id(), "c0ffee01");
}

TEST_F(CniPluginProtocol, CheckComparesPrevResultWithTheDaemonRecord) {
  std::atomic<bool> listed = true;
  daemon_->SetScript([&listed](const v1::Request& req) -> std::optional<v1::Response> {
    v1::Response r;
    if (req.has_endpoint_check()) {
      r.mutable_endpoint_check();
    } else if (req.has_endpoint_list()) {
      v1::Endpoint other = TestEndpoint();
      other.mutable_ref()->set_container_id("someone-else");
      other.set_ip("10.244.1.9");
      *r.mutable_endpoint_list()->add_endpoints() = other;
      if (listed) *r.mutable_endpoint_list()->add_endpoints() = TestEndpoint();
    }
    return r;
  });
  // prevResult = what ADD printed.
  EndpointInfo ep{.container_id = "c0ffee01", .ifname = "eth0", .netns = "/var/run/netns/pod-a",
                  .ip = "10.244.1.5", .prefix_len = 32, .gateway = "10.244.1.1",
                  .pod_mac = "0a:58:0a:f4:01:05", .host_ifname = "lxc0123456789a",
                  .host_mac = "ee:11:22:33:44:55", .mtu = 1400};
  std::string prev = ResultToJson(BuildResult(ep), "1.0.0");
  RunExpectingSilentSuccess(Env("CHECK"), Config("1.0.0", absl::StrCat(R"("prevResult":)", prev)));
  std::vector<v1::Request> reqs = daemon_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].endpoint_check().netns(), "/var/run/netns/pod-a");
  EXPECT_TRUE(reqs[1].has_endpoint_list());

  // A prevResult that no longer matches: 104 naming both addresses.
  ep.ip = "10.244.1.77";
  std::string stale = ResultToJson(BuildResult(ep), "1.0.0");
  Error e = RunExpectingError(Env("CHECK"), Config("1.0.0", absl::StrCat(R"("prevResult":)", stale)),
                              104);
  EXPECT_THAT(e.msg, HasSubstr("10.244.1.77/32"));
  EXPECT_THAT(e.msg, HasSubstr("10.244.1.5/32"));

  // The daemon does not know the attachment: 3.
  listed = false;
  e = RunExpectingError(Env("CHECK"), Config("1.0.0", absl::StrCat(R"("prevResult":)", prev)), 3);
  EXPECT_THAT(e.msg, HasSubstr("'c0ffee01'"));

  // The daemon's own CHECK failure is passed through.
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return ErrorResponse(absl::StatusCode::kFailedPrecondition, 104,
                         "endpoint map entry for 10.244.1.5 is missing");
  });
  e = RunExpectingError(Env("CHECK"), Config("1.0.0", absl::StrCat(R"("prevResult":)", prev)), 104);
  EXPECT_THAT(e.msg, HasSubstr("endpoint map entry"));
}

TEST_F(CniPluginProtocol, StatusReportsReadiness) {
  std::atomic<bool> ready = true;
  daemon_->SetScript([&ready](const v1::Request& req) -> std::optional<v1::Response> {
    v1::Response r;
    r.mutable_status()->set_ready(ready);
    r.mutable_status()->set_pod_cidr("10.244.1.0/24");
    r.mutable_status()->set_ips_free(250);
    return r;
  });
  RunExpectingSilentSuccess({{"CNI_COMMAND", "STATUS"}}, Config("1.1.0"));
  EXPECT_TRUE(daemon_->requests().back().has_status());
  ready = false;
  Error e = RunExpectingError({{"CNI_COMMAND", "STATUS"}}, Config("1.1.0"), 50);
  EXPECT_THAT(e.msg, HasSubstr("not ready"));
  // Any failure of the exchange is "not available" too.
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return std::nullopt;
  });
  RunExpectingError({{"CNI_COMMAND", "STATUS"}}, Config("1.1.0"), 50);
}

TEST_F(CniPluginProtocol, GcSendsTheValidAttachments) {
  daemon_->SetScript([](const v1::Request& req) -> std::optional<v1::Response> {
    v1::Response r;
    v1::EndpointRef* removed = r.mutable_gc()->add_removed();
    removed->set_container_id("stale");
    removed->set_ifname("eth0");
    return r;
  });
  RunExpectingSilentSuccess(
      {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/opt/cni/bin"}},
      Config("1.1.0", R"("cni.dev/valid-attachments":[{"containerID":"a1","ifname":"eth0"},)"
                      R"({"containerID":"b2","ifname":"net1"}])"));
  std::vector<v1::Request> reqs = daemon_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  ASSERT_EQ(reqs[0].gc().valid_size(), 2);
  EXPECT_EQ(reqs[0].gc().valid(0).container_id(), "a1");
  EXPECT_EQ(reqs[0].gc().valid(0).ifname(), "eth0");
  EXPECT_EQ(reqs[0].gc().valid(1).container_id(), "b2");
  EXPECT_EQ(reqs[0].gc().valid(1).ifname(), "net1");
}

TEST_F(CniPluginProtocol, InvalidInputNeverReachesTheDaemon) {
  daemon_->SetScript([](const v1::Request&) -> std::optional<v1::Response> {
    return v1::Response();
  });
  auto env = Env("ADD");
  env["CNI_IFNAME"] = "eth0:1";
  RunExpectingError(env, Config(), 4);
  RunExpectingError(Env("ADD"), Config("1.0.0", R"("mtu":10)"), 7);
  RunExpectingError({{"CNI_COMMAND", "GC"}}, Config("1.1.0"), 7);  // no valid-attachments
  EXPECT_TRUE(daemon_->requests().empty());
}

}  // namespace
}  // namespace sarena::cni
