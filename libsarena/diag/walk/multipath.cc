// Multipath routes: the kernel hashes each flow onto one live next hop (fib_select_multipath,
// weighted by the next hops' weights; the fields hashed are net.ipv4.fib_multipath_hash_policy's).
// The walk cannot know which one a given flow takes, so it walks every next hop as a branch of
// its own and, when only some of them fail, says which share of flows dies and where.
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

void Walker::TransmitMultipath(const Where& w, Vertex v, const RouteResult& route, Flight f,
                               Branch br) {
  const model::SysctlValue policy = w.ns->netstack.sysctls().FibMultipathHashPolicy();
  uint64_t total = 0;
  std::vector<uint32_t> weights;
  std::vector<std::string> hops;
  for (const model::Nexthop& nh : route.nexthops) {
    weights.push_back(nh.weight);
    total += nh.weight;
    hops.push_back(absl::StrCat(nh.gateway ? absl::StrCat("via ", nh.gateway->to_string(), " ")
                                           : std::string(),
                                "dev ", nh.dev, " weight ", nh.weight));
  }
  Suspect(v, Level::kInfo, "multipath_route",
          absl::StrCat("route '", route.route ? route.route->ToString() : route.ToString(), "' has ", route.nexthops.size(),
                       " live next hops (", absl::StrJoin(hops, ", "),
                       "): the kernel hashes each flow onto one of them by ",
                       model::MultipathHashPolicyText(policy.value),
                       policy.known ? "" : " (net.ipv4.fib_multipath_hash_policy not in the "
                                           "snapshot: the kernel default assumed)",
                       "; every next hop is walked"));
  std::vector<std::function<void()>> branches;
  for (const model::Nexthop& nh : route.nexthops) {
    branches.push_back([this, &w, v, &route, nh, total, f, br]() mutable {
      RouteResult one = route;
      one.nexthops = {nh};
      one.oif = nh.dev;
      one.gateway = nh.gateway;
      Hop bh = graph_.hop(v);
      bh.id = absl::StrCat(bh.id, "@", nh.dev);
      bh.suspicions.clear();
      Vertex b = AddHop(
          bh, Prev{v, absl::StrFormat("multipath: %sdev %s (weight %d of %d)",
                                      nh.gateway ? absl::StrCat("via ", nh.gateway->to_string(), " ")
                                                 : std::string(),
                                      nh.dev, nh.weight, total)});
      Transmit(w, b, one, std::move(f), std::move(br));
    });
  }
  WalkBranches(v, std::move(branches), weights);
}

}  // namespace sarena::diag::internal
