// libFuzzer target: sarena::model::Ipsets::Parse (snapshot text parser).
#include <cstddef>
#include <cstdint>
#include "libsarena/model/ipset.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  (void)sarena::model::Ipsets::Parse(in);
  return 0;
}
