// Internal: routes libbpf's print callback into libsarena (never stderr), and captures it into a
// string during a scope so load failures can carry the verifier log in their status message.
#ifndef LIBSARENA_BPF_LIBBPF_LOG_H_
#define LIBSARENA_BPF_LIBBPF_LOG_H_

#include <string>

namespace sarena::bpf::internal {

/// Installs (once per process) a libbpf print callback that sends WARN/INFO messages to
/// SARENA_LOG(Debug) — or, inside a LibbpfLogCapture on the same thread, into its buffer.
void InstallLibbpfLogger();

/// While alive, libbpf messages of this thread (WARN and INFO, e.g. the verifier log of a failed
/// load) are appended to an in-memory buffer instead of the log.
class LibbpfLogCapture {
 public:
  LibbpfLogCapture();
  ~LibbpfLogCapture();
  LibbpfLogCapture(const LibbpfLogCapture&) = delete;
  LibbpfLogCapture& operator=(const LibbpfLogCapture&) = delete;

  /// The captured text, trimmed to its last `max_bytes` bytes (the verifier's verdict is at the
  /// end of its log) with a note of how much was cut.
  std::string Text(size_t max_bytes = 16384) const;

 private:
  std::string buf_;
  std::string* prev_;
};

}  // namespace sarena::bpf::internal

#endif  // LIBSARENA_BPF_LIBBPF_LOG_H_
