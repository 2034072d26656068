// libFuzzer target: the snapshot JSON reader (ip -j, kubectl -o json) — owned and borrowed parse.
#include <cstddef>
#include <cstdint>
#include <string>
#include "libsarena/model/json.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)sarena::model::JsonDoc::ParseBorrowed(text, "fuzz.json");
  (void)sarena::model::JsonDoc::ParseOwned(std::string(text), "fuzz.json");
  return 0;
}
