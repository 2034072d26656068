#include "libsarena/bpf/libbpf_log.h"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "libsarena/base/log.h"

namespace sarena::bpf::internal {
namespace {

thread_local std::string* t_capture = nullptr;

int PrintCallback(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return 0;
  std::string text(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), fmt, args);
  text.resize(static_cast<size_t>(n));
  if (t_capture != nullptr) {
    t_capture->append(text);
  } else {
    absl::string_view msg(text);
    while (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
    SARENA_LOG(Debug, "libbpf: ", msg);
  }
  return n;
}

}  // namespace

void InstallLibbpfLogger() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(PrintCallback); });
}

LibbpfLogCapture::LibbpfLogCapture() : prev_(t_capture) {
  InstallLibbpfLogger();
  t_capture = &buf_;
}

LibbpfLogCapture::~LibbpfLogCapture() { t_capture = prev_; }

std::string LibbpfLogCapture::Text(size_t max_bytes) const {
  absl::string_view text(buf_);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text.size() <= max_bytes) return std::string(text);
  return absl::StrCat("[", text.size() - max_bytes, " bytes of libbpf log cut] ",
                      text.substr(text.size() - max_bytes));
}

}  // namespace sarena::bpf::internal
