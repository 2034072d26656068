#include "tests/lib/ip_json.h"

#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/lib/test_util.h"

namespace sarena::testing {

PbList IpJson(const std::string& cmd) {
  const std::string out = RunOk(cmd);
  PbList list;
  auto st = google::protobuf::util::JsonStringToMessage(out.empty() ? "[]" : out, &list);
  EXPECT_TRUE(st.ok()) << cmd << ": " << st.ToString() << "\n" << out;
  return list;
}

std::string Str(const PbStruct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

double Num(const PbStruct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? -1 : it->second.number_value();
}

bool ListHas(const PbStruct& s, const std::string& key, const std::string& value) {
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return false;
  for (const auto& v : it->second.list_value().values()) {
    if (v.string_value() == value) return true;
  }
  return false;
}

}  // namespace sarena::testing
