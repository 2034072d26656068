// libFuzzer target: sarena::model::ParseSarenaCluster (nodes/<node>/sarena-cluster.json) and the
// lookups on what it returns.
#include <cstddef>
#include <cstdint>

#include "libsarena/model/sarena_cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  auto c = sarena::model::ParseSarenaCluster(in);
  if (c.ok()) {
    (void)c->LookupTunnel(sarena::net::Ipv4(0x0a140105));
    (void)c->FindPeer(sarena::net::Ipv4(0x0a000901));
  }
  return 0;
}
