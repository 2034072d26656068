// sarena-diag-live: the sarena-diag commands that read the kernel — collect, drops and
// trace --live — which sarena-diag execs with its own arguments (tools/sarena-diag/live_helper.h),
// so that sarena-diag itself links no libbpf or libmnl. Installed in <libexecdir>/sarena/, not
// on PATH; run directly it behaves as sarena-diag does for these commands. Thin: flags
// (libsarena/diag/cli.h, the table sarena-diag parses too) -> libsarena/collect, libsarena/live
// -> print.
//
//   sarena-diag trace --live --src IP --dst IP:PORT/tcp|udp [-o text|json|dot] [--size BYTES]
//                     [--count N] [--probe-timeout MS] [--snapshot DIR] [--node NAME]
//                     [--socket PATH] [--bpffs DIR] [--sarena PATH] [--no-programs]
//   sarena-diag collect --out DIR [--node NAME] [--netns NETNS] [--pod NS/NAME=NETNS]...
//                       [--sarena PATH] [--socket PATH] [--bpffs DIR] [--no-programs]
//                       [-o text|json]
//   sarena-diag drops [--netns NAME]... [--duration D] [--ready-file PATH] [--no-symbols]
//                     [-o json]
//   sarena-diag drops --explained-by CODE [-o json]
//
// Messages, --help, exit codes and the -o json error object are sarena-diag's (see
// tools/sarena-diag/main.cc): 2 bad input, 1 the environment (no BTF, no CAP_BPF, a tracepoint
// missing) or a failed write to stdout.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libsarena/base/cli.h"
#include "libsarena/collect/collect.h"
#include "libsarena/diag/cli.h"
#include "libsarena/diag/codes.h"
#include "libsarena/diag/evidence.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/report.h"
#include "libsarena/live/drop_stream.h"
#include "libsarena/live/live_trace.h"
#include "libsarena/rpc/cli_output.h"

namespace {

using sarena::diag::CommandArgs;
using sarena::diag::kExitBadInput;
using sarena::diag::kExitFailure;
using sarena::rpc::CommandOutput;

// The longest `drops --duration`: a year (longer is a typo, and would overflow the ns clock).
constexpr absl::Duration kMaxDropsDuration = absl::Hours(24 * 365);

// `status` with "<prefix>" before its message; same code.
absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

int TraceLive(const CommandOutput& out, const CommandArgs& args, const std::string& format) {
  sarena::live::LiveOptions opts;
  opts.src = args.Get("src");
  opts.dst = args.Get("dst");
  uint32_t v = 0;
  struct U32Flag {
    const char* name;
    uint32_t min, max;
    uint32_t* out;
  };
  uint32_t ttl = 64;
  if (args.Has("size")) {
    // --size's range is the protocol's (libsarena/live parses the query again, the same way).
    auto query = sarena::diag::ParseQuery(opts.src, opts.dst);
    if (!query.ok()) return out.Fail(kExitBadInput, Prefixed("trace --live: ", query.status()));
    auto size = sarena::diag::ParsePacketSize(args.Get("size"), query->proto);
    if (!size.ok()) return out.Fail(kExitBadInput, size.status());
    opts.size = *size;
  }
  for (const U32Flag& f :
       {U32Flag{"count", 1, 16, &opts.count}, U32Flag{"probe-timeout", 1, 5000, &opts.timeout_ms},
        U32Flag{"ttl", 1, 255, &ttl}}) {
    if (!args.Has(f.name)) continue;
    if (!sarena::diag::ParseUintFlag(args.Get(f.name), f.max, &v) || v < f.min) {
      return out.Fail(kExitBadInput, absl::StrCat("invalid --", f.name, " '", args.Get(f.name),
                                                  "': want ", f.min, "..", f.max));
    }
    *f.out = v;
  }
  opts.ttl = static_cast<uint8_t>(ttl);
  opts.reply = !args.Has("no-reply");
  opts.cni = args.Get("cni", "auto");
  opts.node = args.Get("node");
  opts.snapshot_dir = args.Get("snapshot");
  opts.sarena_socket = args.Get("socket", opts.sarena_socket);
  opts.bpffs = args.Get("bpffs", opts.bpffs);
  opts.programs = !args.Has("no-programs");
  auto r = sarena::live::TraceLive(opts);
  if (!r.ok()) {
    int code = absl::IsInvalidArgument(r.status()) || absl::IsNotFound(r.status()) ||
                       absl::IsFailedPrecondition(r.status())
                   ? kExitBadInput
                   : 1;
    return out.Fail(code, Prefixed("trace --live: ", r.status()));
  }
  std::string text;
  if (format == "json") {
    auto json = sarena::diag::ToLiveJson(r->trace.graph, r->evidence, r->joined);
    if (!json.ok()) return out.Fail(1, json.status());
    text = *std::move(json);
  } else if (format == "dot") {
    text = sarena::diag::ToDot(r->trace.graph);
  } else {
    text = sarena::live::LiveText(*r);
  }
  // The SVG first: a failure is then the only output (one JSON document under -o json).
  if (args.Has("svg")) {
    absl::Status st = sarena::diag::RenderSvg(sarena::diag::ToDot(r->trace.graph), args.Get("svg"));
    if (!st.ok()) return out.Fail(1, st);
  }
  return out.Print(text);
}

int Collect(const CommandOutput& out, const CommandArgs& args) {
  auto format = args.OutputFormat("text", {"text", "json"});
  if (!format.ok()) return out.Fail(kExitBadInput, format.status());
  sarena::collect::CollectOptions opts;
  opts.out_dir = args.Get("out");
  if (opts.out_dir.empty()) return out.Fail(kExitBadInput, "collect: --out is required");
  opts.node = args.Get("node");
  opts.node_netns = args.Get("netns");
  for (const std::string& p : args.All("pod")) {
    auto spec = sarena::collect::ParsePodNetnsSpec(p);
    if (!spec.ok()) return out.Fail(kExitBadInput, spec.status());
    opts.pods.push_back(*spec);
  }
  if (args.Has("socket")) opts.sarena_socket = args.Get("socket");
  if (args.Has("bpffs")) opts.bpffs = args.Get("bpffs");
  opts.programs = !args.Has("no-programs");
  opts.pods_from_endpoints = !args.Has("no-endpoint-pods");
  auto report = sarena::collect::Collect(opts);
  if (!report.ok()) {
    int code = absl::IsInvalidArgument(report.status()) || absl::IsNotFound(report.status())
                   ? kExitBadInput
                   : 1;
    return out.Fail(code, report.status());
  }
  if (*format == "json") {
    sarena::diag::v1::CollectResult result;
    for (const std::string& w : report->written) result.add_written(w);
    for (const std::string& s : report->skipped) result.add_skipped(s);
    return out.Print(sarena::rpc::MessageToJson(result));
  }
  for (const std::string& w : report->written) std::printf("wrote %s\n", w.c_str());
  for (const std::string& s : report->skipped) std::printf("skipped %s\n", s.c_str());
  return 0;
}

volatile std::sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

// "10s", "500ms", "2m" (absl::ParseDuration) or a bare number of seconds; finite, 0..`max`.
// Empty when fine, else why not ("inf", "nan", negative, too long, not a duration).
std::string ParseDurationFlag(const std::string& text, absl::Duration max, absl::Duration* out) {
  double secs = 0;
  absl::Duration d;
  if (absl::SimpleAtod(text, &secs)) {
    if (std::isnan(secs) || std::isinf(secs)) return "not a finite number";
    if (secs < 0) return "negative";
    if (secs > absl::ToDoubleSeconds(max)) return absl::StrCat("longer than ", absl::FormatDuration(max));
    d = absl::Seconds(secs);
  } else if (!absl::ParseDuration(text, &d)) {
    return "want e.g. 10s, 500ms, 2m or a number of seconds";
  }
  // absl::ParseDuration accepts "inf" and saturates on overflow to an infinite duration.
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) return "not finite";
  if (d < absl::ZeroDuration()) return "negative";
  if (d > max) return absl::StrCat("longer than ", absl::FormatDuration(max));
  *out = d;
  return "";
}

// `drops --explained-by CODE`: the kernel drop reasons of a suspicion code; nothing attached.
int DropsExplainedBy(const CommandOutput& out, const CommandArgs& args) {
  const std::string code = args.Get("explained-by");
  if (!sarena::diag::FindSuspicionCode(code)) {
    return out.Fail(kExitBadInput,
                absl::StrCat("drops --explained-by: unknown suspicion code '", code,
                             "' (sarena-diag codes lists them)"));
  }
  const std::vector<absl::string_view> reasons =
      sarena::diag::DropReasonsOf(*sarena::diag::FindSuspicionCode(code));
  if (args.Has("o") || args.Has("output")) {
    sarena::diag::v1::DropReasonsExplained result;
    result.set_code(code);
    for (absl::string_view r : reasons) {
      result.add_kernel_reasons(absl::StrCat("SKB_DROP_REASON_", r));
    }
    return out.Print(sarena::rpc::MessageToJson(result));
  }
  for (absl::string_view r : reasons) {
    std::printf("SKB_DROP_REASON_%s\n", std::string(r).c_str());
  }
  return 0;
}

// `drops`: flags here, the stream in libsarena/live (StreamDrops).
int Drops(const CommandOutput& out, const CommandArgs& args) {
  // Its stream is JSON already (one object a line): -o json is accepted and changes nothing.
  if (const std::string format = args.Get("o", args.Get("output", "json")); format != "json") {
    return out.Fail(kExitBadInput, absl::StrCat("invalid -o '", format,
                                                "': drops prints json only (one object a line)"));
  }
  if (args.Has("explained-by")) return DropsExplainedBy(out, args);
  sarena::live::DropStreamOptions opts;
  if (args.Has("duration")) {
    absl::Duration d;
    if (std::string why = ParseDurationFlag(args.Get("duration"), kMaxDropsDuration, &d);
        !why.empty()) {
      return out.Fail(kExitBadInput, absl::StrCat("invalid --duration '", args.Get("duration"),
                                                  "': ", why, " (want 0..",
                                                  absl::FormatDuration(kMaxDropsDuration),
                                                  ", e.g. 10s, 500ms, 2m or seconds)"));
    }
    opts.duration_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
    if (opts.duration_ms == 0 && d > absl::ZeroDuration()) opts.duration_ms = 1;
  }
  opts.netns = args.All("netns");
  // Resolved here, before anything is attached, so that a wrong name is bad input (2) and
  // whatever StreamDrops reports afterwards is the environment's failure (1): its
  // kNotFound/kInvalidArgument also come from the tracer (no BTF: ESRCH; a missing
  // tracepoint: ENOENT; a verifier EINVAL), which is no fault of the command line.
  if (auto ns = sarena::live::ResolveDropStreamNetns(opts); !ns.ok()) {
    return out.Fail(kExitBadInput, Prefixed("drops: ", ns.status()));
  }
  opts.ready_file = args.Get("ready-file");
  opts.symbols = !args.Has("no-symbols");
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;  // no SA_RESTART: the ring's epoll_wait returns at once
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int write_errno = 0;  // a failed write to stdout ends the stream; it is exit 1, not 0
  sarena::live::DropStreamStats stats;
  absl::Status st = sarena::live::StreamDrops(
      opts, &g_stop,
      [&write_errno](const sarena::live::NamedDrop& d) {
        std::string line = sarena::live::DropJsonLine(d);
        errno = 0;
        if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() ||
            std::fflush(stdout) != 0) {
          write_errno = errno != 0 ? errno : EIO;
          return false;
        }
        return true;
      },
      &stats);
  if (!st.ok()) return out.Fail(kExitFailure, Prefixed("drops: ", st));
  // Not failures (the stream ran), but the output is incomplete: say so on stderr.
  if (stats.lost > 0) {
    std::fprintf(stderr,
                 "sarena-diag: drops: the kernel lost %llu drop events (ring buffer full)\n",
                 static_cast<unsigned long long>(stats.lost));
  }
  if (stats.left_unread) {
    std::fprintf(stderr, "sarena-diag: drops: events still queued at the stop were not read\n");
  }
  if (write_errno != 0) {
    return out.Fail(kExitFailure,
                    absl::StrCat("drops: write standard output: ", std::strerror(write_errno)));
  }
  return 0;
}


// `trace --live`: its required flags and format, then TraceLive.
int TraceLiveCommand(const CommandOutput& out, const CommandArgs& args) {
  for (const char* req : {"src", "dst"}) {
    if (!args.Has(req)) return out.FailUsage(absl::StrCat("trace --live: --", req, " is required"));
  }
  auto format = args.OutputFormat("text", {"text", "json", "dot"});
  if (!format.ok()) return out.Fail(kExitBadInput, format.status());
  return TraceLive(out, args, *format);
}

int Main(int argc, char** argv, const CommandOutput& out) {
  const std::vector<std::string> all_args(argv + 1, argv + argc);
  if (sarena::PrintHelpIfAsked(all_args, sarena::diag::DiagProgramDoc())) return 0;
  auto line = sarena::diag::ParseCommandLine(all_args);
  if (!line.ok()) return out.FailUsage(line.status().message());
  if (line->command == "collect") return Collect(out, line->args);
  if (line->command == "drops") return Drops(out, line->args);
  if (line->command == "trace" && line->args.Has("live")) return TraceLiveCommand(out, line->args);
  if (line->command == "help") return out.Print(sarena::HelpText(sarena::diag::DiagProgramDoc()));
  // trace on a snapshot, codes: sarena-diag's.
  return out.FailUsage(absl::StrCat(line->command, ": not a command of ",
                                    sarena::diag::kLiveHelperName, " (it runs collect, drops and "
                                    "trace --live); run sarena-diag ", line->command));
}

}  // namespace

int main(int argc, char** argv) {
  const CommandOutput out(sarena::diag::DiagProgramDoc(), argc, argv);
  return out.FinishStdout(Main(argc, argv, out));
}
