// Network config parsing: defaults, every field invalid (CNI code + field + value in msg),
// version negotiation per command, prevResult and cni.dev/valid-attachments.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/cni/config.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/version.h"
#include "tests/lib/status_matchers.h"

namespace sarena::cni {
namespace {

using ::testing::HasSubstr;

// One plugin object as a runtime passes it (name and cniVersion injected from the conflist).
std::string Conf(absl::string_view extra = "", absl::string_view version = "1.0.0") {
  return absl::StrCat(R"({"cniVersion":")", version,
                      R"(","name":"sarena","type":"sarena-cni")",
                      extra.empty() ? "" : ",", extra, "}");
}

struct BadCase {
  std::string extra;     // fields added to a valid config
  uint32_t code;         // expected CNI code
  std::vector<std::string> says;  // substrings of msg (field and value)
};

TEST(CniConfig, DefaultsFromDesign) {
  absl::StatusOr<NetConf> c = ParseNetConf(Conf(), Command::kAdd);
  ASSERT_OK(c);
  EXPECT_EQ(c->cni_version, "1.0.0");
  EXPECT_EQ(c->name, "sarena");
  EXPECT_EQ(c->type, "sarena-cni");
  EXPECT_EQ(c->daemon_socket, "/run/sarena/sarenad.sock");
  EXPECT_FALSE(c->mtu.has_value());  // sarenad's --mtu (1500 by default) applies
  EXPECT_EQ(c->log_file, "/var/log/sarena-cni.log");
  EXPECT_FALSE(c->prev_result.has_value());
}

TEST(CniConfig, ReadsEveryKey) {
  absl::StatusOr<NetConf> c = ParseNetConf(
      Conf(R"("daemonSocket":"/tmp/s.sock","mtu":9000,"logFile":"",)"
           R"("dns":{"nameservers":["10.96.0.10"],"search":["svc.cluster.local"]},)"
           R"("args":{"cni":{"x":1}},"runtimeConfig":{},"capabilities":{},"disableCheck":false)"),
      Command::kAdd);
  ASSERT_OK(c);
  EXPECT_EQ(c->daemon_socket, "/tmp/s.sock");
  EXPECT_EQ(c->mtu, 9000u);
  EXPECT_EQ(c->log_file, "");
  EXPECT_THAT(c->dns.nameservers, ::testing::ElementsAre("10.96.0.10"));
  EXPECT_THAT(c->dns.search, ::testing::ElementsAre("svc.cluster.local"));
  EXPECT_OK(ParseNetConf(Conf(R"("mtu":68)"), Command::kAdd));
  EXPECT_OK(ParseNetConf(Conf(R"("mtu":65535)"), Command::kAdd));
}

TEST(CniConfig, EveryBadFieldIsNamedWithItsValue) {
  std::vector<BadCase> cases = {
      {R"("mtu":"1500")", 7, {"'mtu'", "\"1500\""}},
      {R"("mtu":67)", 7, {"mtu 67", "68..65535"}},
      {R"("mtu":65536)", 7, {"mtu 65536"}},
      {R"("mtu":-1)", 7, {"mtu -1"}},
      {R"("mtu":1500.5)", 7, {"mtu 1500.5"}},
      {R"("mtu":true)", 7, {"'mtu'", "true"}},
      {R"("daemonSocket":5)", 7, {"'daemonSocket'", "5"}},
      {R"("daemonSocket":"")", 7, {"daemonSocket ''"}},
      {R"("daemonSocket":"run/s.sock")", 7, {"daemonSocket 'run/s.sock'"}},
      {absl::StrCat(R"("daemonSocket":"/)", std::string(120, 'x'), R"(")"), 7,
       {"daemonSocket '/xxx", "121 bytes"}},
      {R"("logFile":"log.txt")", 7, {"logFile 'log.txt'"}},
      {R"("logFile":["a"])", 7, {"'logFile'", "[\"a\"]"}},
      {R"("dns":"8.8.8.8")", 7, {"'dns'", "\"8.8.8.8\""}},
      {R"("dns":{"nameservers":"8.8.8.8"})", 7, {"'dns.nameservers'", "\"8.8.8.8\""}},
      {R"("dns":{"search":[1]})", 7, {"'dns.search[0]'", "1"}},
      {R"("prevResult":[])", 7, {"'prevResult'", "[]"}},
      {R"("prevResult":{"ips":[{"address":"10.0.0.300/32"}]})", 7,
       {"'prevResult.ips[0].address'", "10.0.0.300/32"}},
      {R"("prevResult":{"ips":[{"address":"10.0.0.3"}]})", 7,
       {"'prevResult.ips[0].address'", "\"10.0.0.3\""}},
      {R"("prevResult":{"interfaces":[{"name":"eth0"}],"ips":[{"address":"10.0.0.3/32","interface":4}]})",
       7, {"'prevResult.ips[0].interface'", "4"}},
      {R"("prevResult":{"interfaces":[{"mac":"aa"}]})", 7, {"'prevResult.interfaces[0].name'"}},
      {R"("prevResult":{"routes":[{"dst":"default"}]})", 7, {"'prevResult.routes[0].dst'", "default"}},
      {R"("ipam":{"type":"host-local"})", 2, {"'ipam'", "host-local"}},
      {R"("plugins":[{"type":"sarena-cni"}])", 7, {"'plugins'", "conflist"}},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<NetConf> conf = ParseNetConf(Conf(c.extra), Command::kAdd);
    ASSERT_FALSE(conf.ok()) << c.extra;
    EXPECT_EQ(CniCodeOf(conf.status()), c.code) << c.extra << " -> " << conf.status();
    for (const std::string& s : c.says) {
      EXPECT_THAT(conf.status().message(), HasSubstr(s)) << c.extra;
    }
  }
}

TEST(CniConfig, RequiredKeys) {
  struct Case {
    std::string json;
    uint32_t code;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"name":"sarena","type":"sarena-cni"})", 7, "missing field 'cniVersion'"},
           {R"({"cniVersion":"","name":"sarena","type":"sarena-cni"})", 7,
            "missing field 'cniVersion'"},
           {R"({"cniVersion":1,"name":"sarena","type":"sarena-cni"})", 7, "'cniVersion'"},
           {R"({"cniVersion":"1.0.0","type":"sarena-cni"})", 7, "missing field 'name'"},
           {R"({"cniVersion":"1.0.0","name":"sarena"})", 7, "missing field 'type'"},
           {R"({"cniVersion":"1.0.0","name":"sarena","type":""})", 7, "field 'type' is empty"},
           {R"({"cniVersion":"1.0.0","name":"-sarena","type":"x"})", 7,
            "invalid network name '-sarena'"},
           {R"({"cniVersion":"1.0.0","name":"a b","type":"x"})", 7, "invalid network name 'a b'"},
           {R"({"cniVersion":"1.0.0","name":{},"type":"x"})", 7, "'name' is an object"},
       }) {
    absl::StatusOr<NetConf> conf = ParseNetConf(c.json, Command::kAdd);
    ASSERT_FALSE(conf.ok()) << c.json;
    EXPECT_EQ(CniCodeOf(conf.status()), c.code) << c.json << " -> " << conf.status();
    EXPECT_THAT(conf.status().message(), HasSubstr(c.says)) << c.json;
  }
}

TEST(CniConfig, MalformedJsonIsCode6WithParserMessage) {
  for (const char* json : {"", "   ", "{", R"({"cniVersion":"1.0.0",)", "not json", "{\"a\":01}",
                           "[1,2]", "\"text\"", "null"}) {
    absl::StatusOr<NetConf> conf = ParseNetConf(json, Command::kAdd);
    ASSERT_FALSE(conf.ok()) << json;
    EXPECT_EQ(CniCodeOf(conf.status()), 6u) << json << " -> " << conf.status();
    EXPECT_THAT(conf.status().message(), HasSubstr("decode network config")) << json;
  }
  EXPECT_THAT(ParseNetConf("", Command::kAdd).status().message(), HasSubstr("input is empty"));
  EXPECT_THAT(ParseNetConf("[1,2]", Command::kAdd).status().message(),
              HasSubstr("an array [1,2], want an object"));
  // The parser's own words are kept.
  EXPECT_THAT(ParseNetConf("{\"a\":01}", Command::kAdd).status().message(),
              HasSubstr("Octal/hex numbers are not valid JSON values"));
}

TEST(CniConfig, VersionNegotiation) {
  for (absl::string_view v : kSupportedVersions) {
    EXPECT_OK(ParseNetConf(Conf("", v), Command::kAdd)) << v;
    EXPECT_OK(ParseNetConf(Conf("", v), Command::kDel)) << v;
  }
  // Unsupported but well-formed: code 1 naming it.
  for (const char* v : {"0.1.0", "0.2.0", "1.2.0", "2.0.0"}) {
    absl::StatusOr<NetConf> conf = ParseNetConf(Conf("", v), Command::kAdd);
    EXPECT_EQ(CniCodeOf(conf.status()), 1u) << v;
    EXPECT_THAT(conf.status().message(), HasSubstr(absl::StrCat("'", v, "'")));
    EXPECT_THAT(conf.status().message(), HasSubstr("1.1.0"));  // lists what is supported
  }
  // Not a version at all: decoding failure (6) naming it.
  for (const char* v : {"1.0", "v1.0.0", "1.0.0-rc1", "latest"}) {
    absl::StatusOr<NetConf> conf = ParseNetConf(Conf("", v), Command::kAdd);
    EXPECT_EQ(CniCodeOf(conf.status()), 6u) << v;
    EXPECT_THAT(conf.status().message(), HasSubstr(absl::StrCat("cniVersion '", v, "'")));
  }
}

TEST(CniConfig, CheckNeedsPrevResultAnd040) {
  const std::string prev =
      R"("prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"lxc1"},)"
      R"({"name":"eth0","sandbox":"/var/run/netns/p"}],)"
      R"("ips":[{"address":"10.244.1.5/32","gateway":"10.244.1.1","interface":1}]})";
  absl::StatusOr<NetConf> c = ParseNetConf(Conf(prev), Command::kCheck);
  ASSERT_OK(c);
  ASSERT_TRUE(c->prev_result.has_value());
  EXPECT_EQ(c->prev_result->ips[0].address, "10.244.1.5/32");
  EXPECT_EQ(c->prev_result->interfaces[1].sandbox, "/var/run/netns/p");

  absl::StatusOr<NetConf> none = ParseNetConf(Conf(), Command::kCheck);
  EXPECT_EQ(CniCodeOf(none.status()), 7u);
  EXPECT_THAT(none.status().message(), HasSubstr("'prevResult'"));

  for (const char* old : {"0.3.0", "0.3.1"}) {
    absl::StatusOr<NetConf> o = ParseNetConf(Conf(prev, old), Command::kCheck);
    EXPECT_EQ(CniCodeOf(o.status()), 1u) << old;
    EXPECT_THAT(o.status().message(), HasSubstr("CHECK"));
  }
  EXPECT_OK(ParseNetConf(Conf(prev, "0.4.0"), Command::kCheck));
}

TEST(CniConfig, StatusAndGcNeed110) {
  const std::string gc = R"("cni.dev/valid-attachments":[])";
  for (absl::string_view v : kSupportedVersions) {
    bool new_enough = v == "1.1.0";
    EXPECT_EQ(ParseNetConf(Conf("", v), Command::kStatus).ok(), new_enough) << v;
    EXPECT_EQ(ParseNetConf(Conf(gc, v), Command::kGc).ok(), new_enough) << v;
    if (!new_enough) {
      EXPECT_EQ(CniCodeOf(ParseNetConf(Conf("", v), Command::kStatus).status()), 1u);
    }
  }
}

TEST(CniConfig, GcAttachments) {
  absl::StatusOr<NetConf> c = ParseNetConf(
      Conf(R"("cni.dev/valid-attachments":[{"containerID":"a1","ifname":"eth0"},)"
           R"({"containerID":"b2","ifname":"net1"}])",
           "1.1.0"),
      Command::kGc);
  ASSERT_OK(c);
  ASSERT_EQ(c->valid_attachments.size(), 2u);
  EXPECT_EQ(c->valid_attachments[0], (Attachment{"a1", "eth0"}));
  EXPECT_EQ(c->valid_attachments[1], (Attachment{"b2", "net1"}));

  // The early-1.1 key is accepted too.
  c = ParseNetConf(Conf(R"("cni.dev/attachments":[{"containerID":"x","ifname":"eth0"}])", "1.1.0"),
                   Command::kGc);
  ASSERT_OK(c);
  EXPECT_EQ(c->valid_attachments.size(), 1u);

  // libcni >= 1.2 marshals an empty valid list as null: "none valid", not a bad config.
  c = ParseNetConf(Conf(R"("cni.dev/valid-attachments":null)", "1.1.0"), Command::kGc);
  ASSERT_OK(c);
  EXPECT_TRUE(c->valid_attachments.empty());

  // Missing list: refusing beats deleting every endpoint.
  c = ParseNetConf(Conf("", "1.1.0"), Command::kGc);
  EXPECT_EQ(CniCodeOf(c.status()), 7u);
  EXPECT_THAT(c.status().message(), HasSubstr("'cni.dev/valid-attachments'"));

  for (auto [extra, says] : std::vector<std::pair<std::string, std::string>>{
           {R"("cni.dev/valid-attachments":{})", "'cni.dev/valid-attachments' is an object"},
           {R"("cni.dev/valid-attachments":["a"])", "'cni.dev/valid-attachments[0]'"},
           {R"("cni.dev/valid-attachments":[{"ifname":"eth0"}])",
            "'cni.dev/valid-attachments[0].containerID'"},
           {R"("cni.dev/valid-attachments":[{"containerID":"a","ifname":1}])",
            "'cni.dev/valid-attachments[0].ifname' is a number 1"}}) {
    c = ParseNetConf(Conf(extra, "1.1.0"), Command::kGc);
    EXPECT_EQ(CniCodeOf(c.status()), 7u) << extra;
    EXPECT_THAT(c.status().message(), HasSubstr(says)) << extra;
  }
}

TEST(CniConfig, PeekCniVersion) {
  EXPECT_EQ(PeekCniVersion(Conf("", "0.4.0")), "0.4.0");
  EXPECT_EQ(PeekCniVersion("{"), "");
  EXPECT_EQ(PeekCniVersion(R"({"cniVersion":4})"), "");
  EXPECT_EQ(PeekCniVersion("[]"), "");
}

// Issue 10 defect 7: 20,000 nested arrays (40 KB) cost the JSON parser tens of seconds of CPU.
// The nesting is bounded before parsing, wherever it is (runtimeConfig, prevResult, args, ...).
TEST(CniConfig, DeepNestingIsRefusedUpFrontWithDepthAndOffset) {
  auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  const std::string prefix = Conf("");  // ... "type":"sarena-cni"}
  for (const char* key : {"runtimeConfig", "prevResult", "args", "dns"}) {
    SCOPED_TRACE(key);
    std::string conf = Conf(absl::StrCat("\"", key, "\":", nested(20000)));
    ASSERT_GT(conf.size(), 40000u);
    size_t offset = conf.find('[') + 31;  // the '[' opening level 33 (the document is level 1)
    absl::Time start = absl::Now();
    absl::StatusOr<NetConf> c = ParseNetConf(conf, Command::kAdd);
    absl::Duration took = absl::Now() - start;
    EXPECT_EQ(CniCodeOf(c.status()), 6u) << c.status();
    EXPECT_THAT(c.status().message(), HasSubstr("decode network config"));
    EXPECT_THAT(c.status().message(),
                HasSubstr(absl::StrCat("nesting deeper than 32 levels at byte offset ", offset)));
    EXPECT_LT(took, absl::Milliseconds(200)) << "took " << took;
    EXPECT_EQ(PeekCniVersion(conf), "");  // the runtime's version peek is bounded too
  }
  // Deep inside an object inside prevResult, with brackets in strings not counted.
  std::string objs;
  for (int i = 0; i < 100; ++i) objs += R"({"a]}[{":)";
  objs += "1" + std::string(100, '}');
  absl::StatusOr<NetConf> c = ParseNetConf(Conf(absl::StrCat(R"("prevResult":)", objs)),
                                           Command::kDel);
  EXPECT_EQ(CniCodeOf(c.status()), 6u) << c.status();
  EXPECT_THAT(c.status().message(), HasSubstr("nesting deeper than 32 levels"));

  // 31 levels below the document (kMaxJsonDepth in all) still parse.
  c = ParseNetConf(Conf(absl::StrCat(R"("runtimeConfig":{"x":)", nested(30), "}")),
                   Command::kAdd);
  EXPECT_OK(c);
  // Brackets inside strings (escaped quotes included) are not nesting.
  c = ParseNetConf(Conf(absl::StrCat(R"("runtimeConfig":{"x":"\"[[[)", std::string(200, '['),
                                     R"("})")),
                   Command::kAdd);
  EXPECT_OK(c);
}

TEST(CniConfig, InvalidUtf8IsADecodingFailureWithTheOffset) {
  std::string conf = Conf("\"runtimeConfig\":{\"podName\":\"web-\xff\"}");
  absl::StatusOr<NetConf> c = ParseNetConf(conf, Command::kAdd);
  EXPECT_EQ(CniCodeOf(c.status()), 6u) << c.status();
  EXPECT_THAT(c.status().message(),
              HasSubstr(absl::StrCat("not valid UTF-8 at byte offset ", conf.find('\xff'),
                                     " (byte 0xff)")));
  // GC attachments reach sarenad as protobuf strings: bad bytes there are refused the same way.
  c = ParseNetConf(
      Conf("\"cni.dev/valid-attachments\":[{\"containerID\":\"a\",\"ifname\":\"e\xc3\"}]",
           "1.1.0"),
      Command::kGc);
  EXPECT_EQ(CniCodeOf(c.status()), 6u) << c.status();
  EXPECT_THAT(c.status().message(), HasSubstr("not valid UTF-8"));
}

}  // namespace
}  // namespace sarena::cni
