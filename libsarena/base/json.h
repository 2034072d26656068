// Words for JSON values in error messages, shared by every parser of JSON we read (the CNI
// configuration and results in cni/, the snapshot's node files in model/).
#ifndef LIBSARENA_BASE_JSON_H_
#define LIBSARENA_BASE_JSON_H_

#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"

namespace sarena {

/// What a parsed JSON value is, as an error message says it: "a string", "a number",
/// "a boolean", "null", "an object", "an array" (a Value with no kind set is "null", as
/// protobuf's JSON printer writes it). E.g. "expected an object, got an array".
absl::string_view JsonKindName(const google::protobuf::Value& value);

}  // namespace sarena

#endif  // LIBSARENA_BASE_JSON_H_
