#include "libsarena/base/json.h"

namespace sarena {

absl::string_view JsonKindName(const google::protobuf::Value& value) {
  using google::protobuf::Value;
  switch (value.kind_case()) {
    case Value::kStringValue:
      return "a string";
    case Value::kNumberValue:
      return "a number";
    case Value::kBoolValue:
      return "a boolean";
    case Value::kStructValue:
      return "an object";
    case Value::kListValue:
      return "an array";
    case Value::kNullValue:
    case Value::KIND_NOT_SET:
      return "null";
  }
  return "null";
}

}  // namespace sarena
