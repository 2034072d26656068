// What the kernel itself did with a real probe packet (`sarena-diag trace --live`, issue 11 item 1):
// the drops the kernel reported through the skb:kfree_skb tracepoint, the sarena datapath's own
// drop events when its maps are pinned, and how the probe ended. Plain data: filled by
// libsarena/live (which reads the kernel), joined to a walked path by diag::JoinEvidence.
#ifndef LIBSARENA_MODEL_LIVE_EVIDENCE_H_
#define LIBSARENA_MODEL_LIVE_EVIDENCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "libsarena/net/ip.h"

namespace sarena::model {

/// One packet the kernel dropped (kfree_skb with a reason). Identical drops of the probe's
/// repeats are merged (`count`).
struct KernelDrop {
  /// The kernel's name of enum skb_drop_reason, e.g. "SKB_DROP_REASON_IP_RPFILTER" (from the
  /// running kernel's BTF); "SKB_DROP_REASON_<n>" when BTF lacks the value.
  std::string reason;
  uint32_t reason_code = 0;
  /// Kernel function that freed the skb ("ip_rcv_finish_core+0x1a4"), "" when not resolved.
  std::string location;
  /// nsfs inode of the namespace the packet died in (`readlink /proc/PID/ns/net`: net:[INODE]).
  uint64_t netns_inode = 0;
  /// Where that namespace is in the snapshot: "node:<node>" or "pod:<ns>/<name>" (the
  /// model::NetnsState id), "" when no snapshot namespace matched its addresses.
  std::string place;
  /// Node of `place` ("" when unknown); for a pod its spec.nodeName.
  std::string node;
  /// The namespace's path on this machine ("/var/run/netns/x", "/proc/self/ns/net"), "" unknown.
  std::string netns_path;
  /// skb->dev: ifindex in that namespace and name; 0 / "" when the skb had no device.
  uint32_t ifindex = 0;
  std::string device;
  /// The packet: ethertype (0x0800 IPv4, 0x0806 ARP), IP protocol, addresses (ARP: sender and
  /// target protocol address), ports in host order (ICMP: type and code; ARP: sport = opcode).
  uint16_t eth_proto = 0x0800;
  uint8_t proto = 0;
  net::Ipv4 src;
  net::Ipv4 dst;
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint8_t tcp_flags = 0;
  /// How many probe packets died this way.
  uint32_t count = 1;
};

/// One drop event of the sarena datapath (its ring SARENA_MAP_EVENTS, `sarena monitor`).
struct DatapathDrop {
  std::string reason;  // datapath::DropReasonName: "no_endpoint", "policy_denied", ...
  uint32_t ifindex = 0;
  uint8_t proto = 0;
  net::Ipv4 src;
  net::Ipv4 dst;
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint32_t count = 1;
};

/// How the probe ended, as the sending socket saw it.
struct ProbeOutcome {
  /// "connected" (TCP handshake done; UDP: an answer came back), "refused" (RST / ICMP port
  /// unreachable), "unreachable" (another ICMP error came back: `error` names it), "timeout"
  /// (nothing came back within the bound), "sent" (UDP: every datagram left the socket, no
  /// error came back), "error" (the send itself failed locally: see `error`).
  std::string result;
  /// strerror text of a local or ICMP-reported error ("Network is unreachable"), "" otherwise.
  std::string error;
  int error_number = 0;  // errno, 0 when none
  /// The namespace the probe was sent from and its place in the snapshot.
  std::string netns_path;
  std::string place;
  uint32_t packets = 0;  // probes sent (TCP: 1 connect; UDP: datagrams)
  uint16_t sport = 0;    // the probe's source port (the walk uses the same)
  uint32_t size = 0;     // UDP/ICMP datagram size in bytes (IP total length), 0 for TCP
  double elapsed_ms = 0;
};

/// Everything `--live` observed for one query.
struct LiveEvidence {
  ProbeOutcome probe;
  std::vector<KernelDrop> kernel;
  std::vector<DatapathDrop> datapath;
  /// Whether the sarena datapath's event ring was read (false: not pinned, not a sarena node).
  bool datapath_read = false;
  /// How long evidence was collected after the probe ended, ms.
  double window_ms = 0;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_LIVE_EVIDENCE_H_
