// Helpers for cross-checking against iproute2's JSON output (`ip -j ...`) in tests.
#ifndef SARENA_TESTS_LIB_IP_JSON_H_
#define SARENA_TESTS_LIB_IP_JSON_H_

#include <string>

#include "google/protobuf/struct.pb.h"

namespace sarena::testing {

using PbList = google::protobuf::ListValue;
using PbStruct = google::protobuf::Struct;

/// Runs an `ip -j ...` command (RunOk) and parses its JSON array; empty output is an empty list.
/// A parse failure fails the current test (EXPECT) and returns what was parsed.
PbList IpJson(const std::string& cmd);
/// String member `key` of `s`, "" when absent.
std::string Str(const PbStruct& s, const std::string& key);
/// Number member `key` of `s`, -1 when absent.
double Num(const PbStruct& s, const std::string& key);
/// True when list member `key` of `s` holds the string `value`.
bool ListHas(const PbStruct& s, const std::string& key, const std::string& value);

}  // namespace sarena::testing

#endif  // SARENA_TESTS_LIB_IP_JSON_H_
