// The strict JSON reader behind every snapshot parser: RFC 8259 syntax, escapes and surrogate
// pairs, numbers kept as text, errors with byte/line/column, typed getters naming the path.
#include "libsarena/model/json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/status_matchers.h"

namespace sarena::model {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

std::string Msg(const absl::Status& st) { return std::string(st.message()); }

TEST(Json, NumbersOutsideInt64AreNotIntegers) {
  // Casting inf or 1e20 to int64 is undefined behaviour (UBSan found "1e999" through
  // fuzz_model_sarena_cluster); they are not integers.
  auto doc = JsonDoc::Parse(R"({"inf":1e999,"big":1e20,"neg":-1e20,"edge":-9.223372036854775808e18})",
                            "t.json");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->root().Find("inf")->AsInt(), std::nullopt);
  EXPECT_EQ(doc->root().Find("big")->AsInt(), std::nullopt);
  EXPECT_EQ(doc->root().Find("neg")->AsInt(), std::nullopt);
  EXPECT_EQ(doc->root().Find("edge")->AsInt(), INT64_MIN);
}

TEST(Json, ValuesEscapesAndNumbers) {
  auto doc = JsonDoc::Parse(
      R"( {"s":"a\"b\\c\/\n\u00e9\ud83d\ude00","n":-1.5e3,"i":9007199254740993,"z":0,
          "t":true,"f":false,"nul":null,"arr":[1,[2,[]],{}],"hex":"0x4000","dup":1,"dup":2} )",
      "t.json");
  ASSERT_OK(doc);
  const JsonValue& r = doc->root();
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r.size(), 11u);
  EXPECT_EQ(r.Find("s")->str(), "a\"b\\c/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(r.Find("n")->AsDouble(), -1500.0);
  EXPECT_EQ(r.Find("n")->AsInt(), -1500);  // integral value written with an exponent
  EXPECT_EQ(r.Find("i")->AsInt(), 9007199254740993);  // kept exactly (no double round trip)
  EXPECT_EQ(r.Find("z")->AsInt(), 0);
  EXPECT_TRUE(r.Find("t")->boolean());
  EXPECT_FALSE(r.Find("f")->boolean());
  EXPECT_EQ(r.Find("nul"), nullptr);                       // null treated as absent...
  ASSERT_NE(r.Find("nul", /*null_is_absent=*/false), nullptr);  // ...unless asked
  const JsonValue* arr = r.Find("arr");
  ASSERT_EQ(arr->size(), 3u);
  EXPECT_EQ((*arr)[1][1].size(), 0u);
  EXPECT_TRUE((*arr)[2].is_object());
  int sum = 0;
  for (const JsonValue& v : *arr) sum += v.is_number() ? static_cast<int>(*v.AsInt()) : 0;
  EXPECT_EQ(sum, 1);
  EXPECT_EQ(r.Find("hex")->AsInt(), std::nullopt);
  EXPECT_EQ(r.Find("hex")->AsInt(/*allow_string=*/true), 0x4000);
  EXPECT_EQ(r.Find("dup")->AsInt(), 1);  // first occurrence
  EXPECT_EQ(r.Find("n")->AsInt(), -1500);
}

TEST(Json, SyntaxErrorsCarryPosition) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"[1,2,]", "byte 5 (line 1, column 6): unexpected character ']'"},
      {"{\"a\":1,}", "byte 7 (line 1, column 8): expected a string key in object"},
      {"{\"a\" 1}", "byte 5 (line 1, column 6): expected ':' after object key"},
      {"[\"abc", "unterminated string"},
      {"[\"a\tb\"]", "control character in string"},
      {"[01]", "byte 2 (line 1, column 3): expected ',' or ']' in array"},
      {"[1.]", "invalid number fraction"},
      {"[tru]", "invalid literal"},
      {"", "byte 0 (line 1, column 1): unexpected end of input"},
      {"{}\n{}", "byte 3 (line 2, column 1): unexpected trailing characters"},
      {"[\"\\x\"]", "invalid escape"},
      {"[\"\\u12G4\"]", "invalid \\u escape"},
  };
  for (const auto& c : cases) {
    auto doc = JsonDoc::Parse(c.text, "f.json");
    ASSERT_FALSE(doc.ok()) << c.text;
    EXPECT_THAT(doc, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(Msg(doc.status()), HasSubstr("parse f.json: JSON syntax error at byte")) << c.text;
    EXPECT_THAT(Msg(doc.status()), HasSubstr(c.want)) << c.text;
  }
  std::string deep(600, '[');
  auto doc = JsonDoc::Parse(deep, "deep.json");
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(Msg(doc.status()), HasSubstr("nesting too deep"));
}

TEST(Json, TypedGettersNameThePath) {
  auto doc = JsonDoc::Parse(R"({"items":[{"a":"x","n":70000,"b":"yes","ip":"10.0.0.256","ip6":"fd00::1"}]})", "g.json");
  ASSERT_OK(doc);
  std::string prefix;
  auto items = JsonListItems(*doc, &prefix);
  ASSERT_OK(items);
  EXPECT_EQ(prefix, "items");
  const JsonValue& it = (**items)[0];
  std::string p = JsonIndexPath(prefix, 0);
  EXPECT_EQ(p, "items[0]");
  EXPECT_EQ(**JsonGetString(it, "a", "g.json", p), "x");
  EXPECT_FALSE(JsonGetString(it, "missing", "g.json", p)->has_value());
  auto n = JsonGetInt(it, "n", "g.json", p, 0, 65535);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(Msg(n.status()), "parse g.json: items[0].n: value 70000 out of range [0, 65535]");
  auto b = JsonGetBool(it, "b", "g.json", p);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(Msg(b.status()), "parse g.json: items[0].b: expected true/false, got string");
  auto s = JsonGetString(it, "n", "g.json", p);
  EXPECT_EQ(Msg(s.status()), "parse g.json: items[0].n: expected a string, got number");
  auto ip = JsonGetIpv4(it, "ip", "g.json", p);
  EXPECT_EQ(Msg(ip.status()), "parse g.json: items[0].ip: invalid IPv4 address '10.0.0.256'");
  EXPECT_FALSE(JsonGetIpv4(it, "ip6", "g.json", p)->has_value());  // IPv6 skipped
  auto bare = JsonDoc::Parse("[]", "b.json");
  EXPECT_OK(JsonListItems(*bare, &prefix));
  EXPECT_EQ(prefix, "");
  auto wrong = JsonDoc::Parse("\"str\"", "w.json");
  EXPECT_FALSE(JsonListItems(*wrong, &prefix).ok());
  auto noitems = JsonDoc::Parse(R"({"a":1,"b":[2]})", "nodes/n1/ip-link.json");
  auto na = JsonListItems(*noitems, &prefix);
  ASSERT_FALSE(na.ok());  // not read as an empty list
  EXPECT_THAT(na, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(Msg(na.status()),
            "parse nodes/n1/ip-link.json: (root): expected a JSON array or a list object with "
            "\"items\", got an object with keys \"a\", \"b\" and no \"items\"");
  auto empty_object = JsonDoc::Parse("{}", "e.json");
  EXPECT_THAT(Msg(JsonListItems(*empty_object, &prefix).status()),
              HasSubstr("got an object with no keys and no \"items\""));
  auto status = JsonDoc::Parse(
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
          "message":"Unauthorized","reason":"Unauthorized","code":401})",
      "cluster/pods.json");
  auto st = JsonListItems(*status, &prefix);
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(Msg(st.status()),
            "parse cluster/pods.json: (root): a kubectl Status object, not a list: status "
            "'Failure', message 'Unauthorized'");
  auto emptyitems = JsonDoc::Parse(R"({"items":[]})", "e.json");
  EXPECT_EQ((*JsonListItems(*emptyitems, &prefix))->size(), 0u);
  auto nullitems = JsonDoc::Parse(R"({"items":null})", "n.json");
  ASSERT_OK_AND_ASSIGN(auto ni, JsonListItems(*nullitems, &prefix));
  EXPECT_EQ(ni->size(), 0u);
}

}  // namespace
}  // namespace sarena::model
