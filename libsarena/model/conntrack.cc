#include "libsarena/model/conntrack.h"

namespace sarena::model {

void Conntrack::AddDnat(absl::string_view netns, const Packet& before, const Packet& after) {
  bindings_.push_back(NatBinding{std::string(netns), before, after, true, false});
}

void Conntrack::AddSnat(absl::string_view netns, const Packet& before, const Packet& after) {
  bindings_.push_back(NatBinding{std::string(netns), before, after, false, true});
}

CtState Conntrack::StateOf(absl::string_view netns, uint8_t proto, bool reply) const {
  if (!reply) return CtState::kNew;
  if (request_netns_.contains(netns)) return CtState::kEstablished;
  return proto == kProtoTcp ? CtState::kInvalid : CtState::kNew;
}

void Conntrack::UnSnat(absl::string_view netns, Packet* reply) const {
  for (const NatBinding& b : bindings_) {
    if (!b.snat || b.netns != netns) continue;
    if (reply->dst == b.after.src && (b.after.sport == 0 || reply->dport == b.after.sport)) {
      reply->dst = b.before.src;
      reply->dport = b.before.sport;
    }
  }
}

void Conntrack::UnDnat(absl::string_view netns, Packet* reply) const {
  for (const NatBinding& b : bindings_) {
    if (!b.dnat || b.netns != netns) continue;
    if (reply->src == b.after.dst && (b.after.dport == 0 || reply->sport == b.after.dport)) {
      reply->src = b.before.dst;
      reply->sport = b.before.dport;
    }
  }
}

}  // namespace sarena::model
