#include "libsarena/rpc/cli_output.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"

namespace sarena::rpc {

std::string MessageToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(message, &out, opts).ok()) return "{}\n";
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

namespace {

void FlattenFields(const google::protobuf::Message& m, const std::string& prefix,
                   std::vector<std::pair<std::string, std::string>>* out) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string name = prefix + f->name();
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_repeated()) {
      FlattenFields(r->GetMessage(m, f), name + ".", out);
      continue;
    }
    auto scalar = [&](int index) -> std::string {
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
        case FieldDescriptor::CPPTYPE_INT64:
          return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
        case FieldDescriptor::CPPTYPE_UINT32:
          return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
        case FieldDescriptor::CPPTYPE_UINT64:
          return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
        case FieldDescriptor::CPPTYPE_DOUBLE:
          return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
        case FieldDescriptor::CPPTYPE_FLOAT:
          return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
        case FieldDescriptor::CPPTYPE_BOOL:
          return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
        case FieldDescriptor::CPPTYPE_ENUM:
          return (rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f))->name();
        case FieldDescriptor::CPPTYPE_STRING:
          return rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
        case FieldDescriptor::CPPTYPE_MESSAGE:
          return r->GetRepeatedMessage(m, f, index).ShortDebugString();
      }
      return "";
    };
    if (!f->is_repeated()) {
      out->emplace_back(name, scalar(0));
      continue;
    }
    std::vector<std::string> items;
    for (int k = 0; k < r->FieldSize(m, f); ++k) items.push_back(scalar(k));
    out->emplace_back(name, absl::StrJoin(items, ","));
  }
}

}  // namespace

std::string MessageToText(const google::protobuf::Message& message) {
  std::vector<std::pair<std::string, std::string>> fields;
  FlattenFields(message, "", &fields);
  size_t width = 0;
  for (const auto& [k, v] : fields) width = std::max(width, k.size());
  std::string out;
  for (const auto& [k, v] : fields) {
    absl::StrAppend(&out, k, ":", std::string(width - k.size() + 1, ' '), v.empty() ? "-" : v,
                    "\n");
  }
  return out;
}

v1::CliError CliErrorOf(const absl::Status& status) {
  v1::CliError e;
  e.set_code(absl::StatusCodeToString(status.code()));
  e.set_message(std::string(status.message()));
  return e;
}

int ReportCliError(absl::string_view program, const absl::Status& status, bool json,
                   int exit_code) {
  if (json) {
    std::fputs(MessageToJson(CliErrorOf(status)).c_str(), stdout);
  } else {
    std::fprintf(stderr, "%s: %s\n", std::string(program).c_str(),
                 std::string(status.message()).c_str());
  }
  return exit_code;
}

CommandOutput::CommandOutput(const ProgramDoc& doc, int argc, char** argv)
    : program_(doc.name),
      json_(AsksForJsonOutput(std::vector<std::string>(argv + 1, argv + argc))),
      usage_("usage:\n") {
  for (const std::string& line : doc.usage) absl::StrAppend(&usage_, "  ", line, "\n");
  absl::StrAppend(&usage_, "(see ", program_, " --help)\n");
}

int CommandOutput::Fail(int exit_code, const absl::Status& status) const {
  return ReportCliError(program_, status, json_, exit_code);
}

int CommandOutput::Fail(int exit_code, absl::string_view message) const {
  return Fail(exit_code, exit_code == 2 ? absl::InvalidArgumentError(message)
                                        : absl::UnknownError(message));
}

int CommandOutput::FailUsage(absl::string_view message) const {
  return Fail(2, json_ ? absl::StrCat(message, " (see ", program_, " --help)")
                       : absl::StrCat(message, "\n", usage_));
}

int CommandOutput::Print(absl::string_view text) const {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return 0;
}

int CommandOutput::FinishStdout(int exit_code) const {
  errno = 0;
  bool failed = std::fflush(stdout) != 0;
  const int err = errno;
  failed = failed || std::ferror(stdout);
  if (!failed) return exit_code;
  const std::string why = err != 0 ? std::strerror(err) : "write error";
  ReportCliError(program_, absl::UnknownError(absl::StrCat("write standard output: ", why)),
                 /*json=*/false, 1);
  return exit_code == 0 ? 1 : exit_code;
}

absl::Status WithHint(const absl::Status& status, absl::string_view what_to_do) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), " — ", what_to_do));
}

absl::StatusOr<v1::Endpoint> FindEndpoint(const v1::EndpointListResponse& list,
                                          absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("endpoint id is empty");
  auto describe = [](const v1::Endpoint& e) {
    std::string d = absl::StrCat("endpoint ", e.endpoint_id(), " (container ",
                                 e.ref().container_id(), " ", e.ref().ifname());
    if (!e.pod_name().empty()) absl::StrAppend(&d, ", pod ", e.pod_namespace(), "/", e.pod_name());
    return d + ")";
  };
  uint32_t num = 0;
  const bool numeric = absl::SimpleAtoi(id, &num);
  const std::vector<std::pair<const char*, std::function<bool(const v1::Endpoint&)>>> steps = {
      {"endpoint id", [&](const v1::Endpoint& e) { return numeric && e.endpoint_id() == num; }},
      {"container id", [&](const v1::Endpoint& e) { return e.ref().container_id() == id; }},
      {"pod",
       [&](const v1::Endpoint& e) {
         return !e.pod_name().empty() && absl::StrCat(e.pod_namespace(), "/", e.pod_name()) == id;
       }},
      {"container id prefix",
       [&](const v1::Endpoint& e) { return absl::StartsWith(e.ref().container_id(), id); }},
  };
  for (const auto& [what, match] : steps) {
    std::vector<const v1::Endpoint*> hits;
    for (const v1::Endpoint& e : list.endpoints()) {
      if (match(e)) hits.push_back(&e);
    }
    if (hits.size() == 1) return *hits[0];
    if (hits.size() > 1) {
      std::vector<std::string> names;
      for (const v1::Endpoint* e : hits) names.push_back(describe(*e));
      return absl::InvalidArgumentError(
          absl::StrCat("'", id, "' is ambiguous: it matches the ", what, " of ", hits.size(),
                       " endpoints: ", absl::StrJoin(names, "; "), " — give the endpoint id"));
    }
  }
  return absl::NotFoundError(absl::StrCat("no endpoint matches '", id,
                                          "' (by endpoint id, container id or its prefix, or pod "
                                          "namespace/name) among ",
                                          list.endpoints_size(),
                                          " endpoints — `sarena endpoint list` "
                                          "shows them"));
}

}  // namespace sarena::rpc
