// sarena::plugin::PluginMain in-process against a scripted daemon on a unix socket: what the
// plugin sends for each CNI command (as a runtime invokes it) and how it turns the daemon's
// answers into the spec's stdout and exit status. The real binary is covered by
// cni_bad_input_test (bad input) and the privileged tier (a real sarenad).
#include "libsarena/plugin/plugin.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/cni/error.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/test_util.h"

namespace sarena::plugin {
namespace {

namespace v1 = rpc::v1;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Serves one connection: for every request received, records it and answers reply(request).
class ScriptedDaemon {
 public:
  using Reply = std::function<v1::Response(const v1::Request&)>;
  explicit ScriptedDaemon(Reply reply) : reply_(std::move(reply)) {
    listen_.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_.get(), 4), 0);
    thread_ = std::thread([this] {
      UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) return;
      while (true) {
        v1::Request req;
        if (!rpc::ReadFrame(conn.get(), &req, absl::Seconds(10)).ok()) return;
        requests_.push_back(req);
        if (!rpc::WriteFrame(conn.get(), reply_(req), absl::Seconds(10)).ok()) return;
      }
    });
  }
  ~ScriptedDaemon() {
    ::shutdown(listen_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  const std::string& path() const { return path_; }
  // Valid after the plugin returned (its connection closed).
  const std::vector<v1::Request>& requests() {
    ::shutdown(listen_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    return requests_;
  }

 private:
  Reply reply_;
  // 0700, owned by the test's uid: a trusted daemonSocket directory.
  sarena::testing::TempDir dir_{"sarena-plugin-test-"};
  std::string path_ = dir_.Path("sarenad.sock");
  UniqueFd listen_;
  std::thread thread_;
  std::vector<v1::Request> requests_;
};

struct PluginRun {
  int rc = -1;
  std::string out;
  std::vector<std::string> logs;
};

PluginRun Invoke(const std::map<std::string, std::string>& env, const std::string& config) {
  PluginRun r;
  PluginIo io{
      .getenv = [&](absl::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        if (it == env.end()) return std::nullopt;
        return it->second;
      },
      .stdin_text = config,
      .write_stdout = [&](const std::string& s) { r.out += s; },
      .log_sink = [&](LogLevel, absl::string_view line) { r.logs.emplace_back(line); },
  };
  r.rc = PluginMain(io);
  return r;
}

std::string Conf(const std::string& socket, const std::string& version = "1.1.0",
                 const std::string& extra = "") {
  return absl::StrCat(R"({"cniVersion":")", version,
                      R"(","name":"net-x","type":"sarena-cni","daemonSocket":")", socket, R"(")",
                      extra.empty() ? "" : ",", extra, "}");
}

std::map<std::string, std::string> Env(const std::string& cmd) {
  return {{"CNI_COMMAND", cmd},
          {"CNI_CONTAINERID", "ctr1"},
          {"CNI_NETNS", "/var/run/netns/ctr1"},
          {"CNI_IFNAME", "eth0"},
          {"CNI_PATH", "/opt/cni/bin"},
          {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}};
}

v1::Response AddReply() {
  v1::Response r;
  v1::Endpoint* e = r.mutable_endpoint_add()->mutable_endpoint();
  e->mutable_ref()->set_container_id("ctr1");
  e->mutable_ref()->set_ifname("eth0");
  e->set_netns("/var/run/netns/ctr1");
  e->set_ip("10.244.1.5");
  e->set_prefix_len(32);
  e->set_gateway("10.244.1.1");
  e->set_pod_mac("02:00:00:00:00:05");
  e->set_host_ifname("lxc0123456789a");
  e->set_host_mac("02:00:00:00:01:05");
  e->set_mtu(1500);
  return r;
}

// The error object PluginMain printed; a test failure (and an empty Error) when stdout is not one.
cni::Error PrintedError(const PluginRun& r) {
  absl::StatusOr<cni::Error> e = cni::ParseErrorJson(r.out);
  EXPECT_TRUE(e.ok()) << e.status() << " stdout: " << r.out;
  return e.ok() ? *e : cni::Error{};
}

v1::Response ErrorReply(absl::StatusCode code, uint32_t cni_code, const std::string& message) {
  v1::Response r;
  r.mutable_error()->set_code(static_cast<int32_t>(code));
  r.mutable_error()->set_cni_code(cni_code);
  r.mutable_error()->set_message(message);
  return r;
}

// CHECK's two exchanges on one connection: endpoint_check, then endpoint_list (which lists
// `listed` and another container's endpoint).
v1::Response CheckReply(const v1::Request& req, const v1::Endpoint& listed) {
  v1::Response r;
  if (req.has_endpoint_check()) {
    r.mutable_endpoint_check();
  } else if (req.has_endpoint_list()) {
    v1::Endpoint other = AddReply().endpoint_add().endpoint();
    other.mutable_ref()->set_container_id("ctr2");
    other.set_ip("10.244.1.9");
    *r.mutable_endpoint_list()->add_endpoints() = other;
    *r.mutable_endpoint_list()->add_endpoints() = listed;
  }
  return r;
}

// What ADD printed for AddReply(): the prevResult a runtime passes to CHECK.
std::string AddResult() {
  ScriptedDaemon d([](const v1::Request&) { return AddReply(); });
  PluginRun add = Invoke(Env("ADD"), Conf(d.path()));
  EXPECT_EQ(add.rc, 0) << add.out;
  return add.out;
}

std::string CheckConf(const std::string& socket, const std::string& prev_result) {
  return Conf(socket, "1.1.0", absl::StrCat(R"("prevResult":)", prev_result));
}

std::map<std::string, std::string> StatusEnv() {
  return {{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/opt/cni/bin"}};
}

v1::Response StatusReply(bool ready, const std::string& not_ready_reason = "") {
  v1::Response r;
  v1::StatusResponse* st = r.mutable_status();
  st->set_ready(ready);
  st->set_pod_cidr("10.244.1.0/24");
  st->set_endpoints(3);
  st->set_ips_free(250);
  st->set_not_ready_reason(not_ready_reason);
  return r;
}

TEST(PluginMain, AddSendsTheAttachmentAndPrintsTheResult) {
  ScriptedDaemon d([](const v1::Request&) { return AddReply(); });
  PluginRun r = Invoke(Env("ADD"), Conf(d.path()));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(R"("address":"10.244.1.5/32")"));
  EXPECT_THAT(r.out, HasSubstr(R"("cniVersion":"1.1.0")"));
  const auto& reqs = d.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const v1::EndpointAddRequest& add = reqs[0].endpoint_add();
  EXPECT_EQ(add.ref().container_id(), "ctr1");
  EXPECT_EQ(add.ref().ifname(), "eth0");
  EXPECT_EQ(add.netns(), "/var/run/netns/ctr1");
  EXPECT_EQ(add.network_name(), "net-x");
  EXPECT_EQ(add.pod_namespace(), "default");
  EXPECT_EQ(add.pod_name(), "web-0");
}

TEST(PluginMain, DaemonErrorKeepsItsCniCodeInTheErrorObject) {
  ScriptedDaemon d([](const v1::Request&) {
    v1::Response r;
    r.mutable_error()->set_code(8);  // kResourceExhausted
    r.mutable_error()->set_cni_code(101);
    r.mutable_error()->set_message("pod CIDR 10.244.1.0/24 exhausted");
    return r;
  });
  PluginRun r = Invoke(Env("ADD"), Conf(d.path()));
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.out, HasSubstr(R"("code":101)"));
  EXPECT_THAT(r.out, HasSubstr("exhausted"));
}

TEST(PluginMain, DelOfAnUnknownAttachmentSucceedsAndPrintsNothing) {
  ScriptedDaemon d([](const v1::Request&) {
    v1::Response r;
    r.mutable_endpoint_del()->set_existed(false);
    return r;
  });
  PluginRun r = Invoke(Env("DEL"), Conf(d.path()));
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "");
  ASSERT_EQ(d.requests().size(), 1u);
  EXPECT_TRUE(d.requests()[0].has_endpoint_del());
}

// libcni >= 1.2 sends "cni.dev/valid-attachments": null when nothing is valid.
TEST(PluginMain, GcSendsItsNetworkAndTheValidList) {
  ScriptedDaemon d([](const v1::Request&) {
    v1::Response r;
    r.mutable_gc();
    return r;
  });
  std::map<std::string, std::string> env = {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/opt/cni/bin"}};
  PluginRun r = Invoke(env, Conf(d.path(), "1.1.0", R"("cni.dev/valid-attachments":null)"));
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_EQ(d.requests().size(), 1u);
  EXPECT_EQ(d.requests()[0].gc().network_name(), "net-x");
  EXPECT_EQ(d.requests()[0].gc().valid_size(), 0);
}

TEST(PluginMain, CheckAgainstAMatchingDaemonRecordSucceedsAndPrintsNothing) {
  const std::string prev = AddResult();
  ASSERT_THAT(prev, HasSubstr(R"("address":"10.244.1.5/32")"));
  const v1::Endpoint record = AddReply().endpoint_add().endpoint();
  ScriptedDaemon d([&record](const v1::Request& req) { return CheckReply(req, record); });
  PluginRun r = Invoke(Env("CHECK"), CheckConf(d.path(), prev));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, "");  // CNI spec, CHECK: success is exit status 0 and no output
  const auto& reqs = d.requests();
  ASSERT_EQ(reqs.size(), 2u);
  ASSERT_TRUE(reqs[0].has_endpoint_check());
  EXPECT_EQ(reqs[0].endpoint_check().ref().container_id(), "ctr1");
  EXPECT_EQ(reqs[0].endpoint_check().ref().ifname(), "eth0");
  EXPECT_EQ(reqs[0].endpoint_check().netns(), "/var/run/netns/ctr1");
  EXPECT_TRUE(reqs[1].has_endpoint_list());
}

TEST(PluginMain, CheckPassesTheDaemonsFailureOnAsTheErrorObject) {
  const std::string prev = AddResult();
  ScriptedDaemon d([](const v1::Request&) {
    return ErrorReply(absl::StatusCode::kFailedPrecondition, 104,
                      "endpoint map entry for 10.244.1.5 is missing");
  });
  PluginRun r = Invoke(Env("CHECK"), CheckConf(d.path(), prev));
  EXPECT_EQ(r.rc, 1);
  cni::Error e = PrintedError(r);
  EXPECT_EQ(e.cni_version, "1.1.0");
  EXPECT_EQ(e.code, 104u);
  EXPECT_EQ(e.msg, "endpoint map entry for 10.244.1.5 is missing");
  // The failed check ends the exchange: no endpoint_list after it.
  const auto& reqs = d.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_TRUE(reqs[0].has_endpoint_check());
}

TEST(PluginMain, CheckWhenTheDaemonRecordDiffersFromPrevResultIsCode104NamingBoth) {
  const std::string prev = AddResult();
  v1::Endpoint record = AddReply().endpoint_add().endpoint();
  record.set_ip("10.244.1.77");  // sarenad's record no longer matches what ADD printed
  ScriptedDaemon d([&record](const v1::Request& req) { return CheckReply(req, record); });
  PluginRun r = Invoke(Env("CHECK"), CheckConf(d.path(), prev));
  EXPECT_EQ(r.rc, 1);
  cni::Error e = PrintedError(r);
  EXPECT_EQ(e.code, 104u);
  EXPECT_THAT(e.msg, HasSubstr("prevResult.ips"));
  EXPECT_THAT(e.msg, HasSubstr("10.244.1.5/32"));
  EXPECT_THAT(e.msg, HasSubstr("10.244.1.77/32"));
  EXPECT_EQ(d.requests().size(), 2u);
}

// CNI spec, CHECK: "prevResult" is required; sarena reports its absence as an invalid network
// config (7) naming the field, before contacting the daemon.
TEST(PluginMain, CheckWithoutPrevResultIsCodeSevenNamingTheFieldAndSendsNothing) {
  ScriptedDaemon d([](const v1::Request& req) { return CheckReply(req, v1::Endpoint()); });
  PluginRun r = Invoke(Env("CHECK"), Conf(d.path()));
  EXPECT_EQ(r.rc, 1);
  cni::Error e = PrintedError(r);
  EXPECT_EQ(e.cni_version, "1.1.0");
  EXPECT_EQ(e.code, 7u);
  EXPECT_THAT(e.msg, HasSubstr("'prevResult'"));
  EXPECT_THAT(d.requests(), IsEmpty());
}

TEST(PluginMain, StatusWithAReadyDaemonSucceedsAndPrintsNothing) {
  ScriptedDaemon d([](const v1::Request&) { return StatusReply(true); });
  PluginRun r = Invoke(StatusEnv(), Conf(d.path()));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, "");
  const auto& reqs = d.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_TRUE(reqs[0].has_status());
}

// CNI spec 1.1, STATUS: 50 "The plugin is not available (i.e. cannot service ADD requests)".
TEST(PluginMain, StatusWithANotReadyDaemonIsCodeFiftyWithTheReason) {
  ScriptedDaemon d([](const v1::Request&) {
    return StatusReply(false, "registering with etcd at unix:///run/etcd.sock: connection refused");
  });
  PluginRun r = Invoke(StatusEnv(), Conf(d.path()));
  EXPECT_EQ(r.rc, 1);
  cni::Error e = PrintedError(r);
  EXPECT_EQ(e.cni_version, "1.1.0");
  EXPECT_EQ(e.code, 50u);
  EXPECT_THAT(e.msg, HasSubstr("not ready"));
  EXPECT_THAT(e.msg, HasSubstr(d.path()));
  EXPECT_THAT(e.msg,
              HasSubstr("registering with etcd at unix:///run/etcd.sock: connection refused"));
  ASSERT_EQ(d.requests().size(), 1u);
  EXPECT_TRUE(d.requests()[0].has_status());
}

// A daemon-reported STATUS error is 50 whatever code it carries, except 51 (limited
// connectivity), which is kept.
TEST(PluginMain, StatusErrorFromTheDaemonIsFiftyUnlessItSaysFiftyOne) {
  {
    ScriptedDaemon d([](const v1::Request&) {
      return ErrorReply(absl::StatusCode::kInternal, 103, "BPF programs are not attached");
    });
    PluginRun r = Invoke(StatusEnv(), Conf(d.path()));
    EXPECT_EQ(r.rc, 1);
    cni::Error e = PrintedError(r);
    EXPECT_EQ(e.code, 50u);
    EXPECT_EQ(e.msg, "BPF programs are not attached");
  }
  {
    ScriptedDaemon d([](const v1::Request&) {
      return ErrorReply(absl::StatusCode::kUnavailable, 51, "endpoint map is gone");
    });
    PluginRun r = Invoke(StatusEnv(), Conf(d.path()));
    EXPECT_EQ(r.rc, 1);
    cni::Error e = PrintedError(r);
    EXPECT_EQ(e.code, 51u);
    EXPECT_EQ(e.msg, "endpoint map is gone");
  }
}

TEST(PluginMain, VersionNeedsNoDaemonAndBadEnvironmentIsCodeFour) {
  PluginRun v = Invoke({{"CNI_COMMAND", "VERSION"}}, R"({"cniVersion":"1.0.0"})");
  EXPECT_EQ(v.rc, 0);
  EXPECT_THAT(v.out, HasSubstr("supportedVersions"));
  std::map<std::string, std::string> env = Env("ADD");
  env["CNI_IFNAME"] = "a/b";
  PluginRun bad = Invoke(env, Conf("/nonexistent/sarenad.sock"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_THAT(bad.out, HasSubstr(R"("code":4)"));
  EXPECT_THAT(bad.out, HasSubstr("CNI_IFNAME"));
}

TEST(PluginMain, UnreachableDaemonIsTryAgainLaterForAddAndNotAvailableForStatus) {
  PluginRun add = Invoke(Env("ADD"), Conf("/nonexistent-dir/sarenad.sock"));
  EXPECT_EQ(add.rc, 1);
  EXPECT_THAT(add.out, HasSubstr(R"("code":11)"));
  PluginRun status = Invoke({{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/x"}},
                      Conf("/nonexistent-dir/sarenad.sock"));
  EXPECT_EQ(status.rc, 1);
  EXPECT_THAT(status.out, HasSubstr(R"("code":50)"));
}

}  // namespace
}  // namespace sarena::plugin
