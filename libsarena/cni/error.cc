#include "libsarena/cni/error.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libsarena/cni/json.h"

namespace sarena::cni {
namespace {

// Payload key under which a CNI code (decimal text) rides on an absl::Status.
constexpr absl::string_view kCniCodePayload = "type.sarena.dev/cni.ErrorCode";
// Payload key for the error object's "details" text.
constexpr absl::string_view kCniDetailsPayload = "type.sarena.dev/cni.ErrorDetails";

}  // namespace

absl::string_view ToString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIncompatibleVersion:
      return "incompatible CNI version";
    case ErrorCode::kUnsupportedField:
      return "unsupported field in network config";
    case ErrorCode::kUnknownContainer:
      return "container unknown or does not exist";
    case ErrorCode::kInvalidEnvironment:
      return "invalid environment variable";
    case ErrorCode::kIoFailure:
      return "I/O failure";
    case ErrorCode::kDecodingFailure:
      return "failed to decode content";
    case ErrorCode::kInvalidNetworkConfig:
      return "invalid network config";
    case ErrorCode::kTryAgainLater:
      return "try again later";
    case ErrorCode::kPluginNotAvailable:
      return "plugin not available";
    case ErrorCode::kLimitedConnectivity:
      return "plugin not available, existing pods may have limited connectivity";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kIpamExhausted:
      return "pod CIDR exhausted";
    case ErrorCode::kInterfaceExists:
      return "interface already exists";
    case ErrorCode::kDatapathFailure:
      return "datapath failure";
    case ErrorCode::kCheckFailed:
      return "check failed";
    case ErrorCode::kProtocolError:
      return "daemon protocol error";
    case ErrorCode::kUntrustedDaemon:
      return "untrusted daemon socket";
  }
  return "error";
}

ErrorCode DefaultCniCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound:
      return ErrorCode::kUnknownContainer;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return ErrorCode::kTryAgainLater;
    case absl::StatusCode::kResourceExhausted:
      return ErrorCode::kIpamExhausted;
    case absl::StatusCode::kAlreadyExists:
      return ErrorCode::kInterfaceExists;
    case absl::StatusCode::kInvalidArgument:
      return ErrorCode::kInvalidNetworkConfig;
    default:
      return ErrorCode::kInternal;
  }
}

absl::Status MakeCniError(uint32_t cni_code, absl::StatusCode code, absl::string_view message) {
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  absl::Status s(code, message);
  if (cni_code != 0) s.SetPayload(kCniCodePayload, absl::Cord(absl::StrCat(cni_code)));
  return s;
}

absl::Status MakeCniError(ErrorCode cni_code, absl::StatusCode code, absl::string_view message) {
  return MakeCniError(static_cast<uint32_t>(cni_code), code, message);
}

absl::Status WithCniCode(absl::Status status, ErrorCode cni_code) {
  if (status.ok()) return status;
  status.SetPayload(kCniCodePayload, absl::Cord(absl::StrCat(static_cast<uint32_t>(cni_code))));
  return status;
}

absl::Status WithCniDetails(absl::Status status, absl::string_view details) {
  if (status.ok()) return status;
  status.SetPayload(kCniDetailsPayload, absl::Cord(details));
  return status;
}

std::string CniDetailsOf(const absl::Status& status) {
  if (auto payload = status.GetPayload(kCniDetailsPayload)) return std::string(*payload);
  return "";
}

uint32_t CniCodeOf(const absl::Status& status) {
  if (status.ok()) return 0;
  if (auto payload = status.GetPayload(kCniCodePayload)) {
    uint32_t code = 0;
    if (absl::SimpleAtoi(std::string(*payload), &code) && code != 0) return code;
  }
  return static_cast<uint32_t>(DefaultCniCode(status.code()));
}

Error ErrorFromStatus(const absl::Status& status, absl::string_view cni_version,
                      absl::string_view details) {
  Error e;
  e.cni_version = std::string(cni_version);
  e.code = CniCodeOf(status);
  e.msg = std::string(status.message());
  if (e.msg.empty()) e.msg = std::string(ToString(static_cast<ErrorCode>(e.code)));
  e.details = details.empty() ? CniDetailsOf(status) : std::string(details);
  return e;
}

std::string ErrorToJson(const Error& error) {
  JsonObject o;
  o.Set("cniVersion", error.cni_version);
  o.Set("code", static_cast<uint64_t>(error.code));
  o.Set("msg", error.msg);
  o.Set("details", error.details);
  return o.ToJson();
}

absl::StatusOr<Error> ParseErrorJson(absl::string_view json) {
  absl::StatusOr<JsonObject> o = JsonObject::Parse(json);
  if (!o.ok()) return absl::InvalidArgumentError(o.status().message());
  Error e;
  absl::StatusOr<std::optional<std::string>> v = o->GetString("cniVersion");
  if (!v.ok()) return v.status();
  e.cni_version = v->value_or("");
  absl::StatusOr<std::optional<uint64_t>> code = o->GetUint("code");
  if (!code.ok()) return code.status();
  e.code = static_cast<uint32_t>(code->value_or(0));
  v = o->GetString("msg");
  if (!v.ok()) return v.status();
  e.msg = v->value_or("");
  v = o->GetString("details");
  if (!v.ok()) return v.status();
  e.details = v->value_or("");
  return e;
}

}  // namespace sarena::cni
