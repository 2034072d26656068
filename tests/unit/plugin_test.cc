// sarena::plugin::PluginMain in-process against a scripted daemon on a unix socket: what the
// plugin sends for each CNI command (as a runtime invokes it) and how it turns the daemon's
// answers into the spec's stdout and exit status. The real binary is covered by
// cni_bad_input_test (bad input) and the privileged tier (a real sarenad).
#include "libsarena/plugin/plugin.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::plugin {
namespace {

namespace v1 = rpc::v1;
using ::testing::HasSubstr;

// Serves one connection: for every request received, records it and answers reply(request).
class ScriptedDaemon {
 public:
  using Reply = std::function<v1::Response(const v1::Request&)>;
  explicit ScriptedDaemon(Reply reply) : reply_(std::move(reply)) {
    char tmpl[] = "/tmp/sarena-plugin-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);  // 0700, owned by the test's uid: a trusted daemonSocket directory
    path_ = dir_ + "/sarenad.sock";
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
    std::filesystem::remove_all(dir_);
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
  std::string dir_, path_;
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
