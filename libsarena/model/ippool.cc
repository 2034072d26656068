#include "libsarena/model/ippool.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"

namespace sarena::model {

absl::string_view ToString(EncapMode mode) {
  switch (mode) {
    case EncapMode::kNever: return "Never";
    case EncapMode::kAlways: return "Always";
    case EncapMode::kCrossSubnet: return "CrossSubnet";
  }
  return "?";
}

absl::StatusOr<EncapMode> ParseEncapMode(absl::string_view text, absl::string_view field) {
  std::string t = absl::AsciiStrToLower(text);
  absl::StrReplaceAll({{"-", ""}, {"_", ""}}, &t);
  if (t.empty() || t == "never" || t == "off" || t == "disabled") return EncapMode::kNever;
  if (t == "always") return EncapMode::kAlways;
  if (t == "crosssubnet") return EncapMode::kCrossSubnet;
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid ", field, " '", text, "': expected Always, CrossSubnet or Never"));
}

namespace {

absl::StatusOr<std::optional<IpPool>> ParseOne(const JsonValue& it, absl::string_view file,
                                               const std::string& p, absl::string_view list_api) {
  if (!it.is_object()) return JsonFieldError(file, p, "expected an IPPool object");
  IpPool pool;
  SARENA_ASSIGN_OR_RETURN(auto api, JsonGetString(it, "apiVersion", file, p));
  pool.api_version = std::string(api.value_or(list_api));
  const JsonValue* meta = it.Find("metadata");
  const JsonValue* spec = it.Find("spec");
  std::string mp = absl::StrCat(p.empty() ? "" : p + ".", "metadata");
  std::string sp = absl::StrCat(p.empty() ? "" : p + ".", "spec");
  if (meta != nullptr) {
    if (!meta->is_object()) return JsonFieldError(file, mp, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto name, JsonGetString(*meta, "name", file, mp));
    if (name) pool.name = std::string(*name);
  }
  if (spec == nullptr || !spec->is_object()) return JsonFieldError(file, sp, "missing spec");
  // spec.cidr (v3 and the CRD); calicoctl v1 kept it in metadata.cidr.
  std::optional<absl::string_view> cidr;
  std::string cidr_path = sp + ".cidr";
  SARENA_ASSIGN_OR_RETURN(cidr, JsonGetString(*spec, "cidr", file, sp));
  if (!cidr && meta != nullptr) {
    SARENA_ASSIGN_OR_RETURN(cidr, JsonGetString(*meta, "cidr", file, mp));
    cidr_path = mp + ".cidr";
  }
  if (!cidr) return JsonFieldError(file, cidr_path, "missing");
  if (cidr->find(':') != absl::string_view::npos) return std::optional<IpPool>();  // IPv6 pool
  auto pfx = net::ParseIpv4Prefix(*cidr, cidr_path);
  if (!pfx.ok()) return JsonFieldError(file, cidr_path, absl::StrCat("invalid CIDR '", *cidr, "'"));
  pool.cidr = pfx->canonical();

  auto mode = [&](absl::string_view key, EncapMode* out) -> absl::Status {
    SARENA_ASSIGN_OR_RETURN(auto m, JsonGetString(*spec, key, file, sp));
    if (!m) return absl::OkStatus();
    auto parsed = ParseEncapMode(*m, key);
    if (!parsed.ok()) return JsonFieldError(file, absl::StrCat(sp, ".", key), parsed.status().message());
    *out = *parsed;
    return absl::OkStatus();
  };
  bool has_ipip_mode = spec->Find("ipipMode") != nullptr;
  SARENA_RETURN_IF_ERROR(mode("ipipMode", &pool.ipip_mode));
  SARENA_RETURN_IF_ERROR(mode("vxlanMode", &pool.vxlan_mode));
  if (!has_ipip_mode) {
    // Legacy form: "ipip": {"enabled": true, "mode": "always" | "cross-subnet"}.
    if (const JsonValue* ipip = spec->Find("ipip"); ipip != nullptr) {
      std::string ip = sp + ".ipip";
      if (!ipip->is_object()) return JsonFieldError(file, ip, "expected an object");
      SARENA_ASSIGN_OR_RETURN(auto enabled, JsonGetBool(*ipip, "enabled", file, ip));
      SARENA_ASSIGN_OR_RETURN(auto m, JsonGetString(*ipip, "mode", file, ip));
      if (enabled.value_or(true)) {
        pool.ipip_mode = EncapMode::kAlways;
        if (m && !m->empty()) {
          auto parsed = ParseEncapMode(*m, "ipip.mode");
          if (!parsed.ok()) return JsonFieldError(file, ip + ".mode", parsed.status().message());
          pool.ipip_mode = *parsed;
        }
      }
    }
  }
  SARENA_ASSIGN_OR_RETURN(auto nat, JsonGetBool(*spec, "natOutgoing", file, sp));
  if (!nat) {
    SARENA_ASSIGN_OR_RETURN(nat, JsonGetBool(*spec, "nat-outgoing", file, sp));
  }
  pool.nat_outgoing = nat.value_or(false);
  SARENA_ASSIGN_OR_RETURN(auto disabled, JsonGetBool(*spec, "disabled", file, sp));
  pool.disabled = disabled.value_or(false);
  SARENA_ASSIGN_OR_RETURN(auto bs, JsonGetInt(*spec, "blockSize", file, sp, 0, 32));
  if (bs) pool.block_size = static_cast<uint8_t>(*bs);
  SARENA_ASSIGN_OR_RETURN(auto sel, JsonGetString(*spec, "nodeSelector", file, sp));
  pool.node_selector = sel ? std::string(*sel) : "all()";
  return std::optional<IpPool>(std::move(pool));
}

}  // namespace

absl::StatusOr<std::vector<IpPool>> ParseIpPools(absl::string_view json,
                                                 absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::vector<IpPool> out;
  const JsonValue& root = doc.root();
  std::string list_api;
  if (root.is_object() && root.Find("items", false) == nullptr && root.Find("spec") != nullptr) {
    SARENA_ASSIGN_OR_RETURN(auto one, ParseOne(root, file_name, "", ""));
    if (one) out.push_back(std::move(*one));
    return out;
  }
  if (root.is_object()) {
    if (auto* api = root.Find("apiVersion"); api != nullptr && api->is_string()) {
      list_api = std::string(api->str());
    }
  }
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  for (size_t i = 0; i < items->size(); ++i) {
    SARENA_ASSIGN_OR_RETURN(auto one,
                            ParseOne((*items)[i], file_name, JsonIndexPath(prefix, i), list_api));
    if (one) out.push_back(std::move(*one));
  }
  return out;
}

const IpPool* FindIpPool(const std::vector<IpPool>& pools, const net::Ipv4& ip,
                         bool include_disabled) {
  const IpPool* best = nullptr;
  for (const IpPool& p : pools) {
    if (p.disabled && !include_disabled) continue;
    if (!net::Contains(p.cidr, ip)) continue;
    if (best == nullptr || p.cidr.prefix_length() > best->cidr.prefix_length() ||
        (p.cidr.prefix_length() == best->cidr.prefix_length() && best->disabled && !p.disabled)) {
      best = &p;
    }
  }
  return best;
}

}  // namespace sarena::model
