// The executables' shared CLI layer: the --help printer and flag parser of libsarena/base/cli.h
// over real Abseil flags defined here, the text table, and the -o json / endpoint get helpers
// of libsarena/rpc/cli_output.h (the JSON shapes `sarena -o json` prints).
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/cli.h"
#include "libsarena/model/json.h"
#include "libsarena/rpc/cli_output.h"
#include "tests/lib/test_util.h"

ABSL_FLAG(std::string, test_pod_cidr, "", "This node's pod CIDR, e.g. 10.244.1.0/24");
ABSL_FLAG(std::string, test_socket, "/run/x.sock", "The socket");
ABSL_FLAG(bool, test_switch, true, "A switch that is on by default");
ABSL_FLAG(uint32_t, test_mtu, 1500, "MTU in bytes");
ABSL_FLAG(absl::Duration, test_wait, absl::Seconds(30), "How long to wait");
ABSL_FLAG(std::string, o, "table", "Output: table | json");

namespace sarena {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ProgramDoc TestDoc() {
  return ProgramDoc{
      .name = "testprog",
      .summary = "A test program.",
      .usage = {"testprog [flags] COMMAND", "testprog --version"},
      .subcommands = {{"thing get ID", "Gets one thing."}},
      .flag_sources = {"tests/unit/cli_help_test.cc"},
      .extra_flags = {{"extra-one", "string", "", "A flag of another parser."}},
      .groups = {{"Network", {"test-pod-cidr", "test-mtu"}}, {"Output", {"o"}}},
      .epilog = "Exit status: 0 ok.\n",
  };
}

// Every line of `text` that documents a flag (starts with "  -").
std::vector<std::string> FlagLines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(l, "  -")) out.emplace_back(l);
  }
  return out;
}

TEST(CliHelp, ListsEveryFlagDashedWithTypeAndDefault) {
  const std::string h = HelpText(TestDoc());
  EXPECT_THAT(h, HasSubstr("Usage: testprog [flags] COMMAND\n  or:  testprog --version\n"));
  EXPECT_THAT(h, HasSubstr("  thing get ID\n      Gets one thing.\n"));
  EXPECT_THAT(h, HasSubstr("  --test-pod-cidr=STRING  (default: none)\n"
                           "      This node's pod CIDR, e.g. 10.244.1.0/24\n"));
  EXPECT_THAT(h, HasSubstr("  --test-socket=STRING  (default: \"/run/x.sock\")\n"));
  EXPECT_THAT(h, HasSubstr("  --[no-]test-switch  (default: true)\n"));
  EXPECT_THAT(h, HasSubstr("  --test-mtu=UINT32  (default: 1500)\n"));
  EXPECT_THAT(h, HasSubstr("  --test-wait=DURATION  (default: 30s)\n"));
  EXPECT_THAT(h, HasSubstr("  -o STRING  (default: \"table\")\n"));
  EXPECT_THAT(h, HasSubstr("  --extra-one=STRING  (default: none)\n"));
  EXPECT_THAT(h, HasSubstr("  --help\n"));
  EXPECT_THAT(h, HasSubstr("  --version\n"));
  EXPECT_THAT(h, HasSubstr("Exit status: 0 ok.\n"));
  // Abseil's own flags are not the program's.
  EXPECT_THAT(h, Not(HasSubstr("flagfile")));
  EXPECT_THAT(h, Not(HasSubstr("fromenv")));
  EXPECT_THAT(h, Not(HasSubstr("No flags matched")));
  for (const std::string& l : FlagLines(h)) EXPECT_THAT(l, Not(HasSubstr("_"))) << l;
  // Exactly the program's flags: 6 Abseil ones, 1 extra, --help, --version.
  EXPECT_EQ(FlagLines(h).size(), 9u) << h;
}

TEST(CliHelp, GroupsInOrderUngroupedUnderOtherFlags) {
  const std::string h = HelpText(TestDoc());
  const size_t network = h.find("\nNetwork:\n");
  const size_t output = h.find("\nOutput:\n");
  const size_t other = h.find("\nOther flags:\n");
  const size_t general = h.find("\nGeneral:\n");
  ASSERT_NE(network, std::string::npos) << h;
  ASSERT_NE(output, std::string::npos) << h;
  ASSERT_NE(other, std::string::npos) << h;
  ASSERT_NE(general, std::string::npos) << h;
  EXPECT_LT(network, output);
  EXPECT_LT(output, other);
  EXPECT_LT(other, general);
  EXPECT_GT(h.find("--test-mtu"), network);
  EXPECT_LT(h.find("--test-mtu"), output);
  // Not in any group: listed anyway, after the groups.
  EXPECT_GT(h.find("--test-wait"), other);
  EXPECT_GT(h.find("--extra-one"), other);
}

TEST(CliHelp, WrapsLongHelpAt80Columns) {
  ProgramDoc doc = TestDoc();
  doc.extra_flags = {{"long", "string", "", std::string(30, 'a') + " " + std::string(30, 'b') +
                                                " " + std::string(30, 'c')}};
  const std::string h = HelpText(doc);
  EXPECT_THAT(h, HasSubstr("      " + std::string(30, 'a') + " " + std::string(30, 'b') + "\n" +
                           "      " + std::string(30, 'c') + "\n"));
}

TEST(CliHelp, VersionIsNameAndProjectVersion) {
  EXPECT_EQ(VersionText(TestDoc()), "testprog " + ProjectVersion() + "\n");
  EXPECT_THAT(ProjectVersion(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
}

TEST(CliHelp, FindsHelpAndVersionBeforeDoubleDash) {
  EXPECT_EQ(FindHelpRequest({"status", "--help"}), HelpRequest::kHelp);
  EXPECT_EQ(FindHelpRequest({"-h"}), HelpRequest::kHelp);
  EXPECT_EQ(FindHelpRequest({"--helpfull"}), HelpRequest::kHelp);
  EXPECT_EQ(FindHelpRequest({"--version"}), HelpRequest::kVersion);
  EXPECT_EQ(FindHelpRequest({"status", "--", "--help"}), HelpRequest::kNone);
  EXPECT_EQ(FindHelpRequest({"status", "-o", "json"}), HelpRequest::kNone);
}

class CliParse : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_test_pod_cidr, "");
    absl::SetFlag(&FLAGS_test_switch, true);
    absl::SetFlag(&FLAGS_test_mtu, 1500);
    absl::SetFlag(&FLAGS_test_wait, absl::Seconds(30));
    absl::SetFlag(&FLAGS_o, "table");
  }
};

TEST_F(CliParse, DashedUnderscoredEqualsAndNextArgument) {
  auto pos = ParseProgramFlags({"--test-pod-cidr=10.0.0.0/24", "endpoint", "--test_mtu", "9000",
                                "-o", "json", "get", "--test-wait=5s", "abc"},
                               TestDoc());
  ASSERT_TRUE(pos.ok()) << pos.status();
  EXPECT_EQ(*pos, (std::vector<std::string>{"endpoint", "get", "abc"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_pod_cidr), "10.0.0.0/24");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_mtu), 9000u);
  EXPECT_EQ(absl::GetFlag(FLAGS_o), "json");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_wait), absl::Seconds(5));
}

TEST_F(CliParse, BooleansAndDoubleDash) {
  auto pos = ParseProgramFlags({"--no-test-switch", "--", "--test-mtu=1"}, TestDoc());
  ASSERT_TRUE(pos.ok()) << pos.status();
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_EQ(*pos, (std::vector<std::string>{"--test-mtu=1"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_mtu), 1500u);
  ASSERT_TRUE(ParseProgramFlags({"--test-switch"}, TestDoc()).ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  ASSERT_TRUE(ParseProgramFlags({"--test-switch=false"}, TestDoc()).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
}

TEST_F(CliParse, ErrorsNameTheFlagAsTyped) {
  auto r = ParseProgramFlags({"--test-pod-cidrr=x"}, TestDoc());
  ASSERT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_EQ(r.status().message(), "unknown flag --test-pod-cidrr");
  r = ParseProgramFlags({"--test-mtu"}, TestDoc());
  EXPECT_EQ(r.status().message(), "flag --test-mtu needs a value");
  r = ParseProgramFlags({"--test_mtu=abc"}, TestDoc());
  EXPECT_EQ(r.status().message(), "invalid value 'abc' for --test-mtu (uint32)");
  // Abseil's own flags are not accepted: they are not the program's.
  r = ParseProgramFlags({"--flagfile=/x"}, TestDoc());
  EXPECT_EQ(r.status().message(), "unknown flag --flagfile");
  // A --no- prefix only negates booleans.
  r = ParseProgramFlags({"--no-test-mtu"}, TestDoc());
  EXPECT_EQ(r.status().message(), "unknown flag --no-test-mtu");
}

// An unknown flag is "unknown flag --NAME" wherever it stands: also last, where a valued
// flag would say "needs a value" (sarena, sarenad).
TEST_F(CliParse, UnknownFlagLastIsUnknownNotMissingValue) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"status", "--bogus"},
                                             {"--bogus"},
                                             {"endpoint", "get", "x", "--bogus"},
                                             {"--bogus", "status"},
                                             {"status", "-x"}}) {
    auto r = ParseProgramFlags(args, TestDoc());
    ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << args.back();
    EXPECT_THAT(r.status().message(), HasSubstr("unknown flag -"));
    EXPECT_THAT(r.status().message(), Not(HasSubstr("needs a value")));
  }
}

// The table parser of programs with their own flag tables (sarena-diag).
TEST(CliFlagTable, ParsesTheSpellingsAndRepeats) {
  const std::vector<FlagDoc> table = {{"src", "string", "", ""},
                                      {"pod", "string", "", ""},
                                      {"no-reply", "", "", ""},
                                      {"probe-timeout", "uint32", "800", ""},
                                      {"o", "string", "text", ""}};
  auto r = ParseFlagTable({"--src", "a", "--pod=x", "-pod", "y", "--no-reply", "-o", "json",
                           "--probe_timeout=5", "--", "--src"},
                          table);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->values.at("src"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(r->values.at("pod"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(r->values.at("no-reply"), (std::vector<std::string>{"true"}));
  EXPECT_EQ(r->values.at("o"), (std::vector<std::string>{"json"}));
  EXPECT_EQ(r->values.at("probe-timeout"), (std::vector<std::string>{"5"}));
  EXPECT_EQ(r->positional, (std::vector<std::string>{"--src"}));
}

TEST(CliFlagTable, UnknownFlagAnywhereIsUnknown) {
  const std::vector<FlagDoc> table = {{"src", "string", "", ""}, {"no-reply", "", "", ""}};
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--src", "a", "--bogus"}, {"--bogus"}, {"--bogus", "v"}, {"--bogus=v", "--src", "a"}}) {
    auto r = ParseFlagTable(args, table);
    ASSERT_TRUE(absl::IsInvalidArgument(r.status()));
    EXPECT_EQ(r.status().message(), "unknown flag --bogus");
  }
  auto r = ParseFlagTable({"--no-reply", "--src"}, table);
  EXPECT_EQ(r.status().message(), "flag --src needs a value");
}

TEST(CliFlagTable, AsksForJsonOutput) {
  EXPECT_TRUE(AsksForJsonOutput({"trace", "-o", "json"}));
  EXPECT_TRUE(AsksForJsonOutput({"-o=json", "status"}));
  EXPECT_TRUE(AsksForJsonOutput({"--output", "json", "--bogus"}));
  EXPECT_TRUE(AsksForJsonOutput({"--o=json"}));
  EXPECT_FALSE(AsksForJsonOutput({"-o", "text"}));
  EXPECT_FALSE(AsksForJsonOutput({"-o", "json", "-o", "dot"}));
  EXPECT_FALSE(AsksForJsonOutput({"--", "-o", "json"}));
  EXPECT_FALSE(AsksForJsonOutput({"-o"}));
}

// One wording of a bad -o for sarena, sarenad and sarena-diag.
TEST(CliFlagTable, CheckOutputFormat) {
  EXPECT_TRUE(CheckOutputFormat("-o", "json", {"text", "json"}).ok());
  EXPECT_EQ(CheckOutputFormat("-o", "yaml", {"text", "json", "dot"}),
            absl::InvalidArgumentError("invalid -o 'yaml': expected text, json or dot"));
  EXPECT_EQ(CheckOutputFormat("--output", "", {"table", "json"}),
            absl::InvalidArgumentError("invalid --output '': expected table or json"));
  // The executables say it so (sarenad's in unit SarenadFlags, sarena-diag's in DiagCli).
  auto r = testing::Run(absl::StrCat(testing::BinaryDir(), "/tools/sarena -o yaml status"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "sarena: invalid -o 'yaml': expected table or json\n");
}

// The real `sarena` binary: a command whose argument is missing says which argument (it used
// to say "unknown command"); nothing here reaches sarenad (the usage error comes first).
testing::CommandResult RunSarena(absl::string_view args) {
  return testing::Run(
      absl::StrCat(testing::BinaryDir(), "/tools/sarena --socket /nonexistent ", args));
}

TEST(CliCommands, MissingArgumentIsNamedNotUnknownCommand) {
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {"endpoint get",
            "endpoint get: missing the ID argument (usage: sarena endpoint get ID)"},
           {"node delete",
            "node delete: missing the NAME argument (usage: sarena node delete NAME)"},
           {"endpoint get a b", "endpoint get: unexpected argument 'b'"},
           {"status now", "status: unexpected argument 'now'"},
           {"endpoint", "'endpoint' needs a subcommand"},
           {"node", "'node' needs a subcommand"},
           {"frob", "unknown command 'frob'"},
           {"", "missing command"}}) {
    auto r = RunSarena(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(want)) << args;
    EXPECT_THAT(r.err, HasSubstr("endpoint get ID | drops")) << args;
    if (args != "frob") EXPECT_THAT(r.err, Not(HasSubstr("unknown command"))) << args;
  }
  // -o json: the same message in the one error object on stdout.
  auto j = RunSarena("-o json endpoint get");
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_THAT(j.out, HasSubstr("\"code\": \"INVALID_ARGUMENT\""));
  EXPECT_THAT(j.out, HasSubstr("missing the ID argument"));
}

TEST(CliCommands, MatchCommand) {
  const std::vector<CommandSpec> cmds = {
      {"status", ""}, {"endpoint list", ""}, {"endpoint get", "ID"}};
  EXPECT_EQ(*MatchCommand({"status"}, cmds, "p"), 0u);
  EXPECT_EQ(*MatchCommand({"endpoint", "list"}, cmds, "p"), 1u);
  EXPECT_EQ(*MatchCommand({"endpoint", "get", "x"}, cmds, "p"), 2u);
  auto r = MatchCommand({"endpoint", "get"}, cmds, "p");
  ASSERT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_EQ(r.status().message(),
            "endpoint get: missing the ID argument (usage: p endpoint get ID): status | endpoint "
            "list | endpoint get ID (see p --help)");
}

// A one-letter flag with its value attached ("-ojson", as kubectl takes it) is that flag: both
// parsers share one token scan. It used to be "unknown flag --ojson".
TEST_F(CliParse, ShortFlagWithAttachedValue) {
  auto pos = ParseProgramFlags({"-ojson", "status"}, TestDoc());
  ASSERT_TRUE(pos.ok()) << pos.status();
  EXPECT_EQ(*pos, (std::vector<std::string>{"status"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_o), "json");
  // Only a valued one-letter flag takes an attached value; anything else stays unknown, named.
  auto r = ParseProgramFlags({"-xjson"}, TestDoc());
  EXPECT_EQ(r.status().message(), "unknown flag --xjson");
  r = ParseProgramFlags({"--ojson"}, TestDoc());  // two dashes: a long name, not -o
  EXPECT_EQ(r.status().message(), "unknown flag --ojson");
  const std::vector<FlagDoc> table = {{"o", "string", "text", ""}, {"out", "string", "", ""}};
  auto t = ParseFlagTable({"-ojson", "-out", "/x"}, table);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->values.at("o"), (std::vector<std::string>{"json"}));
  EXPECT_EQ(t->values.at("out"), (std::vector<std::string>{"/x"}));
  EXPECT_TRUE(AsksForJsonOutput({"-ojson", "trace"}));
  EXPECT_FALSE(AsksForJsonOutput({"-ojson", "-otext"}));
  EXPECT_TRUE(AsksForJsonOutput({"-o", "json", "-out", "/x"}));
}

// Flags before a command word: the scan can stop at the first positional argument.
TEST(CliFlagTable, StopAtPositional) {
  const std::vector<FlagDoc> table = {{"o", "string", "text", ""}, {"no-reply", "", "", ""}};
  auto r = ParseFlagTable({"-o", "json", "--no-reply", "trace", "--bogus", "-o", "dot"}, table,
                          {.stop_at_positional = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->values.at("o"), (std::vector<std::string>{"json"}));
  EXPECT_EQ(r->positional, (std::vector<std::string>{"trace", "--bogus", "-o", "dot"}));
  r = ParseFlagTable({"--bogus", "trace"}, table, {.stop_at_positional = true});
  EXPECT_EQ(r.status().message(), "unknown flag --bogus");
}

// An empty command argument is bad usage naming the argument; it never reaches sarenad.
TEST(CliCommands, EmptyArgumentIsAUsageError) {
  const std::vector<CommandSpec> cmds = {{"status", ""}, {"endpoint get", "ID"}};
  auto m = MatchCommand({"endpoint", "get", ""}, cmds, "p");
  ASSERT_TRUE(absl::IsInvalidArgument(m.status()));
  EXPECT_THAT(m.status().message(),
              HasSubstr("endpoint get: the ID argument is empty (usage: p endpoint get ID)"));
  for (const char* args : {"endpoint get ''", "node delete ''"}) {
    auto r = RunSarena(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("argument is empty")) << args;
    EXPECT_THAT(r.err, Not(HasSubstr("sarenad"))) << args;  // no connect, no socket hint
  }
}

// The real `sarena` binary: usage errors are exit 2 naming the flag and its value, never a
// hint at the datapath, sarenad or etcd (those are for failing to reach them), and -ojson is
// -o json.
TEST(CliCommands, SarenaUsageErrorsNameTheFlagWithoutReachabilityHints) {
  struct Case {
    std::string args;
    std::vector<std::string> mentions;
  };
  for (const Case& c : std::vector<Case>{
           {"monitor --duration=-1s", {"--duration", "-1s", "negative"}},
           {"--bpffs /nonexistent monitor --duration -2m", {"--duration", "-2m"}},
           {"--bpffs /nonexistent monitor --type trace", {"--type trace", "endpoint"}},
           {"--etcd-endpoints=notaurl node list", {"--etcd-endpoints", "notaurl"}},
           {"--etcd-endpoints=http://h:0 node delete n", {"--etcd-endpoints", "http://h:0"}},
           {"--etcd-endpoints unix://rel node list", {"--etcd-endpoints", "unix://rel"}}}) {
    auto r = testing::Run(absl::StrCat("env -u SARENA_ETCD_ENDPOINTS ", testing::BinaryDir(),
                                       "/tools/sarena --socket /nonexistent ", c.args));
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    for (const std::string& m : c.mentions) EXPECT_THAT(r.err, HasSubstr(m)) << c.args;
    for (const char* hint : {"is the sarena datapath loaded", "is etcd reachable", "is sarenad"}) {
      EXPECT_THAT(r.err, Not(HasSubstr(hint))) << c.args;
    }
  }
  auto env = testing::Run(absl::StrCat("SARENA_ETCD_ENDPOINTS=bogus ", testing::BinaryDir(),
                                       "/tools/sarena node list"));
  EXPECT_EQ(env.exit_code, 2) << env.err;
  EXPECT_THAT(env.err, HasSubstr("invalid $SARENA_ETCD_ENDPOINTS 'bogus'"));
  // -ojson (attached) is -o json: the usage error is the JSON error object on stdout.
  auto j = RunSarena("-ojson frob");
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_THAT(j.out, HasSubstr("\"code\": \"INVALID_ARGUMENT\""));
  EXPECT_THAT(j.out, HasSubstr("unknown command 'frob'"));
  EXPECT_EQ(j.err, "");
  // Failing to reach the datapath keeps its hint (exit 1).
  auto m = RunSarena("--bpffs /nonexistent monitor");
  EXPECT_EQ(m.exit_code, 1) << m.err;
  EXPECT_THAT(m.err, HasSubstr("is the sarena datapath loaded"));
}

TEST(CliTable, ColumnsFitTheWidestCellNeverTruncated) {
  const std::string id64(64, 'f');
  TextTable t({"CONTAINER", "IF", "RX-PKTS"}, {false, false, true});
  t.AddRow({id64, "eth0", "7"});
  t.AddRow({"short", "net1", "12345"});
  EXPECT_EQ(t.Render(), "CONTAINER" + std::string(55, ' ') + "  IF    RX-PKTS\n" + id64 +
                            "  eth0        7\n"
                            "short" +
                            std::string(59, ' ') + "  net1    12345\n");
}

rpc::v1::EndpointListResponse TwoEndpoints() {
  rpc::v1::EndpointListResponse list;
  rpc::v1::Endpoint* a = list.add_endpoints();
  a->set_endpoint_id(3);
  a->mutable_ref()->set_container_id(std::string(64, 'a'));
  a->mutable_ref()->set_ifname("eth0");
  a->set_pod_namespace("default");
  a->set_pod_name("web");
  a->set_ip("10.1.0.3");
  a->mutable_counters()->set_rx_packets(5);
  rpc::v1::Endpoint* b = list.add_endpoints();
  b->set_endpoint_id(4);
  b->mutable_ref()->set_container_id("ab" + std::string(62, '0'));
  b->mutable_ref()->set_ifname("eth0");
  b->set_ip("10.1.0.4");
  return list;
}

TEST(CliEndpointGet, ByIdContainerPrefixOrPod) {
  const auto list = TwoEndpoints();
  auto e = rpc::FindEndpoint(list, "4");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->ip(), "10.1.0.4");
  e = rpc::FindEndpoint(list, std::string(64, 'a'));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->endpoint_id(), 3u);
  e = rpc::FindEndpoint(list, "aaaa");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->endpoint_id(), 3u);
  e = rpc::FindEndpoint(list, "default/web");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->endpoint_id(), 3u);
}

TEST(CliEndpointGet, AmbiguousOrMissingNamesTheValue) {
  const auto list = TwoEndpoints();
  auto e = rpc::FindEndpoint(list, "a");
  ASSERT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  EXPECT_THAT(e.status().message(), HasSubstr("'a' is ambiguous"));
  EXPECT_THAT(e.status().message(), HasSubstr("endpoint 3 "));
  EXPECT_THAT(e.status().message(), HasSubstr("endpoint 4 "));
  e = rpc::FindEndpoint(list, "nope-123");
  ASSERT_TRUE(absl::IsNotFound(e.status())) << e.status();
  EXPECT_THAT(e.status().message(), HasSubstr("no endpoint matches 'nope-123'"));
  e = rpc::FindEndpoint(list, "default/db");
  EXPECT_TRUE(absl::IsNotFound(e.status())) << e.status();
}

// The JSON document `text`, parsed strictly, or a test failure.
model::JsonDoc Json(const std::string& text) {
  auto doc = model::JsonDoc::Parse(text, "cli output");
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  return doc.ok() ? *std::move(doc) : *model::JsonDoc::Parse("{}", "empty");
}

TEST(CliJson, ErrorObjectIsExactlyCodeAndMessage) {
  const std::string text =
      rpc::MessageToJson(rpc::CliErrorOf(absl::NotFoundError("no endpoint matches 'x'")));
  model::JsonDoc doc = Json(text);
  ASSERT_TRUE(doc.root().is_object());
  ASSERT_EQ(doc.root().size(), 2u) << text;
  EXPECT_EQ(doc.root().Find("code")->str(), "NOT_FOUND");
  EXPECT_EQ(doc.root().Find("message")->str(), "no endpoint matches 'x'");
}

TEST(CliJson, EndpointListKeepsProtoFieldNamesAndDefaults) {
  const std::string text = rpc::MessageToJson(TwoEndpoints());
  model::JsonDoc doc = Json(text);
  const model::JsonValue* eps = doc.root().Find("endpoints");
  ASSERT_TRUE(eps && eps->is_array() && eps->size() == 2) << text;
  const model::JsonValue& b = (*eps)[1];
  EXPECT_EQ(b.Find("ref")->Find("container_id")->str(), "ab" + std::string(62, '0'));
  EXPECT_EQ(b.Find("endpoint_id")->str(), "4");
  // Fields at their default value are present (the schema is the message).
  ASSERT_NE(b.Find("pod_name"), nullptr) << text;
  EXPECT_EQ(b.Find("pod_name")->str(), "");
  // uint64 counters are JSON strings (protobuf's JSON mapping).
  EXPECT_TRUE((*eps)[0].Find("counters")->Find("rx_packets")->is_string()) << text;
  EXPECT_EQ((*eps)[0].Find("counters")->Find("rx_packets")->str(), "5");
}

TEST(CliJson, DropListShape) {
  rpc::v1::DropList list;
  rpc::v1::DropCount* d = list.add_drops();
  d->set_reason("no_endpoint");
  d->set_code(3);
  d->set_packets(2);
  d->set_bytes(196);
  model::JsonDoc doc = Json(rpc::MessageToJson(list));
  const model::JsonValue& e = (*doc.root().Find("drops"))[0];
  EXPECT_EQ(e.Find("reason")->str(), "no_endpoint");
  EXPECT_EQ(e.Find("code")->str(), "3");
  EXPECT_EQ(e.Find("packets")->str(), "2");
  EXPECT_EQ(e.Find("bytes")->str(), "196");
}

TEST(CliText, EndpointGetPrintsEveryFieldAndCounterWhole) {
  const rpc::v1::Endpoint e = TwoEndpoints().endpoints(0);
  const std::string text = rpc::MessageToText(e);
  using ::testing::ContainsRegex;
  const std::string lined = "\n" + text;
  EXPECT_THAT(lined, ContainsRegex("\nref.container_id: +" + std::string(64, 'a') + "\n"));
  EXPECT_THAT(lined, HasSubstr("\ncounters.rx_packets: 5\n"));  // the longest name: one space
  EXPECT_THAT(lined, ContainsRegex("\ncounters.tx_bytes: +0\n"));
  EXPECT_THAT(lined, ContainsRegex("\npod_namespace: +default\n"));
  EXPECT_THAT(lined, ContainsRegex("\nnetns: +-\n"));  // empty strings print as "-"
  // One line per scalar field of Endpoint (nested ref and counters flattened).
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  const auto* d = rpc::v1::Endpoint::descriptor();
  EXPECT_EQ(lines, static_cast<size_t>(d->field_count() - 2 + 2 + 4)) << text;
}

}  // namespace
}  // namespace sarena
