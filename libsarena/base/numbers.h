// Strict decimal numbers for values a person or a program wrote: ports, prefix lengths, sizes,
// ids in flags and in the etcd keys sarena writes.
#ifndef LIBSARENA_BASE_NUMBERS_H_
#define LIBSARENA_BASE_NUMBERS_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace sarena {

/// Parses `text` as an unsigned decimal integer in 0..`max`, written the one way a number is
/// printed ("%u"): ASCII digits only, no sign, no surrounding space, no leading zero ("0" itself
/// is allowed). So "80" is 80, while "080", "+80", " 80", "8_0", "" and "65536" (with max 65535)
/// are refused. absl::SimpleAtoi accepts "+80", "080" and surrounding space: a port written
/// "080" would silently be 80, and a refusal names the value instead.
/// Returns std::nullopt for anything else; the caller's error names the field and the value.
std::optional<uint64_t> ParseCanonicalUint(absl::string_view text, uint64_t max);

}  // namespace sarena

#endif  // LIBSARENA_BASE_NUMBERS_H_
