#include "libsarena/diag/report.h"


#include <boost/graph/graphviz.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/subprocess.h"

namespace sarena::diag {
namespace {

void FillPacket(const Packet& p, v1::Packet* out) {
  out->set_src(p.src.to_string());
  out->set_dst(p.dst.to_string());
  out->set_sport(p.sport);
  out->set_dport(p.dport);
  out->set_proto(model::ProtoName(p.proto));
}

// "10.0.0.1:40000 -> 10.0.0.2:80/tcp ttl 63" (ports left out when 0).
std::string FormatPacket(const Packet& p) {
  auto ep = [](const net::Ipv4& ip, uint16_t port) {
    return port == 0 ? ip.to_string() : absl::StrCat(ip.to_string(), ":", port);
  };
  return absl::StrCat(ep(p.src, p.sport), " -> ", ep(p.dst, p.dport), "/",
                      model::ProtoName(p.proto));
}

absl::string_view FillColor(const Hop& h) {
  std::optional<Level> l = h.MaxLevel();
  if (!l) return "palegreen";
  switch (*l) {
    case Level::kFatal:
      return "tomato";
    case Level::kCritical:
      return "orange";
    case Level::kWarning:
      return "gold";
    case Level::kInfo:
      return "lightblue";
  }
  return "white";
}

// DOT double-quoted string body: escape backslash and quote; newlines become "\n" (centred).
std::string DotEscape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Breaks `s` into lines of at most about `width` characters at spaces.
std::string Wrap(absl::string_view s, size_t width) {
  std::string out;
  size_t col = 0;
  for (absl::string_view word : absl::StrSplit(s, ' ')) {
    if (col > 0 && col + 1 + word.size() > width) {
      out.push_back('\n');
      col = 0;
    } else if (col > 0) {
      out.push_back(' ');
      ++col;
    }
    absl::StrAppend(&out, word);
    col += word.size();
  }
  return out;
}

std::string HopHeadline(const Hop& h) {
  std::string s = absl::StrCat(h.id, " (", ToString(h.kind));
  if (!h.node.empty() && h.node != h.id) absl::StrAppend(&s, " on ", h.node);
  absl::StrAppend(&s, ") ", ToString(h.action));
  if (h.reply) absl::StrAppend(&s, " [reply]");
  if (!h.iif.empty() || !h.oif.empty()) {
    absl::StrAppend(&s, "  iif=", h.iif.empty() ? "-" : h.iif,
                    " oif=", h.oif.empty() ? "-" : h.oif);
  }
  return s;
}

struct VertexWriter {
  const PathGraph::Graph* g;
  void operator()(std::ostream& os, PathGraph::Vertex v) const {
    const Hop& h = (*g)[v];
    std::string label = absl::StrCat(h.id, "\n", ToString(h.kind), " ", ToString(h.action));
    if (h.reply) absl::StrAppend(&label, " (reply)");
    if (!h.iif.empty() || !h.oif.empty()) {
      absl::StrAppend(&label, "\n", h.iif.empty() ? "-" : h.iif, " -> ",
                      h.oif.empty() ? "-" : h.oif);
    }
    absl::StrAppend(&label, "\n", FormatPacket(h.packet));
    for (const Suspicion& s : h.suspicions) {
      absl::StrAppend(&label, "\n",
                      Wrap(absl::StrCat(ToString(s.level), " ", s.code, ": ", s.message), 64));
    }
    os << "[shape=box, style=\"rounded,filled\", fillcolor=" << FillColor(h) << ", label=\""
       << DotEscape(label) << "\", id=\"" << DotEscape(h.id) << "\"]";
  }
};

struct EdgeWriter {
  const PathGraph::Graph* g;
  void operator()(std::ostream& os, PathGraph::Graph::edge_descriptor e) const {
    const LinkInfo& l = (*g)[e];
    os << "[label=\"" << DotEscape(l.label) << "\"]";
  }
};

struct GraphWriter {
  void operator()(std::ostream& os) const {
    os << "rankdir=TB;\nnode [fontname=\"Helvetica\", fontsize=10];\n"
       << "edge [fontname=\"Helvetica\", fontsize=9];\n";
  }
};

}  // namespace

v1::Report BuildReport(const PathGraph& graph) {
  v1::Report r;
  std::vector<Suspicion> all = graph.Suspicions();
  r.set_verdict(std::string(ToString(ComputeVerdict(all))));
  for (PathGraph::Vertex v = 0; v < graph.num_hops(); ++v) {
    const Hop& h = graph.hop(v);
    v1::Hop* out = r.add_hops();
    out->set_id(h.id);
    out->set_kind(std::string(ToString(h.kind)));
    out->set_node(h.node);
    out->set_iif(h.iif);
    out->set_oif(h.oif);
    out->set_action(std::string(ToString(h.action)));
    FillPacket(h.packet, out->mutable_packet());
  }
  for (const Suspicion& s : all) {
    v1::Suspicion* out = r.add_suspicions();
    out->set_level(std::string(ToString(s.level)));
    out->set_code(s.code);
    out->set_hop(s.hop);
    out->set_message(s.message);
  }
  return r;
}

absl::StatusOr<std::string> ToJson(const PathGraph& graph, bool pretty) {
  v1::Report r = BuildReport(graph);
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = pretty;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(r, &out, opts);
  if (!st.ok()) {
    return absl::InternalError(absl::StrCat("print report as JSON: ", st.ToString()));
  }
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  return out;
}

std::string ToText(const PathGraph& graph) {
  std::vector<Suspicion> all = graph.Suspicions();
  std::string out = absl::StrCat("verdict: ", ToString(ComputeVerdict(all)), "\n\n");
  for (PathGraph::Vertex v = 0; v < graph.num_hops(); ++v) {
    const Hop& h = graph.hop(v);
    absl::StrAppend(&out, "[", v + 1, "] ", HopHeadline(h), "\n");
    absl::StrAppend(&out, "    packet: ", FormatPacket(h.packet), "\n");
    std::vector<std::string> next;
    for (auto [ei, ee] = boost::out_edges(v, graph.graph()); ei != ee; ++ei) {
      PathGraph::Vertex t = boost::target(*ei, graph.graph());
      next.push_back(absl::StrCat(graph.hop(t).id, " (", graph.graph()[*ei].label, ")"));
    }
    if (!next.empty()) absl::StrAppend(&out, "    next: ", absl::StrJoin(next, ", "), "\n");
    for (const Suspicion& s : h.suspicions) {
      absl::StrAppend(&out, "    ", ToString(s.level), " ", s.code, ": ", s.message, "\n");
    }
  }
  absl::StrAppend(&out, "\nsuspicions (", all.size(), "):\n");
  if (all.empty()) absl::StrAppend(&out, "  none\n");
  for (const Suspicion& s : all) {
    absl::StrAppend(&out, "  ", ToString(s.level), " ", s.code, " @ ",
                    s.hop.empty() ? "(query)" : s.hop, ": ", s.message, "\n");
  }
  return out;
}

std::string ToDot(const PathGraph& graph) {
  std::ostringstream os;
  const PathGraph::Graph& g = graph.graph();
  boost::write_graphviz(os, g, VertexWriter{&g}, EdgeWriter{&g}, GraphWriter{});
  return os.str();
}

absl::Status RenderSvg(absl::string_view dot_text, const std::string& svg_path) {
  SARENA_ASSIGN_OR_RETURN(
      ChildOutput dot,
      RunChild(ChildSpec{{}, ExecArgv({"dot", "-Tsvg", "-o" + svg_path}), std::string(dot_text)}));
  if (dot.exit_code == kChildExecFailed) {
    return absl::NotFoundError("run graphviz 'dot': not found (install the graphviz package)");
  }
  if (dot.exit_code != 0) {
    return absl::InternalError(absl::StrCat("render SVG '", svg_path, "': dot failed: ", dot.err));
  }
  return absl::OkStatus();
}

}  // namespace sarena::diag
