#include "libsarena/model/proto_json.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/json.h"

namespace sarena::model {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Struct;
using google::protobuf::Value;

google::protobuf::StringPiece Piece(absl::string_view s) {
  return google::protobuf::StringPiece(s.data(), s.size());
}

// protobuf's messages span lines (the text around a syntax error, a caret): one line.
std::string OneLine(absl::string_view text) {
  std::string out;
  for (absl::string_view part : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    if (!out.empty()) out += " ";
    absl::StrAppend(&out, absl::StripAsciiWhitespace(part));
  }
  return out;
}

absl::Status CheckObject(const Descriptor* d, const Struct& s, absl::string_view file,
                         const std::string& path);

// One value of field `f` (a list element when `element`): the JSON type the protobuf JSON mapping
// reads for the field's type.
absl::Status CheckOne(const FieldDescriptor* f, const Value& v, absl::string_view file,
                      const std::string& path, bool element) {
  if (v.kind_case() == Value::kNullValue) {
    if (!element) return absl::OkStatus();  // null = the field's default
    return ProtoFieldError(file, path, "expected a value, got null");
  }
  auto want = [&](absl::string_view what) {
    return ProtoFieldError(file, path, absl::StrCat("expected ", what, ", got ", JsonKindName(v)));
  };
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (v.kind_case() != Value::kStructValue) return want("an object");
      return CheckObject(f->message_type(), v.struct_value(), file, path);
    case FieldDescriptor::CPPTYPE_STRING:
      if (v.kind_case() != Value::kStringValue) return want("a string");
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_BOOL:
      if (v.kind_case() != Value::kBoolValue) return want("a boolean");
      return absl::OkStatus();
    default:  // numbers and enums: a JSON number or its text
      if (v.kind_case() != Value::kNumberValue && v.kind_case() != Value::kStringValue) {
        return want(f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM ? "a name or a number"
                                                                   : "a number");
      }
      return absl::OkStatus();
  }
}

absl::Status CheckObject(const Descriptor* d, const Struct& s, absl::string_view file,
                         const std::string& path) {
  // In field order, so the first bad field named does not depend on the map's order.
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    for (const std::string& key : {f->name(), f->json_name()}) {
      auto it = s.fields().find(key);
      if (it == s.fields().end()) continue;
      const Value& v = it->second;
      const std::string p = path.empty() ? key : absl::StrCat(path, ".", key);
      if (f->is_map()) {
        if (v.kind_case() != Value::kStructValue && v.kind_case() != Value::kNullValue) {
          return ProtoFieldError(file, p, absl::StrCat("expected an object, got ", JsonKindName(v)));
        }
      } else if (f->is_repeated()) {
        if (v.kind_case() == Value::kNullValue) continue;
        if (v.kind_case() != Value::kListValue) {
          return ProtoFieldError(file, p, absl::StrCat("expected an array, got ", JsonKindName(v)));
        }
        for (int e = 0; e < v.list_value().values_size(); ++e) {
          absl::Status st =
              CheckOne(f, v.list_value().values(e), file, absl::StrCat(p, "[", e, "]"), true);
          if (!st.ok()) return st;
        }
      } else {
        absl::Status st = CheckOne(f, v, file, p, false);
        if (!st.ok()) return st;
      }
      if (f->name() == f->json_name()) break;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ProtoFieldError(absl::string_view file, absl::string_view path,
                             absl::string_view cause) {
  return absl::InvalidArgumentError(
      absl::StrCat("parse ", file, ": ", path.empty() ? "(root)" : path, ": ", cause));
}

absl::Status ParseProtoJson(absl::string_view json, absl::string_view file,
                            google::protobuf::Message* message,
                            const ProtoJsonLegacy& legacy) {
  // Once as plain JSON, for the types; then into the message.
  Value doc;
  auto st = google::protobuf::util::JsonStringToMessage(Piece(json), &doc);
  if (!st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse ", file, ": invalid JSON: ", OneLine(std::string(st.message()))));
  }
  std::string rewritten;
  if (doc.kind_case() == Value::kListValue && !legacy.root_list_field.empty()) {
    // The legacy bare array: checked and parsed as the one field it stands for.
    Value object;
    (*object.mutable_struct_value()->mutable_fields())[std::string(legacy.root_list_field)] =
        std::move(doc);
    doc = std::move(object);
    rewritten = absl::StrCat("{\"", legacy.root_list_field, "\": ", json, "}");
    json = rewritten;
  }
  if (doc.kind_case() == Value::kStructValue) {
    auto* fields = doc.mutable_struct_value()->mutable_fields();
    bool renamed = false;
    for (const auto& [from, to] : legacy.root_aliases) {
      auto it = fields->find(from);
      if (it == fields->end() || fields->contains(to)) continue;
      Value v = std::move(it->second);
      fields->erase(it);
      (*fields)[to] = std::move(v);
      renamed = true;
    }
    if (renamed) {
      // Rare (legacy files only): the renamed document is printed and parsed again.
      rewritten.clear();
      (void)google::protobuf::util::MessageToJsonString(doc, &rewritten);
      json = rewritten;
    }
  }
  if (doc.kind_case() != Value::kStructValue) {
    return ProtoFieldError(file, "", absl::StrCat("expected an object, got ", JsonKindName(doc)));
  }
  if (absl::Status c = CheckObject(message->GetDescriptor(), doc.struct_value(), file, "");
      !c.ok()) {
    return c;
  }
  message->Clear();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  st = google::protobuf::util::JsonStringToMessage(Piece(json), message, options);
  if (st.ok()) return absl::OkStatus();
  // "(tunnels[0].node_id): invalid value -1 for type TYPE_UINT32" -> path and cause.
  const std::string text(st.message());
  absl::string_view m = text;
  if (absl::StartsWith(m, "(")) {
    size_t close = m.find("): ");
    if (close != absl::string_view::npos) {
      return ProtoFieldError(file, m.substr(1, close - 1), OneLine(m.substr(close + 3)));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("parse ", file, ": ", OneLine(m)));
}

std::string PrintProtoJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  // Fails only for messages the JSON mapping cannot express (Any with an unknown type): none here.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  return out;
}

absl::StatusOr<std::optional<net::Ipv4>> Ipv4Field(const std::string& text, absl::string_view file,
                                                   absl::string_view path, bool skip_ipv6) {
  if (text.empty()) return std::nullopt;
  if (skip_ipv6 && text.find(':') != std::string::npos) return std::nullopt;
  auto ip = net::ParseIpv4(text, path);
  if (!ip.ok()) return ProtoFieldError(file, path, absl::StrCat("invalid IPv4 address '", text, "'"));
  return std::optional<net::Ipv4>(*ip);
}

absl::StatusOr<std::optional<net::Ipv4Prefix>> Ipv4PrefixField(const std::string& text,
                                                               absl::string_view file,
                                                               absl::string_view path) {
  if (text.empty()) return std::nullopt;
  auto p = net::ParseIpv4Prefix(text, path);
  if (!p.ok()) return ProtoFieldError(file, path, absl::StrCat("invalid IPv4 CIDR '", text, "'"));
  return std::optional<net::Ipv4Prefix>(p->canonical());
}

absl::StatusOr<std::optional<net::Mac>> MacField(const std::string& text, absl::string_view file,
                                                 absl::string_view path) {
  if (text.empty()) return std::nullopt;
  auto m = net::ParseMac(text, path);
  if (!m.ok()) return ProtoFieldError(file, path, absl::StrCat("invalid MAC '", text, "'"));
  return std::optional<net::Mac>(*m);
}

absl::Status MaxField(uint64_t value, uint64_t max, absl::string_view file,
                      absl::string_view path) {
  if (value <= max) return absl::OkStatus();
  return ProtoFieldError(file, path, absl::StrCat("value ", value, " out of range [0, ", max, "]"));
}

}  // namespace sarena::model
