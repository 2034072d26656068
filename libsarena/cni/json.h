// Minimal typed access to JSON objects through protobuf's JSON mapping
// (google.protobuf.Struct / Value), so that libsarena needs no JSON library of its own.
// Used for CNI network configs, results and error objects.
#ifndef LIBSARENA_CNI_JSON_H_
#define LIBSARENA_CNI_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"
#include "libsarena/base/json.h"

namespace sarena::cni {

/// JSON text of `value` (compact), cut to at most `max_len` bytes with "..." appended — used to
/// quote offending values in error messages.
std::string JsonValueText(const google::protobuf::Value& value, size_t max_len = 80);

/// "a string", "a number", ... : base/json.h.
using ::sarena::JsonKindName;

/// Deepest nesting of arrays/objects ParseJsonValue accepts. A CNI config (with prevResult,
/// runtimeConfig, args) needs fewer than 10; the bound keeps a hostile 40 KB document of 20,000
/// nested arrays from costing the parser tens of seconds of CPU (and deep recursion).
/// protobuf's JSON-to-Struct transcoder itself gives up (after the long walk) at about 50
/// levels with an unhelpful "invalid protobuf output", so the bound sits below that.
inline constexpr int kMaxJsonDepth = 32;

/// A linear pre-scan of JSON text, before any parser sees it: the text is valid UTF-8 (RFC 8259
/// section 8.1) and no array/object nests deeper than `max_depth` (brackets inside strings do not
/// count). It does not check the rest of the grammar.
/// Errors: kInvalidArgument "nesting deeper than 32 levels at byte offset N" (N: the bracket
/// that opens level 33; the document's own braces are level 1) or "not valid UTF-8 at byte offset N (byte 0xNN)".
absl::Status CheckJsonText(absl::string_view json, int max_depth = kMaxJsonDepth);

/// Parses any JSON text into a Value. Errors: kInvalidArgument "not valid JSON: <reason>" where
/// the reason is CheckJsonText's (too deep, bad UTF-8 — refused before parsing) or the parser's
/// message, one line; the parser's full message (with the caret line) goes in `*parser_detail`
/// when non-null. Note: numbers are doubles (exact up to 2^53), objects keep no key order.
absl::StatusOr<google::protobuf::Value> ParseJsonValue(absl::string_view json,
                                                       std::string* parser_detail = nullptr);

/// Compact JSON text of a Value (keys of objects in protobuf map order, i.e. unspecified).
std::string ToJson(const google::protobuf::Value& value);

/// A JSON object with typed getters whose errors name the field by its dotted path
/// (e.g. "prevResult.ips[0].address") and quote the offending value.
/// Getter conventions: absent key or JSON null -> std::nullopt; wrong type ->
/// kInvalidArgument "field '<path>' is <kind> <value>, want <type>".
class JsonObject {
 public:
  JsonObject() = default;
  /// Wraps `fields`; `path` is this object's own path ("" for the document root).
  explicit JsonObject(google::protobuf::Struct fields, std::string path = "")
      : fields_(std::move(fields)), path_(std::move(path)) {}

  /// Parses text that must be one JSON object. Errors: kInvalidArgument "not valid JSON: ..."
  /// (see ParseJsonValue) or "JSON document is <kind>, want an object".
  static absl::StatusOr<JsonObject> Parse(absl::string_view json,
                                          std::string* parser_detail = nullptr);

  /// Dotted path of `key` inside this object ("mtu", "prevResult.ips[0].address").
  std::string PathOf(absl::string_view key) const;
  const std::string& path() const { return path_; }

  bool Has(absl::string_view key) const;
  /// The raw value, or nullptr when absent.
  const google::protobuf::Value* Find(absl::string_view key) const;

  absl::StatusOr<std::optional<std::string>> GetString(absl::string_view key) const;
  /// A non-negative integral number (exact, at most 2^53).
  absl::StatusOr<std::optional<uint64_t>> GetUint(absl::string_view key) const;
  /// Any integral number (exact, |n| at most 2^53).
  absl::StatusOr<std::optional<int64_t>> GetInt(absl::string_view key) const;
  absl::StatusOr<std::optional<bool>> GetBool(absl::string_view key) const;
  absl::StatusOr<std::optional<JsonObject>> GetObject(absl::string_view key) const;
  /// Array elements that are objects; element i gets the path "<key>[i]". A non-object element
  /// is an error naming "<key>[i]".
  absl::StatusOr<std::optional<std::vector<JsonObject>>> GetObjectArray(
      absl::string_view key) const;
  /// Array of strings; a non-string element is an error naming "<key>[i]".
  absl::StatusOr<std::optional<std::vector<std::string>>> GetStringArray(
      absl::string_view key) const;

  void Set(absl::string_view key, absl::string_view value);
  void Set(absl::string_view key, const char* value) { Set(key, absl::string_view(value)); }
  void Set(absl::string_view key, uint64_t value);
  void Set(absl::string_view key, int64_t value);
  void Set(absl::string_view key, int value) { Set(key, static_cast<int64_t>(value)); }
  void Set(absl::string_view key, uint32_t value) { Set(key, static_cast<uint64_t>(value)); }
  void Set(absl::string_view key, bool value);
  void Set(absl::string_view key, const JsonObject& value);
  void Set(absl::string_view key, const std::vector<JsonObject>& values);
  void Set(absl::string_view key, const std::vector<std::string>& values);
  void SetValue(absl::string_view key, google::protobuf::Value value);

  /// Compact JSON text of the object.
  std::string ToJson() const;
  const google::protobuf::Struct& fields() const { return fields_; }
  google::protobuf::Value AsValue() const;

 private:
  absl::Status WrongType(absl::string_view key, const google::protobuf::Value& v,
                         absl::string_view want) const;

  google::protobuf::Struct fields_;
  std::string path_;
};

}  // namespace sarena::cni

#endif  // LIBSARENA_CNI_JSON_H_
