#include "libsarena/model/json.h"

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"

namespace sarena::model {

absl::string_view ToString(JsonType type) {
  switch (type) {
    case JsonType::kNull: return "null";
    case JsonType::kBool: return "bool";
    case JsonType::kNumber: return "number";
    case JsonType::kString: return "string";
    case JsonType::kArray: return "array";
    case JsonType::kObject: return "object";
  }
  return "?";
}

const JsonValue* JsonValue::Find(absl::string_view key, bool null_is_absent) const {
  if (type_ != JsonType::kObject) return nullptr;
  for (uint32_t i = 0; i < size_; ++i) {
    const JsonValue& k = kids_[2 * i];
    if (k.size_ == key.size() && (key.empty() || k.text_[0] == key[0]) &&
        std::memcmp(k.text_, key.data(), key.size()) == 0) {
      const JsonValue& v = kids_[2 * i + 1];
      if (null_is_absent && v.type_ == JsonType::kNull) return nullptr;
      return &v;
    }
  }
  return nullptr;
}

std::optional<int64_t> JsonValue::AsInt(bool allow_string) const {
  if (type_ != JsonType::kNumber && !(allow_string && type_ == JsonType::kString)) {
    return std::nullopt;
  }
  absl::string_view s(text_, size_);
  int64_t v = 0;
  if (type_ == JsonType::kString && (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X"))) {
    uint64_t u = 0;
    if (!absl::SimpleHexAtoi(s.substr(2), &u) || u > static_cast<uint64_t>(INT64_MAX)) {
      return std::nullopt;
    }
    return static_cast<int64_t>(u);
  }
  if (absl::SimpleAtoi(s, &v)) return v;
  // Integral values written with a fraction/exponent ("8080.0", "1e3").
  double d = 0;
  // Range-check before the cast: converting inf, NaN or anything outside int64 is undefined
  // behaviour (found by fuzz_model_sarena_cluster: "1e999").
  if (absl::SimpleAtod(s, &d) && std::isfinite(d) && d >= -9223372036854775808.0 &&
      d < 9223372036854775808.0 && d == std::trunc(d)) {
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<double> JsonValue::AsDouble() const {
  if (type_ != JsonType::kNumber) return std::nullopt;
  double d = 0;
  if (!absl::SimpleAtod(absl::string_view(text_, size_), &d)) return std::nullopt;
  return d;
}

// ---------------------------------------------------------------------------------------------

struct JsonDoc::Arena {
  std::vector<std::unique_ptr<JsonValue[]>> blocks;
  size_t used = 0;
  size_t cap = 0;
  std::vector<std::unique_ptr<char[]>> strings;

  JsonValue* Alloc(size_t n) {
    if (n == 0) return nullptr;
    if (used + n > cap) {
      size_t sz = n > 16384 ? n : 16384;
      blocks.emplace_back(new JsonValue[sz]);
      used = 0;
      cap = sz;
    }
    JsonValue* p = blocks.back().get() + used;
    used += n;
    return p;
  }
  char* AllocChars(size_t n) {
    strings.emplace_back(new char[n ? n : 1]);
    return strings.back().get();
  }
};

JsonDoc::JsonDoc() : arena_(std::make_unique<Arena>()) {}
JsonDoc::JsonDoc(JsonDoc&&) noexcept = default;
JsonDoc& JsonDoc::operator=(JsonDoc&&) noexcept = default;
JsonDoc::~JsonDoc() = default;

namespace {
struct CharTables {
  bool ws[256] = {};
  bool special[256] = {};
  constexpr CharTables() {
    ws[static_cast<unsigned char>(' ')] = ws[static_cast<unsigned char>('\n')] = true;
    ws[static_cast<unsigned char>('\r')] = ws[static_cast<unsigned char>('\t')] = true;
    for (int c = 0; c < 0x20; ++c) special[c] = true;
    special[static_cast<unsigned char>('"')] = special[static_cast<unsigned char>('\\')] = true;
  }
};
constexpr CharTables kTables;
constexpr const bool* kWhitespace = kTables.ws;
constexpr const bool* kStringSpecial = kTables.special;
}  // namespace

class JsonParser {
 public:
  explicit JsonParser(JsonDoc* doc, const std::vector<absl::string_view>* skip_keys = nullptr)
      : doc_(doc), p_(doc->view_.data()), begin_(p_), end_(p_ + doc->view_.size()),
        skip_keys_(skip_keys != nullptr && !skip_keys->empty() ? skip_keys : nullptr) {}

  // "v1, v2, ..." [ "]" rest ] as an array root (JsonDoc::ParseBorrowedSequence).
  absl::Status RunSequence(absl::string_view* rest) {
    size_t base = stack_.size();
    SkipWs();
    bool closed = false;
    if (p_ < end_ && *p_ == ']' && rest != nullptr) {
      ++p_;
      closed = true;
    }
    while (!closed && p_ < end_) {
      JsonValue v;
      if (!ParseValue(&v, 1)) return error_;
      stack_.push_back(v);
      SkipWs();
      if (p_ >= end_) break;
      if (*p_ == ',') {
        ++p_;
        SkipWs();
        if (p_ >= end_) return Error("expected a value after ','");
        continue;
      }
      if (*p_ == ']' && rest != nullptr) {
        ++p_;
        closed = true;
        break;
      }
      return Error("expected ',' or ']' in array");
    }
    if (rest != nullptr) {
      if (!closed) return Error("unterminated array, expected ']'");
      *rest = absl::string_view(p_, static_cast<size_t>(end_ - p_));
    }
    size_t n = stack_.size() - base;
    JsonValue* kids = doc_->arena_->Alloc(n);
    if (n) std::memcpy(static_cast<void*>(kids), stack_.data() + base, n * sizeof(JsonValue));
    stack_.resize(base);
    JsonValue* r = doc_->arena_->Alloc(1);
    r->type_ = JsonType::kArray;
    r->size_ = static_cast<uint32_t>(n);
    r->kids_ = kids;
    doc_->root_ = r;
    return absl::OkStatus();
  }

  absl::Status Run() {
    SkipWs();
    JsonValue root;
    if (!ParseValue(&root, 0)) return error_;
    SkipWs();
    if (p_ != end_) return Error("unexpected trailing characters after the JSON value");
    JsonValue* r = doc_->arena_->Alloc(1);
    *r = root;
    doc_->root_ = r;
    return absl::OkStatus();
  }

 private:
  static constexpr int kMaxDepth = 512;

  bool Fail(absl::string_view cause) {
    if (error_.ok()) error_ = Error(cause);
    return false;
  }
  absl::Status Error(absl::string_view cause) const {
    size_t off = static_cast<size_t>(p_ - begin_);
    size_t line = 1, col = 1;
    for (const char* q = begin_; q < p_ && q < end_; ++q) {
      if (*q == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("parse ", doc_->file_name_,
                                                   ": JSON syntax error at byte ", off, " (line ",
                                                   line, ", column ", col, "): ", cause));
  }

  void SkipWs() {
    while (p_ < end_) {
      if (*p_ == ' ') {
        // Indentation of pretty-printed JSON (kubectl): runs of spaces, 8 at a time.
        static constexpr uint64_t kSpaces = 0x2020202020202020ULL;
        uint64_t w;
        while (end_ - p_ >= 8 && (std::memcpy(&w, p_, 8), w == kSpaces)) p_ += 8;
        while (p_ < end_ && *p_ == ' ') ++p_;
        continue;
      }
      if (!kWhitespace[static_cast<unsigned char>(*p_)]) return;
      ++p_;
    }
  }

  bool ParseValue(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return Fail("nesting too deep");
    if (p_ >= end_) return Fail("unexpected end of input, expected a value");
    switch (*p_) {
      case '{': return ParseObject(out, depth);
      case '[': return ParseArray(out, depth);
      case '"': out->type_ = JsonType::kString; return ParseString(out);
      case 't': return Literal("true", JsonType::kBool, 1, out);
      case 'f': return Literal("false", JsonType::kBool, 0, out);
      case 'n': return Literal("null", JsonType::kNull, 0, out);
      default:
        if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) return ParseNumber(out);
        return Fail(absl::StrCat("unexpected character '", absl::string_view(p_, 1), "'"));
    }
  }

  bool Literal(absl::string_view lit, JsonType type, uint32_t v, JsonValue* out) {
    if (static_cast<size_t>(end_ - p_) < lit.size() || std::memcmp(p_, lit.data(), lit.size()) != 0) {
      return Fail("invalid literal");
    }
    p_ += lit.size();
    out->type_ = type;
    out->size_ = v;
    out->text_ = nullptr;
    return true;
  }

  bool ParseNumber(JsonValue* out) {
    const char* s = p_;
    if (*p_ == '-') ++p_;
    if (p_ >= end_) return Fail("truncated number");
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      return Fail("invalid number");
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) return Fail("invalid number fraction");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) return Fail("invalid number exponent");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    out->type_ = JsonType::kNumber;
    out->text_ = s;
    out->size_ = static_cast<uint32_t>(p_ - s);
    return true;
  }

  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool ParseString(JsonValue* out) {
    ++p_;  // opening quote
    const char* s = p_;
    bool escapes = false;
    while (true) {
      // Fast scan, 8 bytes per step: stop at a word holding '"', '\\' or a byte < 0x20
      // (SWAR: "haszero" of w ^ c, and "hasless" — exact about presence, not position; the byte
      // loop below finds which one).
      constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
      while (end_ - p_ >= 8) {
        uint64_t w;
        std::memcpy(&w, p_, 8);
        uint64_t q = w ^ (kOnes * '"'), b = w ^ (kOnes * '\\');
        if ((((q - kOnes) & ~q) | ((b - kOnes) & ~b) | ((w - kOnes * 0x20) & ~w)) & kHigh) break;
        p_ += 8;
      }
      while (p_ < end_ && !kStringSpecial[static_cast<unsigned char>(*p_)]) ++p_;
      if (p_ >= end_) return Fail("unterminated string");
      if (*p_ == '"') break;
      if (*p_ == '\\') {
        escapes = true;
        ++p_;
        if (p_ >= end_) return Fail("unterminated string");
        ++p_;
        continue;
      }
      return Fail("control character in string");
    }
    const char* e = p_;
    ++p_;  // closing quote
    if (!escapes) {
      out->text_ = s;
      out->size_ = static_cast<uint32_t>(e - s);
      return true;
    }
    // Decode escapes into the arena (decoded length <= raw length).
    char* buf = doc_->arena_->AllocChars(static_cast<size_t>(e - s));
    char* w = buf;
    for (const char* q = s; q < e;) {
      if (*q != '\\') {
        *w++ = *q++;
        continue;
      }
      ++q;
      char c = *q++;
      switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
          auto read4 = [&](const char* at, uint32_t* cp) {
            if (e - at < 4) return false;
            uint32_t v = 0;
            for (int i = 0; i < 4; ++i) {
              int h = Hex(at[i]);
              if (h < 0) return false;
              v = v * 16 + static_cast<uint32_t>(h);
            }
            *cp = v;
            return true;
          };
          uint32_t cp = 0;
          if (!read4(q, &cp)) {
            p_ = q;
            return Fail("invalid \\u escape");
          }
          q += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF && e - q >= 6 && q[0] == '\\' && q[1] == 'u') {
            uint32_t lo = 0;
            if (read4(q + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              q += 6;
            }
          }
          // UTF-8 encode (at most 4 bytes; a 6-byte escape pair yields 4 bytes, a single
          // 6-byte \uXXXX yields at most 3).
          if (cp < 0x80) {
            *w++ = static_cast<char>(cp);
          } else if (cp < 0x800) {
            *w++ = static_cast<char>(0xC0 | (cp >> 6));
            *w++ = static_cast<char>(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            *w++ = static_cast<char>(0xE0 | (cp >> 12));
            *w++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            *w++ = static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            *w++ = static_cast<char>(0xF0 | (cp >> 18));
            *w++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            *w++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            *w++ = static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          p_ = q - 1;
          return Fail("invalid escape");
      }
    }
    out->text_ = buf;
    out->size_ = static_cast<uint32_t>(w - buf);
    return true;
  }

  bool ParseArray(JsonValue* out, int depth) {
    ++p_;
    size_t base = stack_.size();
    SkipWs();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
    } else {
      while (true) {
        SkipWs();
        JsonValue v;
        if (!ParseValue(&v, depth + 1)) return false;
        stack_.push_back(v);
        SkipWs();
        if (p_ >= end_) return Fail("unterminated array, expected ',' or ']'");
        if (*p_ == ',') {
          ++p_;
          continue;
        }
        if (*p_ == ']') {
          ++p_;
          break;
        }
        return Fail("expected ',' or ']' in array");
      }
    }
    size_t n = stack_.size() - base;
    JsonValue* kids = doc_->arena_->Alloc(n);
    if (n) std::memcpy(static_cast<void*>(kids), stack_.data() + base, n * sizeof(JsonValue));
    stack_.resize(base);
    out->type_ = JsonType::kArray;
    out->size_ = static_cast<uint32_t>(n);
    out->kids_ = kids;
    return true;
  }

  bool ParseObject(JsonValue* out, int depth) {
    ++p_;
    size_t base = stack_.size();
    SkipWs();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
    } else {
      while (true) {
        SkipWs();
        if (p_ >= end_ || *p_ != '"') return Fail("expected a string key in object");
        JsonValue k;
        k.type_ = JsonType::kString;
        if (!ParseString(&k)) return false;
        SkipWs();
        if (p_ >= end_ || *p_ != ':') return Fail("expected ':' after object key");
        ++p_;
        SkipWs();
        JsonValue v;
        if (skip_keys_ != nullptr && Skipped(k)) {
          if (!SkipValue(depth + 1)) return false;  // stored as null
        } else if (!ParseValue(&v, depth + 1)) {
          return false;
        }
        stack_.push_back(k);
        stack_.push_back(v);
        SkipWs();
        if (p_ >= end_) return Fail("unterminated object, expected ',' or '}'");
        if (*p_ == ',') {
          ++p_;
          continue;
        }
        if (*p_ == '}') {
          ++p_;
          break;
        }
        return Fail("expected ',' or '}' in object");
      }
    }
    size_t n = stack_.size() - base;
    JsonValue* kids = doc_->arena_->Alloc(n);
    if (n) std::memcpy(static_cast<void*>(kids), stack_.data() + base, n * sizeof(JsonValue));
    stack_.resize(base);
    out->type_ = JsonType::kObject;
    out->size_ = static_cast<uint32_t>(n / 2);
    out->kids_ = kids;
    return true;
  }

  bool Skipped(const JsonValue& key) const {
    for (absl::string_view k : *skip_keys_) {
      if (k.size() == key.size_ && std::memcmp(k.data(), key.text_, k.size()) == 0) return true;
    }
    return false;
  }

  // Checks one value's syntax like ParseValue without storing it.
  bool SkipValue(int depth) {
    if (depth > kMaxDepth) return Fail("nesting too deep");
    if (p_ >= end_) return Fail("unexpected end of input, expected a value");
    char open = *p_;
    if (open != '{' && open != '[') {
      JsonValue v;
      return ParseValue(&v, depth);
    }
    char close = open == '{' ? '}' : ']';
    ++p_;
    SkipWs();
    if (p_ < end_ && *p_ == close) {
      ++p_;
      return true;
    }
    while (true) {
      SkipWs();
      if (open == '{') {
        if (p_ >= end_ || *p_ != '"') return Fail("expected a string key in object");
        JsonValue k;
        if (!ParseString(&k)) return false;
        SkipWs();
        if (p_ >= end_ || *p_ != ':') return Fail("expected ':' after object key");
        ++p_;
        SkipWs();
      }
      if (!SkipValue(depth + 1)) return false;
      SkipWs();
      if (p_ >= end_) {
        return Fail(open == '{' ? "unterminated object, expected ',' or '}'"
                                : "unterminated array, expected ',' or ']'");
      }
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == close) {
        ++p_;
        return true;
      }
      return Fail(open == '{' ? "expected ',' or '}' in object" : "expected ',' or ']' in array");
    }
  }

  JsonDoc* doc_;
  const char* p_;
  const char* begin_;
  const char* end_;
  const std::vector<absl::string_view>* skip_keys_;
  std::vector<JsonValue> stack_;
  absl::Status error_;
};

absl::StatusOr<JsonDoc> JsonDoc::Parse(absl::string_view text, absl::string_view file_name) {
  return ParseOwned(std::string(text), file_name);
}

absl::StatusOr<JsonDoc> JsonDoc::ParseBorrowed(absl::string_view text, absl::string_view file_name) {
  JsonDoc doc;
  doc.view_ = text;
  doc.file_name_ = std::string(file_name);
  JsonParser parser(&doc);
  absl::Status st = parser.Run();
  if (!st.ok()) return st;
  return doc;
}

absl::StatusOr<JsonDoc> JsonDoc::ParseBorrowedSequence(
    absl::string_view text, absl::string_view file_name, absl::string_view* rest,
    const std::vector<absl::string_view>* skip_keys) {
  JsonDoc doc;
  doc.view_ = text;
  doc.file_name_ = std::string(file_name);
  JsonParser parser(&doc, skip_keys);
  absl::Status st = parser.RunSequence(rest);
  if (!st.ok()) return st;
  return doc;
}

absl::StatusOr<JsonDoc> JsonDoc::ParseOwned(std::string&& text, absl::string_view file_name) {
  JsonDoc doc;
  doc.text_ = std::make_unique<std::string>(std::move(text));
  doc.view_ = *doc.text_;
  doc.file_name_ = std::string(file_name);
  JsonParser parser(&doc);
  absl::Status st = parser.Run();
  if (!st.ok()) return st;
  return doc;
}

// ---------------------------------------------------------------------------------------------

absl::Status JsonFieldError(absl::string_view file, absl::string_view path, absl::string_view cause) {
  return absl::InvalidArgumentError(
      absl::StrCat("parse ", file, ": ", path.empty() ? "(root)" : path, ": ", cause));
}

std::string JsonIndexPath(absl::string_view prefix, size_t i) {
  return absl::StrCat(prefix, "[", i, "]");
}

absl::StatusOr<const JsonValue*> JsonListItems(const JsonDoc& doc, std::string* path_prefix) {
  const JsonValue& root = doc.root();
  static const JsonValue kEmpty = [] {
    JsonValue v;
    return v;
  }();
  if (root.is_array()) {
    path_prefix->clear();
    return &root;
  }
  if (root.is_object()) {
    *path_prefix = "items";
    const JsonValue* items = root.Find("items", /*null_is_absent=*/false);
    if (items != nullptr && items->is_null()) return &kEmpty;  // kubectl's empty list
    if (items == nullptr) {
      // An object that is not a list: never read as "no items". A kubectl error answer
      // ({"kind":"Status","status":"Failure","message":...}) is quoted.
      const JsonValue* kind = root.Find("kind");
      if (kind != nullptr && kind->is_string() && kind->str() == "Status") {
        const JsonValue* message = root.Find("message");
        const JsonValue* status = root.Find("status");
        return JsonFieldError(
            doc.file_name(), "",
            absl::StrCat("a kubectl Status object, not a list: status '",
                         status != nullptr && status->is_string() ? status->str() : "",
                         "', message '",
                         message != nullptr && message->is_string() ? message->str() : "", "'"));
      }
      std::vector<std::string> keys;
      for (size_t i = 0; i < root.size(); ++i) {
        if (keys.size() == 5) {
          keys.push_back("...");
          break;
        }
        keys.push_back(absl::StrCat("\"", root.key(i).str(), "\""));
      }
      return JsonFieldError(
          doc.file_name(), "",
          absl::StrCat("expected a JSON array or a list object with \"items\", got an object ",
                       keys.empty() ? "with no keys"
                                    : absl::StrCat("with keys ", absl::StrJoin(keys, ", ")),
                       " and no \"items\""));
    }
    if (!items->is_array()) {
      return JsonFieldError(doc.file_name(), "items",
                            absl::StrCat("expected an array, got ", ToString(items->type())));
    }
    return items;
  }
  return JsonFieldError(doc.file_name(), "",
                        absl::StrCat("expected a JSON array or a list object with \"items\", got ",
                                     ToString(root.type())));
}

namespace {
std::string Join(absl::string_view path, absl::string_view key) {
  if (path.empty()) return std::string(key);
  return absl::StrCat(path, ".", key);
}
}  // namespace

absl::StatusOr<std::optional<absl::string_view>> JsonGetString(const JsonValue& obj,
                                                               absl::string_view key,
                                                               absl::string_view file,
                                                               absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return std::optional<absl::string_view>();
  if (!v->is_string()) {
    return JsonFieldError(file, Join(path, key),
                          absl::StrCat("expected a string, got ", ToString(v->type())));
  }
  return std::optional<absl::string_view>(v->str());
}

absl::StatusOr<std::optional<int64_t>> JsonGetInt(const JsonValue& obj, absl::string_view key,
                                                  absl::string_view file, absl::string_view path,
                                                  int64_t min, int64_t max, bool allow_string) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> i = v->AsInt(allow_string);
  if (!i.has_value()) {
    return JsonFieldError(file, Join(path, key),
                          absl::StrCat("expected an integer, got ", ToString(v->type()),
                                       v->is_string() || v->is_number()
                                           ? absl::StrCat(" '", v->str(), "'")
                                           : std::string()));
  }
  if (*i < min || *i > max) {
    return JsonFieldError(file, Join(path, key),
                          absl::StrCat("value ", *i, " out of range [", min, ", ", max, "]"));
  }
  return i;
}

absl::StatusOr<std::optional<bool>> JsonGetBool(const JsonValue& obj, absl::string_view key,
                                                absl::string_view file, absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_bool()) {
    return JsonFieldError(file, Join(path, key),
                          absl::StrCat("expected true/false, got ", ToString(v->type())));
  }
  return std::optional<bool>(v->boolean());
}

absl::StatusOr<std::optional<net::Ipv4>> JsonGetIpv4(const JsonValue& obj, absl::string_view key,
                                                     absl::string_view file,
                                                     absl::string_view path, bool skip_ipv6) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return std::optional<net::Ipv4>();
  if (!v->is_string()) {
    return JsonFieldError(file, Join(path, key),
                          absl::StrCat("expected an IPv4 address string, got ", ToString(v->type())));
  }
  absl::string_view s = v->str();
  if (s.empty()) return std::optional<net::Ipv4>();
  if (skip_ipv6 && s.find(':') != absl::string_view::npos) return std::optional<net::Ipv4>();
  auto ip = net::ParseIpv4(s, Join(path, key));
  if (!ip.ok()) {
    return JsonFieldError(file, Join(path, key), absl::StrCat("invalid IPv4 address '", s, "'"));
  }
  return std::optional<net::Ipv4>(*ip);
}

}  // namespace sarena::model
