// libFuzzer target: CNI network config (stdin JSON) for every command, and the version peek.
#include <cstddef>
#include <cstdint>
#include "libsarena/cni/config.h"
#include "libsarena/cni/env.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  using sarena::cni::Command;
  for (Command c : {Command::kAdd, Command::kDel, Command::kCheck, Command::kVersion,
                    Command::kStatus, Command::kGc}) {
    (void)sarena::cni::ParseNetConf(in, c);
  }
  (void)sarena::cni::PeekCniVersion(in);
  return 0;
}
