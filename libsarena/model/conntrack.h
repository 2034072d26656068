// The conntrack entries one traced connection makes on its way: in which network namespaces the
// request passed (a reply there is ESTABLISHED) and the NAT bindings it got there (a reply is
// translated back in the same namespace). Source: net/netfilter/nf_conntrack_core.c (the reply
// direction of a tuple), nf_nat_core.c (nf_nat_packet applies the binding's inverse to replies),
// nf_conntrack_proto_tcp.c (a SYN-ACK without a SYN is INVALID).
#ifndef LIBSARENA_MODEL_CONNTRACK_H_
#define LIBSARENA_MODEL_CONNTRACK_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/packet.h"

namespace sarena::model {

/// One NAT binding: in namespace `netns` (a NetnsState id, "node:<n>" or "pod:<ns>/<name>") the
/// request `before` left as `after`. `dnat`: the destination was rewritten (a Service's DNAT,
/// nat PREROUTING/OUTPUT); `snat`: the source (MASQUERADE/SNAT, nat POSTROUTING).
struct NatBinding {
  std::string netns;
  Packet before;
  Packet after;
  bool dnat = false;
  bool snat = false;
};

/// The conntrack view of one connection as the walk follows its request and then its reply.
/// A value type: a branch of a Service fan-out copies it.
class Conntrack {
 public:
  /// The request passed namespace `netns` (its conntrack saw it).
  void SawRequest(absl::string_view netns) { request_netns_.emplace(netns); }
  bool SawRequestIn(absl::string_view netns) const { return request_netns_.contains(netns); }

  /// Records that in `netns` the request `before` was translated to `after`.
  void AddDnat(absl::string_view netns, const Packet& before, const Packet& after);
  void AddSnat(absl::string_view netns, const Packet& before, const Packet& after);

  /// The state netfilter's conntrack match sees for a packet of `proto` in `netns`: NEW for the
  /// request; for the reply ESTABLISHED where the request passed, else (a conntrack that never
  /// saw the request) INVALID for TCP (a SYN-ACK from state NONE) and NEW for other protocols.
  CtState StateOf(absl::string_view netns, uint8_t proto, bool reply) const;

  /// A reply in `netns`: the inverse of that namespace's SNAT bindings (its destination back to
  /// the request's original source) / of its DNAT bindings (its source back to the request's
  /// original destination). Bindings with port 0 (ICMP, or no port rewrite) match any port.
  void UnSnat(absl::string_view netns, Packet* reply) const;
  void UnDnat(absl::string_view netns, Packet* reply) const;

  const std::vector<NatBinding>& bindings() const { return bindings_; }

 private:
  std::vector<NatBinding> bindings_;
  absl::flat_hash_set<std::string> request_netns_;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_CONNTRACK_H_
