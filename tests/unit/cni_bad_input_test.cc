// Bad input to the REAL sarena-cni binary, executed exactly as a runtime does: CNI_* environment
// variables (and nothing else: env -i) plus the plugin config on stdin. Each case asserts the
// spec's error code, that msg names the field/variable and its value, that stdout is exactly one
// JSON object (the error), that the exit status is non-zero, and that nothing was left behind
// (no file besides the plugin's own log). Every case fails before sarena-cni could change
// anything. As root (CI) UntrustedDaemonSocketIsCode106 also serves a socket as uid 65534. (The exhausted-pool case needs the real sarenad: integration tier.)
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/json.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/test_util.h"

namespace sarena::cni {
namespace {

using ::testing::HasSubstr;

const std::string kPlugin = sarena::testing::BinaryDir() + "/tools/sarena-cni";

std::string ShellQuote(absl::string_view s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

// A scratch directory (the plugin's cwd and home of its log), removed afterwards.
class Scratch {
 public:
  const std::string& path() const { return dir_.path(); }
  std::string log() const { return dir_.Path("sarena-cni.log"); }
  /// Names of the entries in the directory.
  std::set<std::string> Entries() const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      out.insert(e.path().filename().string());
    }
    return out;
  }

 private:
  sarena::testing::TempDir dir_{"sarena-cni-bad-input-"};
};

struct PluginRun {
  int exit_code = -1;
  std::string out, err;
};

// Runs sarena-cni with exactly `env` (env -i) and `stdin_text`, cwd = `cwd`.
PluginRun RunPlugin(const std::map<std::string, std::string>& env, absl::string_view stdin_text,
                    const std::string& cwd) {
  std::string cmd = absl::StrCat("cd ", ShellQuote(cwd), " && exec env -i");
  for (const auto& [k, v] : env) absl::StrAppend(&cmd, " ", k, "=", ShellQuote(v));
  absl::StrAppend(&cmd, " ", kPlugin);
  testing::CommandResult r = testing::Run(cmd, stdin_text);
  return {r.exit_code, r.out, r.err};
}

// The CNI error object on stdout, checked to be the ONLY thing there (one JSON line).
Error ExpectErrorJson(const PluginRun& run) {
  EXPECT_NE(run.exit_code, 0) << run.out;
  EXPECT_TRUE(absl::EndsWith(run.out, "\n")) << run.out;
  EXPECT_EQ(run.out.find('\n'), run.out.size() - 1) << "more than one line: " << run.out;
  absl::StatusOr<JsonObject> obj = JsonObject::Parse(run.out);
  EXPECT_TRUE(obj.ok()) << "stdout is not pure JSON: " << obj.status() << "\n" << run.out;
  absl::StatusOr<Error> e = ParseErrorJson(run.out);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return {};
  for (const char* key : {"cniVersion", "code", "msg"}) {
    EXPECT_TRUE(obj.ok() && obj->Has(key)) << "error JSON lacks " << key << ": " << run.out;
  }
  return *e;
}

std::map<std::string, std::string> AddEnv() {
  return {{"CNI_COMMAND", "ADD"},
          {"CNI_CONTAINERID", "3f6940ab5ab43bc522569d15b23f8c1b"},
          {"CNI_NETNS", "/var/run/netns/sarena-test-does-not-exist"},
          {"CNI_IFNAME", "eth0"},
          {"CNI_PATH", "/opt/cni/bin"},
          {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}};
}

class CniBadInput : public ::testing::Test {
 protected:
  // A valid plugin config whose daemon socket does not exist and whose log is in scratch.
  std::string Config(absl::string_view extra = "", absl::string_view version = "1.0.0") const {
    return absl::StrCat(R"({"cniVersion":")", version, R"(","name":"sarena","type":"sarena-cni",)",
                        R"("daemonSocket":")", scratch_.path(), R"(/sarenad.sock",)",
                        R"("logFile":")", scratch_.log(), R"(")",
                        extra.empty() ? "" : ",", extra, "}");
  }

  // Runs, checks the error JSON, and checks that at most the log file was created.
  Error ExpectError(const std::map<std::string, std::string>& env, absl::string_view config,
                    uint32_t code, const std::vector<std::string>& msg_has) {
    PluginRun run = RunPlugin(env, config, scratch_.path());
    Error e = ExpectErrorJson(run);
    EXPECT_EQ(e.code, code) << run.out << "\nstderr: " << run.err;
    for (const std::string& s : msg_has) EXPECT_THAT(e.msg, HasSubstr(s)) << run.out;
    std::set<std::string> entries = scratch_.Entries();
    entries.erase("sarena-cni.log");
    EXPECT_TRUE(entries.empty()) << "left behind: " << *entries.begin();
    last_run_ = run;
    return e;
  }

  Scratch scratch_;
  PluginRun last_run_;
};

TEST_F(CniBadInput, MalformedConfigIsCode6WithTheParserMessage) {
  for (const std::string& config :
       {std::string(R"({"cniVersion":"1.0.0","name":"sarena","type":"sarena-cni")"),  // no }
        std::string(R"({"cniVersion":"1.0.0",,"name":"sarena"})"),
        std::string("cniVersion: 1.0.0"), std::string(""), std::string("[]")}) {
    SCOPED_TRACE(config);
    Error e = ExpectError(AddEnv(), config, 6, {"decode network config"});
    EXPECT_EQ(e.cni_version, "1.1.0");  // no readable version: our newest
  }
  Error e = ExpectError(AddEnv(), R"({"cniVersion":"1.0.0","name":)", 6, {"not valid JSON"});
  EXPECT_FALSE(e.details.empty());  // the parser's full text with its position marker
  EXPECT_FALSE(std::filesystem::exists(scratch_.log()));  // failed before reading logFile
  EXPECT_THAT(last_run_.err, HasSubstr("error code 6"));  // logged to stderr instead
}

TEST_F(CniBadInput, IncompleteConfigNamesTheMissingField) {
  ExpectError(AddEnv(), R"({"name":"sarena","type":"sarena-cni"})", 7,
              {"missing field 'cniVersion'"});
  ExpectError(AddEnv(), R"({"cniVersion":"1.0.0","type":"sarena-cni"})", 7,
              {"missing field 'name'"});
  Error e = ExpectError(AddEnv(), R"({"cniVersion":"0.4.0","name":"sarena"})", 7,
                        {"missing field 'type'"});
  EXPECT_EQ(e.cni_version, "0.4.0");  // errors speak the requested version
  // A whole conflist is not what a runtime passes a plugin.
  ExpectError(AddEnv(),
              R"({"cniVersion":"1.0.0","name":"sarena","plugins":[{"type":"sarena-cni"}]})", 7,
              {"'plugins'", "conflist"});
}

TEST_F(CniBadInput, InvalidFieldValuesAreNamedWithTheValue) {
  ExpectError(AddEnv(), Config(R"("mtu":20)"), 7, {"mtu 20", "68..65535"});
  ExpectError(AddEnv(), Config(R"("mtu":"9000")"), 7, {"'mtu'", "\"9000\""});
  ExpectError(AddEnv(),
              R"({"cniVersion":"1.0.0","name":"sarena","type":"sarena-cni","daemonSocket":"x.sock"})",
              7, {"daemonSocket 'x.sock'"});
  ExpectError(AddEnv(), Config(R"("ipam":{"type":"host-local"})"), 2, {"'ipam'", "host-local"});
  ExpectError(AddEnv(), absl::StrReplaceAll(Config(), {{R"("name":"sarena")", R"("name":"a/b")"}}),
              7, {"network name 'a/b'"});
}

TEST_F(CniBadInput, UnsupportedCniVersionIsCode1) {
  Error e = ExpectError(AddEnv(), Config("", "0.2.0"), 1, {"'0.2.0'"});
  EXPECT_EQ(e.cni_version, "1.1.0");
  ExpectError(AddEnv(), Config("", "7.0.0"), 1, {"'7.0.0'"});
  // Commands newer than the config's version.
  auto env = AddEnv();
  env["CNI_COMMAND"] = "GC";
  ExpectError(env, Config(R"("cni.dev/valid-attachments":[])", "1.0.0"), 1,
              {"'GC'", "1.1.0", "'1.0.0'"});
  env["CNI_COMMAND"] = "CHECK";
  ExpectError(env, Config(R"("prevResult":{})", "0.3.1"), 1, {"'CHECK'", "0.4.0", "'0.3.1'"});
}

TEST_F(CniBadInput, BadContainerIdIsCode4NamingVariableAndValue) {
  for (const char* id : {"-leading-dash", "has space", "semi;colon", "slash/id", "_x"}) {
    auto env = AddEnv();
    env["CNI_CONTAINERID"] = id;
    ExpectError(env, Config(), 4, {"CNI_CONTAINERID", absl::StrCat("'", id, "'")});
  }
  auto env = AddEnv();
  env.erase("CNI_CONTAINERID");
  ExpectError(env, Config(), 4, {"CNI_CONTAINERID is not set"});
}

TEST_F(CniBadInput, BadIfnameIsCode4NamingVariableAndValue) {
  for (const char* ifname : {"eth0123456789abc", "eth/0", "eth:0", "eth 0", ".", ".."}) {
    auto env = AddEnv();
    env["CNI_IFNAME"] = ifname;
    ExpectError(env, Config(), 4, {"CNI_IFNAME", absl::StrCat("'", ifname, "'")});
  }
  for (const char* cmd : {"DEL", "CHECK"}) {
    auto env = AddEnv();
    env["CNI_COMMAND"] = cmd;
    env["CNI_IFNAME"] = "a:b";
    ExpectError(env, Config(R"("prevResult":{})"), 4, {"CNI_IFNAME 'a:b'"});
  }
}

TEST_F(CniBadInput, MissingNecessaryVariablesAreAllNamed) {
  auto env = AddEnv();
  env.erase("CNI_NETNS");
  env["CNI_IFNAME"] = "";
  ExpectError(env, Config(), 4, {"CNI_NETNS is not set", "CNI_IFNAME is not set"});
  env = AddEnv();
  env["CNI_ARGS"] = "K8S_POD_NAME=x;Unknown=1";  // no IgnoreUnknown
  ExpectError(env, Config(), 4, {"CNI_ARGS", "'Unknown'"});
}

TEST_F(CniBadInput, UnknownCommandIsCode4) {
  auto env = AddEnv();
  env["CNI_COMMAND"] = "RESTART";
  ExpectError(env, Config(), 4, {"unknown CNI_COMMAND 'RESTART'"});
  env["CNI_COMMAND"] = "add";  // the verbs are upper case
  ExpectError(env, Config(), 4, {"unknown CNI_COMMAND 'add'"});
  env.erase("CNI_COMMAND");
  ExpectError(env, Config(), 4, {"CNI_COMMAND is not set"});
}

TEST_F(CniBadInput, UnreachableDaemonIsTryAgainLater) {
  const std::string socket = scratch_.path() + "/sarenad.sock";
  Error e = ExpectError(AddEnv(), Config(), 11, {"'" + socket + "'", "errno 2"});
  EXPECT_EQ(e.cni_version, "1.0.0");
  EXPECT_FALSE(e.details.empty());
  // The log file was written (and is the only file), and stdout had no log line.
  std::string log;
  {
    std::ifstream in(scratch_.log());
    log.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_THAT(log, HasSubstr("ADD container=3f6940ab5ab43bc522569d15b23f8c1b"));
  EXPECT_THAT(log, HasSubstr("error code 11"));
  EXPECT_EQ(last_run_.err, "");  // logs went to the file

  // DEL, CHECK and GC cannot be done without sarenad either: 11, so the runtime retries
  // (a DEL "success" here would leak the address sarenad still holds).
  auto env = AddEnv();
  env["CNI_COMMAND"] = "DEL";
  env.erase("CNI_NETNS");
  ExpectError(env, Config(), 11, {socket});
  env["CNI_COMMAND"] = "CHECK";
  env["CNI_NETNS"] = "/var/run/netns/x";
  ExpectError(env, Config(R"("prevResult":{})"), 11, {socket});
  ExpectError({{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/opt/cni/bin"}},
              Config(R"("cni.dev/valid-attachments":[])", "1.1.0"), 11, {socket});
  // STATUS says "not available" (50).
  ExpectError({{"CNI_COMMAND", "STATUS"}}, Config("", "1.1.0"), 50, {socket});
}

TEST_F(CniBadInput, UnopenableLogFileFallsBackToStderr) {
  std::string config = absl::StrReplaceAll(
      Config(), {{scratch_.log(), scratch_.path() + "/no/such/dir/sarena-cni.log"}});
  PluginRun run = RunPlugin(AddEnv(), config, scratch_.path());
  Error e = ExpectErrorJson(run);
  EXPECT_EQ(e.code, 11u);
  EXPECT_THAT(run.err, HasSubstr("cannot open logFile"));
  EXPECT_THAT(run.err, HasSubstr("error code 11"));
  EXPECT_TRUE(scratch_.Entries().empty());  // no directory created for it
}

TEST_F(CniBadInput, VersionNeedsNothingButTheCommand) {
  for (auto [stdin_text, reported] : std::vector<std::pair<std::string, std::string>>{
           {R"({"cniVersion":"0.4.0"})", "0.4.0"},
           {"", "1.1.0"},
           {"garbage", "1.1.0"},
           {R"({"cniVersion":"0.1.0"})", "1.1.0"}}) {
    PluginRun run = RunPlugin({{"CNI_COMMAND", "VERSION"}}, stdin_text, scratch_.path());
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_EQ(run.out.find('\n'), run.out.size() - 1);
    absl::StatusOr<JsonObject> o = JsonObject::Parse(run.out);
    ASSERT_TRUE(o.ok()) << o.status() << run.out;
    EXPECT_EQ(o->GetString("cniVersion")->value_or(""), reported);
    EXPECT_THAT(o->GetStringArray("supportedVersions")->value_or(std::vector<std::string>{}),
                ::testing::ElementsAre("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"));
    EXPECT_TRUE(scratch_.Entries().empty());
  }
}

// ---- Issue 10 defect 7: input edges ----

// Bad UTF-8 reached sarenad in protobuf strings, which it could not decode: "try again later"
// (11) forever. Now a decode error naming the variable, bytes escaped, before any connection.
TEST_F(CniBadInput, InvalidUtf8InIfnameOrPodNameIsCode4) {
  auto env = AddEnv();
  env["CNI_IFNAME"] = "eth\xff";
  ExpectError(env, Config(), 4,
              {"invalid CNI_IFNAME 'eth\\xff': not valid UTF-8 (byte 0xff at offset 3)"});
  env = AddEnv();
  env["CNI_ARGS"] = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-\xc3";
  ExpectError(env, Config(), 4,
              {"invalid CNI_ARGS K8S_POD_NAME 'web-\\xc3': not valid UTF-8 (byte 0xc3 at offset 4)"});
  env = AddEnv();
  env["CNI_COMMAND"] = "DEL";
  env["CNI_IFNAME"] = "e\xed\xa0\x80";  // a UTF-16 surrogate
  ExpectError(env, Config(), 4, {"CNI_IFNAME 'e\\xed\\xa0\\x80'", "not valid UTF-8"});
  // ... and in the config: JSON must be UTF-8 (RFC 8259), so the GC list is refused with 6.
  ExpectError({{"CNI_COMMAND", "GC"}},
              Config("\"cni.dev/valid-attachments\":[{\"containerID\":\"a\",\"ifname\":\"\xff\"}]",
                     "1.1.0"),
              6, {"not valid UTF-8 at byte offset"});
}

// 20,000 nested arrays (40 KB) took ~30-47 s of CPU before the parser gave up.
TEST_F(CniBadInput, DeeplyNestedConfigIsCode6AtOnce) {
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  for (const char* key : {"runtimeConfig", "prevResult", "args"}) {
    SCOPED_TRACE(key);
    auto env = AddEnv();
    if (std::string(key) == "prevResult") env["CNI_COMMAND"] = "CHECK";
    absl::Time start = absl::Now();
    Error e = ExpectError(env, Config(absl::StrCat("\"", key, "\":", deep)), 6,
                          {"decode network config", "nesting deeper than 32 levels at byte offset"});
    absl::Duration took = absl::Now() - start;
    EXPECT_LT(took, absl::Seconds(2)) << "took " << took;
    EXPECT_EQ(e.cni_version, "1.1.0");  // the version peek is bounded too
  }
}

// A daemon stand-in on a unix socket in a root-owned 0700 directory: bound by this process,
// listened on and served by a forked child running as `uid` (SO_PEERCRED reports the uid at
// listen()), answering every request with `reply` (raw frame bytes).
class FakeDaemon {
 public:
  FakeDaemon(uid_t uid, std::string reply) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::alarm(30);
      if ((uid != 0 && ::setuid(uid) != 0) || ::listen(fd, 8) != 0) ::_exit(1);
      char ok = 1;
      (void)!::write(ready[1], &ok, 1);
      while (true) {
        int conn = ::accept(fd, nullptr, nullptr);
        if (conn < 0) ::_exit(1);
        char buf[65536];
        while (::read(conn, buf, sizeof buf) > 0) {
          (void)!::write(conn, reply.data(), reply.size());
        }
        ::close(conn);
      }
    }
    ::close(fd);
    ::close(ready[1]);
    char ok = 0;
    EXPECT_EQ(::read(ready[0], &ok, 1), 1) << "fake daemon could not start as uid " << uid;
    ::close(ready[0]);
  }
  ~FakeDaemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& dir() const { return dir_.path(); }
  const std::string& path() const { return path_; }

  static std::string Frame(const rpc::v1::Response& r) {
    absl::StatusOr<std::string> f = rpc::EncodeFrame(r);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.value_or("");
  }

 private:
  sarena::testing::TempDir dir_{"sarena-cni-fake-daemon-"};
  std::string path_ = dir_.Path("sarenad.sock");
  pid_t pid_ = -1;
};

// The plugin used to take any answer: a GC answered with an ADD reply "succeeded", a STATUS
// answered so was "not ready". Now the reply's kind and frame are checked: 105 naming the socket.
TEST_F(CniBadInput, ReplyOfTheWrongShapeIsCode105NamingTheSocket) {
  rpc::v1::Response add;
  add.mutable_endpoint_add()->mutable_endpoint()->set_ip("10.244.0.9");
  FakeDaemon wrong_kind(0, FakeDaemon::Frame(add));
  auto with_socket = [&](const std::string& sock, absl::string_view extra, absl::string_view v) {
    return absl::StrReplaceAll(Config(extra, v), {{scratch_.path() + "/sarenad.sock", sock}});
  };
  ExpectError({{"CNI_COMMAND", "GC"}},
              with_socket(wrong_kind.path(), R"("cni.dev/valid-attachments":[])", "1.1.0"), 105,
              {absl::StrCat("sarenad at '", wrong_kind.path(), "' answered endpoint_add to gc")});
  auto env = AddEnv();
  env["CNI_COMMAND"] = "DEL";
  ExpectError(env, with_socket(wrong_kind.path(), "", "1.0.0"), 105,
              {wrong_kind.path(), "answered endpoint_add to endpoint_del"});

  FakeDaemon garbage(0, std::string("\x00\x00\x00\x06\xff\xff\xff\xff\xff\xff", 10));
  ExpectError(AddEnv(), with_socket(garbage.path(), "", "1.0.0"), 105, {garbage.path()});
  FakeDaemon huge(0, std::string("\xff\xff\xff\xf0", 4));
  ExpectError(AddEnv(), with_socket(huge.path(), "", "1.0.0"), 105,
              {huge.path(), "exceeds the limit"});
}

// Whatever listens on daemonSocket got the pod's data and was believed. Now the peer must be
// root (SO_PEERCRED) and the socket's directory root's and writable only by root: code 106,
// naming the path, nothing sent.
TEST_F(CniBadInput, UntrustedDaemonSocketIsCode106) {
  const bool root = ::geteuid() == 0;  // CI: root. Unprivileged: the mode checks only.
  rpc::v1::Response st;
  st.mutable_status()->set_ready(true);
  auto with_socket = [&](const std::string& sock, absl::string_view extra, absl::string_view v) {
    return absl::StrReplaceAll(Config(extra, v), {{scratch_.path() + "/sarenad.sock", sock}});
  };
  {
    FakeDaemon root(0, FakeDaemon::Frame(st));  // control: the same setup served by root works
    PluginRun run = RunPlugin({{"CNI_COMMAND", "STATUS"}}, with_socket(root.path(), "", "1.1.0"),
                              scratch_.path());
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_EQ(run.out, "");
  }
  if (root) {
    FakeDaemon nobody(65534, FakeDaemon::Frame(st));
    Error e = ExpectError(AddEnv(), with_socket(nobody.path(), "", "1.0.0"), 106,
                          {absl::StrCat("refusing sarenad socket '", nobody.path(), "'"),
                           "served by uid 65534", "want uid 0"});
    EXPECT_FALSE(e.details.empty());
    // STATUS reports it as "not available" (50), still naming why.
    ExpectError({{"CNI_COMMAND", "STATUS"}}, with_socket(nobody.path(), "", "1.1.0"), 50,
                {"served by uid 65534"});
  }

  FakeDaemon daemon(0, FakeDaemon::Frame(st));
  ASSERT_EQ(::chmod(daemon.dir().c_str(), 0777), 0);
  ExpectError(AddEnv(), with_socket(daemon.path(), "", "1.0.0"), 106,
              {absl::StrCat("refusing sarenad socket '", daemon.path(), "': its directory '",
                            daemon.dir(), "' is writable by group and others (mode 0777)")});
  ASSERT_EQ(::chmod(daemon.dir().c_str(), 0770), 0);
  ExpectError(AddEnv(), with_socket(daemon.path(), "", "1.0.0"), 106, {"writable by its group"});
  ASSERT_EQ(::chmod(daemon.dir().c_str(), 0755), 0);
  if (root) {
    ASSERT_EQ(::chown(daemon.dir().c_str(), 65534, 65534), 0);
    ExpectError(AddEnv(), with_socket(daemon.path(), "", "1.0.0"), 106,
                {daemon.path(), "is owned by uid 65534, want uid 0"});
    ASSERT_EQ(::chown(daemon.dir().c_str(), 0, 0), 0);
  }
}

}  // namespace
}  // namespace sarena::cni
