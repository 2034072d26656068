// libFuzzer target: sarena::model::Netfilter::Parse (snapshot text parser).
#include <cstddef>
#include <cstdint>
#include "libsarena/model/netfilter.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  (void)sarena::model::Netfilter::Parse(in);
  return 0;
}
