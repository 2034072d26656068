// A small, strict (RFC 8259), read-only JSON document for the snapshot readers.
//
// Why not protobuf's JSON mapping: measured on this machine (protobuf 3.21) a 58 MB kubectl pod
// list of 150,000 pods parses in 2.4 s into typed messages and 12.6 s into google.protobuf.Value,
// while issue 3 budgets 3 s for loading a whole 5,000-node / 150,000-pod / 10,000-Service
// snapshot. This reader parses the same file in a fraction of that: values live in one arena,
// strings without escapes point into the document's own copy of the text, numbers are kept as text
// and converted on access.
//
// Errors carry the file name, byte offset, line and column; accessor helpers below produce
// "parse <file>: <path>: <cause>" messages naming the JSON path of a bad field.
#ifndef LIBSARENA_MODEL_JSON_H_
#define LIBSARENA_MODEL_JSON_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
absl::string_view ToString(JsonType type);  // "null", "bool", "number", "string", "array", "object"

/// One JSON value inside a JsonDoc (valid as long as the doc lives). Trivially copyable view.
class JsonValue {
 public:
  JsonType type() const { return type_; }
  bool is_null() const { return type_ == JsonType::kNull; }
  bool is_bool() const { return type_ == JsonType::kBool; }
  bool is_number() const { return type_ == JsonType::kNumber; }
  bool is_string() const { return type_ == JsonType::kString; }
  bool is_array() const { return type_ == JsonType::kArray; }
  bool is_object() const { return type_ == JsonType::kObject; }

  /// Strings: the decoded text. Numbers: the literal text. Others: empty.
  absl::string_view str() const { return (type_ == JsonType::kString || type_ == JsonType::kNumber) ? absl::string_view(text_, size_) : absl::string_view(); }
  bool boolean() const { return type_ == JsonType::kBool && size_ != 0; }
  /// Number of elements (array) or members (object); 0 otherwise.
  size_t size() const { return (type_ == JsonType::kArray || type_ == JsonType::kObject) ? size_ : 0; }

  /// Array element `i` (0 <= i < size()).
  const JsonValue& operator[](size_t i) const { return kids_[i]; }
  /// Object member `i`: key (a string value) and value.
  const JsonValue& key(size_t i) const { return kids_[2 * i]; }
  const JsonValue& value(size_t i) const { return kids_[2 * i + 1]; }
  /// Object member by key (first match), or nullptr (also for non-objects and JSON null values
  /// when `null_is_absent`).
  const JsonValue* Find(absl::string_view key, bool null_is_absent = true) const;

  /// Range-for over array elements.
  const JsonValue* begin() const { return type_ == JsonType::kArray ? kids_ : nullptr; }
  const JsonValue* end() const { return type_ == JsonType::kArray ? kids_ + size_ : nullptr; }

  /// Integer value of a number (or of a string holding a decimal/0x-hex integer when
  /// `allow_string`). nullopt when not an integer in range.
  std::optional<int64_t> AsInt(bool allow_string = false) const;
  std::optional<double> AsDouble() const;

 private:
  friend class JsonDoc;
  friend class JsonParser;
  JsonType type_ = JsonType::kNull;
  uint32_t size_ = 0;
  union {
    const char* text_;
    const JsonValue* kids_;
  };

 public:
  JsonValue() : text_(nullptr) {}
};

/// A parsed document. Owns its text and the value arena.
class JsonDoc {
 public:
  /// Parses `text` (copied). Errors: kInvalidArgument
  /// "parse <file_name>: JSON syntax error at byte N (line L, column C): <cause>".
  static absl::StatusOr<JsonDoc> Parse(absl::string_view text, absl::string_view file_name);
  /// Same, taking ownership of `text` (no copy of large files).
  static absl::StatusOr<JsonDoc> ParseOwned(std::string&& text, absl::string_view file_name);
  /// Same without copying: `text` must outlive the returned document (string values point into
  /// it). What the snapshot parsers use for their temporary documents.
  static absl::StatusOr<JsonDoc> ParseBorrowed(absl::string_view text, absl::string_view file_name);
  /// Parses `text` as the inside of a JSON array — zero or more values separated by commas
  /// ("v1, v2, v3") — without copying; the root is an array of them. With `rest` non-null the
  /// sequence must end with the array's closing ']' and `*rest` receives the text after it.
  /// Used to parse slices of one large list in parallel; errors as Parse (byte offsets are
  /// relative to `text`).
  /// With `skip_keys`, object members with one of these keys (at any depth) are checked for
  /// syntax but not stored: they read as null (a reader that needs none of them saves the
  /// allocations, e.g. a pod's spec.volumes or status.containerStatuses).
  static absl::StatusOr<JsonDoc> ParseBorrowedSequence(
      absl::string_view text, absl::string_view file_name, absl::string_view* rest = nullptr,
      const std::vector<absl::string_view>* skip_keys = nullptr);

  JsonDoc(JsonDoc&&) noexcept;
  JsonDoc& operator=(JsonDoc&&) noexcept;
  ~JsonDoc();

  const JsonValue& root() const { return *root_; }
  const std::string& file_name() const { return file_name_; }

 private:
  friend class JsonParser;
  JsonDoc();
  struct Arena;
  // Owned text (Parse/ParseOwned), on the heap so that moving the document never moves the
  // characters values point to (a short std::string would keep them inline). Null if borrowed.
  std::unique_ptr<std::string> text_;
  absl::string_view view_;  // the text being parsed
  std::string file_name_;
  std::unique_ptr<Arena> arena_;
  const JsonValue* root_ = nullptr;
};

// ---- Helpers producing errors that name the file and JSON path. ----

/// kInvalidArgument "parse <file>: <path>: <cause>".
absl::Status JsonFieldError(absl::string_view file, absl::string_view path, absl::string_view cause);

/// The list items of a kubectl/iproute2 document: root array, or root object's "items" array
/// (`"items": null`, kubectl's empty list, = empty). Sets `*path_prefix` to "" (bare array) or
/// "items". Errors, all kInvalidArgument "parse <file>: ...": a root that is neither an array nor
/// an object; "items" not an array or null; an object without "items" (never read as an empty
/// list) — the message lists its first keys, or for a kubectl Status object
/// ({"kind":"Status","status":"Failure","message":...}, what kubectl writes on an API error)
/// quotes its status and message.
absl::StatusOr<const JsonValue*> JsonListItems(const JsonDoc& doc, std::string* path_prefix);

/// "prefix[i]" / "[i]".
std::string JsonIndexPath(absl::string_view prefix, size_t i);

/// Typed field getters: absent or null -> nullopt / default; present with the wrong type ->
/// kInvalidArgument naming `path`.`key`.
absl::StatusOr<std::optional<absl::string_view>> JsonGetString(const JsonValue& obj,
                                                               absl::string_view key,
                                                               absl::string_view file,
                                                               absl::string_view path);
absl::StatusOr<std::optional<int64_t>> JsonGetInt(const JsonValue& obj, absl::string_view key,
                                                  absl::string_view file, absl::string_view path,
                                                  int64_t min, int64_t max,
                                                  bool allow_string = false);
absl::StatusOr<std::optional<bool>> JsonGetBool(const JsonValue& obj, absl::string_view key,
                                                absl::string_view file, absl::string_view path);
/// An IPv4 string field. A value containing ':' (IPv6) yields nullopt when `skip_ipv6`.
absl::StatusOr<std::optional<net::Ipv4>> JsonGetIpv4(const JsonValue& obj, absl::string_view key,
                                                     absl::string_view file, absl::string_view path,
                                                     bool skip_ipv6 = true);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_JSON_H_
