#include "libsarena/base/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sarena {
namespace {

absl::Mutex g_mu;
LogSink* g_sink ABSL_GUARDED_BY(g_mu) = nullptr;
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};

}  // namespace

absl::string_view ToString(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

void SetLogSink(LogSink sink) {
  absl::MutexLock lock(&g_mu);
  delete g_sink;
  g_sink = sink ? new LogSink(std::move(sink)) : nullptr;
}

void SetMinLogLevel(LogLevel level) { g_min_level.store(static_cast<int>(level)); }

LogSink FdLogSink(int fd) {
  return [fd](LogLevel level, absl::string_view msg) {
    std::string line = absl::StrCat(
        absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()), " ",
        ToString(level), " ", msg, "\n");
    size_t off = 0;
    while (off < line.size()) {
      ssize_t n = ::write(fd, line.data() + off, line.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  };
}

void Log(LogLevel level, absl::string_view message) {
  if (static_cast<int>(level) < g_min_level.load()) return;
  absl::MutexLock lock(&g_mu);
  if (g_sink) (*g_sink)(level, message);
}

}  // namespace sarena
