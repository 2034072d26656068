// sarena-cni: the CNI plugin executable — process I/O around sarena::plugin::PluginMain
// (libsarena/plugin/plugin.h, which documents the commands and error codes).
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/base/cli.h"
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

// What `sarena-cni --help` says (to a human: a runtime never passes arguments).
const sarena::ProgramDoc& Doc() {
  static const sarena::ProgramDoc* doc = new sarena::ProgramDoc{
      .name = "sarena-cni",
      .summary = "The sarena CNI plugin: the container runtime executes it with the CNI_* "
                 "environment and the network configuration on stdin; it asks sarenad (over "
                 "the configuration's daemonSocket) to do the work and prints the CNI result.",
      .usage = {"CNI_COMMAND=ADD|DEL|CHECK|STATUS|GC|VERSION CNI_CONTAINERID=ID CNI_NETNS=PATH "
                "CNI_IFNAME=eth0 CNI_PATH=DIRS sarena-cni < NETWORK-CONFIG.json",
                "sarena-cni --help | --version"},
      .description =
          "CNI spec 1.0.0 / 1.1.0 (also the 0.3.x and 0.4.0 result shapes). Install it in the "
          "runtime's CNI plugin directory (/usr/lib/cni on Debian, /opt/cni/bin) and reference it "
          "as \"type\": \"sarena-cni\" in a conflist. With CNI_COMMAND set, arguments are "
          "ignored and stdout carries only the spec's JSON.",
      .flag_sources = {"tools/sarena-cni/"},
      .epilog =
          "Environment: CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS (e.g. "
          "K8S_POD_NAMESPACE=NS;K8S_POD_NAME=NAME), CNI_PATH.\n\n"
          "Network configuration keys of the plugin: daemonSocket (default "
          "/run/sarena/sarenad.sock), mtu, logFile.\n\n"
          "Exit status: 0 success, 1 error (a CNI error object on stdout; codes in "
          "libsarena/plugin/plugin.h).\n",
  };
  return *doc;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  // A human asking for --help / --version: only when no runtime invoked the plugin (a runtime
  // sets CNI_COMMAND and passes no arguments, and then nothing here changes the protocol).
  if (const char* c = ::getenv("CNI_COMMAND"); (c == nullptr || *c == '\0') && argc > 1 &&
      sarena::PrintHelpIfAsked(std::vector<std::string>(argv + 1, argv + argc), Doc())) {
    return 0;
  }
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
