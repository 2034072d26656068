// `sarena-diag trace --live --src IP --dst IP:PORT/PROTO` on a live node (issue 11 item 1):
//   1. finds the namespace that owns --src by address: the caller's (the node), one of the node's
//      pods (a named namespace under /var/run/netns whose veth peer is in the caller's), or any
//      other named namespace;
//   2. collects the node's snapshot (libsarena/collect: the caller's namespace as the node, the
//      sarena endpoint list's pods, every other veth-peer namespace as pod "netns/<name>");
//   3. attaches the kfree_skb tracer (datapath::DropTraceProgram) for the probe's two addresses
//      and reads the sarena datapath's drop counters before and after, when its maps are pinned
//      (read-only);
//   4. sends one bounded probe from the source namespace (SendProbe);
//   5. walks the same query (the probe's source port) with diag::Trace and joins the kernel's
//      drops to the hops (diag::JoinEvidence).
// The probe only goes to --dst from --src: it never leaves the namespaces of the node unless the
// node routes it out, exactly as the queried traffic would be.
#ifndef LIBSARENA_LIVE_LIVE_TRACE_H_
#define LIBSARENA_LIVE_LIVE_TRACE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/diag/evidence.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/live_evidence.h"
#include "libsarena/model/snapshot.h"

namespace sarena::live {

struct LiveOptions {
  std::string src;  // IPv4 address (required)
  std::string dst;  // "IPv4:PORT/PROTO", PROTO tcp|udp (required)
  /// The packet's size (IP total length) as diag::ParsePacketSize defines it: its headers (tcp 40, udp 28)..65535, or 0
  /// = full size, the MTU of the source's outgoing device. The UDP probe's datagrams and the
  /// walk's packet (TCP: the walk's only; the probe is one SYN).
  uint32_t size = 0;
  uint32_t count = 3;        // UDP datagrams, 1..16
  uint32_t timeout_ms = 800; // probe bound, 1..5000 ms
  uint8_t ttl = 64;          // the walk's initial TTL (the probe uses the kernel's default)
  bool reply = true;         // walk the reply too
  std::string cni = "auto";  // diag plugin
  /// Node name of the caller's namespace ("" = the hostname).
  std::string node;
  /// Where to write the collected snapshot (kept); "" = a temporary directory removed after.
  std::string snapshot_dir;
  /// Passed to collect: sarenad's socket, the datapath's bpffs directory (also where the drop
  /// counters are read), whether to collect attached programs.
  std::string sarena_socket = "/run/sarena/sarenad.sock";
  std::string bpffs = "/sys/fs/bpf/sarena";
  bool programs = true;
};

/// Everything one live trace produced.
struct LiveResult {
  std::unique_ptr<model::Snapshot> snapshot;
  diag::TraceResult trace;
  model::LiveEvidence evidence;
  diag::JoinedEvidence joined;
  std::string snapshot_dir;  // "" when it was temporary (removed)
  double collect_ms = 0;     // collecting the snapshot
  double total_ms = 0;       // the whole TraceLive
};

/// Runs the live trace (see the file comment). Errors: kInvalidArgument for a --src/--dst that
/// is not an address ("--live takes addresses: ..."), a loopback --src (127.0.0.0/8: "--src
/// 127.0.0.1 is a loopback address: ..."; every namespace has its own, so it names none), a
/// protocol other than tcp/udp or a bad option; kNotFound when no namespace of this machine has
/// --src; kFailedPrecondition when several do (named, so the operator can pick by running inside
/// one); kPermissionDenied without root (namespaces, BPF); collect's and the walk's errors
/// otherwise.
absl::StatusOr<LiveResult> TraceLive(const LiveOptions& options);

/// The text report: "cni plugin: ...", diag::ToText, diag::EvidenceText, and when the kernel
/// and the model disagree a last line "DISAGREEMENT: ..." that names what disagrees.
std::string LiveText(const LiveResult& result);

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_LIVE_TRACE_H_
