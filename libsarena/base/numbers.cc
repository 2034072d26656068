#include "libsarena/base/numbers.h"

#include "absl/strings/ascii.h"

namespace sarena {

std::optional<uint64_t> ParseCanonicalUint(absl::string_view text, uint64_t max) {
  if (text.empty() || text.size() > 20) return std::nullopt;  // 2^64-1 has 20 digits
  if (text[0] == '0' && text.size() > 1) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > max / 10) return std::nullopt;
    v *= 10;  // <= max
    if (d > max - v) return std::nullopt;
    v += d;
  }
  return v;
}

}  // namespace sarena
