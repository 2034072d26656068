#include "libsarena/model/neigh.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace sarena::model {

NeighCheck CheckNeighborLladdr(const Neighbor& n, const Interface& receiver,
                               absl::string_view receiver_where) {
  NeighCheck out;
  if (!n.lladdr || !receiver.mac || !receiver.master.empty()) return out;
  if (*n.lladdr == *receiver.mac) {
    out.fit = NeighFit::kMatches;
    return out;
  }
  bool fixed = HasAny(n.state, NeighState::kPermanent | NeighState::kNoArp);
  out.fit = fixed ? NeighFit::kStaleStatic : NeighFit::kStaleDynamic;
  std::string state = absl::AsciiStrToLower(n.StateNames());
  out.detail = absl::StrCat(
      state.empty() ? "" : absl::StrCat(state, " "), "neighbour entry ", n.dst.to_string(),
      " lladdr ", net::FormatMac(*n.lladdr), " on ", n.dev, ", but ", receiver.name, " of ",
      receiver_where, " has ", net::FormatMac(*receiver.mac),
      ": the frames go to a MAC nobody on the link has and the receiver drops them as "
      "PACKET_OTHERHOST",
      fixed ? " (a static entry is never re-resolved: it stays broken until it is replaced or "
              "deleted)"
            : " until the kernel re-resolves the entry (up to ~45 s for REACHABLE)");
  return out;
}

}  // namespace sarena::model
