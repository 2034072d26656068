// A real, bounded probe for `sarena-diag trace --live`: one TCP SYN (a non-blocking connect)
// or a few UDP datagrams of a given size, sent from inside a network namespace (on a helper
// thread that setns(2)s into it; the caller never changes namespace).
// Source: connect(2), udp(7) (connected sockets and ICMP errors, IP_MTU_DISCOVER), tcp(7).
#ifndef LIBSARENA_LIVE_PROBE_H_
#define LIBSARENA_LIVE_PROBE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/model/live_evidence.h"
#include "libsarena/net/ip.h"

namespace sarena::live {

struct ProbeOptions {
  /// Namespace to send from: a path ("/proc/self/ns/net", "/var/run/netns/pod1") or a name.
  std::string netns;
  net::Ipv4 src;       // bound as the source address (must be configured in `netns`)
  net::Ipv4 dst;
  uint16_t dport = 0;  // host order, 1..65535
  uint8_t proto = 6;   // 6 TCP (one SYN) or 17 UDP
  /// UDP: IP total length of each datagram, 28..65535, or diag::kPacketSizeMtu (0) = full
  /// size: the MTU of the route to `dst` (IP_MTU of the connected socket; the outgoing
  /// device's MTU unless the route sets one). DF is set, so a datagram over the route's MTU
  /// fails locally (EMSGSIZE) instead of being fragmented. outcome.size is the size sent.
  uint32_t size = 0;
  uint32_t count = 3;        // UDP datagrams, 1..16 (TCP: always one connect)
  uint32_t timeout_ms = 800; // how long to wait for the handshake / an error, 1..5000
};

/// What the probe saw, plus when it ended (CLOCK_MONOTONIC ns, the clock of the drop tracer's
/// timestamps): kernel drops after a successful handshake are the teardown, not the probe.
struct ProbeResult {
  model::ProbeOutcome outcome;
  uint64_t ended_ns = 0;
};

/// Sends the probe. outcome.result: "connected" (TCP handshake done, then the socket is closed),
/// "refused" (RST / ICMP port unreachable), "unreachable" (an ICMP error other than port
/// unreachable came back: error names it), "timeout" (nothing within timeout_ms), "sent" (UDP:
/// every datagram left, no error came back), "error" (the send failed locally: error, e.g.
/// "Network is unreachable" with no route, "Message too long" over the MTU).
/// Errors: kInvalidArgument naming the bad option (proto, dport, size, count, timeout_ms);
/// kNotFound / kPermissionDenied entering the namespace; ErrnoStatus for socket()/bind()
/// failures (e.g. kInvalidArgument "bind 10.0.0.9": the address is not in the namespace).
absl::StatusOr<ProbeResult> SendProbe(const ProbeOptions& options);

/// CLOCK_MONOTONIC in ns (the clock of bpf_ktime_get_ns).
uint64_t MonotonicNs();

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_PROBE_H_
