// sarena-diag: explains a pod / node / Service path from a snapshot, and collects a node's part
// of a snapshot on a live node. Thin: flags -> libsarena/diag -> print.
//
//   sarena-diag trace --snapshot DIR --src SRC --dst DST:PORT/PROTO
//                     [--cni calico|sarena|generic|auto] [-o text|json|dot] [--svg FILE]
//                     [--sport N] [--ttl N] [--size BYTES] [--no-reply]
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
// SRC/DST: pod:NS/NAME | node:NAME | svc:NS/NAME (destination only) | IPv4.
// Exit status: 0 when the walk ran (whatever it found), 2 for bad input (unknown pod / Service /
// node, malformed snapshot file, unanswerable query, bad flags), 1 for other failures — the
// environment (no BTF, no CAP_BPF, a tracepoint missing) and a failed write to stdout included.
// With -o json a failure (a flag error included) prints one sarena.rpc.v1.CliError object
// {"code", "message"} on stdout instead of the message on stderr, as sarena does; stdout then
// carries exactly one JSON document, the result or that error (never both: --svg is written
// before the report). Flags may also stand before the command ("sarena-diag -o json trace ...").
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libsarena/base/cli.h"
#include "libsarena/collect/collect.h"
#include "libsarena/diag/codes.h"
#include "libsarena/diag/evidence.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/report.h"
#include "libsarena/diag/walk.h"
#include "libsarena/live/drop_stream.h"
#include "libsarena/live/live_trace.h"
#include "libsarena/model/snapshot.h"
#include "libsarena/rpc/cli_output.h"

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;  // the environment, the kernel, I/O: anything but bad input

// The longest `drops --duration`: a year (longer is a typo, and would overflow the ns clock).
constexpr absl::Duration kMaxDropsDuration = absl::Hours(24 * 365);

// Every flag of each command (sarena-diag parses its own flags: --pod repeats). Args accepts
// exactly these, and --help lists exactly these.
const std::vector<sarena::FlagDoc> kTraceFlags = {
    {"snapshot", "string", "", "Snapshot directory to trace in (required)."},
    {"src", "string", "", "Source: pod:NS/NAME, node:NAME or an IPv4 address (required)."},
    {"dst", "string", "",
     "Destination DST:PORT/PROTO, DST as for --src or svc:NS/NAME, PROTO tcp|udp|icmp in lower "
     "case; icmp has no port: DST:0/icmp (required)."},
    {"cni", "string", "auto",
     "Datapath plugin: calico | sarena | generic | auto (from the nodes)."},
    {"o", "string", "text",
     "Output: trace: text | json (sarena.diag report) | dot (Graphviz); collect: text | json "
     "({\"written\", \"skipped\"}); drops: json only (one object a line; --explained-by: "
     "{\"code\", \"kernel_reasons\"}); codes: text | json | markdown. With json a failure is "
     "one {\"code\", \"message\"} object on stdout."},
    {"output", "string", "text", "Same as -o."},
    {"svg", "string", "",
     "Also render the path graph to this SVG file (Graphviz dot), before the report is printed: "
     "when it cannot be written the command fails (exit 1) with no report."},
    {"sport", "uint32", "0", "Source port (0 = an ephemeral port, unknown)."},
    {"ttl", "uint32", "64", "Initial IP TTL, 1..255."},
    {"size", "uint32", "0",
     "Packet size (IP total length) in bytes up to 65535, at least its headers: 40 for tcp, 28 "
     "for udp and icmp; 0 = full size: the MTU of the "
     "source's outgoing device (TCP: the segments the connection negotiates, by MSS). The same "
     "with --live: its UDP probe is that size (0: the MTU of its route), and so is the walked "
     "packet."},
    {"no-reply", "", "", "Do not walk the reply path."},
};
// `trace --live` (libsarena/live): besides these it takes collect's --node, --socket, --bpffs,
// --sarena and --no-programs for the snapshot it collects, and --snapshot as where to keep it.
const std::vector<sarena::FlagDoc> kLiveFlags = {
    {"live", "", "",
     "Trace on this live node: collect its snapshot, send a real probe from the namespace that "
     "owns --src (this one or one under /var/run/netns), record the kernel's drops "
     "(skb:kfree_skb) and join them to the walked hops. --src/--dst are addresses; --snapshot, "
     "if given, keeps the collected snapshot there."},
    {"probe-timeout", "uint32", "800", "--live: how long the probe waits, ms (1..5000)."},
    {"count", "uint32", "3", "--live: UDP datagrams sent (1..16); TCP sends one SYN."},
};
const std::vector<sarena::FlagDoc> kCodesFlags = {
    {"o", "string", "text", "codes: text | json | markdown."},
    {"output", "string", "text", "Same as -o."},
};
const std::vector<std::string> kLiveCollectFlags = {"node", "socket", "bpffs", "sarena",
                                                    "no-programs"};
const std::vector<sarena::FlagDoc> kCollectFlags = {
    {"out", "string", "", "Snapshot directory to write into (required; node files replaced)."},
    {"node", "string", "", "Node name (directory nodes/NAME; default: the hostname)."},
    {"netns", "string", "",
     "Network namespace of the node: a name under /var/run/netns or a path (default: this "
     "process's)."},
    {"pod", "string", "",
     "NS/NAME=NETNS: a pod to collect besides those of the sarena endpoint list; repeatable."},
    {"sarena", "string", "",
     "Ignored (collect asks sarenad over --socket); accepted so older scripts still run."},
    {"socket", "string", "/run/sarena/sarenad.sock",
     "sarenad's socket, asked for its endpoint records (skipped when absent)."},
    {"bpffs", "string", "/sys/fs/bpf/sarena",
     "bpffs directory of the datapath's pinned maps (the endpoint map is read from there)."},
    {"no-programs", "", "", "Do not collect the attached BPF programs."},
    {"no-endpoint-pods", "", "", "Do not collect the pods the endpoint list names."},
    {"o", "string", "text", "collect: text | json."},
    {"output", "string", "text", "Same as -o."},
};
// `drops` (libsarena/live/drop_stream.h). Its --netns repeats and means "only these", unlike
// collect's single --netns.
const std::vector<sarena::FlagDoc> kDropsFlags = {
    {"netns", "string", "",
     "drops: only drops in this network namespace (a name under /var/run/netns or a path); "
     "repeatable; default every namespace's. With collect: the node's namespace."},
    {"duration", "duration", "0",
     "drops: stop after this long (10s, 500ms, 2m; a bare number is seconds; at most 8760h); "
     "0 = until SIGINT/SIGTERM."},
    {"ready-file", "string", "",
     "drops: create this file once the tracer is attached (removed when the stream ends), so a "
     "script can start its traffic without sleeping."},
    {"no-symbols", "", "", "drops: do not resolve drop locations from /proc/kallsyms."},
    {"explained-by", "string", "",
     "drops: print the kernel drop reasons (SKB_DROP_REASON_*) the suspicion CODE explains, one "
     "a line, and exit (nothing is attached)."},
    {"o", "string", "json", "drops: json (its only format)."},
    {"output", "string", "json", "Same as -o."},
};

// The flags' names; with `switches_only` those that take no value (type "").
std::vector<std::string> NamesOf(const std::vector<sarena::FlagDoc>& flags, bool switches_only) {
  std::vector<std::string> out;
  for (const sarena::FlagDoc& f : flags) {
    if (!switches_only || f.type.empty()) out.push_back(f.name);
  }
  return out;
}

// What `sarena-diag --help` says.
const sarena::ProgramDoc& Doc() {
  static const sarena::ProgramDoc* doc = [] {
    auto* d = new sarena::ProgramDoc{
        .name = "sarena-diag",
        .summary = "Explains a pod / node / Service path from a snapshot of the cluster's "
                   "network state, and collects a node's part of a snapshot on a live node.",
        .usage = {"sarena-diag trace --snapshot DIR --src SRC --dst DST:PORT/PROTO [flags]",
                  "sarena-diag trace --live --src IP --dst IP:PORT/PROTO [flags]",
                  "sarena-diag collect --out DIR [flags]",
                  "sarena-diag drops [--netns NAME]... [--duration D] [--ready-file PATH]",
                  "sarena-diag drops --explained-by CODE",
                  "sarena-diag codes [-o text|json|markdown]"},
        .description = "SRC/DST: pod:NS/NAME | node:NAME | svc:NS/NAME (destination only) | "
                       "IPv4 address.",
        .subcommands = {{"trace", "Walks the packet (and its reply) through the snapshot and "
                                  "prints the verdict, the hops and what is suspicious."},
                        {"collect", "Writes this node's part of a snapshot (netns state, sarena "
                                    "endpoints and maps, BPF programs)."},
                        {"drops", "Prints every packet the kernel drops (skb:kfree_skb), one "
                                  "JSON object a line (sarena.diag.v1.KernelDropEvent): reason, "
                                  "namespace, device, packet; until SIGINT/SIGTERM or "
                                  "--duration. Needs root (BPF)."},
                        {"codes", "Lists every suspicion code with the levels it may carry and "
                                  "what it means."}},
        .groups = {{"trace flags", NamesOf(kTraceFlags, false)},
                   {"trace --live flags", NamesOf(kLiveFlags, false)},
                   {"collect flags", NamesOf(kCollectFlags, false)},
                   {"drops flags", NamesOf(kDropsFlags, false)}},
        .epilog = "Exit status: 0 the walk ran (whatever it found), 2 bad input (unknown pod / "
                  "Service / node, malformed snapshot file, unanswerable query, bad flags), 1 "
                  "other failure (the environment, e.g. no BTF or CAP_BPF for drops; a failed "
                  "write to stdout).\n",
    };
    // Each flag once, as its first table has it (-o as trace's, which names every command's
    // formats; --netns as drops', which says both meanings).
    auto add = [d](const std::vector<sarena::FlagDoc>& table) {
      for (const sarena::FlagDoc& f : table) {
        if (absl::c_none_of(d->extra_flags,
                            [&](const sarena::FlagDoc& g) { return g.name == f.name; })) {
          d->extra_flags.push_back(f);
        }
      }
    };
    add(kTraceFlags);
    add(kLiveFlags);
    add(kDropsFlags);
    add(kCollectFlags);
    return d;
  }();
  return *doc;
}

std::string Usage() {
  std::string u;
  for (const std::string& line : Doc().usage) absl::StrAppend(&u, "  ", line, "\n");
  return absl::StrCat("usage:\n", u, "(see sarena-diag --help)\n");
}

// What a command runs with besides its flags: how it reports a failure.
struct Cli {
  // -o json (or --output json) was asked for (sarena::AsksForJsonOutput on the raw arguments,
  // so that a flag error is reported so too): a failure is then one sarena.rpc.v1.CliError
  // object on stdout, as sarena prints it (rpc::ReportCliError).
  bool json_errors = false;
};

// A failed command, reported as every sarena executable does (rpc::ReportCliError): "sarena-diag:
// <message>" on stderr, or with -o json the {"code", "message"} object on stdout. Returns `code`,
// the exit status.
int Fail(const Cli& cli, int code, const absl::Status& st) {
  return sarena::rpc::ReportCliError("sarena-diag", st, cli.json_errors, code);
}

// A failure with only a message: bad input (exit 2) is kInvalidArgument, anything else kUnknown.
int Fail(const Cli& cli, int code, absl::string_view msg) {
  return Fail(cli, code,
              code == kExitBadInput ? absl::InvalidArgumentError(msg) : absl::UnknownError(msg));
}

// `status` with "<prefix>" before its message; same code.
absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// Bad usage (exit 2): the message followed by the usage lines on stderr; with -o json the
// message and "(see sarena-diag --help)", as sarena's usage errors.
int FailUsage(const Cli& cli, absl::string_view msg) {
  return Fail(cli, kExitBadInput,
              cli.json_errors ? absl::StrCat(msg, " (see sarena-diag --help)")
                              : absl::StrCat(msg, "\n", Usage()));
}

// `code`, or kExitFailure when anything written to stdout did not get out (a full disk, a closed
// pipe): flushes stdout and checks its error flag, so output lost is never exit 0.
int FinishStdout(int code) {
  errno = 0;
  bool failed = std::fflush(stdout) != 0;
  int err = errno;
  failed = failed || std::ferror(stdout);
  if (!failed) return code;
  std::string why = err != 0 ? std::strerror(err) : "write error";
  // On stderr even under -o json: stdout is what failed.
  sarena::rpc::ReportCliError(
      "sarena-diag", absl::UnknownError(absl::StrCat("write standard output: ", why)),
      /*json=*/false, kExitFailure);
  return code == 0 ? kExitFailure : code;
}

// One command's flags, parsed against its table by sarena::ParseFlagTable (libsarena/base/cli.h:
// --pod and --netns repeat); a positional argument is an error. `before` are the flags given
// before the command word (parsed against every command's flags): they must be in `table` too,
// and come first (a flag given again after the command wins).
class Args {
 public:
  Args(const std::vector<std::string>& args, const std::vector<sarena::FlagDoc>& table,
       const std::map<std::string, std::vector<std::string>>& before) {
    for (const auto& entry : before) {
      // Not a structured binding: clang 14 (the ASan build) cannot capture one in a lambda.
      const std::string& name = entry.first;
      if (absl::c_none_of(table, [&](const sarena::FlagDoc& f) { return f.name == name; })) {
        error_ = absl::StrCat("unknown flag ", name.size() == 1 ? "-" : "--", name);
        return;
      }
    }
    auto parsed = sarena::ParseFlagTable(args, table);
    if (!parsed.ok()) {
      error_ = std::string(parsed.status().message());
      return;
    }
    if (!parsed->positional.empty()) {
      error_ = absl::StrCat("unexpected argument '", parsed->positional.front(), "'");
      return;
    }
    values_ = before;
    for (auto& [name, vals] : parsed->values) {
      values_[name].insert(values_[name].end(), vals.begin(), vals.end());
    }
  }
  const std::string& error() const { return error_; }
  std::string Get(const std::string& name, const std::string& def = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second.back();
  }
  std::vector<std::string> All(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
  }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // The first flag not in `known`, or "".
  std::string Unknown(const std::vector<std::string>& known) const {
    for (const auto& [k, v] : values_) {
      if (std::find(known.begin(), known.end(), k) == known.end()) return k;
    }
    return "";
  }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::string error_;
};

bool ParseUint(const std::string& text, uint32_t max, uint32_t* out) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v > max) return false;
  *out = v;
  return true;
}

int Print(const std::string& out) {
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

// `trace --live`: everything happens in libsarena/live; this maps flags and prints.
int TraceLive(const Cli& cli, const Args& args, const std::string& format) {
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
    if (!query.ok()) return Fail(cli, kExitBadInput, Prefixed("trace --live: ", query.status()));
    auto size = sarena::diag::ParsePacketSize(args.Get("size"), query->proto);
    if (!size.ok()) return Fail(cli, kExitBadInput, size.status());
    opts.size = *size;
  }
  for (const U32Flag& f :
       {U32Flag{"count", 1, 16, &opts.count}, U32Flag{"probe-timeout", 1, 5000, &opts.timeout_ms},
        U32Flag{"ttl", 1, 255, &ttl}}) {
    if (!args.Has(f.name)) continue;
    if (!ParseUint(args.Get(f.name), f.max, &v) || v < f.min) {
      return Fail(cli, kExitBadInput, absl::StrCat("invalid --", f.name, " '", args.Get(f.name),
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
    return Fail(cli, code, Prefixed("trace --live: ", r.status()));
  }
  std::string out;
  if (format == "json") {
    auto json = sarena::diag::ToLiveJson(r->trace.graph, r->evidence, r->joined);
    if (!json.ok()) return Fail(cli, 1, json.status());
    out = *std::move(json);
  } else if (format == "dot") {
    out = sarena::diag::ToDot(r->trace.graph);
  } else {
    out = sarena::live::LiveText(*r);
  }
  // The SVG first: a failure is then the only output (one JSON document under -o json).
  if (args.Has("svg")) {
    absl::Status st = sarena::diag::RenderSvg(sarena::diag::ToDot(r->trace.graph), args.Get("svg"));
    if (!st.ok()) return Fail(cli, 1, st);
  }
  return Print(out);
}

int Trace(const Cli& cli, const Args& args) {
  std::vector<std::string> known = NamesOf(kTraceFlags, false);
  if (args.Has("live")) {
    for (const std::string& n : NamesOf(kLiveFlags, false)) known.push_back(n);
    for (const std::string& n : kLiveCollectFlags) known.push_back(n);
  }
  if (std::string u = args.Unknown(known); !u.empty()) {
    return FailUsage(cli, absl::StrCat("trace: unknown flag --", u,
                                  absl::c_linear_search(NamesOf(kLiveFlags, false), u) ||
                                          absl::c_linear_search(kLiveCollectFlags, u)
                                      ? " (only with --live)"
                                      : ""));
  }
  if (args.Has("live")) {
    for (const char* req : {"src", "dst"}) {
      if (!args.Has(req)) {
        return FailUsage(cli, absl::StrCat("trace --live: --", req, " is required"));
      }
    }
    std::string format = args.Get("o", args.Get("output", "text"));
    if (format != "text" && format != "json" && format != "dot") {
      return Fail(cli, kExitBadInput,
                  absl::StrCat("invalid -o '", format, "': expected text, json or dot"));
    }
    return TraceLive(cli, args, format);
  }
  for (const char* req : {"snapshot", "src", "dst"}) {
    if (!args.Has(req)) {
      return FailUsage(cli, absl::StrCat("trace: --", req, " is required"));
    }
  }
  std::string format = args.Get("o", args.Get("output", "text"));
  if (format != "text" && format != "json" && format != "dot") {
    return Fail(cli, kExitBadInput,
                absl::StrCat("invalid -o '", format, "': expected text, json or dot"));
  }
  auto query = sarena::diag::ParseQuery(args.Get("src"), args.Get("dst"));
  if (!query.ok()) return Fail(cli, kExitBadInput, query.status());
  uint32_t v = 0;
  if (args.Has("sport")) {
    if (!ParseUint(args.Get("sport"), 65535, &v)) {
      return Fail(cli, kExitBadInput, absl::StrCat("invalid --sport '", args.Get("sport"), "'"));
    }
    query->sport = static_cast<uint16_t>(v);
  }
  if (args.Has("ttl")) {
    if (!ParseUint(args.Get("ttl"), 255, &v) || v == 0) {
      return Fail(cli, kExitBadInput, absl::StrCat("invalid --ttl '", args.Get("ttl"), "'"));
    }
    query->ttl = static_cast<uint8_t>(v);
  }
  if (args.Has("size")) {
    auto size = sarena::diag::ParsePacketSize(args.Get("size"), query->proto);
    if (!size.ok()) return Fail(cli, kExitBadInput, size.status());
    query->size = *size;
  }
  auto snap = sarena::model::Snapshot::Open(args.Get("snapshot"));
  if (!snap.ok()) return Fail(cli, kExitBadInput, snap.status());

  // Nodes of the query, for --cni auto.
  std::vector<std::string> nodes;
  const auto& cluster = (*snap)->cluster();
  for (const sarena::diag::EndpointSpec* e : {&query->src, &query->dst}) {
    if (e->kind == sarena::diag::EndpointSpec::Kind::kPod) {
      if (const auto* p = cluster.FindPod(e->namespace_, e->name)) nodes.push_back(p->node_name);
    } else if (e->kind == sarena::diag::EndpointSpec::Kind::kNode) {
      nodes.push_back(e->name);
    } else if (e->kind == sarena::diag::EndpointSpec::Kind::kIp) {
      if (const auto* p = cluster.FindPodByIp(e->ip)) nodes.push_back(p->node_name);
      if (const auto* n = cluster.FindNodeByIp(e->ip)) nodes.push_back(n->name);
    }
  }
  auto plugin = sarena::diag::SelectPlugin(args.Get("cni", "auto"), **snap, nodes);
  if (!plugin.ok()) return Fail(cli, kExitBadInput, plugin.status());

  sarena::diag::TraceOptions opts;
  opts.reply = !args.Has("no-reply");
  auto result = sarena::diag::Trace(**snap, *query, **plugin, opts);
  if (!result.ok()) return Fail(cli, kExitBadInput, result.status());

  std::string out;
  if (format == "json") {
    auto json = sarena::diag::ToJson(result->graph);
    if (!json.ok()) return Fail(cli, 1, json.status());
    out = *json;
  } else if (format == "dot") {
    out = sarena::diag::ToDot(result->graph);
  } else {
    out = absl::StrCat("cni plugin: ", result->plugin, "\n", sarena::diag::ToText(result->graph));
  }
  // The SVG before the report: when it cannot be written the command fails with its error
  // alone, so stdout holds one document (under -o json: the report or the error object).
  if (args.Has("svg")) {
    absl::Status st = sarena::diag::RenderSvg(sarena::diag::ToDot(result->graph), args.Get("svg"));
    if (!st.ok()) return Fail(cli, 1, st);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  // The snapshot of a large cluster (150k pods) takes ~1 s of system time to free; the process
  // ends here anyway, so the kernel reclaims it at once (bench/diag_scale.sh measures this).
  int code = FinishStdout(0);
  std::fflush(nullptr);
  std::_Exit(code);
}

int Collect(const Cli& cli, const Args& args) {
  if (std::string u = args.Unknown(NamesOf(kCollectFlags, false)); !u.empty()) {
    return FailUsage(cli, absl::StrCat("collect: unknown flag --", u));
  }
  const std::string format = args.Get("o", args.Get("output", "text"));
  if (format != "text" && format != "json") {
    return Fail(cli, kExitBadInput, absl::StrCat("invalid -o '", format, "': expected text or json"));
  }
  sarena::collect::CollectOptions opts;
  opts.out_dir = args.Get("out");
  if (opts.out_dir.empty()) return Fail(cli, kExitBadInput, "collect: --out is required");
  opts.node = args.Get("node");
  opts.node_netns = args.Get("netns");
  for (const std::string& p : args.All("pod")) {
    auto spec = sarena::collect::ParsePodNetnsSpec(p);
    if (!spec.ok()) return Fail(cli, kExitBadInput, spec.status());
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
    return Fail(cli, code, report.status());
  }
  if (format == "json") {
    sarena::diag::v1::CollectResult result;
    for (const std::string& w : report->written) result.add_written(w);
    for (const std::string& s : report->skipped) result.add_skipped(s);
    return Print(sarena::rpc::MessageToJson(result));
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

// `drops`: flags here, the stream in libsarena/live (StreamDrops).
int Drops(const Cli& cli, const Args& args) {
  if (std::string u = args.Unknown(NamesOf(kDropsFlags, false)); !u.empty()) {
    return FailUsage(cli, absl::StrCat("drops: unknown flag --", u));
  }
  // Its stream is JSON already (one object a line): -o json is accepted and changes nothing.
  if (const std::string format = args.Get("o", args.Get("output", "json")); format != "json") {
    return Fail(cli, kExitBadInput,
                absl::StrCat("invalid -o '", format, "': drops prints json only (one object a line)"));
  }
  if (args.Has("explained-by")) {
    const std::string code = args.Get("explained-by");
    if (!sarena::diag::FindSuspicionCode(code)) {
      return Fail(cli, kExitBadInput,
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
      return Print(sarena::rpc::MessageToJson(result));
    }
    for (absl::string_view r : reasons) {
      std::printf("SKB_DROP_REASON_%s\n", std::string(r).c_str());
    }
    return 0;
  }
  sarena::live::DropStreamOptions opts;
  if (args.Has("duration")) {
    absl::Duration d;
    if (std::string why = ParseDurationFlag(args.Get("duration"), kMaxDropsDuration, &d);
        !why.empty()) {
      return Fail(cli, kExitBadInput, absl::StrCat("invalid --duration '", args.Get("duration"),
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
    return Fail(cli, kExitBadInput, Prefixed("drops: ", ns.status()));
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
  if (!st.ok()) return Fail(cli, kExitFailure, Prefixed("drops: ", st));
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
    return Fail(cli, kExitFailure,
                absl::StrCat("drops: write standard output: ", std::strerror(write_errno)));
  }
  return 0;
}

int Main(int argc, char** argv) {
  const std::vector<std::string> all_args(argv + 1, argv + argc);
  if (sarena::PrintHelpIfAsked(all_args, Doc())) return 0;
  const Cli cli{.json_errors = sarena::AsksForJsonOutput(all_args)};
  // Flags before the command word ("sarena-diag -o json trace ..."), against every command's
  // flags; the command's own table then checks they are its flags.
  std::vector<sarena::FlagDoc> every_flag = Doc().extra_flags;
  auto global =
      sarena::ParseFlagTable(all_args, every_flag, {.stop_at_positional = true});
  if (!global.ok()) return FailUsage(cli, global.status().message());
  if (global->positional.empty()) return FailUsage(cli, "missing command");
  const std::string cmd = global->positional.front();
  const std::vector<std::string> rest(global->positional.begin() + 1, global->positional.end());
  const auto& before = global->values;
  if (cmd == "help") {
    std::fputs(sarena::HelpText(Doc()).c_str(), stdout);
    return 0;
  }
  if (cmd == "trace") {
    std::vector<sarena::FlagDoc> table = kTraceFlags;
    table.insert(table.end(), kLiveFlags.begin(), kLiveFlags.end());
    for (const sarena::FlagDoc& f : kCollectFlags) {
      if (absl::c_linear_search(kLiveCollectFlags, f.name)) table.push_back(f);
    }
    Args args(rest, table, before);
    if (!args.error().empty()) return FailUsage(cli, absl::StrCat("trace: ", args.error()));
    return Trace(cli, args);
  }
  if (cmd == "collect") {
    Args args(rest, kCollectFlags, before);
    if (!args.error().empty()) return FailUsage(cli, absl::StrCat("collect: ", args.error()));
    return Collect(cli, args);
  }
  if (cmd == "drops") {
    Args args(rest, kDropsFlags, before);
    if (!args.error().empty()) return FailUsage(cli, absl::StrCat("drops: ", args.error()));
    return Drops(cli, args);
  }
  if (cmd == "codes") {
    Args args(rest, kCodesFlags, before);
    if (!args.error().empty()) return FailUsage(cli, absl::StrCat("codes: ", args.error()));
    std::string format = args.Get("o", args.Get("output", "text"));
    if (format == "json") {
      Print(absl::StrCat(sarena::diag::SuspicionCodesJson(), "\n"));
    } else if (format == "markdown") {
      Print(sarena::diag::SuspicionCodesMarkdown());
    } else if (format == "text") {
      for (const auto& c : sarena::diag::AllSuspicionCodes()) {
        std::printf("%-36s %-24s %s\n", std::string(c.code).c_str(),
                    sarena::diag::LevelsText(c.levels).c_str(), std::string(c.meaning).c_str());
      }
    } else {
      return Fail(cli, kExitBadInput,
                  absl::StrCat("invalid -o '", format, "': expected text, json or markdown"));
    }
    return 0;
  }
  return FailUsage(cli, absl::StrCat("unknown command '", cmd, "'"));
}

}  // namespace

int main(int argc, char** argv) { return FinishStdout(Main(argc, argv)); }
