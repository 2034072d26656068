#include "libsarena/diag/query.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/numbers.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/packet.h"

namespace sarena::diag {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view text, absl::string_view cause) {
  return absl::InvalidArgumentError(absl::StrCat("invalid ", flag, " '", text, "': ", cause));
}

absl::Status SplitNsName(absl::string_view body, absl::string_view flag, absl::string_view text,
                         EndpointSpec* out) {
  size_t slash = body.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 >= body.size() ||
      body.find('/', slash + 1) != absl::string_view::npos) {
    return Bad(flag, text, "expected NAMESPACE/NAME");
  }
  out->namespace_ = std::string(body.substr(0, slash));
  out->name = std::string(body.substr(slash + 1));
  return absl::OkStatus();
}

}  // namespace

std::string EndpointSpec::ToString() const {
  switch (kind) {
    case Kind::kPod:
      return absl::StrCat("pod:", namespace_, "/", name);
    case Kind::kNode:
      return absl::StrCat("node:", name);
    case Kind::kService:
      return absl::StrCat("svc:", namespace_, "/", name);
    case Kind::kIp:
      return ip.to_string();
  }
  return "";
}

absl::StatusOr<EndpointSpec> ParseEndpointSpec(absl::string_view text, absl::string_view flag,
                                               bool allow_service) {
  EndpointSpec spec;
  if (text.empty()) return Bad(flag, text, "empty");
  if (absl::StartsWith(text, "pod:")) {
    spec.kind = EndpointSpec::Kind::kPod;
    SARENA_RETURN_IF_ERROR(SplitNsName(text.substr(4), flag, text, &spec));
    return spec;
  }
  if (absl::StartsWith(text, "svc:") || absl::StartsWith(text, "service:")) {
    if (!allow_service) return Bad(flag, text, "a Service cannot be the source");
    spec.kind = EndpointSpec::Kind::kService;
    SARENA_RETURN_IF_ERROR(SplitNsName(text.substr(text.find(':') + 1), flag, text, &spec));
    return spec;
  }
  if (absl::StartsWith(text, "node:")) {
    spec.kind = EndpointSpec::Kind::kNode;
    spec.name = std::string(text.substr(5));
    if (spec.name.empty() || absl::StrContains(spec.name, "/")) {
      return Bad(flag, text, "expected node:NAME");
    }
    return spec;
  }
  auto ip = net::ParseIpv4(text, flag);
  if (!ip.ok()) {
    return Bad(flag, text,
               "expected pod:NS/NAME, node:NAME, svc:NS/NAME (destination only) or an IPv4 "
               "address");
  }
  spec.kind = EndpointSpec::Kind::kIp;
  spec.ip = *ip;
  return spec;
}

absl::StatusOr<Query> ParseQuery(absl::string_view src, absl::string_view dst) {
  Query q;
  SARENA_ASSIGN_OR_RETURN(q.src, ParseEndpointSpec(src, "--src", /*allow_service=*/false));
  absl::string_view rest = dst;
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) {
    return Bad("--dst", dst, "expected DST:PORT/PROTO (e.g. pod:default/web:8080/tcp)");
  }
  // The protocol is never guessed: "10.0.0.2:53" could mean udp as well as tcp.
  if (slash == absl::string_view::npos || slash < colon) {
    return Bad("--dst", dst,
               absl::StrCat("no protocol: write ", dst, "/tcp, ", dst, "/udp (PROTO tcp|udp, or ",
                            rest.substr(0, colon), ":0/icmp)"));
  }
  absl::string_view proto_text = rest.substr(slash + 1);
  rest = rest.substr(0, slash);
  absl::string_view port_text = rest.substr(colon + 1);
  absl::string_view target = rest.substr(0, colon);
  // Exactly the spellings --help names: no other protocol (sctp), no other case (TCP).
  if (proto_text == "tcp") {
    q.proto = model::kProtoTcp;
  } else if (proto_text == "udp") {
    q.proto = model::kProtoUdp;
  } else if (proto_text == "icmp") {
    q.proto = model::kProtoIcmp;
  } else {
    return Bad(
        "--dst", dst,
        absl::StrCat("unknown protocol '", proto_text, "': want tcp, udp or icmp (lower case)"));
  }
  std::optional<uint64_t> parsed = ParseCanonicalUint(port_text, 65535);
  if (!parsed) {
    return Bad("--dst", dst,
               absl::StrCat("invalid port '", port_text, "': a decimal number in 0..65535"));
  }
  const uint64_t port = *parsed;
  if (q.proto == model::kProtoIcmp) {
    if (port != 0) {
      return Bad("--dst", dst,
                 absl::StrCat("icmp has no ports: port ", port_text, " given (write ",
                              target.empty() ? "DST" : target, ":0/icmp)"));
    }
  } else if (port == 0) {
    return Bad("--dst", dst, "port 0 is not a destination port");
  }
  q.dport = static_cast<uint16_t>(port);
  SARENA_ASSIGN_OR_RETURN(q.dst, ParseEndpointSpec(target, "--dst", /*allow_service=*/true));
  return q;
}

uint32_t MinPacketSize(uint8_t proto) {
  // The IPv4 header (20) and the transport's: TCP 20 (no options), UDP 8, ICMP echo 8.
  return proto == model::kProtoTcp ? 40 : 28;
}

absl::StatusOr<uint32_t> ParsePacketSize(absl::string_view text, uint8_t proto) {
  const uint32_t min = MinPacketSize(proto);
  const std::optional<uint64_t> parsed = ParseCanonicalUint(text, 65535);
  const uint32_t v = static_cast<uint32_t>(parsed.value_or(0));
  if (!parsed || (v != kPacketSizeMtu && v < min)) {
    const char* name = proto == model::kProtoTcp    ? "tcp"
                       : proto == model::kProtoIcmp ? "icmp"
                                                    : "udp";
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid --size '", text, "': want 0 (the source device's MTU) or ", min,
        "..65535 for ", name, " (", min, " bytes are its IPv4 and ", name, " headers alone)"));
  }
  return v;
}

}  // namespace sarena::diag
