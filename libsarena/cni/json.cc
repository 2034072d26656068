#include "libsarena/cni/json.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/json.h"
#include "libsarena/cni/env.h"

namespace sarena::cni {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

}  // namespace

namespace {

// Appends the JSON text of `value`; object keys in byte order so output is deterministic
// (protobuf's own printer follows its hash map's unspecified order). Scalars and key
// escaping go through protobuf's printer.
void AppendJson(const Value& value, std::string* out) {
  switch (value.kind_case()) {
    case Value::kStructValue: {
      const auto& fields = value.struct_value().fields();
      std::vector<const std::string*> keys;
      keys.reserve(fields.size());
      for (const auto& [k, v] : fields) keys.push_back(&k);
      std::sort(keys.begin(), keys.end(),
                [](const std::string* a, const std::string* b) { return *a < *b; });
      out->push_back('{');
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i) out->push_back(',');
        Value key;
        key.set_string_value(*keys[i]);
        AppendJson(key, out);
        out->push_back(':');
        AppendJson(fields.at(*keys[i]), out);
      }
      out->push_back('}');
      return;
    }
    case Value::kListValue: {
      out->push_back('[');
      const auto& values = value.list_value().values();
      for (int i = 0; i < values.size(); ++i) {
        if (i) out->push_back(',');
        AppendJson(values[i], out);
      }
      out->push_back(']');
      return;
    }
    case Value::kNullValue:
    case Value::KIND_NOT_SET:
      out->append("null");
      return;
    default: {
      std::string text;
      if (!google::protobuf::util::MessageToJsonString(value, &text).ok()) text = "null";
      out->append(text);
      return;
    }
  }
}

}  // namespace

std::string ToJson(const Value& value) {
  std::string out;
  AppendJson(value, &out);
  return out;
}

std::string JsonValueText(const Value& value, size_t max_len) {
  std::string text = ToJson(value);
  if (text.size() > max_len) {
    text.resize(max_len);
    text += "...";
  }
  return text;
}

absl::Status CheckJsonText(absl::string_view json, int max_depth) {
  if (std::optional<size_t> bad = FirstInvalidUtf8(json)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not valid UTF-8 at byte offset ", *bad, " (byte 0x",
                     absl::Hex(static_cast<unsigned char>(json[*bad]), absl::kZeroPad2), ")"));
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return absl::InvalidArgumentError(absl::StrCat("nesting deeper than ", max_depth,
                                                       " levels at byte offset ", i));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> ParseJsonValue(absl::string_view json, std::string* parser_detail) {
  if (absl::Status s = CheckJsonText(json); !s.ok()) {
    if (parser_detail) *parser_detail = std::string(s.message());
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", s.message()));
  }
  Value value;
  google::protobuf::util::JsonParseOptions options;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &value, options);
  if (!status.ok()) {
    std::string full(status.message().data(), status.message().size());
    if (parser_detail) *parser_detail = full;
    // The parser appends the offending text and a caret on further lines: keep line one.
    std::string first(absl::StripAsciiWhitespace(
        std::vector<absl::string_view>(absl::StrSplit(full, '\n')).front()));
    if (json.find_first_not_of(" \t\r\n") == absl::string_view::npos) first = "input is empty";
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", first));
  }
  return value;
}

absl::StatusOr<JsonObject> JsonObject::Parse(absl::string_view json, std::string* parser_detail) {
  absl::StatusOr<Value> value = ParseJsonValue(json, parser_detail);
  if (!value.ok()) return value.status();
  if (value->kind_case() != Value::kStructValue) {
    return absl::InvalidArgumentError(absl::StrCat("JSON document is ", JsonKindName(*value),
                                                   " ", JsonValueText(*value),
                                                   ", want an object"));
  }
  return JsonObject(std::move(*value->mutable_struct_value()));
}

std::string JsonObject::PathOf(absl::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
}

bool JsonObject::Has(absl::string_view key) const { return Find(key) != nullptr; }

const Value* JsonObject::Find(absl::string_view key) const {
  auto it = fields_.fields().find(std::string(key));
  return it == fields_.fields().end() ? nullptr : &it->second;
}

absl::Status JsonObject::WrongType(absl::string_view key, const Value& v,
                                   absl::string_view want) const {
  return absl::InvalidArgumentError(absl::StrCat("field '", PathOf(key), "' is ",
                                                 JsonKindName(v), " ", JsonValueText(v),
                                                 ", want ", want));
}

namespace {
bool IsAbsent(const Value* v) {
  return v == nullptr || v->kind_case() == Value::kNullValue ||
         v->kind_case() == Value::KIND_NOT_SET;
}
}  // namespace

absl::StatusOr<std::optional<std::string>> JsonObject::GetString(absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  if (v->kind_case() != Value::kStringValue) return WrongType(key, *v, "a string");
  return v->string_value();
}

absl::StatusOr<std::optional<uint64_t>> JsonObject::GetUint(absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  if (v->kind_case() != Value::kNumberValue) return WrongType(key, *v, "a non-negative integer");
  double d = v->number_value();
  if (d < 0 || d > kMaxExactInteger || std::floor(d) != d) {
    return WrongType(key, *v, "a non-negative integer");
  }
  return static_cast<uint64_t>(d);
}

absl::StatusOr<std::optional<int64_t>> JsonObject::GetInt(absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  double d = v->kind_case() == Value::kNumberValue ? v->number_value() : 0.5;
  if (v->kind_case() != Value::kNumberValue || std::fabs(d) > kMaxExactInteger ||
      std::floor(d) != d) {
    return WrongType(key, *v, "an integer");
  }
  return static_cast<int64_t>(d);
}

absl::StatusOr<std::optional<bool>> JsonObject::GetBool(absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  if (v->kind_case() != Value::kBoolValue) return WrongType(key, *v, "a boolean");
  return v->bool_value();
}

absl::StatusOr<std::optional<JsonObject>> JsonObject::GetObject(absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  if (v->kind_case() != Value::kStructValue) return WrongType(key, *v, "an object");
  return JsonObject(v->struct_value(), PathOf(key));
}

absl::StatusOr<std::optional<std::vector<JsonObject>>> JsonObject::GetObjectArray(
    absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  if (v->kind_case() != Value::kListValue) return WrongType(key, *v, "an array of objects");
  std::vector<JsonObject> out;
  const auto& list = v->list_value().values();
  for (int i = 0; i < list.size(); ++i) {
    std::string path = absl::StrCat(PathOf(key), "[", i, "]");
    if (list[i].kind_case() != Value::kStructValue) {
      return absl::InvalidArgumentError(absl::StrCat("field '", path, "' is ",
                                                     JsonKindName(list[i]), " ",
                                                     JsonValueText(list[i]), ", want an object"));
    }
    out.emplace_back(list[i].struct_value(), std::move(path));
  }
  return out;
}

absl::StatusOr<std::optional<std::vector<std::string>>> JsonObject::GetStringArray(
    absl::string_view key) const {
  const Value* v = Find(key);
  if (IsAbsent(v)) return std::nullopt;
  if (v->kind_case() != Value::kListValue) return WrongType(key, *v, "an array of strings");
  std::vector<std::string> out;
  const auto& list = v->list_value().values();
  for (int i = 0; i < list.size(); ++i) {
    if (list[i].kind_case() != Value::kStringValue) {
      return absl::InvalidArgumentError(absl::StrCat("field '", PathOf(key), "[", i, "]' is ",
                                                     JsonKindName(list[i]), " ",
                                                     JsonValueText(list[i]), ", want a string"));
    }
    out.push_back(list[i].string_value());
  }
  return out;
}

void JsonObject::SetValue(absl::string_view key, Value value) {
  (*fields_.mutable_fields())[std::string(key)] = std::move(value);
}

void JsonObject::Set(absl::string_view key, absl::string_view value) {
  Value v;
  v.set_string_value(std::string(value));
  SetValue(key, std::move(v));
}

void JsonObject::Set(absl::string_view key, uint64_t value) {
  Value v;
  v.set_number_value(static_cast<double>(value));
  SetValue(key, std::move(v));
}

void JsonObject::Set(absl::string_view key, int64_t value) {
  Value v;
  v.set_number_value(static_cast<double>(value));
  SetValue(key, std::move(v));
}

void JsonObject::Set(absl::string_view key, bool value) {
  Value v;
  v.set_bool_value(value);
  SetValue(key, std::move(v));
}

void JsonObject::Set(absl::string_view key, const JsonObject& value) {
  SetValue(key, value.AsValue());
}

void JsonObject::Set(absl::string_view key, const std::vector<JsonObject>& values) {
  Value v;
  auto* list = v.mutable_list_value();
  for (const JsonObject& o : values) *list->add_values() = o.AsValue();
  SetValue(key, std::move(v));
}

void JsonObject::Set(absl::string_view key, const std::vector<std::string>& values) {
  Value v;
  auto* list = v.mutable_list_value();
  for (const std::string& s : values) list->add_values()->set_string_value(s);
  SetValue(key, std::move(v));
}

Value JsonObject::AsValue() const {
  Value v;
  *v.mutable_struct_value() = fields_;
  return v;
}

std::string JsonObject::ToJson() const { return cni::ToJson(AsValue()); }

}  // namespace sarena::cni
