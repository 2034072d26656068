#include "libsarena/diag/codes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/diag/report.pb.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sarena::diag {

const std::vector<SuspicionCode>& AllSuspicionCodes() {
#define SARENA_CODE_ENTRY_(code, levels, drop_reasons, meaning) \
  SuspicionCode{code, levels, drop_reasons, meaning},
  static const auto* all = new std::vector<SuspicionCode>{SARENA_SUSPICION_CODES(SARENA_CODE_ENTRY_)};
#undef SARENA_CODE_ENTRY_
  return *all;
}

const SuspicionCode* FindSuspicionCode(absl::string_view code) {
  const auto& all = AllSuspicionCodes();
  auto it = std::lower_bound(all.begin(), all.end(), code,
                             [](const SuspicionCode& c, absl::string_view k) { return c.code < k; });
  return it != all.end() && it->code == code ? &*it : nullptr;
}

std::vector<absl::string_view> DropReasonsOf(const SuspicionCode& code) {
  return absl::StrSplit(code.drop_reasons, ' ', absl::SkipEmpty());
}

bool CodeAllowsLevel(absl::string_view code, Level level) {
  const SuspicionCode* c = FindSuspicionCode(code);
  if (c == nullptr) return false;
  uint8_t levels = c->levels;
  if (levels & kLevelFatal) levels |= kLevelCritical;
  return (levels & (1u << static_cast<int>(level))) != 0;
}

std::string LevelsText(uint8_t levels) {
  std::vector<absl::string_view> out;
  for (Level l : {Level::kFatal, Level::kWarning, Level::kInfo}) {
    if (levels & (1u << static_cast<int>(l))) out.push_back(ToString(l));
  }
  return absl::StrJoin(out, " / ");
}

std::string SuspicionCodesMarkdown() {
  std::string out =
      "| code | level | kernel drop reasons | meaning |\n"
      "|------|-------|---------------------|---------|\n";
  for (const SuspicionCode& c : AllSuspicionCodes()) {
    std::vector<absl::string_view> reasons = DropReasonsOf(c);
    std::string reasons_text = reasons.empty() ? "" : absl::StrCat("`", absl::StrJoin(reasons, "` `"), "`");
    absl::StrAppend(&out, "| `", c.code, "` | ", LevelsText(c.levels), " | ", reasons_text, " | ",
                    c.meaning, " |\n");
  }
  return out;
}

std::string SuspicionCodesJson() {
  v1::SuspicionCodeList list;
  for (const SuspicionCode& c : AllSuspicionCodes()) {
    v1::SuspicionCodeInfo* info = list.add_codes();
    info->set_code(std::string(c.code));
    for (Level l : {Level::kFatal, Level::kCritical, Level::kWarning, Level::kInfo}) {
      if (CodeAllowsLevel(c.code, l)) info->add_levels(std::string(ToString(l)));
    }
    for (absl::string_view r : DropReasonsOf(c)) info->add_drop_reasons(std::string(r));
    info->set_meaning(std::string(c.meaning));
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(list, &out, opts);  // plain strings: cannot fail
  return out;
}

}  // namespace sarena::diag
