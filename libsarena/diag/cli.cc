#include "libsarena/diag/cli.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/numbers.h"

namespace sarena::diag {
namespace {

// Every flag of each command (sarena-diag parses its own flags: --pod repeats). ParseCommandLine
// accepts exactly these, and --help lists exactly these. (tests/privileged/cli_test.sh reads the
// names from the `const std::vector<FlagDoc> k*Flags = {` tables of this file.)
const std::vector<FlagDoc> kTraceFlags = {
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
const std::vector<FlagDoc> kLiveFlags = {
    {"live", "", "",
     "Trace on this live node: collect its snapshot, send a real probe from the namespace that "
     "owns --src (this one or one under /var/run/netns), record the kernel's drops "
     "(skb:kfree_skb) and join them to the walked hops. --src/--dst are addresses; --snapshot, "
     "if given, keeps the collected snapshot there."},
    {"probe-timeout", "uint32", "800", "--live: how long the probe waits, ms (1..5000)."},
    {"count", "uint32", "3", "--live: UDP datagrams sent (1..16); TCP sends one SYN."},
};
const std::vector<FlagDoc> kCodesFlags = {
    {"o", "string", "text", "codes: text | json | markdown."},
    {"output", "string", "text", "Same as -o."},
};
const std::vector<std::string> kLiveCollectFlags = {"node", "socket", "bpffs", "sarena",
                                                    "no-programs"};
const std::vector<FlagDoc> kCollectFlags = {
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
const std::vector<FlagDoc> kDropsFlags = {
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

// The table a command's flags parse against, or nullptr for a command sarena-diag does not have.
// trace's includes --live's flags and the collect flags --live takes, so that `trace --live`
// parses as one table and `trace` without --live can name a live-only flag as such.
const std::vector<FlagDoc>* CommandTable(const std::string& command) {
  static const std::vector<FlagDoc>* trace = [] {
    auto* table = new std::vector<FlagDoc>(kTraceFlags);
    table->insert(table->end(), kLiveFlags.begin(), kLiveFlags.end());
    for (const FlagDoc& f : kCollectFlags) {
      if (absl::c_linear_search(kLiveCollectFlags, f.name)) table->push_back(f);
    }
    return table;
  }();
  if (command == "trace") return trace;
  if (command == "collect") return &kCollectFlags;
  if (command == "drops") return &kDropsFlags;
  if (command == "codes") return &kCodesFlags;
  return nullptr;
}

}  // namespace

const std::vector<FlagDoc>& TraceFlags() { return kTraceFlags; }
const std::vector<FlagDoc>& LiveFlags() { return kLiveFlags; }
const std::vector<std::string>& LiveCollectFlagNames() { return kLiveCollectFlags; }
const std::vector<FlagDoc>& CollectFlags() { return kCollectFlags; }
const std::vector<FlagDoc>& DropsFlags() { return kDropsFlags; }
const std::vector<FlagDoc>& CodesFlags() { return kCodesFlags; }

std::vector<std::string> FlagNames(const std::vector<FlagDoc>& flags) {
  std::vector<std::string> out;
  for (const FlagDoc& f : flags) out.push_back(f.name);
  return out;
}

const ProgramDoc& DiagProgramDoc() {
  static const ProgramDoc* doc = [] {
    auto* d = new ProgramDoc{
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
        .groups = {{"trace flags", FlagNames(kTraceFlags)},
                   {"trace --live flags", FlagNames(kLiveFlags)},
                   {"collect flags", FlagNames(kCollectFlags)},
                   {"drops flags", FlagNames(kDropsFlags)}},
        .epilog = "Exit status: 0 the walk ran (whatever it found), 2 bad input (unknown pod / "
                  "Service / node, malformed snapshot file, unanswerable query, bad flags), 1 "
                  "other failure (the environment, e.g. no BTF or CAP_BPF for drops, or no "
                  "sarena-diag-live; a failed write to stdout).\n\n"
                  "collect, drops and trace --live read the kernel: sarena-diag runs them by "
                  "executing sarena-diag-live (next to sarena-diag, else in "
                  "../libexec/sarena/ from it) with the same arguments, so that trace on a "
                  "snapshot and codes need no libbpf.\n",
    };
    // Each flag once, as its first table has it (-o as trace's, which names every command's
    // formats; --netns as drops', which says both meanings).
    auto add = [d](const std::vector<FlagDoc>& table) {
      for (const FlagDoc& f : table) {
        if (absl::c_none_of(d->extra_flags,
                            [&](const FlagDoc& g) { return g.name == f.name; })) {
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


std::string CommandArgs::Get(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second.back();
}

std::vector<std::string> CommandArgs::All(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool CommandArgs::Has(const std::string& name) const { return values_.count(name) > 0; }

std::string CommandArgs::Unknown(const std::vector<std::string>& known) const {
  for (const auto& entry : values_) {
    if (!absl::c_linear_search(known, entry.first)) return entry.first;
  }
  return "";
}

absl::StatusOr<std::string> CommandArgs::OutputFormat(
    const std::string& def, const std::vector<std::string>& allowed) const {
  std::string format = Get("o", Get("output", def));
  if (absl::Status st = CheckOutputFormat("-o", format, allowed); !st.ok()) return st;
  return format;
}

absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  // The command word: the first argument that is no flag of any command (so that a flag's value
  // is never taken for it).
  auto global = ParseFlagTable(args, DiagProgramDoc().extra_flags, {.stop_at_positional = true});
  if (!global.ok()) return global.status();
  if (global->positional.empty()) return absl::InvalidArgumentError("missing command");
  CommandLine out;
  out.command = global->positional.front();
  if (out.command == "help") return out;
  const std::vector<FlagDoc>* table = CommandTable(out.command);
  if (table == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown command '", out.command, "'"));
  }
  // The arguments before the command word (without a "--" that ended them) and after it, parsed
  // together: a flag before the command that is not the command's is "unknown flag" as one after.
  const size_t word = args.size() - global->positional.size();
  std::vector<std::string> flags(args.begin(), args.begin() + static_cast<long>(word));
  if (!flags.empty() && flags.back() == "--") flags.pop_back();
  flags.insert(flags.end(), global->positional.begin() + 1, global->positional.end());
  auto parsed = ParseFlagTable(flags, *table);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(out.command, ": ", parsed.status().message()));
  }
  if (!parsed->positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(out.command, ": unexpected argument '",
                                                   parsed->positional.front(), "'"));
  }
  out.args = CommandArgs(std::move(parsed->values));
  return out;
}

bool RunsOnLiveNode(const std::vector<std::string>& args) {
  auto global = ParseFlagTable(args, DiagProgramDoc().extra_flags, {.stop_at_positional = true});
  if (!global.ok() || global->positional.empty()) return false;
  const std::string& command = global->positional.front();
  if (command == "collect" || command == "drops") return true;
  if (command != "trace") return false;
  auto line = ParseCommandLine(args);
  return line.ok() && line->args.Has("live");
}

bool ParseUintFlag(const std::string& text, uint32_t max, uint32_t* out) {
  const std::optional<uint64_t> v = ParseCanonicalUint(text, max);
  if (!v) return false;
  *out = static_cast<uint32_t>(*v);
  return true;
}

}  // namespace sarena::diag
