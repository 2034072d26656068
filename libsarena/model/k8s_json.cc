// kubectl JSON: the field readers the Kubernetes object parsers share (k8s_internal.h), list
// items and object metadata.
#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/k8s_internal.h"
#include "libsarena/model/packet.h"

namespace sarena::model::internal {

std::string Sub(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

absl::StatusOr<const JsonValue*> GetObject(const JsonValue& obj, absl::string_view key,
                                           absl::string_view file, absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    return JsonFieldError(file, Sub(path, key),
                          absl::StrCat("expected an object, got ", ToString(v->type())));
  }
  return v;
}

absl::StatusOr<const JsonValue*> GetArray(const JsonValue& obj, absl::string_view key,
                                          absl::string_view file, absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    return JsonFieldError(file, Sub(path, key),
                          absl::StrCat("expected an array, got ", ToString(v->type())));
  }
  return v;
}

absl::StatusOr<std::string> GetStr(const JsonValue& obj, absl::string_view key,
                                   absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(obj, key, file, path));
  return s ? std::string(*s) : std::string();
}

absl::StatusOr<Labels> GetLabels(const JsonValue& obj, absl::string_view key,
                                 absl::string_view file, absl::string_view path) {
  Labels out;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* m, GetObject(obj, key, file, path));
  if (m == nullptr) return out;
  out.reserve(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const JsonValue& v = m->value(i);
    if (v.is_null()) continue;
    if (!v.is_string()) {
      return JsonFieldError(file, absl::StrCat(Sub(path, key), ".", m->key(i).str()),
                            "expected a string");
    }
    out.emplace_back(std::string(m->key(i).str()), std::string(v.str()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<uint8_t> GetProtocol(const JsonValue& obj, absl::string_view file,
                                    absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(obj, "protocol", file, path));
  if (!s || s->empty()) return kProtoTcp;
  auto p = ParseProto(*s, "protocol");
  if (!p.ok()) return JsonFieldError(file, Sub(path, "protocol"), p.status().message());
  return *p;
}

absl::StatusOr<uint16_t> GetPort(const JsonValue& obj, absl::string_view key,
                                 absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto v, JsonGetInt(obj, key, file, path, 0, 65535));
  return static_cast<uint16_t>(v.value_or(0));
}

// The list items of a kubectl document (List, typed list, a bare array, or one object).
absl::StatusOr<std::vector<std::pair<const JsonValue*, std::string>>> Items(const JsonDoc& doc) {
  std::vector<std::pair<const JsonValue*, std::string>> out;
  const JsonValue& root = doc.root();
  const JsonValue* kind = root.Find("kind");
  bool status = kind != nullptr && kind->is_string() && kind->str() == "Status";
  // A kubectl Status (an API error answer, which has "metadata" too) is not an object of the
  // list: JsonListItems names it.
  // A list kind ("List", "PodList", ...) without "items" is a truncated or foreign document,
  // never one object: kubectl -o json prints "items": [] for an empty list.
  bool list_kind = kind != nullptr && kind->is_string() && absl::EndsWith(kind->str(), "List");
  if (list_kind && root.Find("items", false) == nullptr) {
    return JsonFieldError(doc.file_name(), "items",
                          absl::StrCat("missing: a ", kind->str(),
                                       " without \"items\" (kubectl -o json prints \"items\": [] "
                                       "for an empty list)"));
  }
  if (root.is_object() && root.Find("items", false) == nullptr && root.Find("metadata") != nullptr &&
      !status) {
    out.emplace_back(&root, std::string());
    return out;
  }
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  out.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = JsonIndexPath(prefix, i);
    if (!it.is_object()) return JsonFieldError(doc.file_name(), p, "expected an object");
    out.emplace_back(&it, std::move(p));
  }
  return out;
}

absl::StatusOr<Meta> GetMeta(const JsonValue& it, absl::string_view file, const std::string& p,
                             bool namespaced) {
  Meta m;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* meta, GetObject(it, "metadata", file, p));
  if (meta == nullptr) return JsonFieldError(file, Sub(p, "metadata"), "missing");
  std::string mp = Sub(p, "metadata");
  SARENA_ASSIGN_OR_RETURN(m.name, GetStr(*meta, "name", file, mp));
  if (m.name.empty()) return JsonFieldError(file, Sub(mp, "name"), "missing");
  if (namespaced) {
    SARENA_ASSIGN_OR_RETURN(m.namespace_, GetStr(*meta, "namespace", file, mp));
    if (m.namespace_.empty()) m.namespace_ = "default";
  }
  SARENA_ASSIGN_OR_RETURN(m.uid, GetStr(*meta, "uid", file, mp));
  return m;
}

absl::StatusOr<bool> ReadyCondition(const JsonValue& status, absl::string_view file,
                                    const std::string& sp) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* conds, GetArray(status, "conditions", file, sp));
  if (conds == nullptr) return false;
  for (size_t i = 0; i < conds->size(); ++i) {
    const JsonValue& c = (*conds)[i];
    if (!c.is_object()) continue;
    const JsonValue* type = c.Find("type");
    const JsonValue* st = c.Find("status");
    if (type && type->is_string() && type->str() == "Ready") {
      return st && st->is_string() && st->str() == "True";
    }
  }
  return false;
}

absl::StatusOr<std::optional<net::Ipv4>> AnnotationIpv4(const Labels& ann, absl::string_view key,
                                                        absl::string_view file,
                                                        absl::string_view path) {
  const std::string* v = FindLabel(ann, key);
  if (v == nullptr || v->empty()) return std::optional<net::Ipv4>();
  absl::string_view s = *v;
  if (size_t slash = s.find('/'); slash != absl::string_view::npos) s = s.substr(0, slash);
  auto ip = net::ParseIpv4(s);
  if (!ip.ok()) {
    return JsonFieldError(file, absl::StrCat(path, ".metadata.annotations[\"", key, "\"]"),
                          absl::StrCat("invalid IPv4 address '", *v, "'"));
  }
  return std::optional<net::Ipv4>(*ip);
}

}  // namespace sarena::model::internal
