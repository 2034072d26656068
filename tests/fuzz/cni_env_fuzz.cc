// libFuzzer target: CNI_ARGS, the CNI_* validators and ParseEnvironment (input split on '\n'
// into CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "absl/strings/str_split.h"
#include "libsarena/cni/env.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  namespace cni = sarena::cni;
  (void)cni::ParseCniArgs(in);
  (void)cni::ParseCommand(in);
  (void)cni::FirstInvalidUtf8(in);
  (void)cni::ValidateContainerId(in);
  (void)cni::ValidateIfname(in);
  (void)cni::ValidateNetns(in);
  (void)cni::CheckCommandVersion(cni::Command::kAdd, in);
  std::vector<std::string> parts = absl::StrSplit(in, '\n');
  static const char* kNames[] = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS",
                                 "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"};
  std::map<std::string, std::string> env;
  for (size_t i = 0; i < parts.size() && i < 6; ++i) env[kNames[i]] = parts[i];
  (void)cni::ParseEnvironment([&](absl::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  return 0;
}
