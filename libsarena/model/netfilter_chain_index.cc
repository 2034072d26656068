// The index of a long chain (Chain::by_dst, by_port, generic): built once after parsing, asked
// by the evaluator for the next rule that can match a packet.
#include <algorithm>

#include "libsarena/model/netfilter_rules.h"

namespace sarena::model::internal {

void IndexChain(Chain* c) {
  c->indexed = false;
  c->by_dst.clear();
  c->by_port.clear();
  c->generic.clear();
  if (c->rules.size() < 32) return;
  for (uint32_t i = 0; i < c->rules.size(); ++i) {
    const IptRule& r = c->rules[i];
    bool keyed = false;
    for (const Match& m : r.matches) {
      if (m.kind == MatchKind::kDst && !m.invert && m.b == 0xffffffffu) {
        c->by_dst[m.a].push_back(i);
        keyed = true;
        break;
      }
    }
    if (!keyed) {
      for (const Match& m : r.matches) {
        if (m.kind == MatchKind::kDport && !m.invert && m.a == m.b) {
          c->by_port[(static_cast<uint32_t>(m.proto) << 16) | m.a].push_back(i);
          keyed = true;
          break;
        }
      }
    }
    if (!keyed) c->generic.push_back(i);
  }
  c->indexed = c->generic.size() < c->rules.size();
  if (!c->indexed) c->generic.clear();
}

size_t NextRule(const Chain& c, size_t from, const Packet& p) {
  if (!c.indexed) return from;
  size_t best = c.rules.size();
  auto g = std::lower_bound(c.generic.begin(), c.generic.end(), static_cast<uint32_t>(from));
  if (g != c.generic.end()) best = *g;
  auto first_at = [&](const absl::flat_hash_map<uint32_t, std::vector<uint32_t>>& m,
                      uint32_t key) {
    if (m.empty()) return;
    auto it = m.find(key);
    if (it == m.end()) return;
    auto d = std::lower_bound(it->second.begin(), it->second.end(), static_cast<uint32_t>(from));
    if (d != it->second.end() && *d < best) best = *d;
  };
  first_at(c.by_dst, p.dst.to_uint());
  first_at(c.by_port, (static_cast<uint32_t>(p.proto) << 16) | p.dport);
  return best;
}

}  // namespace sarena::model::internal
