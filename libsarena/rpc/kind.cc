#include "libsarena/rpc/kind.h"

#include "google/protobuf/descriptor.h"

namespace sarena::rpc {
namespace {

absl::string_view OneofMemberName(const google::protobuf::Descriptor* message, int number) {
  if (number == 0) return "nothing";
  const google::protobuf::FieldDescriptor* field = message->FindFieldByNumber(number);
  if (field == nullptr || field->containing_oneof() == nullptr) return "?";
  return field->name();
}

}  // namespace

absl::string_view RequestKindName(v1::Request::KindCase kind) {
  return OneofMemberName(v1::Request::descriptor(), static_cast<int>(kind));
}

absl::string_view ResponseKindName(v1::Response::KindCase kind) {
  return OneofMemberName(v1::Response::descriptor(), static_cast<int>(kind));
}

bool KindsMatch(v1::Request::KindCase request, v1::Response::KindCase response) {
  if (request == v1::Request::KIND_NOT_SET || response == v1::Response::KIND_NOT_SET) return false;
  absl::string_view r = RequestKindName(request);
  return r != "?" && r == ResponseKindName(response);
}

}  // namespace sarena::rpc
