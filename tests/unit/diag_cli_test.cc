// sarena-diag's command line: exit 0 when the walk ran, 2 for bad input with the file and field
// named; -o text|json|dot and --svg.
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "libsarena/rpc/cli_output.h"
#include "tests/lib/test_util.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::Scratch;

sarena::testing::CommandResult Diag(absl::string_view args) {
  return sarena::testing::Run(absl::StrCat(testing::DiagBinary(), " ", args));
}

std::string TraceArgs(absl::string_view dir, absl::string_view src, absl::string_view dst,
                      absl::string_view extra = "") {
  return absl::StrCat("trace --snapshot '", dir, "' --src '", src, "' --dst '", dst, "' ", extra);
}

void ExpectBadInput(const sarena::testing::CommandResult& r,
                    std::initializer_list<const char*> mentions) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << "no report on bad input: " << r.out;
  for (const char* m : mentions) {
    EXPECT_NE(r.err.find(m), std::string::npos) << "stderr should name '" << m << "': " << r.err;
  }
}

TEST(DiagCli, TextJsonDot) {
  auto text = Diag(TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp"));
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("verdict: unreachable"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rp_filter_drop"), std::string::npos) << text.out;

  auto json = Diag(TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp", "-o json"));
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"verdict\": \"unreachable\""), std::string::npos) << json.out;

  auto dot = Diag(TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp", "-o dot"));
  EXPECT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_EQ(dot.out.rfind("digraph G {", 0), 0u) << dot.out;
  EXPECT_NE(dot.out.find("fillcolor=tomato"), std::string::npos);
}

TEST(DiagCli, SvgFile) {
  sarena::testing::TempDir dir("sarena-diag-cli-");
  ASSERT_FALSE(dir.path().empty());
  std::string svg = dir.Path("path.svg");
  auto r = Diag(TraceArgs(CaseDir("CAL-MTU-01"), "pod:default/client", "10.65.2.8:8080/tcp",
                          absl::StrCat("-o json --svg ", svg)));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string body = testing::ReadAll(svg);
  EXPECT_NE(body.find("<svg"), std::string::npos);
  EXPECT_NE(body.find("mtu_mismatch"), std::string::npos);
}

TEST(DiagCli, UnknownObjects) {
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "pod:web/nope", "10.96.120.40:80/tcp")),
                 {"web/nope"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "pod:web/client", "svc:web/nope:80/tcp")),
                 {"web/nope"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "pod:web/client", "svc:web/www:81/tcp")),
                 {"web/www", "81/tcp"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "node:node-zz", "10.96.120.40:80/tcp")),
                 {"node-zz"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "pod:web/client", "pod:web/ghost:80/tcp")),
                 {"web/ghost"});
  // An outside address towards an outside address: nothing in the snapshot to walk.
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "192.0.2.1", "198.51.100.1:80/tcp")),
                 {"192.0.2.1"});
}

TEST(DiagCli, BadFlagsAndQueries) {
  ExpectBadInput(Diag("trace --src node:a --dst 10.0.0.1:80/tcp"), {"--snapshot"});
  ExpectBadInput(Diag(TraceArgs("/nonexistent/snap", "node:a", "10.0.0.1:80/tcp")),
                 {"/nonexistent/snap", "no such directory"});
  // A file where the snapshot directory belongs (e.g. a tarball not yet unpacked).
  const std::string file = CaseDir("KP-01") + "/cluster/pods.json";
  ExpectBadInput(Diag(TraceArgs(file, "node:a", "10.0.0.1:80/tcp")), {"not a directory"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "svc:web/www", "10.0.0.1:80/tcp")), {"--src"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "node:node-a", "10.0.0.1")), {"--dst"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "node:node-a", "10.0.0.1:80/tcp", "-o yaml")),
                 {"yaml"});
  ExpectBadInput(
      Diag(TraceArgs(CaseDir("KP-01"), "node:node-a", "10.0.0.1:80/tcp", "--cni flannel")),
      {"flannel"});
  ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "node:node-a", "10.0.0.1:80/tcp", "--bogus 1")),
                 {"--bogus"});
  ExpectBadInput(Diag("frobnicate"), {"frobnicate"});
  auto help = Diag("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("sarena-diag trace"), std::string::npos);
}

// An unknown flag says so, with its name, wherever it stands: last too (it used to say "needs a
// value"), and for every command.
TEST(DiagCli, UnknownFlagLastIsUnknown) {
  const std::string trace = TraceArgs(CaseDir("KP-01"), "node:node-a", "10.0.0.1:80/tcp");
  for (const std::string& args :
       {trace + " --bogus", trace + " --bogus=1", absl::StrCat("trace --bogus ", trace.substr(6)),
        std::string("collect --out /tmp/x --bogus"), std::string("drops --bogus"),
        std::string("codes --bogus"), std::string("trace --bogus")}) {
    auto r = Diag(args);
    ExpectBadInput(r, {"unknown flag --bogus"});
    EXPECT_EQ(r.err.find("needs a value"), std::string::npos) << args << ": " << r.err;
  }
  // A live-only flag without --live is named as such.
  ExpectBadInput(Diag(trace + " --count 2"), {"unknown flag --count (only with --live)"});
  // A real valued flag last still needs its value.
  ExpectBadInput(Diag(trace + " --ttl"), {"--ttl needs a value"});
}

// `trace --live` from a loopback source: loopback is left out of the namespace scan on purpose
// (every namespace has one), so the error says that, before anything is attached or scanned.
TEST(DiagCli, LiveLoopbackSourceIsExplained) {
  for (const char* src : {"127.0.0.1", "127.1.2.3"}) {
    auto r = Diag(absl::StrCat("trace --live --src ", src, " --dst 10.0.0.1:80/tcp"));
    ExpectBadInput(r, {"loopback", src, "pod's or the node's own address"});
    EXPECT_EQ(r.err.find("no network namespace"), std::string::npos) << r.err;
  }
}

// --size has one definition offline and --live (diag::ParsePacketSize): 0 = full size, the
// source device's MTU, the same as no --size; below the protocol's headers (tcp 40, udp 28) and
// over 65535 are errors. --live took 0 as an error (and its default meant 64 bytes).
TEST(DiagCli, SizeZeroIsTheMtuOfflineAndLive) {
  const std::string args =
      TraceArgs(CaseDir("CAL-MTU-01"), "pod:default/client", "10.65.2.8:8080/tcp");
  auto dflt = Diag(args + " -o json");
  auto zero = Diag(args + " -o json --size 0");
  EXPECT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_EQ(zero.out, dflt.out);
  for (const char* bad : {"27", "65536", "x"}) {
    ExpectBadInput(Diag(absl::StrCat(args, " --size ", bad)),
                   {"--size", bad, "want 0 (the source device's MTU) or 40..65535 for tcp"});
    ExpectBadInput(
        Diag(absl::StrCat("trace --live --src 10.0.0.1 --dst 10.0.0.2:80/udp --size ", bad)),
        {"--size", bad, "want 0 (the source device's MTU) or 28..65535 for udp"});
  }
  // --live takes --size 0 (the loopback source is the next thing it refuses).
  auto live = Diag("trace --live --src 127.0.0.1 --dst 10.0.0.2:80/udp --size 0");
  ExpectBadInput(live, {"loopback"});
  EXPECT_EQ(live.err.find("--size"), std::string::npos) << live.err;
  auto help = Diag("--help");
  EXPECT_NE(help.out.find("0 = full size:"), std::string::npos) << help.out;
}

// -o json: every failure, flag errors included, is the one error object sarena prints
// ({"code", "message"}, rpc::ReportCliError) on stdout, nothing on stderr; exit status as in
// text mode.
TEST(DiagCli, JsonErrorsAreTheOneErrorObject) {
  auto expect_json_error = [](const std::string& args, absl::StatusCode code,
                              const std::string& message) {
    auto r = Diag(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.out, rpc::MessageToJson(rpc::CliErrorOf(absl::Status(code, message)))) << args;
    EXPECT_EQ(r.err, "") << args;
  };
  const std::string trace = TraceArgs(CaseDir("KP-01"), "pod:web/client", "10.96.120.40:80/tcp");
  expect_json_error(trace + " -o json --bogus", absl::StatusCode::kInvalidArgument,
                    "trace: unknown flag --bogus (see sarena-diag --help)");
  expect_json_error(trace + " --bogus -o json", absl::StatusCode::kInvalidArgument,
                    "trace: unknown flag --bogus (see sarena-diag --help)");
  expect_json_error(trace + " -o json --size 1", absl::StatusCode::kInvalidArgument,
                    "invalid --size '1': want 0 (the source device's MTU) or 40..65535 for tcp "
                    "(40 bytes are its IPv4 and tcp headers alone)");
  expect_json_error("trace -o json --src node:a --dst 10.0.0.1:80/tcp",
                    absl::StatusCode::kInvalidArgument,
                    "trace: --snapshot is required (see sarena-diag --help)");
  expect_json_error("codes -o json --bogus", absl::StatusCode::kInvalidArgument,
                    "codes: unknown flag --bogus (see sarena-diag --help)");
  expect_json_error("frob -o json", absl::StatusCode::kInvalidArgument,
                    "unknown command 'frob' (see sarena-diag --help)");
  expect_json_error("trace --live --src 127.0.0.1 --dst 10.0.0.1:80/tcp --output=json",
                    absl::StatusCode::kInvalidArgument,
                    "trace --live: --src 127.0.0.1 is a loopback address: every network "
                    "namespace has its own 127.0.0.0/8, so it names none; --live needs the pod's "
                    "or the node's own address (e.g. the pod IP, or the node's InternalIP) as "
                    "--src");
  // An error from the snapshot keeps its own code.
  auto r = Diag(TraceArgs(CaseDir("KP-01"), "pod:web/nope", "10.96.120.40:80/tcp", "-o json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("\"code\": \""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("web/nope"), std::string::npos) << r.out;
  // Text mode is unchanged: the message on stderr, nothing on stdout.
  ExpectBadInput(Diag(trace + " --bogus"), {"sarena-diag: trace: unknown flag --bogus\nusage:"});
}

// --size is at least the protocol's headers: 40 for tcp (IPv4 + TCP), 28 for udp and icmp.
// 28 was taken for tcp.
TEST(DiagCli, SizeMinimumIsTheProtocolsHeaders) {
  const std::string snap = CaseDir("CAL-MTU-01");
  for (const char* size : {"28", "39"}) {
    ExpectBadInput(Diag(TraceArgs(snap, "pod:default/client", "10.65.2.8:8080/tcp",
                                  absl::StrCat("--size ", size))),
                   {"--size", size, "40..65535 for tcp"});
  }
  for (const char* ok : {"pod:default/client|10.65.2.8:8080/tcp|40",
                         "pod:default/client|10.65.2.8:8080/udp|28",
                         "pod:default/client|10.65.2.8:0/icmp|28"}) {
    std::vector<std::string> p = absl::StrSplit(ok, '|');
    auto r = Diag(TraceArgs(snap, p[0], p[1], absl::StrCat("--size ", p[2])));
    EXPECT_EQ(r.exit_code, 0) << ok << ": " << r.err;
  }
  ExpectBadInput(Diag(TraceArgs(snap, "pod:default/client", "10.65.2.8:0/icmp", "--size 27")),
                 {"28..65535 for icmp"});
}

// A --size packet is --size's, not "the sender's MTU" (it was called that); a full-size one
// (no --size) still is.
TEST(DiagCli, ForcedSizeIsNotCalledTheSendersMtu) {
  const std::string args =
      TraceArgs(CaseDir("CAL-MTU-01"), "pod:default/client", "10.65.2.8:8080/udp");
  auto forced = Diag(args + " --size 65535");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("65535-byte packets (--size) exceed the MTU"), std::string::npos)
      << forced.out;
  EXPECT_EQ(forced.out.find("sender's MTU"), std::string::npos) << forced.out;
}

// --dst names its protocol: "IP:PORT" alone was taken as tcp (docs/cli.md: strict).
TEST(DiagCli, DstWithoutProtocolIsAnError) {
  for (const char* dst : {"10.0.0.1:80", "pod:web/www:80", "svc:web/www:80"}) {
    ExpectBadInput(Diag(TraceArgs(CaseDir("KP-01"), "pod:web/client", dst)),
                   {"--dst", dst, "no protocol", "/tcp"});
  }
}

// --svg is written before the report: when it fails, -o json prints the error object alone
// (it printed the report and then the error: two JSON documents), exit 1.
TEST(DiagCli, SvgFailureIsOneJsonDocument) {
  const std::string args =
      TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp",
                "-o json --svg /nonexistent-sarena-dir/x/path.svg");
  auto r = Diag(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("{\n \"code\": \"", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("\n}\n"), r.out.size() - 3) << "exactly one object: " << r.out;
  EXPECT_NE(r.out.find("/nonexistent-sarena-dir"), std::string::npos) << r.out;
  // Text mode: the error on stderr and no report either.
  auto t = Diag(TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp",
                          "--svg /nonexistent-sarena-dir/x/path.svg"));
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_EQ(t.out, "");
  EXPECT_NE(t.err.find("/nonexistent-sarena-dir"), std::string::npos) << t.err;
}

// Flags may stand before the command, as for sarena: "-o json trace ..." was "unknown command
// '-o'".
TEST(DiagCli, GlobalFlagsBeforeTheCommand) {
  const std::string tail = TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp");
  auto after = Diag(tail + " -o json");
  ASSERT_EQ(after.exit_code, 0) << after.err;
  for (const char* before : {"-o json", "-ojson", "--output=json", "--no-reply -o json"}) {
    auto r = Diag(absl::StrCat(before, " ", tail));
    EXPECT_EQ(r.exit_code, 0) << before << ": " << r.err;
    if (!absl::StrContains(before, "no-reply")) EXPECT_EQ(r.out, after.out) << before;
  }
  auto codes = Diag("-o json codes");
  EXPECT_EQ(codes.exit_code, 0) << codes.err;
  EXPECT_EQ(codes.out, Diag("codes -o json").out);
  // A flag of another command is named for the command it does not belong to.
  ExpectBadInput(Diag("--pod a/b=x " + tail), {"trace: unknown flag --pod"});
  ExpectBadInput(Diag("--bogus " + tail), {"unknown flag --bogus"});
  auto none = Diag("-o json");  // no command: the JSON error object
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.out.find("missing command"), std::string::npos) << none.out;
}

// collect and drops take -o json (docs/cli.md: every command does): collect's result is
// {"written", "skipped"}, drops' stream is JSON lines already, --explained-by gives
// {"code", "kernel_reasons"}. They said "unknown flag -o".
TEST(DiagCli, CollectAndDropsTakeJsonOutput) {
  auto c = Diag("collect -o json");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out, rpc::MessageToJson(rpc::CliErrorOf(
                       absl::InvalidArgumentError("collect: --out is required"))));
  ExpectBadInput(Diag("collect --out /nonexistent-x -o yaml"), {"invalid -o 'yaml'"});
  auto d = Diag("drops -o json --explained-by rp_filter_drop");
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out,
            "{\n \"code\": \"rp_filter_drop\",\n \"kernel_reasons\": [\n  "
            "\"SKB_DROP_REASON_IP_RPFILTER\"\n ]\n}\n");
  auto d2 = Diag("-ojson drops --explained-by rp_filter_drop");
  EXPECT_EQ(d2.out, d.out);
  ExpectBadInput(Diag("drops -o text --explained-by rp_filter_drop"), {"drops prints json only"});
  auto bad = Diag("drops -o json --duration soon");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("\"code\": \"INVALID_ARGUMENT\""), std::string::npos) << bad.out;
  EXPECT_EQ(bad.err, "");
}

// `drops` (the kfree_skb stream needs root and BPF: tests/privileged/diag_diff_test.sh runs it);
// here its flags, its help and --explained-by, which attaches nothing.
TEST(DiagCli, DropsFlagsHelpAndExplainedBy) {
  auto help = Diag("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* s : {"sarena-diag drops", "--ready-file", "--duration", "--explained-by"}) {
    EXPECT_NE(help.out.find(s), std::string::npos) << s << "\n" << help.out;
  }
  ExpectBadInput(Diag("drops --bogus 1"), {"--bogus"});
  ExpectBadInput(Diag("drops --duration soon"), {"--duration", "soon"});
  ExpectBadInput(Diag("drops --duration -3"), {"--duration"});
  // Not finite, or too long for the clock: named, never overflowed into a stream.
  for (const char* d : {"inf", "-inf", "nan", "infs", "1e300", "100000000000s", "2562048h",
                        "99999999999999999h", "8761h"}) {
    ExpectBadInput(Diag(absl::StrCat("drops --duration ", d)), {"--duration", d});
  }
  ExpectBadInput(Diag("drops --explained-by no_such_code"), {"no_such_code"});
  // Namespaces are resolved before anything is attached.
  ExpectBadInput(Diag("drops --netns sarena-no-such-netns-4711 --duration 1"),
                 {"sarena-no-such-netns-4711"});
  auto rp = Diag("drops --explained-by rp_filter_drop");
  EXPECT_EQ(rp.exit_code, 0) << rp.err;
  EXPECT_EQ(rp.out, "SKB_DROP_REASON_IP_RPFILTER\n");
  auto nr = Diag("drops --explained-by no_route");
  EXPECT_EQ(nr.exit_code, 0) << nr.err;
  EXPECT_NE(nr.out.find("SKB_DROP_REASON_IP_INNOROUTES\n"), std::string::npos) << nr.out;
}

// Output that did not get out is a failure (1), never exit 0.
TEST(DiagCli, StdoutWriteErrorIsExit1) {
  for (const char* args : {"drops --explained-by rp_filter_drop", "codes", "codes -o json",
                           "--help"}) {
    auto r = Diag(absl::StrCat(args, " >/dev/full"));
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find("write standard output"), std::string::npos) << args << ": " << r.err;
  }
  auto trace = Diag(absl::StrCat(TraceArgs(CaseDir("RPF-05"), "node:node-a", "10.32.2.7:8080/tcp"),
                                 " >/dev/full"));
  EXPECT_EQ(trace.exit_code, 1) << trace.err;
  EXPECT_NE(trace.err.find("write standard output"), std::string::npos) << trace.err;
}

TEST(DiagCli, MalformedFilesAreNamed) {
  {
    Scratch s("KP-01");
    s.Write("cluster/pods.json", "{\"items\": [ {\"metadata\": ");
    ExpectBadInput(Diag(TraceArgs(s.dir(), "pod:web/client", "10.96.120.40:80/tcp")),
                   {"pods.json"});
  }
  {
    Scratch s("KP-01");
    s.Replace("cluster/pods.json", "\"podIP\": \"10.244.2.8\"", "\"podIP\": \"banana\"");
    ExpectBadInput(Diag(TraceArgs(s.dir(), "pod:web/client", "10.96.120.40:80/tcp")),
                   {"pods.json", "podIP", "banana"});
  }
  {
    Scratch s("KP-01");
    s.Write("nodes/node-a/ip-route.json", "[{\"dst\": \"10.0.0.0/33\", \"dev\": \"eth0\"}]");
    ExpectBadInput(Diag(TraceArgs(s.dir(), "pod:web/client", "10.96.120.40:80/tcp")),
                   {"ip-route.json", "dst"});
  }
  {
    Scratch s("KP-01");
    s.Write("nodes/node-a/iptables-save.txt", "*nat\n-A NOSUCH -j ACCEPT\nCOMMIT\n");
    ExpectBadInput(Diag(TraceArgs(s.dir(), "pod:web/client", "10.96.120.40:80/tcp")),
                   {"iptables-save.txt", "line 2"});
  }
  {
    Scratch s("sarena-node");
    s.Replace("nodes/node-a/sarena-programs.json", "\"direction\": \"egress\"",
              "\"direction\": \"sideways\"");
    ExpectBadInput(Diag(TraceArgs(s.dir(), "node:node-a", "pod:default/pod-a:8080/tcp")),
                   {"sarena-programs.json", "direction", "sideways"});
  }
  {
    Scratch s("sarena-node");
    s.Replace("nodes/node-a/sarena-endpoints.json", "\"ip\": \"10.20.0.10\"",
              "\"ip\": \"10.20.0.999\"");
    ExpectBadInput(Diag(TraceArgs(s.dir(), "node:node-a", "pod:default/pod-a:8080/tcp")),
                   {"sarena-endpoints.json", "ip"});
  }
}

TEST(DiagCli, SourceNodeWithoutDirectoryIsUnanswerable) {
  Scratch s("RPF-05");
  sarena::testing::Run(absl::StrCat("rm -rf '", s.Path("nodes/node-a"), "'"));
  ExpectBadInput(Diag(TraceArgs(s.dir(), "node:node-a", "10.32.2.7:8080/tcp")),
                 {"node-a", "nodes/node-a"});
  // A missing node further along is a finding, not an error: never a silent "reachable".
  Scratch t("RPF-05");
  sarena::testing::Run(absl::StrCat("rm -rf '", t.Path("nodes/node-b"), "'"));
  auto r = Diag(TraceArgs(t.dir(), "node:node-a", "10.32.2.7:8080/tcp", "-o json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("snapshot_incomplete"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"verdict\": \"reachable\""), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sarena::diag
