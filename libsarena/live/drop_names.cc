#include "libsarena/live/drop_names.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "libsarena/datapath/drop_trace.h"

namespace sarena::live {

std::string DropReasonName(uint32_t value) {
  static std::mutex mu;
  static std::map<uint32_t, std::string>* names = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (names == nullptr) {
    // Without BTF (or without the enum) every reason is named by its number.
    absl::StatusOr<std::map<uint32_t, std::string>> read = datapath::ReadKernelDropReasons();
    names = new std::map<uint32_t, std::string>(read.ok() ? *std::move(read)
                                                          : std::map<uint32_t, std::string>());
  }
  auto it = names->find(value);
  return it != names->end() ? it->second : absl::StrCat("SKB_DROP_REASON_", value);
}

std::string KernelSymbol(uint64_t address) {
  if (address == 0) return "";
  FILE* f = std::fopen("/proc/kallsyms", "r");
  if (f == nullptr) return "";
  uint64_t best = 0;
  std::string best_name;
  char line[512];
  while (std::fgets(line, sizeof(line), f)) {
    // "ffffffff81000000 T _stext [module]"
    std::vector<absl::string_view> parts =
        absl::StrSplit(absl::string_view(line), ' ', absl::SkipEmpty());
    if (parts.size() < 3) continue;
    if (parts[1] != "T" && parts[1] != "t") continue;
    uint64_t a = 0;
    if (!absl::SimpleHexAtoi(parts[0], &a) || a > address || a <= best) continue;
    best = a;
    best_name = std::string(absl::StripTrailingAsciiWhitespace(parts[2]));
  }
  std::fclose(f);
  if (best == 0 || address - best > (1u << 20)) return "";
  return absl::StrFormat("%s+0x%x", best_name, address - best);
}

}  // namespace sarena::live
