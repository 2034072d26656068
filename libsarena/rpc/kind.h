// The names of the sarenad protocol's request and response kinds (the `kind` oneof of
// v1::Request and v1::Response in libsarena/rpc/proto/sarenad.proto), read from the generated
// descriptors so the names cannot drift from the schema: one home for the client's errors and the
// daemon's log lines.
#ifndef LIBSARENA_RPC_KIND_H_
#define LIBSARENA_RPC_KIND_H_

#include "absl/strings/string_view.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::rpc {

/// The oneof member's field name as sarenad.proto spells it ("endpoint_add", "endpoint_del",
/// "endpoint_check", "endpoint_list", "status", "gc"); "nothing" when no kind is set; "?" for a
/// field number this build does not know.
absl::string_view RequestKindName(v1::Request::KindCase kind);

/// As RequestKindName, for a response's kind.
absl::string_view ResponseKindName(v1::Response::KindCase kind);

/// Whether `response` is the answer to `request`: the same oneof member name (the field numbers
/// differ: Response's field 1 is the error).
bool KindsMatch(v1::Request::KindCase request, v1::Response::KindCase response);

}  // namespace sarena::rpc

#endif  // LIBSARENA_RPC_KIND_H_
