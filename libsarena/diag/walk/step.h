// The path walk's steps (not installed): a stage of the walk (walker.h) does its work at one
// place and returns the steps that follow (Next) instead of calling the next stage; the loop
// (Walker::RunSteps, loop.cc) runs them depth-first from an explicit stack. A Step names the
// stage to run next and carries that stage's arguments; Enter and Join are the loop's own
// steps around the branches of a fan-out (Walker::Fan, hops.cc).
#ifndef LIBSARENA_DIAG_WALK_STEP_H_
#define LIBSARENA_DIAG_WALK_STEP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "libsarena/diag/walk/flight.h"

namespace sarena::diag::internal {

struct Step;

// One struct per stage: its arguments (the stage, walker.h, takes the struct by reference). A
// device is a pointer into the snapshot (it outlives the walk).
struct OriginateStep {
  Where w;
  Flight f;
  Branch br;
  Prev prev;
};
struct OriginateRoutedStep {
  Where w;
  Vertex v;
  Flight f;
  Branch br;
  bool service_done = false;
};
struct OriginateViaStep {
  Where w;
  Vertex v;
  RouteResult route;
  Flight f;
  Branch br;
  bool service_done = false;
};
struct ReceiveStep {
  Where w;
  std::string iif;
  Flight f;
  Branch br;
  Prev prev;
};
// Ingress, ProcessInput, ContinueInput and LocalDelivery take the same arguments.
struct InputStep {
  enum class Stage { kIngress, kProcessInput, kContinueInput, kLocalDelivery };
  Stage stage;
  Where w;
  Vertex v;
  std::string iif;
  Flight f;
  Branch br;
};
struct ForwardStep {
  Where w;
  Vertex v;
  std::string iif;
  RouteResult route;
  Flight f;
  Branch br;
};
struct ForwardRoutedStep {
  Where w;
  Vertex v;
  std::string iif;
  RouteResult route;
  Packet pkt;
  Flight f;
  Branch br;
};
// Decapsulate, Serve and StartReply take the same arguments.
struct LocalStep {
  enum class Stage { kDecapsulate, kServe, kStartReply };
  Stage stage;
  Where w;
  Vertex v;
  Flight f;
  Branch br;
};
struct TransmitStep {
  Where w;
  Vertex v;
  RouteResult route;
  Flight f;
  Branch br;
};
// Dispatch and Encapsulate: out of `dev` (the egress or tunnel device) by `route`.
struct DeviceStep {
  enum class Stage { kDispatch, kEncapsulate };
  Stage stage;
  Where w;
  Vertex v;
  const Interface* dev = nullptr;
  RouteResult route;
  Flight f;
  Branch br;
};
struct SendOuterStep {
  Where w;
  Vertex v;
  const Interface* tun = nullptr;
  std::string kind;
  uint32_t overhead = 0;
  Packet outer;
  std::optional<net::Ipv4> outer_src;
  bool outer_fragments = false;
  Flight f;
  Branch br;
  std::string label;
  std::optional<RouteResult> via;
};
// EncapsulateWithKey and Redirect: a plugin's action.
struct ActionStep {
  enum class Stage { kEncapsulateWithKey, kRedirect };
  Stage stage;
  Where w;
  Vertex v;
  PluginAction a;
  Flight f;
  Branch br;
};
// Underlay, VethPeer, VethToNode, VethPeerByAddress and BridgePort: out of `oif` toward
// `nexthop` (`label`: Underlay's and BridgePort's link label).
struct LinkStep {
  enum class Stage { kUnderlay, kVethPeer, kVethToNode, kVethPeerByAddress, kBridgePort };
  Stage stage;
  Where w;
  Vertex v;
  const Interface* oif = nullptr;
  net::Ipv4 nexthop;
  Flight f;
  Branch br;
  std::string label;
};
struct BridgeForwardStep {
  Where node;
  std::string in_port;
  const Interface* bridge = nullptr;
  net::Ipv4 nexthop;
  Flight f;
  Branch br;
  Prev prev;
};
struct DeliverToPodStep {
  const model::Pod* pod = nullptr;
  std::string ifname;
  Flight f;
  Branch br;
  Prev prev;
  PluginAction action;
};
struct ExternalStep {
  net::Ipv4 ip;
  Flight f;
  Branch br;
  Prev prev;
};

// A fan-out's branches share one Fork (Walker::Fan): the hops each branch added, the
// once-per-branch checks made before the fork (each branch starts from them), the walk width
// inside the branches and after the fork, and a multipath route's next-hop weights (empty: a
// Service's backends).
struct Fork {
  std::vector<std::vector<Vertex>> sets;
  absl::flat_hash_set<std::string> seen;
  size_t width = 1;
  size_t width_after = 1;
  std::vector<uint32_t> weights;
};
// Before branch `index` of `fork`: the state each branch starts from (Walker::Enter).
struct EnterStep {
  std::shared_ptr<Fork> fork;
  size_t index = 0;
};
// After the last branch of `fork`: FATALs of some but not all branches become CRITICAL
// (Walker::Join).
struct JoinStep {
  std::shared_ptr<Fork> fork;
};
// The first step of a branch that starts with a hop of its own (Walker::BranchHop): next hop
// `dev` of a multipath route (ForkNexthops: a clone of hop `at`), or a Service backend
// (WalkServiceTargets: `clone`, a hop after `at`, or `at` itself with `pkt` when the Service has
// one backend). `cont` is the branch's next step; the loop gives it the branch's hop.
struct NexthopBranchStep {
  Vertex at;
  std::string dev;
  std::string label;
  std::shared_ptr<Step> cont;
};
struct ServiceBranchStep {
  Vertex at;
  std::optional<Hop> clone;
  std::string label;
  Packet pkt;
  std::string dnat;  // the INFO dnat message
  std::shared_ptr<Step> cont;
};

using StepVariant =
    std::variant<OriginateStep, OriginateRoutedStep, OriginateViaStep, ReceiveStep, InputStep,
                 ForwardStep, ForwardRoutedStep, LocalStep, TransmitStep, DeviceStep, SendOuterStep,
                 ActionStep, LinkStep, BridgeForwardStep, DeliverToPodStep, ExternalStep, EnterStep,
                 JoinStep, NexthopBranchStep, ServiceBranchStep>;
// A struct, not an alias, so that a branch's first step can hold the step after it.
struct Step : StepVariant {
  using StepVariant::StepVariant;
};

// What a stage returns: the steps that follow, in walk order (the first runs first, with all
// the steps it leads to, before the second); empty when the path ends there.
using Next = std::vector<Step>;

// The hop of a stage's step (`v`, for the stages that have one).
inline void SetVertex(Step& s, Vertex v) {
  std::visit(
      [v](auto& x) {
        if constexpr (requires { x.v = v; }) x.v = v;
      },
      static_cast<StepVariant&>(s));
}
// The route of a stage's step: one next hop of a multipath route (SendOuter's `via`).
inline void SetRoute(Step& s, const RouteResult& r) {
  std::visit(
      [&r](auto& x) {
        if constexpr (requires { x.via = r; }) {
          x.via = r;
        } else if constexpr (requires { x.route = r; }) {
          x.route = r;
        }
      },
      static_cast<StepVariant&>(s));
}

inline Next Done() { return {}; }
// The one step that follows, built in place.
template <typename S>
Next Then(S&& s) {
  Next n;
  n.emplace_back(std::forward<S>(s));
  return n;
}

}  // namespace sarena::diag::internal

#endif  // LIBSARENA_DIAG_WALK_STEP_H_
