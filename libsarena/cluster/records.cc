#include "libsarena/cluster/records.h"

#include <boost/asio/ip/address_v6.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "libsarena/base/numbers.h"
#include "google/protobuf/util/json_util.h"

namespace sarena::cluster {

std::string NodeKey(absl::string_view name) { return absl::StrCat(kNodesPrefix, name); }

std::string PodCidrKey(const net::Ipv4Prefix& cidr) {
  auto c = cidr.canonical();
  return absl::StrCat(kPodCidrsPrefix, c.network().to_string(), "-", c.prefix_length());
}

absl::StatusOr<net::Ipv4Prefix> PodCidrFromKey(absl::string_view key) {
  absl::string_view rest = key;
  if (!absl::ConsumePrefix(&rest, kPodCidrsPrefix)) {
    return absl::InvalidArgumentError(absl::StrCat("key '", key, "' is not under ",
                                                   kPodCidrsPrefix));
  }
  std::string text = absl::StrReplaceAll(rest, {{"-", "/"}});
  auto p = net::ParseIpv4Prefix(text, absl::StrCat("pod CIDR key ", key));
  if (!p.ok()) return p.status();
  if (p->canonical() != *p) {
    return absl::InvalidArgumentError(absl::StrCat("pod CIDR key '", key, "' has host bits set"));
  }
  return *p;
}

std::string NodeIdKey(uint32_t id) { return absl::StrCat(kNodeIdsPrefix, id); }

absl::StatusOr<uint32_t> NodeIdFromKey(absl::string_view key) {
  absl::string_view rest = key;
  const uint64_t id = absl::ConsumePrefix(&rest, kNodeIdsPrefix)
                          ? ParseCanonicalUint(rest, kMaxNodeId).value_or(0)
                          : 0;
  if (id == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("key '", key, "' is not ", kNodeIdsPrefix, "<1..", kMaxNodeId, ">"));
  }
  return static_cast<uint32_t>(id);
}

absl::Status ValidateNodeName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid node name '", name, "': ", why));
  };
  if (name.empty() || name.size() > 253) return bad("must be 1..253 characters");
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '.')) {
      return bad("only a-z, 0-9, '-' and '.' are allowed (RFC 1123)");
    }
  }
  return absl::OkStatus();
}

std::string RecordToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

absl::Status RecordFromJson(absl::string_view json, google::protobuf::Message* m,
                            absl::string_view key) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), m, opts);
  if (!st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt record at ", key, ": ", st.message().as_string()));
  }
  return absl::OkStatus();
}

absl::string_view FamilyName(v1::AddressFamily family) {
  switch (family) {
    case v1::IPV4:
      return "ipv4";
    case v1::IPV6:
      return "ipv6";
    default:
      return "unspecified";
  }
}

bool PeerNode::SameContent(const PeerNode& o) const {
  return name == o.name && node_id == o.node_id && underlay == o.underlay &&
         pod_cidrs == o.pod_cidrs && tunnel_port == o.tunnel_port && mtu == o.mtu &&
         routing_mode == o.routing_mode && boot_id == o.boot_id;
}

absl::StatusOr<PeerNode> ParseNodeRecord(absl::string_view key, absl::string_view value,
                                         v1::NodeRecord* record_out) {
  v1::NodeRecord rec;
  if (auto st = RecordFromJson(value, &rec, key); !st.ok()) return st;
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("corrupt node record at ", key, ": ", why));
  };
  absl::string_view name = key;
  if (!absl::ConsumePrefix(&name, kNodesPrefix)) return bad("not under /sarena/v1/nodes/");
  if (rec.name() != name) return bad(absl::StrCat("name '", rec.name(), "' is not the key's"));
  if (auto st = ValidateNodeName(name); !st.ok()) return bad(st.message());
  if (rec.node_id() == 0 || rec.node_id() > kMaxNodeId) {
    return bad(absl::StrCat("node_id ", rec.node_id(), " is not in 1..", kMaxNodeId));
  }
  if (rec.tunnel_port() > 65535) {
    return bad(absl::StrCat("tunnel_port ", rec.tunnel_port(), " is not in 0..65535"));
  }
  PeerNode n;
  n.name = std::string(name);
  n.node_id = rec.node_id();
  n.tunnel_port = static_cast<uint16_t>(rec.tunnel_port());
  n.mtu = rec.mtu();
  n.routing_mode = rec.routing_mode();
  n.boot_id = rec.boot_id();
  bool have_v4 = false;
  for (const auto& a : rec.addresses()) {
    boost::system::error_code ec;
    if (a.family() == v1::IPV4) {
      auto ip = boost::asio::ip::make_address_v4(a.address(), ec);
      if (ec) return bad(absl::StrCat("address '", a.address(), "' is not ipv4"));
      if (!have_v4) n.underlay = ip;
      have_v4 = true;
    } else if (a.family() == v1::IPV6) {
      (void)boost::asio::ip::make_address_v6(a.address(), ec);
      if (ec) return bad(absl::StrCat("address '", a.address(), "' is not ipv6"));
    } else {
      return bad(absl::StrCat("address '", a.address(), "' has no family"));
    }
  }
  if (!have_v4) return bad("no ipv4 underlay address");
  for (const auto& c : rec.pod_cidrs()) {
    if (c.family() == v1::IPV4) {
      auto p = net::ParseIpv4Prefix(c.cidr(), "pod_cidr");
      if (!p.ok() || c.cidr().find('/') == std::string::npos) {
        return bad(absl::StrCat("pod CIDR '", c.cidr(), "' is not ipv4"));
      }
      if (p->canonical() != *p) {
        return bad(absl::StrCat("pod CIDR '", c.cidr(), "' has host bits set"));
      }
      n.pod_cidrs.push_back(*p);
    } else if (c.family() == v1::IPV6) {
      boost::system::error_code ec;
      (void)boost::asio::ip::make_network_v6(c.cidr(), ec);
      if (ec) return bad(absl::StrCat("pod CIDR '", c.cidr(), "' is not ipv6"));
    } else {
      return bad(absl::StrCat("pod CIDR '", c.cidr(), "' has no family"));
    }
  }
  if (record_out != nullptr) *record_out = std::move(rec);
  return n;
}

}  // namespace sarena::cluster
