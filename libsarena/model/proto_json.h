// Files whose format is a protobuf message (sarena's own node files, proto/sarena_node.proto),
// printed and parsed with protobuf's JSON mapping (google::protobuf::util), with the snapshot's
// error convention: "parse <file>: <field path>: <cause>", kInvalidArgument.
#ifndef LIBSARENA_MODEL_PROTO_JSON_H_
#define LIBSARENA_MODEL_PROTO_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// Parses `json` (the text of `file`, named in errors) into `message`, replacing its contents.
/// Keys may be proto field names or lowerCamelCase; unknown keys are skipped (a newer writer's
/// file still loads). The JSON types are checked against the message's fields before the
/// protobuf parser sees them (protobuf 3.21 reads `{}` as a one-element list and drops `null` and
/// `[]` list elements): a list where an object belongs, an object where a list belongs, a null
/// list element or a scalar of the wrong JSON type are errors naming the field, e.g.
/// "parse nodes/a/sarena-cluster.json: peers: expected an array, got an object". Errors:
/// kInvalidArgument (syntax error with protobuf's text; a wrong type or a number out of the
/// field's range, such as -1 for a uint32, naming the field path "tunnels[2].node_id").
/// `legacy` names the older shapes of a file that are read as today's (never written).
struct ProtoJsonLegacy {
  /// The repeated field a bare JSON array at the root is read into: `[...]` is read as
  /// {"<root_list_field>": [...]}. Empty: a root array is an error.
  absl::string_view root_list_field;
  /// A root key read as another (the second) when that one is absent, e.g. {"items", "endpoints"}.
  std::vector<std::pair<std::string, std::string>> root_aliases;
};
absl::Status ParseProtoJson(absl::string_view json, absl::string_view file,
                            google::protobuf::Message* message,
                            const ProtoJsonLegacy& legacy = {});

/// `message` as a file's text: protobuf JSON with proto field names (snake_case), every scalar
/// and list printed (also zeros, empty strings and empty lists), one value per line with
/// protobuf's indentation, a final newline. 64-bit integers are JSON strings, as the protobuf
/// JSON mapping prints them.
std::string PrintProtoJson(const google::protobuf::Message& message);

/// Field checkers for the text fields of those messages, each naming `file` and `path` in its
/// kInvalidArgument error ("parse <file>: <path>: invalid IPv4 address '10.0.0.999'").
/// An empty `text` is an absent field: nullopt.
/// IPv4 dotted quad; text with ':' (IPv6) is nullopt when `skip_ipv6`, else an error.
absl::StatusOr<std::optional<net::Ipv4>> Ipv4Field(const std::string& text, absl::string_view file,
                                                   absl::string_view path, bool skip_ipv6);
/// IPv4 CIDR "a.b.c.d/len", returned canonical (host bits cleared).
absl::StatusOr<std::optional<net::Ipv4Prefix>> Ipv4PrefixField(const std::string& text,
                                                               absl::string_view file,
                                                               absl::string_view path);
/// MAC "aa:bb:cc:dd:ee:ff".
absl::StatusOr<std::optional<net::Mac>> MacField(const std::string& text, absl::string_view file,
                                                 absl::string_view path);
/// `value` <= `max`, else "value V out of range [0, max]".
absl::Status MaxField(uint64_t value, uint64_t max, absl::string_view file, absl::string_view path);
/// "parse <file>: <path>: <cause>" (path "" = "(root)"), kInvalidArgument: the snapshot's error
/// convention (model/json.h JsonFieldError).
absl::Status ProtoFieldError(absl::string_view file, absl::string_view path,
                             absl::string_view cause);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_PROTO_JSON_H_
