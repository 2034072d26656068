// The walk's loop: the steps (step.h) run depth-first from an explicit stack, each by the stage
// it names. A stage returns the steps that follow; the loop pushes them in reverse, so the first
// runs next, with every step it leads to, before the second (the order the hops are numbered
// and reported in). A fan-out's Enter / Join steps (hops.cc) keep each branch's state.
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ---- one step: the stage it names ----

template <>
absl::StatusOr<Next> Walker::RunStep(OriginateStep& s) {
  return Originate(s.w, std::move(s.f), std::move(s.br), s.prev);
}

template <>
absl::StatusOr<Next> Walker::RunStep(OriginateRoutedStep& s) {
  return OriginateRouted(s.w, s.v, std::move(s.f), std::move(s.br), s.service_done);
}

template <>
absl::StatusOr<Next> Walker::RunStep(OriginateViaStep& s) {
  return OriginateVia(s.w, s.v, s.route, std::move(s.f), std::move(s.br), s.service_done);
}

template <>
absl::StatusOr<Next> Walker::RunStep(ReceiveStep& s) {
  return Receive(s.w, s.iif, std::move(s.f), std::move(s.br), s.prev);
}

template <>
absl::StatusOr<Next> Walker::RunStep(InputStep& s) {
  switch (s.stage) {
    case InputStep::Stage::kIngress:
      return Ingress(s.w, s.v, s.iif, std::move(s.f), std::move(s.br));
    case InputStep::Stage::kProcessInput:
      return ProcessInput(s.w, s.v, s.iif, std::move(s.f), std::move(s.br));
    case InputStep::Stage::kContinueInput:
      return ContinueInput(s.w, s.v, s.iif, std::move(s.f), std::move(s.br));
    case InputStep::Stage::kLocalDelivery:
      return LocalDelivery(s.w, s.v, s.iif, std::move(s.f), std::move(s.br));
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(ForwardStep& s) {
  return Forward(s.w, s.v, s.iif, s.route, std::move(s.f), std::move(s.br));
}

template <>
absl::StatusOr<Next> Walker::RunStep(ForwardRoutedStep& s) {
  return ForwardRouted(s.w, s.v, s.iif, s.route, std::move(s.pkt), std::move(s.f), std::move(s.br));
}

template <>
absl::StatusOr<Next> Walker::RunStep(LocalStep& s) {
  switch (s.stage) {
    case LocalStep::Stage::kDecapsulate:
      return Decapsulate(s.w, s.v, std::move(s.f), std::move(s.br));
    case LocalStep::Stage::kServe:
      return Serve(s.w, s.v, std::move(s.f), std::move(s.br));
    case LocalStep::Stage::kStartReply:
      return StartReply(s.w, s.v, s.f, std::move(s.br));
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(TransmitStep& s) {
  return Transmit(s.w, s.v, s.route, std::move(s.f), std::move(s.br));
}

template <>
absl::StatusOr<Next> Walker::RunStep(DeviceStep& s) {
  switch (s.stage) {
    case DeviceStep::Stage::kDispatch:
      return Dispatch(s.w, s.v, *s.dev, s.route, std::move(s.f), std::move(s.br));
    case DeviceStep::Stage::kEncapsulate:
      return Encapsulate(s.w, s.v, *s.dev, s.route, std::move(s.f), std::move(s.br));
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(SendOuterStep& s) {
  return SendOuter(s.w, s.v, *s.tun, s.kind, s.overhead, std::move(s.outer), s.outer_src,
                   s.outer_fragments, std::move(s.f), std::move(s.br), std::move(s.label),
                   s.via ? &*s.via : nullptr);
}

template <>
absl::StatusOr<Next> Walker::RunStep(ActionStep& s) {
  switch (s.stage) {
    case ActionStep::Stage::kEncapsulateWithKey:
      return EncapsulateWithKey(s.w, s.v, s.a, std::move(s.f), std::move(s.br));
    case ActionStep::Stage::kRedirect:
      return Redirect(s.w, s.v, s.a, std::move(s.f), std::move(s.br));
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(LinkStep& s) {
  switch (s.stage) {
    case LinkStep::Stage::kUnderlay:
      return Underlay(s.w, s.v, *s.oif, s.nexthop, std::move(s.f), std::move(s.br), s.label);
    case LinkStep::Stage::kVethPeer:
      return VethPeer(s.w, s.v, *s.oif, s.nexthop, std::move(s.f), std::move(s.br));
    case LinkStep::Stage::kVethToNode:
      return VethToNode(s.w, s.v, *s.oif, s.nexthop, std::move(s.f), std::move(s.br));
    case LinkStep::Stage::kVethPeerByAddress:
      return VethPeerByAddress(s.w, s.v, *s.oif, s.nexthop, std::move(s.f), std::move(s.br));
    case LinkStep::Stage::kBridgePort:
      return BridgePort(s.w, s.v, *s.oif, s.nexthop, std::move(s.f), std::move(s.br), s.label);
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(BridgeForwardStep& s) {
  return BridgeForward(s.node, s.in_port, *s.bridge, s.nexthop, std::move(s.f), std::move(s.br),
                       s.prev);
}

template <>
absl::StatusOr<Next> Walker::RunStep(DeliverToPodStep& s) {
  return DeliverToPod(*s.pod, s.ifname, std::move(s.f), std::move(s.br), s.prev, s.action);
}

template <>
absl::StatusOr<Next> Walker::RunStep(ExternalStep& s) {
  return External(s.ip, std::move(s.f), std::move(s.br), s.prev);
}

// ---- the fan-out's own steps (hops.cc) ----

template <>
absl::StatusOr<Next> Walker::RunStep(EnterStep& s) {
  Enter(s);
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(JoinStep& s) {
  Join(s);
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStep(NexthopBranchStep& s) {
  return BranchHop(s);
}

template <>
absl::StatusOr<Next> Walker::RunStep(ServiceBranchStep& s) {
  return BranchHop(s);
}

// ---- the loop (after the specializations it instantiates) ----

absl::Status Walker::Run() {
  pctx_.need = [this](const Where& w, Vertex v, SnapshotInput in, absl::string_view what,
                      Absent then) { return Need(w, v, in, what, then); };
  SARENA_ASSIGN_OR_RETURN(Next first, Start());
  return RunSteps(std::move(first));
}

absl::Status Walker::RunSteps(Next first) {
  std::vector<Step> stack;
  for (auto it = first.rbegin(); it != first.rend(); ++it) stack.push_back(std::move(*it));
  while (!stack.empty()) {
    Step step = std::move(stack.back());
    stack.pop_back();
    absl::StatusOr<Next> next =
        std::visit([this](auto& s) { return RunStep(s); }, static_cast<StepVariant&>(step));
    if (!next.ok()) return next.status();
    for (auto it = next->rbegin(); it != next->rend(); ++it) stack.push_back(std::move(*it));
  }
  return absl::OkStatus();
}

}  // namespace sarena::diag::internal
