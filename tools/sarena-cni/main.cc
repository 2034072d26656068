// sarena-cni: the CNI plugin executable — process I/O around sarena::plugin::PluginMain
// (libsarena/plugin/plugin.h, which documents the commands and error codes).
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/cni/error.h"
#include "libsarena/plugin/plugin.h"

namespace {

namespace cni = sarena::cni;

// The plugin's stdout: written once, whole, at the end.
void WriteStdout(const std::string& text) {
  std::string line = text + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDOUT_FILENO, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

absl::StatusOr<std::string> ReadAllStdin() {
  std::string data;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
      if (data.size() > (16u << 20)) {
        return cni::MakeCniError(cni::ErrorCode::kIoFailure, absl::StatusCode::kResourceExhausted,
                                 "read network config from stdin: more than 16 MiB");
      }
      continue;
    }
    if (n == 0) return data;
    if (errno == EINTR) continue;
    int err = errno;
    return cni::MakeCniError(cni::ErrorCode::kIoFailure, absl::StatusCode::kInternal,
                             absl::StrCat("read network config from stdin: ", strerror(err),
                                          " (errno ", err, ")"));
  }
}

}  // namespace

int main() {
  ::signal(SIGPIPE, SIG_IGN);
  sarena::plugin::PluginIo io{
      .getenv = [](absl::string_view name) -> std::optional<std::string> {
        const char* v = ::getenv(std::string(name).c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
      },
      .stdin_text = ReadAllStdin(),
      .write_stdout = WriteStdout,
      .log_sink = sarena::FdLogSink(STDERR_FILENO),
  };
  return sarena::plugin::PluginMain(io);
}
