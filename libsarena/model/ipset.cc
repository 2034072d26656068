#include "libsarena/model/ipset.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

namespace {

enum class Dim : uint8_t { kIp, kNet, kPort };

struct Entry {
  uint32_t ip[3] = {0, 0, 0};
  uint8_t len[3] = {32, 32, 32};
  uint8_t proto = kProtoTcp;
  uint16_t port = 0;
  bool nomatch = false;
};

struct Set {
  std::string type;
  bool modelled = false;
  bool bitmap_port = false;
  bool list = false;
  std::vector<Dim> dims;
  std::vector<Entry> entries;
  absl::flat_hash_set<uint64_t> exact;  // hash:ip / hash:ip,port fast path
  absl::flat_hash_set<uint16_t> ports;  // bitmap:port
  std::vector<std::string> members;     // list:set
};

uint32_t Mask(uint8_t len) { return len == 0 ? 0 : 0xffffffffu << (32 - len); }

uint64_t ExactKey(uint32_t ip, uint8_t proto, uint16_t port) {
  return (static_cast<uint64_t>(proto) << 48) | (static_cast<uint64_t>(port) << 32) | ip;
}

bool ParsePortPart(absl::string_view s, uint8_t* proto, uint16_t* port) {
  *proto = kProtoTcp;
  size_t colon = s.find(':');
  if (colon != absl::string_view::npos) {
    auto p = ParseProto(s.substr(0, colon));
    if (!p.ok()) return false;
    *proto = *p;
    s = s.substr(colon + 1);
  }
  uint32_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

}  // namespace

struct Ipsets::Impl {
  absl::flat_hash_map<std::string, Set> sets;
};

Ipsets::Ipsets() : impl_(std::make_unique<Impl>()) {}
Ipsets::~Ipsets() = default;
Ipsets::Ipsets(Ipsets&&) noexcept = default;
Ipsets& Ipsets::operator=(Ipsets&&) noexcept = default;

absl::StatusOr<Ipsets> Ipsets::Parse(absl::string_view text, absl::string_view file_name) {
  Ipsets out;
  int line_no = 0;
  auto err = [&](absl::string_view cause) {
    return absl::InvalidArgumentError(absl::StrCat("parse ", file_name, ": line ", line_no, ": ", cause));
  };
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> tok = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (tok[0] == "create" || tok[0] == "-N" || tok[0] == "-exist") {
      if (tok.size() < 3) return err("expected 'create NAME TYPE'");
      Set s;
      s.type = std::string(tok[2]);
      bool inet6 = false;
      for (size_t i = 3; i + 1 < tok.size(); ++i) {
        if (tok[i] == "family" && tok[i + 1] == "inet6") inet6 = true;
      }
      s.modelled = !inet6;
      if (s.type == "hash:ip") s.dims = {Dim::kIp};
      else if (s.type == "hash:net") s.dims = {Dim::kNet};
      else if (s.type == "hash:ip,port") s.dims = {Dim::kIp, Dim::kPort};
      else if (s.type == "hash:net,port") s.dims = {Dim::kNet, Dim::kPort};
      else if (s.type == "hash:ip,port,ip") s.dims = {Dim::kIp, Dim::kPort, Dim::kIp};
      else if (s.type == "hash:ip,port,net") s.dims = {Dim::kIp, Dim::kPort, Dim::kNet};
      else if (s.type == "bitmap:port") s.bitmap_port = true;
      else if (s.type == "list:set") s.list = true;
      else s.modelled = false;
      out.impl_->sets.insert_or_assign(std::string(tok[1]), std::move(s));
      continue;
    }
    if (tok[0] == "add" || tok[0] == "-A") {
      if (tok.size() < 3) return err("expected 'add NAME ENTRY'");
      auto it = out.impl_->sets.find(tok[1]);
      if (it == out.impl_->sets.end()) {
        return err(absl::StrCat("add to undeclared set '", tok[1], "'"));
      }
      Set& s = it->second;
      if (!s.modelled) continue;
      absl::string_view entry = tok[2];
      if (s.list) {
        s.members.emplace_back(entry);
        continue;
      }
      if (s.bitmap_port) {
        uint8_t proto;
        uint16_t port;
        if (!ParsePortPart(entry, &proto, &port)) {
          return err(absl::StrCat("invalid port '", entry, "' for set ", tok[1]));
        }
        s.ports.insert(port);
        continue;
      }
      Entry e;
      for (size_t i = 3; i < tok.size(); ++i) {
        if (tok[i] == "nomatch") e.nomatch = true;
      }
      std::vector<absl::string_view> parts = absl::StrSplit(entry, ',');
      if (parts.size() != s.dims.size()) {
        return err(absl::StrCat("entry '", entry, "' does not fit set type ", s.type));
      }
      int ipi = 0;
      bool skip = false;
      for (size_t d = 0; d < parts.size(); ++d) {
        if (s.dims[d] == Dim::kPort) {
          if (!ParsePortPart(parts[d], &e.proto, &e.port)) {
            // e.g. "icmp:echo-request": kept out of the model rather than rejected.
            skip = true;
            break;
          }
          continue;
        }
        auto pfx = net::ParseIpv4Prefix(parts[d]);
        if (!pfx.ok()) return err(absl::StrCat("invalid address '", parts[d], "' in set ", tok[1]));
        e.len[ipi] = static_cast<uint8_t>(pfx->prefix_length());
        e.ip[ipi] = pfx->address().to_uint() & Mask(e.len[ipi]);
        ++ipi;
      }
      if (skip) continue;
      if (s.type == "hash:ip") s.exact.insert(ExactKey(e.ip[0], 0, 0));
      if (s.type == "hash:ip,port") s.exact.insert(ExactKey(e.ip[0], e.proto, e.port));
      s.entries.push_back(e);
      continue;
    }
    return err(absl::StrCat("unexpected line '", line.substr(0, 60), "'"));
  }
  return out;
}

bool Ipsets::Has(absl::string_view name) const { return impl_->sets.contains(name); }

std::string Ipsets::Type(absl::string_view name) const {
  auto it = impl_->sets.find(name);
  return it == impl_->sets.end() ? std::string() : it->second.type;
}

size_t Ipsets::size() const { return impl_->sets.size(); }

std::optional<bool> Ipsets::Test(absl::string_view name, const std::vector<bool>& src_flags,
                                 const Packet& p) const {
  auto it = impl_->sets.find(name);
  if (it == impl_->sets.end() || !it->second.modelled) return std::nullopt;
  const Set& s = it->second;
  auto flag = [&](size_t i) { return i < src_flags.size() ? src_flags[i] : src_flags.back(); };
  if (src_flags.empty()) return std::nullopt;
  if (s.list) {
    bool any_unknown = false;
    for (const std::string& m : s.members) {
      auto mit = impl_->sets.find(m);
      if (mit == impl_->sets.end() || mit->second.list) continue;
      std::optional<bool> r = Test(m, src_flags, p);
      if (!r) any_unknown = true;
      else if (*r) return true;
    }
    if (any_unknown) return std::nullopt;
    return false;
  }
  if (s.bitmap_port) {
    if (p.proto != kProtoTcp && p.proto != kProtoUdp && p.proto != kProtoSctp) return false;
    return s.ports.contains(flag(0) ? p.sport : p.dport);
  }
  // A dimension count larger than the flags given is an iptables error; fewer flags than
  // dimensions is allowed by xt_set only for the leading dimensions — treat as not modelled.
  if (src_flags.size() < s.dims.size()) return std::nullopt;
  uint32_t ips[3] = {0, 0, 0};
  uint16_t port = 0;
  int ipi = 0;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (s.dims[d] == Dim::kPort) {
      if (p.proto != kProtoTcp && p.proto != kProtoUdp && p.proto != kProtoSctp) return false;
      port = flag(d) ? p.sport : p.dport;
    } else {
      ips[ipi++] = (flag(d) ? p.src : p.dst).to_uint();
    }
  }
  if (s.type == "hash:ip") return s.exact.contains(ExactKey(ips[0], 0, 0));
  if (s.type == "hash:ip,port") return s.exact.contains(ExactKey(ips[0], p.proto, port));
  const Entry* best = nullptr;
  int best_len = -1;
  for (const Entry& e : s.entries) {
    bool ok = true;
    int ipj = 0;
    int total = 0;
    for (size_t d = 0; d < s.dims.size() && ok; ++d) {
      if (s.dims[d] == Dim::kPort) {
        ok = e.proto == p.proto && e.port == port;
        continue;
      }
      uint8_t len = s.dims[d] == Dim::kIp ? 32 : e.len[ipj];
      ok = (ips[ipj] & Mask(len)) == e.ip[ipj];
      total += len;
      ++ipj;
    }
    if (ok && total > best_len) {
      best = &e;
      best_len = total;
    }
  }
  return best != nullptr && !best->nomatch;
}

}  // namespace sarena::model
