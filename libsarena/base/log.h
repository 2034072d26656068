// Logging sink. The library never prints: it reports through a process-wide sink that the
// executables install (sarenad logs to stderr, sarena-cni to stderr or its logFile). With no sink
// installed, messages are discarded.
#ifndef LIBSARENA_BASE_LOG_H_
#define LIBSARENA_BASE_LOG_H_

#include <functional>
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"

namespace sarena {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

/// "DEBUG" / "INFO" / "WARNING" / "ERROR".
absl::string_view ToString(LogLevel level);

/// Receives one formatted message (no trailing newline). Called with an internal mutex held, so
/// a sink must not log itself.
using LogSink = std::function<void(LogLevel, absl::string_view)>;

/// Installs `sink` for the whole process (nullptr removes it). Thread-safe.
void SetLogSink(LogSink sink);

/// Messages below `level` are dropped before formatting reaches the sink. Default kInfo.
void SetMinLogLevel(LogLevel level);

/// A sink writing "YYYY-MM-DDTHH:MM:SS.uuuuuuZ LEVEL message\n" to `fd` (e.g. STDERR_FILENO).
LogSink FdLogSink(int fd);

/// Sends one message to the installed sink. Thread-safe.
void Log(LogLevel level, absl::string_view message);

}  // namespace sarena

#define SARENA_LOG(level, ...) \
  ::sarena::Log(::sarena::LogLevel::k##level, ::absl::StrCat(__VA_ARGS__))

#endif  // LIBSARENA_BASE_LOG_H_
