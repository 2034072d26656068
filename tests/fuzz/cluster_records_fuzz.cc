// libFuzzer target: what sarenad reads from etcd — a node record (protobuf JSON, any key), the
// keys it derives CIDRs and node ids from, and the endpoint list flag. A corrupt record must be
// an error naming the key, never a crash (issue 8, "Bad input and faults").
#include <cstddef>
#include <cstdint>
#include <string>

#include "libsarena/cluster/etcd_client.h"
#include "libsarena/cluster/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find('\n');
  const absl::string_view name = cut == absl::string_view::npos ? "n1" : in.substr(0, cut);
  const absl::string_view value = cut == absl::string_view::npos ? in : in.substr(cut + 1);
  (void)sarena::cluster::ParseNodeRecord(sarena::cluster::NodeKey(name), value);
  (void)sarena::cluster::ParseNodeRecord(std::string(name), value);
  (void)sarena::cluster::PodCidrFromKey(in);
  (void)sarena::cluster::NodeIdFromKey(in);
  (void)sarena::cluster::ValidateNodeName(in);
  (void)sarena::cluster::ParseEndpoints(in);
  return 0;
}
