// CNI execution-protocol environment: CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME, CNI_NETNS,
// CNI_ARGS validation and the per-command required variables (CNI spec 1.1.0, "Parameters").
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/cni/env.h"
#include "libsarena/cni/error.h"
#include "tests/lib/status_matchers.h"

namespace sarena::cni {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uint32_t kEnvCode = 4;

absl::StatusOr<Environment> Parse(const std::map<std::string, std::string>& vars) {
  return ParseEnvironment([&](absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

std::map<std::string, std::string> AddEnv() {
  return {{"CNI_COMMAND", "ADD"},
          {"CNI_CONTAINERID", "3f6940ab5ab4"},
          {"CNI_NETNS", "/var/run/netns/pod1"},
          {"CNI_IFNAME", "eth0"},
          {"CNI_PATH", "/opt/cni/bin"}};
}

TEST(CniCommand, ParsesEveryVerb) {
  for (auto [text, cmd] : std::vector<std::pair<const char*, Command>>{
           {"ADD", Command::kAdd},
           {"DEL", Command::kDel},
           {"CHECK", Command::kCheck},
           {"VERSION", Command::kVersion},
           {"STATUS", Command::kStatus},
           {"GC", Command::kGc}}) {
    absl::StatusOr<Command> c = ParseCommand(text);
    ASSERT_OK(c) << text;
    EXPECT_EQ(*c, cmd);
    EXPECT_EQ(ToString(cmd), text);
  }
}

TEST(CniCommand, UnknownIsCode4NamingTheValue) {
  for (const char* bad : {"FOO", "add", "ADD ", "DELETE"}) {
    absl::StatusOr<Command> c = ParseCommand(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(CniCodeOf(c.status()), kEnvCode);
    EXPECT_THAT(c.status().message(), HasSubstr("CNI_COMMAND"));
    EXPECT_THAT(c.status().message(), HasSubstr(absl::StrCat("'", bad, "'")));
  }
  absl::StatusOr<Command> c = ParseCommand("");
  EXPECT_EQ(CniCodeOf(c.status()), kEnvCode);
  EXPECT_THAT(c.status().message(), HasSubstr("CNI_COMMAND is not set"));
}

TEST(CniCommand, VersionGates) {
  EXPECT_OK(CheckCommandVersion(Command::kAdd, "0.3.0"));
  EXPECT_OK(CheckCommandVersion(Command::kCheck, "0.4.0"));
  EXPECT_OK(CheckCommandVersion(Command::kGc, "1.1.0"));
  EXPECT_OK(CheckCommandVersion(Command::kStatus, "1.1.0"));
  for (auto [cmd, version] : std::vector<std::pair<Command, const char*>>{
           {Command::kCheck, "0.3.1"}, {Command::kGc, "1.0.0"}, {Command::kStatus, "0.4.0"}}) {
    absl::Status s = CheckCommandVersion(cmd, version);
    EXPECT_EQ(CniCodeOf(s), 1u) << ToString(cmd);
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("'", version, "'")));
    EXPECT_THAT(s.message(), HasSubstr(ToString(cmd)));
  }
}

TEST(CniContainerId, AcceptsSpecPattern) {
  for (const char* ok : {"a", "0", "abc-DEF_1.2", "3f6940ab5ab43bc522569d15b23f8c1bbde1d7678b08039",
                         "pod.ns_x-1"}) {
    EXPECT_OK(ValidateContainerId(ok)) << ok;
  }
}

TEST(CniContainerId, RejectsWithCode4NamingVariableAndValue) {
  for (const char* bad : {"-abc", "_abc", ".abc", "a b", "a/b", "a:b", "a;b", "a\tb", "ü"}) {
    absl::Status s = ValidateContainerId(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(CniCodeOf(s), kEnvCode) << bad;
    EXPECT_THAT(s.message(), HasSubstr("CNI_CONTAINERID")) << bad;
  }
  EXPECT_THAT(ValidateContainerId("-abc").message(), HasSubstr("'-abc'"));
  EXPECT_THAT(ValidateContainerId("a/b").message(), HasSubstr("'/'"));
  EXPECT_THAT(ValidateContainerId("").message(), HasSubstr("CNI_CONTAINERID is not set"));
}

TEST(CniIfname, AcceptsLinuxNames) {
  for (const char* ok : {"eth0", "net1", "a", "123456789012345", "eth0.100", "veth-x_y", "..."}) {
    EXPECT_OK(ValidateIfname(ok)) << ok;
  }
}

TEST(CniIfname, RejectsWithCode4NamingVariableAndValue) {
  struct Case {
    const char* name;
    const char* reason;
  };
  for (const Case& c : std::vector<Case>{{"1234567890123456", "16 bytes"},
                                         {".", "'.' and '..'"},
                                         {"..", "'.' and '..'"},
                                         {"eth/0", "'/'"},
                                         {"eth:0", "':'"},
                                         {"eth 0", "whitespace"},
                                         {"eth\t0", "whitespace"},
                                         {"eth\n", "whitespace"}}) {
    absl::Status s = ValidateIfname(c.name);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(CniCodeOf(s), kEnvCode);
    EXPECT_THAT(s.message(), HasSubstr("CNI_IFNAME"));
    EXPECT_THAT(s.message(), HasSubstr(c.reason)) << s.message();
  }
  EXPECT_THAT(ValidateIfname("eth/0").message(), HasSubstr("'eth/0'"));
  EXPECT_THAT(ValidateIfname("").message(), HasSubstr("CNI_IFNAME is not set"));
}

TEST(CniNetns, MustBeAbsolute) {
  EXPECT_OK(ValidateNetns("/proc/123/ns/net"));
  absl::Status s = ValidateNetns("netns/x");
  EXPECT_EQ(CniCodeOf(s), kEnvCode);
  EXPECT_THAT(s.message(), HasSubstr("CNI_NETNS 'netns/x'"));
}

TEST(CniArgs, ParsesKubernetesKeys) {
  absl::StatusOr<CniArgs> a = ParseCniArgs(
      "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
      "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1;FOO=bar=baz;;");
  ASSERT_OK(a);
  EXPECT_TRUE(a->ignore_unknown);
  EXPECT_EQ(a->pod_namespace, "default");
  EXPECT_EQ(a->pod_name, "web-0");
  EXPECT_EQ(a->pod_infra_container_id, "abc");
  EXPECT_EQ(a->pod_uid, "u-1");
  ASSERT_EQ(a->unknown.size(), 1u);
  EXPECT_EQ(a->unknown[0].first, "FOO");
  EXPECT_EQ(a->unknown[0].second, "bar=baz");
  EXPECT_OK(ParseCniArgs(""));
  EXPECT_OK(ParseCniArgs("IgnoreUnknown=true;X=1"));
}

TEST(CniArgs, RejectsBadPairsAndUnknownKeys) {
  absl::StatusOr<CniArgs> a = ParseCniArgs("K8S_POD_NAME=x;garbage");
  EXPECT_EQ(CniCodeOf(a.status()), kEnvCode);
  EXPECT_THAT(a.status().message(), HasSubstr("CNI_ARGS pair 'garbage'"));
  a = ParseCniArgs("=x");
  EXPECT_THAT(a.status().message(), HasSubstr("'=x'"));
  a = ParseCniArgs("FOO=1;K8S_POD_NAME=x");
  EXPECT_EQ(CniCodeOf(a.status()), kEnvCode);
  EXPECT_THAT(a.status().message(), HasSubstr("'FOO'"));
  EXPECT_THAT(a.status().message(), HasSubstr("IgnoreUnknown"));
  a = ParseCniArgs("IgnoreUnknown=maybe");
  EXPECT_THAT(a.status().message(), HasSubstr("IgnoreUnknown 'maybe'"));
}

TEST(CniEnvironment, AddNeedsContainerIdNetnsIfname) {
  absl::StatusOr<Environment> env = Parse(AddEnv());
  ASSERT_OK(env);
  EXPECT_EQ(env->command, Command::kAdd);
  EXPECT_EQ(env->container_id, "3f6940ab5ab4");
  EXPECT_EQ(env->netns, "/var/run/netns/pod1");
  EXPECT_EQ(env->ifname, "eth0");
  EXPECT_EQ(env->path, "/opt/cni/bin");

  for (const char* var : {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"}) {
    for (bool empty : {false, true}) {
      auto vars = AddEnv();
      if (empty) {
        vars[var] = "";
      } else {
        vars.erase(var);
      }
      absl::StatusOr<Environment> e = Parse(vars);
      ASSERT_FALSE(e.ok()) << var;
      EXPECT_EQ(CniCodeOf(e.status()), kEnvCode);
      EXPECT_THAT(e.status().message(), HasSubstr(absl::StrCat(var, " is not set")));
    }
  }
}

TEST(CniEnvironment, CheckHasTheSameRequirementsAsAdd) {
  auto vars = AddEnv();
  vars["CNI_COMMAND"] = "CHECK";
  EXPECT_OK(Parse(vars));
  vars.erase("CNI_NETNS");
  EXPECT_THAT(Parse(vars).status().message(), HasSubstr("CNI_NETNS is not set"));
}

TEST(CniEnvironment, DelMayOmitNetnsButValidatesItWhenGiven) {
  auto vars = AddEnv();
  vars["CNI_COMMAND"] = "DEL";
  vars.erase("CNI_NETNS");
  absl::StatusOr<Environment> env = Parse(vars);
  ASSERT_OK(env);
  EXPECT_EQ(env->netns, "");
  vars["CNI_NETNS"] = "";
  EXPECT_OK(Parse(vars));
  vars["CNI_NETNS"] = "relative";
  EXPECT_EQ(CniCodeOf(Parse(vars).status()), kEnvCode);
  vars["CNI_NETNS"] = "/x";
  vars.erase("CNI_IFNAME");
  EXPECT_THAT(Parse(vars).status().message(), HasSubstr("CNI_IFNAME is not set"));
}

TEST(CniEnvironment, VersionStatusGcNeedOnlyTheCommand) {
  for (const char* cmd : {"VERSION", "STATUS", "GC"}) {
    // Even garbage in the other variables is ignored: these verbs do not use them.
    absl::StatusOr<Environment> env =
        Parse({{"CNI_COMMAND", cmd}, {"CNI_CONTAINERID", "-bad"}, {"CNI_IFNAME", "a/b"}});
    ASSERT_OK(env) << cmd;
    EXPECT_EQ(ToString(env->command), cmd);
  }
}

TEST(CniEnvironment, ReportsEveryInvalidVariableAtOnce) {
  auto vars = AddEnv();
  vars["CNI_CONTAINERID"] = "-x";
  vars["CNI_IFNAME"] = "this-name-is-too-long";
  vars["CNI_ARGS"] = "novalue";
  absl::StatusOr<Environment> env = Parse(vars);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(CniCodeOf(env.status()), kEnvCode);
  EXPECT_THAT(env.status().message(), HasSubstr("CNI_CONTAINERID '-x'"));
  EXPECT_THAT(env.status().message(), HasSubstr("CNI_IFNAME 'this-name-is-too-long'"));
  EXPECT_THAT(env.status().message(), HasSubstr("CNI_ARGS pair 'novalue'"));
}

TEST(CniEnvironment, MissingCommand) {
  absl::StatusOr<Environment> env = Parse({});
  EXPECT_EQ(CniCodeOf(env.status()), kEnvCode);
  EXPECT_THAT(env.status().message(), HasSubstr("CNI_COMMAND"));
}

// Issue 10 defect 7: bad UTF-8 in a variable sarena-cni sends to sarenad (protobuf strings) used
// to come back as "try again later" (11) forever; it is a decode error naming the variable.
TEST(CniEnvironment, InvalidUtf8IsCode4NamingTheVariableAndBytes) {
  struct Case {
    std::string var, value, says;
  };
  for (const Case& c : std::vector<Case>{
           {"CNI_IFNAME", "eth\xff", "invalid CNI_IFNAME 'eth\\xff': not valid UTF-8 (byte 0xff at offset 3)"},
           {"CNI_IFNAME", "\xc0\xaf", "CNI_IFNAME '\\xc0\\xaf': not valid UTF-8 (byte 0xc0 at offset 0)"},
           {"CNI_IFNAME", "e\xed\xa0\x80", "CNI_IFNAME 'e\\xed\\xa0\\x80': not valid UTF-8 (byte 0xed at offset 1)"},
           {"CNI_NETNS", "/var/run/netns/\xe2\x82", "invalid CNI_NETNS '/var/run/netns/\\xe2\\x82': not valid UTF-8 (byte 0xe2 at offset 15)"},
           {"CNI_ARGS", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-\xfe",
            "invalid CNI_ARGS K8S_POD_NAME 'web-\\xfe': not valid UTF-8 (byte 0xfe at offset 4)"},
           {"CNI_ARGS", "K8S_POD_UID=\xf4\x90\x80\x80", "CNI_ARGS K8S_POD_UID '\\xf4\\x90\\x80\\x80'"},
           {"CNI_ARGS", "IgnoreUnknown=1;K\xff=v", "invalid CNI_ARGS 'IgnoreUnknown=1;K\\xff=v': not valid UTF-8 (byte 0xff at offset 17)"},
       }) {
    SCOPED_TRACE(c.var + " " + c.says);
    auto vars = AddEnv();
    vars[c.var] = c.value;
    absl::StatusOr<Environment> env = Parse(vars);
    ASSERT_FALSE(env.ok());
    EXPECT_THAT(env, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_EQ(CniCodeOf(env.status()), kEnvCode);
    EXPECT_THAT(env.status().message(), HasSubstr(c.says));
  }
  // DEL checks them too (it sends ifname and netns).
  auto vars = AddEnv();
  vars["CNI_COMMAND"] = "DEL";
  vars["CNI_IFNAME"] = "eth\x80";
  EXPECT_EQ(CniCodeOf(Parse(vars).status()), kEnvCode);
  // Valid multi-byte UTF-8 stays valid (the kernel allows non-ASCII interface names).
  vars = AddEnv();
  vars["CNI_IFNAME"] = "eth\xc3\xa9";  // "ethé"
  vars["CNI_ARGS"] = "K8S_POD_NAME=caf\xc3\xa9-\xf0\x9f\x98\x80";
  absl::StatusOr<Environment> env = Parse(vars);
  ASSERT_OK(env);
  EXPECT_EQ(env->args.pod_name, "caf\xc3\xa9-\xf0\x9f\x98\x80");
}

TEST(CniEnvironment, IfnameRejectsUnicodeWhitespaceLikeLibcni) {
  for (const char* ifname : {"eth\xc2\xa0" "0", "e\xe2\x80\x83x", "\xe3\x80\x80"}) {
    SCOPED_TRACE(ifname);
    absl::Status s = ValidateIfname(ifname);
    EXPECT_EQ(CniCodeOf(s), kEnvCode) << s;
    EXPECT_THAT(s.message(), HasSubstr("Unicode space U+"));
  }
}

TEST(CniUtf8, FirstInvalidUtf8) {
  EXPECT_EQ(FirstInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("ab\x80"), 2u);                // stray continuation
  EXPECT_EQ(FirstInvalidUtf8("a\xc1\xbf"), 1u);             // overlong 2-byte
  EXPECT_EQ(FirstInvalidUtf8("\xe0\x80\xaf"), 0u);          // overlong 3-byte
  EXPECT_EQ(FirstInvalidUtf8("\xf0\x80\x80\xaf"), 0u);      // overlong 4-byte
  EXPECT_EQ(FirstInvalidUtf8("x\xed\xbf\xbf"), 1u);         // surrogate U+DFFF
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);      // above U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("ok\xe2\x82"), 2u);            // truncated at the end
  EXPECT_EQ(FirstInvalidUtf8("\xe2(\xa1"), 0u);             // bad continuation
  EXPECT_EQ(FirstInvalidUtf8(std::string("a\0b", 3)), std::nullopt);  // NUL is valid UTF-8
}

}  // namespace
}  // namespace sarena::cni
