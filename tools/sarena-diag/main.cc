// sarena-diag: explains a pod / node / Service path from a snapshot, and collects a node's part
// of a snapshot on a live node. Thin: flags -> libsarena/diag -> print.
//
//   sarena-diag trace --snapshot DIR --src SRC --dst DST:PORT/PROTO
//                     [--cni calico|sarena|generic|auto] [-o text|json|dot] [--svg FILE]
//                     [--sport N] [--ttl N] [--size BYTES] [--no-reply]
//   sarena-diag codes [-o text|json|markdown]
//   sarena-diag trace --live ... | collect ... | drops ...   (run by sarena-diag-live)
//
// This executable runs the offline commands and links no libbpf or libmnl (base, net, model,
// diag, rpc only). The commands that read the kernel (libsarena/diag/cli.h RunsOnLiveNode) are
// sarena-diag-live's (tools/sarena-diag-live), which this one execs with the same arguments
// (live_helper.h): the user sees one command, with one --help and one set of exit codes.
//
// SRC/DST: pod:NS/NAME | node:NAME | svc:NS/NAME (destination only) | IPv4.
// Exit status: 0 when the walk ran (whatever it found), 2 for bad input (unknown pod / Service /
// node, malformed snapshot file, unanswerable query, bad flags), 1 for other failures — the
// environment (no sarena-diag-live for a kernel command) and a failed write to stdout included.
// With -o json a failure (a flag error included) prints one sarena.rpc.v1.CliError object
// {"code", "message"} on stdout instead of the message on stderr, as sarena does; stdout then
// carries exactly one JSON document, the result or that error (never both: --svg is written
// before the report). Flags may also stand before the command ("sarena-diag -o json trace ...").
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/cli.h"
#include "libsarena/diag/cli.h"
#include "libsarena/diag/codes.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/report.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/snapshot.h"
#include "libsarena/rpc/cli_output.h"
#include "tools/sarena-diag/live_helper.h"

namespace {

using sarena::diag::CommandArgs;
using sarena::diag::kExitBadInput;
using sarena::rpc::CommandOutput;

// --sport, --ttl and --size into `query`: nothing when absent. Errors (kInvalidArgument) name
// the flag and its value.
absl::Status ApplyPacketFlags(const CommandArgs& args, sarena::diag::Query* query) {
  uint32_t v = 0;
  if (args.Has("sport")) {
    if (!sarena::diag::ParseUintFlag(args.Get("sport"), 65535, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid --sport '", args.Get("sport"), "'"));
    }
    query->sport = static_cast<uint16_t>(v);
  }
  if (args.Has("ttl")) {
    if (!sarena::diag::ParseUintFlag(args.Get("ttl"), 255, &v) || v == 0) {
      return absl::InvalidArgumentError(absl::StrCat("invalid --ttl '", args.Get("ttl"), "'"));
    }
    query->ttl = static_cast<uint8_t>(v);
  }
  if (args.Has("size")) {
    auto size = sarena::diag::ParsePacketSize(args.Get("size"), query->proto);
    if (!size.ok()) return size.status();
    query->size = *size;
  }
  return absl::OkStatus();
}

// The nodes of the query's endpoints in the snapshot, for --cni auto.
std::vector<std::string> QueryNodes(const sarena::model::Snapshot& snap,
                                    const sarena::diag::Query& query) {
  std::vector<std::string> nodes;
  const auto& cluster = snap.cluster();
  for (const sarena::diag::EndpointSpec* e : {&query.src, &query.dst}) {
    if (e->kind == sarena::diag::EndpointSpec::Kind::kPod) {
      if (const auto* p = cluster.FindPod(e->namespace_, e->name)) nodes.push_back(p->node_name);
    } else if (e->kind == sarena::diag::EndpointSpec::Kind::kNode) {
      nodes.push_back(e->name);
    } else if (e->kind == sarena::diag::EndpointSpec::Kind::kIp) {
      if (const auto* p = cluster.FindPodByIp(e->ip)) nodes.push_back(p->node_name);
      if (const auto* n = cluster.FindNodeByIp(e->ip)) nodes.push_back(n->name);
    }
  }
  return nodes;
}

// `trace` on a snapshot (`trace --live` never gets here: RunsOnLiveNode sends it to the helper).
int Trace(const CommandOutput& out, const CommandArgs& args) {
  const std::vector<std::string> live = sarena::diag::FlagNames(sarena::diag::LiveFlags());
  if (std::string u = args.Unknown(sarena::diag::FlagNames(sarena::diag::TraceFlags()));
      !u.empty()) {
    return out.FailUsage(absl::StrCat(
        "trace: unknown flag --", u,
        absl::c_linear_search(live, u) ||
                absl::c_linear_search(sarena::diag::LiveCollectFlagNames(), u)
            ? " (only with --live)"
            : ""));
  }
  for (const char* req : {"snapshot", "src", "dst"}) {
    if (!args.Has(req)) return out.FailUsage(absl::StrCat("trace: --", req, " is required"));
  }
  auto format = args.OutputFormat("text", {"text", "json", "dot"});
  if (!format.ok()) return out.Fail(kExitBadInput, format.status());
  auto query = sarena::diag::ParseQuery(args.Get("src"), args.Get("dst"));
  if (!query.ok()) return out.Fail(kExitBadInput, query.status());
  if (absl::Status st = ApplyPacketFlags(args, &*query); !st.ok()) {
    return out.Fail(kExitBadInput, st);
  }
  auto snap = sarena::model::Snapshot::Open(args.Get("snapshot"));
  if (!snap.ok()) return out.Fail(kExitBadInput, snap.status());
  auto plugin =
      sarena::diag::SelectPlugin(args.Get("cni", "auto"), **snap, QueryNodes(**snap, *query));
  if (!plugin.ok()) return out.Fail(kExitBadInput, plugin.status());

  sarena::diag::TraceOptions opts;
  opts.reply = !args.Has("no-reply");
  auto result = sarena::diag::Trace(**snap, *query, **plugin, opts);
  if (!result.ok()) return out.Fail(kExitBadInput, result.status());

  std::string report;
  if (*format == "json") {
    auto json = sarena::diag::ToJson(result->graph);
    if (!json.ok()) return out.Fail(1, json.status());
    report = *json;
  } else if (*format == "dot") {
    report = sarena::diag::ToDot(result->graph);
  } else {
    report = absl::StrCat("cni plugin: ", result->plugin, "\n", sarena::diag::ToText(result->graph));
  }
  // The SVG before the report: when it cannot be written the command fails with its error
  // alone, so stdout holds one document (under -o json: the report or the error object).
  if (args.Has("svg")) {
    absl::Status st = sarena::diag::RenderSvg(sarena::diag::ToDot(result->graph), args.Get("svg"));
    if (!st.ok()) return out.Fail(1, st);
  }
  out.Print(report);
  // The snapshot of a large cluster (150k pods) takes ~1 s of system time to free; the process
  // ends here anyway, so the kernel reclaims it at once (bench/diag_scale.sh measures this).
  int code = out.FinishStdout(0);
  std::fflush(nullptr);
  std::_Exit(code);
}

int Codes(const CommandOutput& out, const CommandArgs& args) {
  auto format = args.OutputFormat("text", {"text", "json", "markdown"});
  if (!format.ok()) return out.Fail(kExitBadInput, format.status());
  if (*format == "json") return out.Print(absl::StrCat(sarena::diag::SuspicionCodesJson(), "\n"));
  if (*format == "markdown") return out.Print(sarena::diag::SuspicionCodesMarkdown());
  for (const auto& c : sarena::diag::AllSuspicionCodes()) {
    std::printf("%-36s %-24s %s\n", std::string(c.code).c_str(),
                sarena::diag::LevelsText(c.levels).c_str(), std::string(c.meaning).c_str());
  }
  return 0;
}

int Main(int argc, char** argv, const CommandOutput& out) {
  const std::vector<std::string> all_args(argv + 1, argv + argc);
  // Before --help: `sarena-diag collect --help` is the helper's to answer (it prints the same).
  if (sarena::diag::RunsOnLiveNode(all_args)) return sarena_diag::ExecLiveHelper(argv, out);
  if (sarena::PrintHelpIfAsked(all_args, sarena::diag::DiagProgramDoc())) return 0;
  auto line = sarena::diag::ParseCommandLine(all_args);
  if (!line.ok()) return out.FailUsage(line.status().message());
  if (line->command == "help") {
    return out.Print(sarena::HelpText(sarena::diag::DiagProgramDoc()));
  }
  if (line->command == "trace") return Trace(out, line->args);
  if (line->command == "codes") return Codes(out, line->args);
  // collect and drops always run in the helper (RunsOnLiveNode above).
  return out.FailUsage(absl::StrCat("unknown command '", line->command, "'"));
}

}  // namespace

int main(int argc, char** argv) {
  const CommandOutput out(sarena::diag::DiagProgramDoc(), argc, argv);
  return out.FinishStdout(Main(argc, argv, out));
}
