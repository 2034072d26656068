// Multipath routes: the kernel hashes each flow onto one live next hop (fib_select_multipath,
// weighted by the next hops' weights; the fields hashed are net.ipv4.fib_multipath_hash_policy's).
// The walk cannot know which one a given flow takes, so it forks right after the route lookup
// and walks every next hop as a branch of its own; when only some of them fail it says which
// share of flows dies and where (Fan, Join).
#include <algorithm>

#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {
namespace {

std::string NexthopText(const model::Nexthop& nh) {
  return absl::StrCat(nh.gateway ? absl::StrCat("via ", nh.gateway->to_string(), " ") : "", "dev ",
                      nh.dev);
}

}  // namespace

std::optional<Next> Walker::ForkNexthops(const Where& w, Vertex v, const RouteResult& route,
                                         absl::FunctionRef<Step()> make_cont) {
  if (route.nexthops.size() <= 1) return std::nullopt;
  const Step cont = make_cont();
  const model::SysctlValue policy = w.ns->netstack.sysctls().FibMultipathHashPolicy();
  uint64_t total = 0;
  std::vector<std::string> hops;
  for (const model::Nexthop& nh : route.nexthops) {
    total += nh.weight;
    hops.push_back(absl::StrCat(NexthopText(nh), " weight ", nh.weight));
  }
  // The next hops walked: all of them, unless this route or the forks before it make too many
  // branches; then the heaviest one alone (first among equals, as listed).
  std::vector<const model::Nexthop*> walked;
  std::string limit;
  if (route.nexthops.size() > kMaxNexthopBranches ||
      walk_width_ * route.nexthops.size() > kMaxWalkWidth) {
    const model::Nexthop* heaviest = &route.nexthops.front();
    for (const model::Nexthop& nh : route.nexthops) {
      if (nh.weight > heaviest->weight) heaviest = &nh;
    }
    walked.push_back(heaviest);
    limit = absl::StrCat("; only ", NexthopText(*heaviest), " is walked (",
                         route.nexthops.size() > kMaxNexthopBranches
                             ? absl::StrCat("more than ", kMaxNexthopBranches, " next hops")
                             : absl::StrCat("the walk already has ", walk_width_,
                                            " branches; at most ", kMaxWalkWidth),
                         "): the others are not checked");
  } else {
    for (const model::Nexthop& nh : route.nexthops) walked.push_back(&nh);
  }
  Suspect(v, Level::kInfo, "multipath_route",
          absl::StrCat("route '", route.route ? route.route->ToString() : route.ToString(),
                       "' has ", route.nexthops.size(), " live next hops (",
                       absl::StrJoin(hops, ", "),
                       "): the kernel hashes each flow onto one of them by ",
                       model::MultipathHashPolicyText(policy.value),
                       policy.known ? "" : " (net.ipv4.fib_multipath_hash_policy not in the "
                                           "snapshot: the kernel default assumed)",
                       limit.empty() ? "; every next hop is walked" : limit));
  // Each branch: a clone of hop `v` for its next hop (BranchHop), then `cont` with the
  // one-next-hop route.
  std::vector<Step> branches;
  std::vector<uint32_t> weights;
  for (const model::Nexthop* nh : walked) {
    weights.push_back(nh->weight);
    RouteResult one = route;
    one.nexthops = {*nh};
    one.oif = nh->dev;
    one.gateway = nh->gateway;
    auto next = std::make_shared<Step>(cont);
    SetRoute(*next, one);
    branches.push_back(NexthopBranchStep{
        v, nh->dev,
        absl::StrFormat("multipath: %s (weight %d of %d)", NexthopText(*nh), nh->weight, total),
        std::move(next)});
  }
  const size_t width = walk_width_ * branches.size();
  return Fan(std::move(branches), width, std::move(weights));
}

}  // namespace sarena::diag::internal
