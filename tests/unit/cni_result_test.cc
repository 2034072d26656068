// Result JSON per cniVersion (parsed back and checked field by field), error JSON, VERSION
// output, CNI code payloads, and CHECK against prevResult.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/json.h"
#include "libsarena/cni/result.h"
#include "libsarena/cni/version.h"
#include "tests/lib/status_matchers.h"

namespace sarena::cni {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

EndpointInfo Endpoint() {
  return EndpointInfo{.container_id = "c1",
                      .ifname = "eth0",
                      .netns = "/var/run/netns/pod1",
                      .ip = "10.244.1.5",
                      .prefix_len = 32,
                      .gateway = "10.244.1.1",
                      .pod_mac = "0a:58:0a:f4:01:05",
                      .host_ifname = "lxc1234567890a",
                      .host_mac = "ee:ee:ee:00:00:01",
                      .mtu = 1450};
}

JsonObject MustParse(const std::string& json) {
  absl::StatusOr<JsonObject> o = JsonObject::Parse(json);
  EXPECT_OK(o) << json;
  return o.ok() ? *o : JsonObject();
}

TEST(CniResult, ShapeForEachVersion) {
  Dns dns;
  dns.nameservers = {"10.96.0.10"};
  Result r = BuildResult(Endpoint(), dns);
  for (absl::string_view version : kSupportedVersions) {
    SCOPED_TRACE(version);
    std::string json = ResultToJson(r, version);
    JsonObject o = MustParse(json);
    EXPECT_EQ(o.GetString("cniVersion")->value_or(""), version);

    auto interfaces = *o.GetObjectArray("interfaces");
    ASSERT_TRUE(interfaces.has_value());
    ASSERT_EQ(interfaces->size(), 2u);
    EXPECT_EQ((*interfaces)[0].GetString("name")->value_or(""), "lxc1234567890a");
    EXPECT_EQ((*interfaces)[0].GetString("mac")->value_or(""), "ee:ee:ee:00:00:01");
    EXPECT_FALSE((*interfaces)[0].Has("sandbox"));  // host side
    EXPECT_EQ((*interfaces)[1].GetString("name")->value_or(""), "eth0");
    EXPECT_EQ((*interfaces)[1].GetString("mac")->value_or(""), "0a:58:0a:f4:01:05");
    EXPECT_EQ((*interfaces)[1].GetString("sandbox")->value_or(""), "/var/run/netns/pod1");
    // Interface MTU exists from 1.1.0 on.
    EXPECT_EQ((*interfaces)[1].Has("mtu"), version == "1.1.0");
    if (version == "1.1.0") {
      EXPECT_EQ((*interfaces)[1].GetUint("mtu")->value_or(0), 1450u);
    }

    auto ips = *o.GetObjectArray("ips");
    ASSERT_TRUE(ips.has_value());
    ASSERT_EQ(ips->size(), 1u);
    const JsonObject& ip = (*ips)[0];
    EXPECT_EQ(ip.GetString("address")->value_or(""), "10.244.1.5/32");
    EXPECT_EQ(ip.GetString("gateway")->value_or(""), "10.244.1.1");
    EXPECT_EQ(ip.GetUint("interface")->value_or(99), 1u);
    // "version" in ips exists only before 1.0.0.
    bool pre10 = version[0] == '0';
    EXPECT_EQ(ip.Has("version"), pre10);
    if (pre10) {
      EXPECT_EQ(ip.GetString("version")->value_or(""), "4");
    }

    auto routes = *o.GetObjectArray("routes");
    ASSERT_TRUE(routes.has_value());
    ASSERT_EQ(routes->size(), 2u);
    EXPECT_EQ((*routes)[0].GetString("dst")->value_or(""), "10.244.1.1/32");
    EXPECT_FALSE((*routes)[0].Has("gw"));
    EXPECT_EQ((*routes)[1].GetString("dst")->value_or(""), "0.0.0.0/0");
    EXPECT_EQ((*routes)[1].GetString("gw")->value_or(""), "10.244.1.1");

    auto dns = *o.GetObject("dns");
    ASSERT_TRUE(dns.has_value());
    EXPECT_THAT(dns->GetStringArray("nameservers")->value_or(std::vector<std::string>{}),
                ElementsAre("10.96.0.10"));

    // And our own parser reads it back to the same Result (modulo what the version drops).
    absl::StatusOr<Result> back = ParseResultJson(json);
    ASSERT_OK(back);
    Result expect = r;
    expect.cni_version = std::string(version);
    if (version != "1.1.0") expect.interfaces[1].mtu.reset();
    EXPECT_EQ(*back, expect);
  }
}

TEST(CniResult, EmptyDnsIsAnObject) {
  JsonObject o = MustParse(ResultToJson(BuildResult(Endpoint()), "1.0.0"));
  auto dns = o.GetObject("dns");
  ASSERT_TRUE(dns.ok() && dns->has_value());
  EXPECT_TRUE((*dns)->fields().fields().empty());
}

TEST(CniResult, ParsesAForeignResult) {
  // A 0.4.0 result as another plugin (e.g. ptp) prints it.
  absl::StatusOr<Result> r = ParseResultJson(R"({"cniVersion":"0.4.0",
      "interfaces":[{"name":"veth1","mac":"aa:aa:aa:aa:aa:aa"},
                    {"name":"eth0","mac":"bb:bb:bb:bb:bb:bb","sandbox":"/proc/1/ns/net"}],
      "ips":[{"version":"4","interface":1,"address":"10.1.0.2/24","gateway":"10.1.0.1"},
             {"version":"6","address":"fd00::2/64"}],
      "routes":[{"dst":"0.0.0.0/0"}],"dns":{}})");
  ASSERT_OK(r);
  EXPECT_EQ(r->cni_version, "0.4.0");
  ASSERT_EQ(r->ips.size(), 2u);
  EXPECT_EQ(r->ips[0].interface, 1u);
  EXPECT_EQ(r->ips[1].address, "fd00::2/64");
  EXPECT_FALSE(r->ips[1].interface.has_value());
}

TEST(CniResult, MergeKeepsPrevResultAndShiftsInterfaceIndexes) {
  absl::StatusOr<Result> prev = ParseResultJson(R"({"cniVersion":"1.0.0",
      "interfaces":[{"name":"dummy0","sandbox":"/var/run/netns/pod1"}],
      "ips":[{"address":"192.168.9.2/24","interface":0}],
      "routes":[{"dst":"192.168.0.0/16"}],"dns":{"nameservers":["1.1.1.1"]}})");
  ASSERT_OK(prev);
  Result merged = MergeResults(*prev, BuildResult(Endpoint()));
  ASSERT_EQ(merged.interfaces.size(), 3u);
  EXPECT_EQ(merged.interfaces[0].name, "dummy0");
  EXPECT_EQ(merged.interfaces[2].name, "eth0");
  ASSERT_EQ(merged.ips.size(), 2u);
  EXPECT_EQ(merged.ips[0].interface, 0u);
  EXPECT_EQ(merged.ips[1].address, "10.244.1.5/32");
  EXPECT_EQ(merged.ips[1].interface, 2u);  // still points at eth0
  EXPECT_EQ(merged.routes.size(), 3u);
  EXPECT_THAT(merged.dns.nameservers, ElementsAre("1.1.1.1"));  // ours had none
  // Still a valid result, and still passes CHECK for our endpoint.
  EXPECT_OK(ParseResultJson(ResultToJson(merged, "1.0.0")));
  EXPECT_OK(CheckPrevResult(merged, Endpoint()));
}

TEST(CniResult, CheckPrevResultAcceptsTheAddResult) {
  Result prev = BuildResult(Endpoint());
  EXPECT_OK(CheckPrevResult(prev, Endpoint()));
  // Upper-case MAC in prevResult is the same MAC.
  prev.interfaces[1].mac = "0A:58:0A:F4:01:05";
  EXPECT_OK(CheckPrevResult(prev, Endpoint()));
  // Routes may be changed by chained plugins: not compared.
  prev.routes.clear();
  EXPECT_OK(CheckPrevResult(prev, Endpoint()));
}

TEST(CniResult, CheckPrevResultNamesTheMismatch) {
  struct Case {
    std::function<void(Result&)> mutate;
    std::vector<std::string> says;
  };
  std::vector<Case> cases = {
      {[](Result& r) { r.ips[0].address = "10.244.1.6/32"; },
       {"10.244.1.6/32", "10.244.1.5/32", "'c1'"}},
      {[](Result& r) { r.ips[0].gateway = "10.244.1.254"; },
       {"prevResult.ips[0].gateway", "'10.244.1.254'", "'10.244.1.1'"}},
      {[](Result& r) { r.interfaces[1].mac = "02:00:00:00:00:01"; },
       {"prevResult.interfaces[1].mac", "'02:00:00:00:00:01'", "'0a:58:0a:f4:01:05'"}},
      {[](Result& r) { r.interfaces[1].sandbox = "/var/run/netns/other"; },
       {"prevResult.interfaces[1].sandbox", "/var/run/netns/other", "/var/run/netns/pod1"}},
      {[](Result& r) { r.interfaces[1].name = "net1"; }, {"no interface 'eth0'"}},
      {[](Result& r) { r.interfaces[0].name = "lxcdeadbeef000"; },
       {"'lxcdeadbeef000'", "'lxc1234567890a'"}},
      {[](Result& r) { r.ips[0].interface = 0; }, {"prevResult.ips[0].interface is 0"}},
      {[](Result& r) { r.ips.clear(); }, {"prevResult.ips has []", "10.244.1.5/32"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Result prev = BuildResult(Endpoint());
    cases[i].mutate(prev);
    absl::Status s = CheckPrevResult(prev, Endpoint());
    ASSERT_FALSE(s.ok()) << i;
    EXPECT_EQ(CniCodeOf(s), static_cast<uint32_t>(ErrorCode::kCheckFailed)) << i;
    for (const std::string& say : cases[i].says) {
      EXPECT_THAT(s.message(), HasSubstr(say)) << i;
    }
  }
}

TEST(CniError, JsonRoundTrip) {
  Error e{.cni_version = "1.1.0",
          .code = 7,
          .msg = "invalid mtu 20: must be 68..65535",
          .details = "line \"2\"\n<x>"};
  std::string json = ErrorToJson(e);
  EXPECT_EQ(json.find('\n'), std::string::npos);  // one line
  absl::StatusOr<Error> back = ParseErrorJson(json);
  ASSERT_OK(back);
  EXPECT_EQ(back->cni_version, "1.1.0");
  EXPECT_EQ(back->code, 7u);
  EXPECT_EQ(back->msg, e.msg);
  EXPECT_EQ(back->details, e.details);
  // Code is a JSON number, not a string.
  JsonObject o = MustParse(json);
  EXPECT_EQ(o.Find("code")->kind_case(), google::protobuf::Value::kNumberValue);
  EXPECT_FALSE(ParseErrorJson("{").ok());
  EXPECT_FALSE(ParseErrorJson(R"({"code":"7"})").ok());
}

TEST(CniError, StatusPayloadAndDefaults) {
  absl::Status s = MakeCniError(ErrorCode::kIpamExhausted, absl::StatusCode::kResourceExhausted,
                                "no free address in 10.244.1.0/30");
  EXPECT_EQ(CniCodeOf(s), 101u);
  Error e = ErrorFromStatus(s, "1.0.0", "more");
  EXPECT_EQ(e.code, 101u);
  EXPECT_EQ(e.msg, "no free address in 10.244.1.0/30");
  EXPECT_EQ(e.details, "more");
  EXPECT_EQ(e.cni_version, "1.0.0");

  EXPECT_EQ(CniCodeOf(absl::OkStatus()), 0u);
  EXPECT_EQ(CniCodeOf(absl::UnavailableError("x")), 11u);
  EXPECT_EQ(CniCodeOf(absl::DeadlineExceededError("x")), 11u);
  EXPECT_EQ(CniCodeOf(absl::NotFoundError("x")), 3u);
  EXPECT_EQ(CniCodeOf(absl::ResourceExhaustedError("x")), 101u);
  EXPECT_EQ(CniCodeOf(absl::AlreadyExistsError("x")), 102u);
  EXPECT_EQ(CniCodeOf(absl::InternalError("x")), 100u);
  EXPECT_EQ(CniCodeOf(WithCniCode(absl::UnavailableError("x"), ErrorCode::kPluginNotAvailable)),
            50u);
  // A raw code from the daemon; 0 attaches nothing.
  EXPECT_EQ(CniCodeOf(MakeCniError(51u, absl::StatusCode::kUnavailable, "x")), 51u);
  EXPECT_EQ(CniCodeOf(MakeCniError(0u, absl::StatusCode::kNotFound, "x")), 3u);
  EXPECT_FALSE(MakeCniError(7u, absl::StatusCode::kOk, "x").ok());
}

TEST(CniVersion, VersionJson) {
  for (auto [requested, reported] : std::vector<std::pair<std::string, std::string>>{
           {"0.4.0", "0.4.0"}, {"1.0.0", "1.0.0"}, {"", "1.1.0"}, {"9.9.9", "1.1.0"}}) {
    JsonObject o = MustParse(VersionJson(requested));
    EXPECT_EQ(o.GetString("cniVersion")->value_or(""), reported);
    EXPECT_THAT(o.GetStringArray("supportedVersions")->value_or(std::vector<std::string>{}),
                ElementsAre("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"));
  }
}

TEST(CniVersion, Parse) {
  absl::StatusOr<SpecVersion> v = SpecVersion::Parse("1.10.2");
  ASSERT_OK(v);
  EXPECT_EQ(v->ToString(), "1.10.2");
  EXPECT_LT(*SpecVersion::Parse("0.4.0"), *SpecVersion::Parse("1.0.0"));
  EXPECT_LT(*SpecVersion::Parse("1.0.0"), *SpecVersion::Parse("1.1.0"));
  for (const char* bad : {"", "1", "1.0", "1.0.0.0", "a.b.c", "1.-1.0", "1..0", " 1.0.0"}) {
    EXPECT_EQ(CniCodeOf(SpecVersion::Parse(bad).status()), 6u) << bad;
  }
  EXPECT_EQ(CniCodeOf(CheckSupportedVersion("0.2.0")), 1u);
  EXPECT_OK(CheckSupportedVersion("1.1.0"));
}

TEST(CniJson, OutputIsDeterministicAndEscaped) {
  JsonObject o;
  o.Set("z", "last");
  o.Set("a", "quote\" backslash\\ newline\n");
  o.Set("n", uint64_t{4294967295});
  o.Set("neg", int64_t{-3});
  o.Set("b", true);
  std::string json = o.ToJson();
  EXPECT_EQ(json,
            R"({"a":"quote\" backslash\\ newline\n","b":true,"n":4294967295,"neg":-3,"z":"last"})");
  EXPECT_EQ(MustParse(json).GetString("a")->value_or(""), "quote\" backslash\\ newline\n");
}

}  // namespace
}  // namespace sarena::cni
