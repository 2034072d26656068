#include "libsarena/diag/evidence.h"

#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/diag/codes.h"
#include "libsarena/diag/report.h"
#include "libsarena/diag/report.pb.h"

namespace sarena::diag {
namespace {

constexpr absl::string_view kReasonPrefix = "SKB_DROP_REASON_";

absl::string_view Strip(absl::string_view reason) {
  absl::ConsumePrefix(&reason, kReasonPrefix);
  return reason;
}

std::string Ep(const net::Ipv4& ip, uint16_t port) {
  return port ? absl::StrCat(ip.to_string(), ":", port) : ip.to_string();
}

std::string DescribeKernelPacket(const model::KernelDrop& k) {
  if (k.eth_proto == 0x0806) {
    return absl::StrCat("ARP ", k.sport == 1 ? "request who-has " : "reply ", k.dst.to_string(),
                        " tell ", k.src.to_string());
  }
  if (k.proto == model::kProtoIcmp) {
    return absl::StrFormat("icmp %s -> %s type %d code %d", k.src.to_string(), k.dst.to_string(),
                           k.sport >> 8, k.sport & 0xff);
  }
  std::string s = absl::StrCat(Ep(k.src, k.sport), " -> ", Ep(k.dst, k.dport), "/",
                               model::ProtoName(k.proto));
  if (k.proto == model::kProtoTcp) {
    std::vector<std::string> f;
    if (k.tcp_flags & 0x02) f.push_back("SYN");
    if (k.tcp_flags & 0x10) f.push_back("ACK");
    if (k.tcp_flags & 0x04) f.push_back("RST");
    if (k.tcp_flags & 0x01) f.push_back("FIN");
    if (!f.empty()) absl::StrAppend(&s, " [", absl::StrJoin(f, ","), "]");
  }
  return s;
}

// "node-a" for a node's place, "pod default/web on node-a" for a pod's.
std::string DescribePlace(const std::string& place, const std::string& node) {
  if (absl::StartsWith(place, "pod:")) {
    return absl::StrCat("pod ", place.substr(4), node.empty() ? "" : " on ", node);
  }
  if (absl::StartsWith(place, "node:")) return place.substr(5);
  return "a namespace not in the snapshot";
}

// The hop's place: "node:<node>" for node and service hops, "pod:<ns>/<name>" for pod hops.
std::string HopPlace(const Hop& h) {
  if (h.kind == HopKind::kPod) {
    std::string id = h.id;
    if (size_t at = id.find('@'); at != std::string::npos) id.resize(at);
    if (size_t sh = id.find('#'); sh != std::string::npos) id.resize(sh);
    return absl::StrCat("pod:", id);
  }
  if (h.kind == HopKind::kExternal) return "";
  return absl::StrCat("node:", h.node);
}

// FATAL codes at a hop.
std::vector<std::string> FatalCodes(const Hop& h) {
  std::vector<std::string> out;
  for (const Suspicion& s : h.suspicions) {
    if (s.level == Level::kFatal) out.push_back(s.code);
  }
  return out;
}

bool SamePacket(const model::KernelDrop& k, const Packet& p) {
  if (k.eth_proto != 0x0800) return false;
  auto same = [&](const net::Ipv4& s, const net::Ipv4& d) { return k.src == s && k.dst == d; };
  return same(p.src, p.dst) || same(p.dst, p.src);
}

// The packet a kernel or datapath drop report names: its addresses, ports and protocol.
template <typename DropReport>
model::Packet DroppedPacket(const DropReport& d) {
  model::Packet p;
  p.src = d.src;
  p.dst = d.dst;
  p.sport = d.sport;
  p.dport = d.dport;
  p.proto = d.proto;
  return p;
}

// The path's hops in graph order, and which of their drops a report of the kernel or the
// datapath explained (those are not reported again as model_only).
struct PathHops {
  explicit PathHops(const PathGraph& graph) {
    for (auto v : boost::make_iterator_range(boost::vertices(graph.graph()))) {
      hops.push_back(&graph.hop(v));
    }
    drop_explained.assign(hops.size(), false);
  }
  void MarkExplained(const Hop* h) {
    drop_explained[static_cast<size_t>(std::find(hops.begin(), hops.end(), h) - hops.begin())] =
        true;
  }
  std::vector<const Hop*> hops;
  std::vector<bool> drop_explained;
};

// The hop of the kernel drop's namespace it is best joined to: a drop hop first, then the
// device, then the packet; null when the path never enters that namespace.
const Hop* BestHopFor(const model::KernelDrop& k, const std::vector<const Hop*>& hops) {
  const Hop* best = nullptr;
  int best_score = -1;
  if (k.place.empty()) return best;
  for (const Hop* h : hops) {
    if (HopPlace(*h) != k.place) continue;
    int score = 0;
    if (h->action == HopAction::kDrop) score += 4;
    if (!k.device.empty() && (h->iif == k.device || h->oif == k.device)) score += 2;
    if (SamePacket(k, h->packet)) score += 1;
    if (score > best_score) {
      best = h;
      best_score = score;
    }
  }
  return best;
}

// A kernel drop at the model's drop hop `best`: agreed when one of its FATAL codes explains the
// kernel's reason, a mismatch otherwise.
void JoinAtDropHop(const model::KernelDrop& k, const Hop& best, const std::string& kernel_text,
                   EvidenceItem* it) {
  std::vector<std::string> codes = FatalCodes(best);
  std::string explaining;
  for (const std::string& c : codes) {
    if (CodeExplainsDrop(c, k.reason)) {
      explaining = c;
      break;
    }
  }
  if (!explaining.empty()) {
    it->outcome = EvidenceItem::Outcome::kAgreed;
    it->model_code = explaining;
    it->message = absl::StrCat("model: drop at ", best.id, ", ", explaining, "; kernel: ",
                               kernel_text);
  } else {
    it->outcome = EvidenceItem::Outcome::kMismatch;
    it->model_code = codes.empty() ? "" : codes.front();
    it->message = absl::StrCat("model: drop at ", best.id, ", ", absl::StrJoin(codes, ", "),
                               "; kernel: ", kernel_text, " -- a reason the model's code",
                               codes.size() > 1 ? "s do" : " does", " not explain");
  }
}

// A kernel drop the model has no drop for: where the model's path was instead.
void KernelOnly(const model::KernelDrop& k, const Hop* best, const std::string& kernel_text,
                EvidenceItem* it) {
  it->outcome = EvidenceItem::Outcome::kKernelOnly;
  if (best) {
    it->message = absl::StrCat("model: ", ToString(best->action), " at ", best->id,
                               " (no drop); kernel: ", kernel_text);
  } else if (k.place.empty()) {
    it->message = absl::StrCat("model: no hop in that namespace (netns inode ", k.netns_inode,
                               k.netns_path.empty() ? "" : absl::StrCat(", ", k.netns_path),
                               "); kernel: ", kernel_text);
  } else {
    it->message = absl::StrCat("model: the path never enters ", DescribePlace(k.place, k.node),
                               "; kernel: ", kernel_text);
  }
  if (it->arp) {
    absl::StrAppend(&it->message,
                    " -- the kernel dropped the ARP resolution of the path's next hop, which "
                    "the model does not walk (a cold neighbour cache meets this check first)");
  }
}

// One drop the kernel reported, joined to the path's hops.
EvidenceItem JoinKernelDrop(const model::KernelDrop& k, const model::ProbeOutcome& probe,
                            PathHops& path) {
  EvidenceItem it;
  it.node = k.node;
  it.place = k.place;
  it.device = k.device;
  it.kernel_reason = k.reason;
  it.location = k.location;
  it.count = k.count;
  it.packet = DroppedPacket(k);
  it.arp = k.eth_proto == 0x0806;
  const Hop* best = BestHopFor(k, path.hops);
  std::string kernel_text =
      absl::StrCat(k.reason, k.device.empty() ? "" : absl::StrCat(" on ", k.device), " of ",
                   DescribePlace(k.place, k.node), " (", DescribeKernelPacket(k),
                   k.count > 1 ? absl::StrCat(", ", k.count, " packets") : "", ")");
  if (best) {
    it.hop = best->id;
    if (it.node.empty()) it.node = best->node;
  }
  if (best && best->action == HopAction::kDrop) {
    JoinAtDropHop(k, *best, kernel_text, &it);
    path.MarkExplained(best);  // a mismatch is reported here, not again as model_only
  } else if (best && best->action == HopAction::kServe && probe.result == "refused" &&
             Strip(k.reason) == "NO_SOCKET" && SamePacket(k, best->packet)) {
    // The path delivered the probe to the destination's stack, where nothing listens: the
    // snapshot has no sockets, so the model can only note it (not_listening); the kernel
    // answered RST / port unreachable. The path itself agrees.
    it.outcome = EvidenceItem::Outcome::kAgreed;
    for (const Suspicion& s : best->suspicions) {
      if (s.code == "not_listening") it.model_code = s.code;
    }
    it.message = absl::StrCat("model: delivered at ", best->id,
                              " (the snapshot has no sockets: nothing checks the listener); "
                              "kernel: ", kernel_text, " -- nothing listens on port ", k.dport,
                              ", the probe was refused");
  } else {
    KernelOnly(k, best, kernel_text, &it);
  }
  return it;
}

// One drop the sarena datapath reported, joined to the first drop hop of the path.
EvidenceItem JoinDatapathDrop(const model::DatapathDrop& d, PathHops& path) {
  EvidenceItem it;
  it.kernel_reason = absl::StrCat("datapath:", d.reason);
  it.count = d.count;
  it.packet = DroppedPacket(d);
  const Hop* drop_hop = nullptr;
  for (const Hop* h : path.hops) {
    if (h->action == HopAction::kDrop && h->kind != HopKind::kExternal) {
      drop_hop = h;
      break;
    }
  }
  std::string kernel_text = absl::StrCat("sarena datapath drop ", d.reason, " ifindex ",
                                         d.ifindex, " (", Ep(d.src, d.sport), " -> ",
                                         Ep(d.dst, d.dport), "/", model::ProtoName(d.proto), ")");
  if (drop_hop) {
    std::vector<std::string> codes = FatalCodes(*drop_hop);
    it.hop = drop_hop->id;
    it.node = drop_hop->node;
    it.place = HopPlace(*drop_hop);
    it.model_code = codes.empty() ? "" : codes.front();
    it.outcome = EvidenceItem::Outcome::kAgreed;
    path.MarkExplained(drop_hop);
    it.message = absl::StrCat("model: drop at ", drop_hop->id, ", ", absl::StrJoin(codes, ", "),
                              "; kernel: ", kernel_text);
  } else {
    it.outcome = EvidenceItem::Outcome::kKernelOnly;
    it.message = absl::StrCat("model: no drop; kernel: ", kernel_text);
  }
  return it;
}

// A drop hop of the model that no kernel or datapath report explained: agreed when the probe
// itself failed there (its send failed at the origin, or it was refused where nothing
// listens), model_only otherwise.
EvidenceItem UnconfirmedDrop(const Hop& h, const model::ProbeOutcome& p) {
  std::vector<std::string> codes = FatalCodes(h);
  EvidenceItem it;
  it.hop = h.id;
  it.node = h.node;
  it.place = HopPlace(h);
  it.model_code = codes.empty() ? "" : codes.front();
  it.packet = h.packet;
  it.count = 0;
  bool origin = h.iif.empty() && !h.reply;
  bool not_listening =
      std::find(codes.begin(), codes.end(), "not_listening") != codes.end();
  if (origin && p.result == "error") {
    it.outcome = EvidenceItem::Outcome::kAgreed;
    it.kernel_reason = absl::StrCat("send:", p.error);
    it.message = absl::StrCat("model: drop at ", h.id, ", ", absl::StrJoin(codes, ", "),
                              "; kernel: the probe's send failed in ", h.id, " (", p.error,
                              "): no packet left the socket");
  } else if (not_listening && p.result == "refused") {
    it.outcome = EvidenceItem::Outcome::kAgreed;
    it.kernel_reason = "send:Connection refused";
    it.message = absl::StrCat("model: drop at ", h.id, ", not_listening; kernel: the probe was "
                              "refused (RST / port unreachable)");
  } else {
    it.outcome = EvidenceItem::Outcome::kModelOnly;
    it.message = absl::StrCat("model: drop at ", h.id, ", ", absl::StrJoin(codes, ", "),
                              "; kernel: no drop of the probe reported there (probe ",
                              p.result, p.error.empty() ? "" : absl::StrCat(": ", p.error), ")");
  }
  return it;
}

// The probe against the verdict (out->probe_disagrees, out->probe_line), and the overall
// agreement of the joined items.
void JudgeProbe(const PathGraph& graph, const model::ProbeOutcome& p, JoinedEvidence* out) {
  Verdict verdict = ComputeVerdict(graph.Suspicions());
  bool passed = p.result == "connected" || p.result == "sent";
  bool failed = p.result == "refused" || p.result == "timeout" || p.result == "error" ||
                p.result == "unreachable";
  // A refused TCP probe reached the destination's kernel: the path works, nobody listens.
  bool refused_ok = p.result == "refused";
  if ((passed && verdict == Verdict::kUnreachable) ||
      (failed && verdict != Verdict::kUnreachable && !refused_ok)) {
    out->probe_disagrees = true;
  }
  out->probe_line = absl::StrCat(
      "probe: ", p.packets, p.size ? absl::StrCat(" x ", p.size, "-byte datagram") : " TCP SYN",
      " from ", DescribePlace(p.place, ""), " (", p.netns_path, ", sport ", p.sport, "): ",
      p.result, p.error.empty() ? "" : absl::StrCat(" (", p.error, ")"),
      absl::StrFormat(" after %.0f ms", p.elapsed_ms), "; model verdict ", ToString(verdict),
      out->probe_disagrees ? ": DISAGREE" : ": consistent");
  out->agree = !out->probe_disagrees;
  for (const EvidenceItem& it : out->items) {
    if (it.outcome != EvidenceItem::Outcome::kAgreed) out->agree = false;
  }
}

}  // namespace

bool CodeExplainsDrop(absl::string_view code, absl::string_view kernel_reason) {
  absl::string_view r = Strip(kernel_reason);
  const SuspicionCode* c = FindSuspicionCode(code);
  if (c == nullptr) return false;
  for (absl::string_view e : DropReasonsOf(*c)) {
    if (e == r) return true;
  }
  return false;
}

absl::string_view ToString(EvidenceItem::Outcome outcome) {
  switch (outcome) {
    case EvidenceItem::Outcome::kAgreed:
      return "agreed";
    case EvidenceItem::Outcome::kKernelOnly:
      return "kernel_only";
    case EvidenceItem::Outcome::kModelOnly:
      return "model_only";
    case EvidenceItem::Outcome::kMismatch:
      return "mismatch";
  }
  return "agreed";
}

JoinedEvidence JoinEvidence(const PathGraph& graph, const model::LiveEvidence& evidence) {
  JoinedEvidence out;
  PathHops path(graph);
  for (const model::KernelDrop& k : evidence.kernel) {
    out.items.push_back(JoinKernelDrop(k, evidence.probe, path));
  }
  // The sarena datapath's own drops: joined to the node's drop hops by reason (the datapath's
  // reason names are the model's vocabulary for its codes where they overlap).
  for (const model::DatapathDrop& d : evidence.datapath) {
    out.items.push_back(JoinDatapathDrop(d, path));
  }
  // Model drops nothing in the kernel confirmed.
  for (size_t i = 0; i < path.hops.size(); ++i) {
    const Hop& h = *path.hops[i];
    if (h.action != HopAction::kDrop || path.drop_explained[i]) continue;
    out.items.push_back(UnconfirmedDrop(h, evidence.probe));
  }
  JudgeProbe(graph, evidence.probe, &out);
  return out;
}

std::string EvidenceText(const JoinedEvidence& joined) {
  std::string s = absl::StrCat("\nlive evidence: ", joined.agree ? "AGREE" : "DISAGREE",
                               " (kernel drop reasons joined to the hops)\n  ", joined.probe_line,
                               "\n");
  if (joined.items.empty()) absl::StrAppend(&s, "  kernel: no drop of the probe reported\n");
  for (const EvidenceItem& it : joined.items) {
    bool bad = it.outcome != EvidenceItem::Outcome::kAgreed;
    absl::StrAppend(&s, bad ? "!!" : "  ", " ", ToString(it.outcome), ": ", it.message, "\n");
  }
  return s;
}

absl::StatusOr<std::string> ToLiveJson(const PathGraph& graph, const model::LiveEvidence& evidence,
                                       const JoinedEvidence& joined, bool pretty) {
  v1::Report base = BuildReport(graph);
  v1::LiveReport r;
  r.set_verdict(base.verdict());
  *r.mutable_hops() = base.hops();
  *r.mutable_suspicions() = base.suspicions();
  for (const EvidenceItem& it : joined.items) {
    v1::Evidence* e = r.add_evidence();
    e->set_outcome(std::string(ToString(it.outcome)));
    e->set_hop(it.hop);
    e->set_node(it.node);
    e->set_place(it.place);
    e->set_device(it.device);
    e->set_model_code(it.model_code);
    e->set_kernel_reason(it.kernel_reason);
    e->set_location(it.location);
    e->set_count(it.count);
    v1::Packet* pk = e->mutable_packet();
    pk->set_src(it.packet.src.to_string());
    pk->set_dst(it.packet.dst.to_string());
    pk->set_sport(it.packet.sport);
    pk->set_dport(it.packet.dport);
    pk->set_proto(it.arp ? "arp" : model::ProtoName(it.packet.proto));
    e->set_message(it.message);
  }
  const model::ProbeOutcome& p = evidence.probe;
  v1::Probe* pr = r.mutable_probe();
  pr->set_result(p.result);
  pr->set_error(p.error);
  pr->set_netns(p.netns_path);
  pr->set_place(p.place);
  pr->set_packets(p.packets);
  pr->set_sport(p.sport);
  pr->set_size(p.size);
  pr->set_elapsed_ms(p.elapsed_ms);
  pr->set_datapath_read(evidence.datapath_read);
  r.set_agreement(joined.agree ? "agree" : "disagree");
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = pretty;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(r, &out, opts);
  if (!st.ok()) return absl::InternalError(absl::StrCat("print live report as JSON: ", st.ToString()));
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  return out;
}

}  // namespace sarena::diag
