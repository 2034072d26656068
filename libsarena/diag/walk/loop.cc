// The walk's loop: the steps (step.h) run depth-first from an explicit stack, each by the stage
// it names, in place on the stack. A stage returns the steps that follow; the loop drops the
// step it ran and pushes them in reverse, so the first runs next, with every step it leads to,
// before the second (the order the hops are numbered and reported in). A fan-out's Enter / Join
// steps (hops.cc) keep each branch's state.
#include <type_traits>

#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ---- the steps that name one of several stages ----

template <>
absl::StatusOr<Next> Walker::RunStage(InputStep& s) {
  switch (s.stage) {
    case InputStep::Stage::kIngress:
      return Ingress(s);
    case InputStep::Stage::kProcessInput:
      return ProcessInput(s);
    case InputStep::Stage::kContinueInput:
      return ContinueInput(s);
    case InputStep::Stage::kLocalDelivery:
      return LocalDelivery(s);
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStage(LocalStep& s) {
  switch (s.stage) {
    case LocalStep::Stage::kDecapsulate:
      return Decapsulate(s);
    case LocalStep::Stage::kServe:
      return Serve(s);
    case LocalStep::Stage::kStartReply:
      return StartReply(s);
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStage(DeviceStep& s) {
  switch (s.stage) {
    case DeviceStep::Stage::kDispatch:
      return Dispatch(s);
    case DeviceStep::Stage::kEncapsulate:
      return Encapsulate(s);
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStage(ActionStep& s) {
  switch (s.stage) {
    case ActionStep::Stage::kEncapsulateWithKey:
      return EncapsulateWithKey(s);
    case ActionStep::Stage::kRedirect:
      return Redirect(s);
  }
  return Done();
}

template <>
absl::StatusOr<Next> Walker::RunStage(LinkStep& s) {
  switch (s.stage) {
    case LinkStep::Stage::kUnderlay:
      return Underlay(s);
    case LinkStep::Stage::kVethPeer:
      return VethPeer(s);
    case LinkStep::Stage::kVethToNode:
      return VethToNode(s);
    case LinkStep::Stage::kVethPeerByAddress:
      return VethPeerByAddress(s);
    case LinkStep::Stage::kBridgePort:
      return BridgePort(s);
  }
  return Done();
}

// ---- one step, in place (after the specializations it instantiates) ----

absl::StatusOr<Next> Walker::RunStep(Step& step) {
  return std::visit(
      [this](auto& s) -> absl::StatusOr<Next> {
        using S = std::remove_cvref_t<decltype(s)>;
        if constexpr (std::is_same_v<S, OriginateStep>) return Originate(s);
        if constexpr (std::is_same_v<S, OriginateRoutedStep>) return OriginateRouted(s);
        if constexpr (std::is_same_v<S, OriginateViaStep>) return OriginateVia(s);
        if constexpr (std::is_same_v<S, ReceiveStep>) return Receive(s);
        if constexpr (std::is_same_v<S, ForwardStep>) return Forward(s);
        if constexpr (std::is_same_v<S, ForwardRoutedStep>) return ForwardRouted(s);
        if constexpr (std::is_same_v<S, TransmitStep>) return Transmit(s);
        if constexpr (std::is_same_v<S, SendOuterStep>) return SendOuter(s);
        if constexpr (std::is_same_v<S, BridgeForwardStep>) return BridgeForward(s);
        if constexpr (std::is_same_v<S, DeliverToPodStep>) return DeliverToPod(s);
        if constexpr (std::is_same_v<S, ExternalStep>) return External(s);
        if constexpr (std::is_same_v<S, InputStep> || std::is_same_v<S, LocalStep> ||
                      std::is_same_v<S, DeviceStep> || std::is_same_v<S, ActionStep> ||
                      std::is_same_v<S, LinkStep>) {
          return RunStage(s);
        }
        // The fan-out's own steps (hops.cc).
        if constexpr (std::is_same_v<S, EnterStep>) Enter(s);
        if constexpr (std::is_same_v<S, JoinStep>) Join(s);
        if constexpr (std::is_same_v<S, NexthopBranchStep> ||
                      std::is_same_v<S, ServiceBranchStep>) {
          return BranchHop(s);
        }
        return Done();
      },
      static_cast<StepVariant&>(step));
}

// ---- the loop ----

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
    // The stage runs on the top of the stack, which is dropped only once it has returned (and
    // nothing is pushed before that).
    absl::StatusOr<Next> next = RunStep(stack.back());
    stack.pop_back();
    if (!next.ok()) return next.status();
    for (auto it = next->rbegin(); it != next->rend(); ++it) stack.push_back(std::move(*it));
  }
  return absl::OkStatus();
}

}  // namespace sarena::diag::internal
