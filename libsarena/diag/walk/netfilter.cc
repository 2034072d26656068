// Netfilter: a hook's outcomes to a verdict and suspicions (RunHook: SortOutcomes,
// ReportNfDrops); conntrack state
// and un-NAT of replies (SetCtState, UnSnat, UnDnat).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Netfilter.

NfPass Walker::RunHook(const Where& w, Vertex v, NfHook hook, const Packet& pkt,
                       absl::string_view iif, absl::string_view oif,
                       std::optional<net::Ipv4> nexthop) {
  NfPass pass;
  if (w.ns == nullptr || !w.ns->netfilter) {
    if (!w.in_pod()) Need(w, v, SnapshotInput::kIptables, "netfilter (iptables)");
    NfOutcome o;
    o.packet = pkt;
    pass.accepted.push_back(std::move(o));
    return pass;
  }
  model::NfContext ctx;
  ctx.iif = iif;
  ctx.oif = oif;
  ctx.nexthop = nexthop;
  ctx.netstack = &w.ns->netstack;
  std::vector<NfOutcome> outs = w.ns->netfilter->EvaluateHook(hook, pkt, ctx);
  NfDrops drops = SortOutcomes(w, v, hook, outs, &pass);
  if (drops.first && pass.accepted.empty() && RestsOnNetstack(*drops.first) &&
      !Need(w, v, SnapshotInput::kAddrs, "the address MASQUERADE picks", Absent::kEnd)) {
    pass.dropped = true;  // the path ends here, unconcluded
    return pass;
  }
  ReportNfDrops(v, hook, pkt, drops, &pass);
  return pass;
}

// The accepted outcomes (NFQUEUE counts as accepted) go to pass->accepted, certain ones first,
// then by probability; the model's notes become INFOs; drops are summed.
Walker::NfDrops Walker::SortOutcomes(const Where& w, Vertex v, NfHook hook,
                                     const std::vector<NfOutcome>& outs, NfPass* pass) {
  NfDrops d;
  for (const NfOutcome& o : outs) {
    for (const model::NfNote& n : o.notes) {
      std::string key = absl::StrCat("nfnote|", w.ns->id, "|", n.rule.line, "|", n.what);
      InfoOnce(v, key, "netfilter_unknown",
               absl::StrCat("netfilter: ", model::ToString(n.kind), " '", n.what, "' at ",
                            n.rule.ToString(), ": ", n.detail));
    }
    if (o.verdict == NfVerdict::kAccept) {
      pass->accepted.push_back(o);
    } else if (o.verdict == NfVerdict::kQueue) {
      InfoOnce(v, absl::StrCat("nfqueue|", w.ns->id, "|", model::ToString(hook)),
               "netfilter_unknown",
               absl::StrCat("netfilter ", model::ToString(hook),
                            ": packet queued to user space (NFQUEUE); assumed accepted"));
      pass->accepted.push_back(o);
    } else if (o.certain()) {
      d.certain += o.probability;
      if (!d.first) d.first = &o;
    } else if (!d.first_assumed) {
      d.first_assumed = &o;
    }
  }
  std::stable_sort(pass->accepted.begin(), pass->accepted.end(),
                   [](const NfOutcome& a, const NfOutcome& b) {
                     if (a.certain() != b.certain()) return a.certain();
                     return a.probability > b.probability;
                   });
  return d;
}

// A drop with nothing accepted is FATAL (pass->dropped); a certain drop of some outcomes is
// CRITICAL next to a certain accept, else WARNING; a drop that rests on a match the model
// cannot evaluate is a WARNING naming the assumption.
void Walker::ReportNfDrops(Vertex v, NfHook hook, const Packet& pkt, const NfDrops& d,
                           NfPass* pass) {
  auto describe = [&](const NfOutcome& o) {
    std::string by = o.decided_by ? o.decided_by->ToString() : "chain policy";
    return absl::StrCat(model::ToString(o.verdict), " by ", by);
  };
  if (d.first && pass->accepted.empty()) {
    pass->dropped = true;
    Drop(v, "netfilter_drop",
         absl::StrCat("netfilter ", model::ToString(hook), " drops ", Tuple(pkt), ": ",
                      describe(*d.first)));
  } else if (d.first) {
    bool any_certain_accept = std::any_of(pass->accepted.begin(), pass->accepted.end(),
                                          [](const NfOutcome& o) { return o.certain(); });
    Suspect(v, any_certain_accept ? Level::kCritical : Level::kWarning, "netfilter_drop",
            absl::StrFormat("netfilter %s drops %.0f%% of %s: %s", model::ToString(hook),
                            d.certain * 100, Tuple(pkt), describe(*d.first)));
  } else if (d.first_assumed) {
    if (pass->accepted.empty()) {
      pass->dropped = true;
      Drop(v, "netfilter_drop",
           absl::StrCat("netfilter ", model::ToString(hook), " drops ", Tuple(pkt), ": ",
                        describe(*d.first_assumed),
                        " (depends on a match the model cannot "
                        "evaluate; see the INFO notes)"));
    } else {
      std::vector<std::string> what;
      for (const auto& a : d.first_assumed->assumptions) {
        what.push_back(absl::StrCat(a.assumed_match ? "if '" : "unless '", a.what, "' matches"));
      }
      Suspect(v, Level::kWarning, "netfilter_drop",
              absl::StrCat("netfilter ", model::ToString(hook), " may drop ", Tuple(pkt), " (",
                           absl::StrJoin(what, ", "), "): ", describe(*d.first_assumed)));
    }
  }
}

// The conntrack rules are the model's (model::Conntrack); a namespace the snapshot lacks has
// no conntrack to consult.
void Walker::SetCtState(const Where& w, Packet* p, const Flight& f, const Branch& br) {
  p->ct_state = w.ns == nullptr ? CtState::kNew : br.ct.StateOf(w.ns->id, p->proto, f.reply);
}

void Walker::UnSnat(const Where& w, Packet* p, const Branch& br) {
  if (w.ns != nullptr) br.ct.UnSnat(w.ns->id, p);
}

void Walker::UnDnat(const Where& w, Packet* p, const Branch& br) {
  if (w.ns != nullptr) br.ct.UnDnat(w.ns->id, p);
}

}  // namespace sarena::diag::internal
