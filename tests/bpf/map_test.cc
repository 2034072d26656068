// sarena::bpf map wrappers against real kernel maps (created here with bpf_map_create, or loaded
// from the real BPF objects), plus bpffs handling and the load-time ABI size checks.
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/bpf/bpffs.h"
#include "libsarena/bpf/map.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/abi.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::bpf {
namespace {

using ::sarena::datapath::EndpointKey;
using ::sarena::datapath::Endpoint;
using ::sarena::datapath::EndpointMap;
using ::sarena::datapath::EndpointCounters;
using ::sarena::datapath::FlowKey;
using ::sarena::datapath::MakeEndpointKey;
using ::sarena::datapath::EndpointKeyIpv4;
using ::sarena::datapath::MakeEndpoint;
using ::sarena::datapath::Equal;
using ::sarena::datapath::FormatEndpointKey;
using ::sarena::datapath::FormatEndpoint;
using ::sarena::datapath::FormatFlowKey;
using ::sarena::datapath::SumCounters;
using ::sarena::datapath::DropReasonDescription;
using ::sarena::datapath::DropReasonName;
using ::sarena::datapath::Program;
using ::sarena::datapath::Maps;
using ::sarena::datapath::Objects;

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

UniqueFd CreateMap(bpf_map_type type, uint32_t key_size, uint32_t value_size, uint32_t max,
                   const char* name = "sarena_test", uint32_t flags = 0) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
  int fd = bpf_map_create(type, name, key_size, value_size, max, &opts);
  EXPECT_GE(fd, 0) << "bpf_map_create: " << strerror(-fd);
  return UniqueFd(fd);
}

EndpointKey KeyN(uint32_t n) {
  return MakeEndpointKey(net::Ipv4(0x0af40000u + n));  // 10.244.x.y
}
Endpoint ValueN(uint32_t n) {
  return MakeEndpoint(1000 + n, {0x0a, 0, 0, 0, uint8_t(n >> 8), uint8_t(n)},
                      {0x02, 0, 0, 0, uint8_t(n >> 8), uint8_t(n)}, n % SARENA_MAX_ENDPOINTS);
}

class MapTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(::sarena::testing::IsRoot()) << "bpf tier needs root"; }

  Map<EndpointKey, Endpoint> EndpointHash(uint32_t max = 70000) {
    auto m = Map<EndpointKey, Endpoint>::FromFd(
        CreateMap(BPF_MAP_TYPE_HASH, sizeof(EndpointKey), sizeof(Endpoint), max, "sarena_test",
                  BPF_F_NO_PREALLOC));
    EXPECT_OK(m);
    return *std::move(m);
  }
};

TEST_F(MapTest, SizeMismatchIsFailedPreconditionNamingMapAndSizes) {
  auto bad_value = Map<EndpointKey, uint64_t>::FromFd(
      CreateMap(BPF_MAP_TYPE_HASH, sizeof(EndpointKey), sizeof(Endpoint), 16, "sarena_mism"));
  ASSERT_THAT(bad_value, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(bad_value.status().message()), HasSubstr("sarena_mism"));
  EXPECT_THAT(std::string(bad_value.status().message()), HasSubstr("value size 24 != expected 8"));

  auto bad_key = Map<uint32_t, Endpoint>::FromFd(
      CreateMap(BPF_MAP_TYPE_HASH, sizeof(EndpointKey), sizeof(Endpoint), 16, "sarena_mism"));
  ASSERT_THAT(bad_key, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(bad_key.status().message()), HasSubstr("key size 20 != expected 4"));
}

TEST_F(MapTest, PerCpuAndPlainMapsAreNotInterchangeable) {
  auto plain_as_percpu = PerCpuMap<uint32_t, EndpointCounters>::FromFd(
      CreateMap(BPF_MAP_TYPE_ARRAY, 4, sizeof(EndpointCounters), 4));
  EXPECT_THAT(plain_as_percpu, StatusIs(absl::StatusCode::kFailedPrecondition));
  auto percpu_as_plain = Map<uint32_t, EndpointCounters>::FromFd(
      CreateMap(BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(EndpointCounters), 4));
  EXPECT_THAT(percpu_as_plain,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("per-CPU")));
}

TEST_F(MapTest, InvalidFdAndNonMapFdAreRejected) {
  using U32Map = Map<uint32_t, uint32_t>;
  EXPECT_THAT(U32Map::FromFd(UniqueFd()), StatusIs(absl::StatusCode::kInvalidArgument));
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_FALSE(U32Map::FromFd(UniqueFd(fd)).ok());
}

TEST_F(MapTest, UpdateLookupDeleteWithFlagsAndNotFound) {
  auto m = EndpointHash();
  EndpointKey k = KeyN(1);
  EXPECT_EQ(m.Lookup(k).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.Delete(k), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(m.Update(k, ValueN(1), UpdateFlags::kExist), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(m.Update(k, ValueN(1), UpdateFlags::kNoExist));
  EXPECT_EQ(m.Update(k, ValueN(2), UpdateFlags::kNoExist).code(),
            absl::StatusCode::kAlreadyExists);
  auto v = m.Lookup(k);
  ASSERT_OK(v);
  EXPECT_TRUE(Equal(*v, ValueN(1)));
  ASSERT_OK(m.Update(k, ValueN(2), UpdateFlags::kExist));
  EXPECT_TRUE(Equal(*m.Lookup(k), ValueN(2)));
  ASSERT_OK(m.Delete(k));
  auto gone = m.Lookup(k);
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound, HasSubstr("sarena_test")));
}

TEST_F(MapTest, KeysAndForEachSeeEveryEntry) {
  auto m = EndpointHash();
  constexpr uint32_t kN = 1000;
  for (uint32_t i = 0; i < kN; ++i) ASSERT_TRUE(m.Update(KeyN(i), ValueN(i)).ok());
  auto keys = m.Keys();
  ASSERT_OK(keys);
  ASSERT_EQ(keys->size(), kN);
  std::vector<bool> seen(kN);
  for (const auto& k : *keys) {
    uint32_t n = EndpointKeyIpv4(k)->to_uint() - 0x0af40000u;
    ASSERT_LT(n, kN);
    EXPECT_FALSE(seen[n]);
    seen[n] = true;
  }
  size_t visited = 0;
  ASSERT_TRUE(m.ForEach([&](const EndpointKey& k, const Endpoint& v) {
                 uint32_t n = EndpointKeyIpv4(k)->to_uint() - 0x0af40000u;
                 EXPECT_TRUE(Equal(v, ValueN(n)));
                 ++visited;
                 return true;
               }).ok());
  EXPECT_EQ(visited, kN);
  visited = 0;
  ASSERT_OK(m.ForEach([&](const EndpointKey&, const Endpoint&) { return ++visited < 10; }));
  EXPECT_EQ(visited, 10u);
}

TEST_F(MapTest, BatchOpsOnHash) {
  auto m = EndpointHash();
  constexpr uint32_t kN = 5000;
  std::vector<EndpointKey> keys;
  std::vector<Endpoint> values;
  for (uint32_t i = 0; i < kN; ++i) {
    keys.push_back(KeyN(i));
    values.push_back(ValueN(i));
  }
  ASSERT_OK(m.UpdateBatch(keys, values));
  auto all = m.LookupBatch();
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), kN);
  std::vector<bool> seen(kN);
  for (const auto& [k, v] : *all) {
    uint32_t n = EndpointKeyIpv4(k)->to_uint() - 0x0af40000u;
    ASSERT_LT(n, kN);
    EXPECT_FALSE(seen[n]);
    seen[n] = true;
    EXPECT_TRUE(Equal(v, ValueN(n)));
  }
  // NOEXIST on existing keys fails, naming how many went in.
  auto again = m.UpdateBatch(absl::MakeSpan(keys).subspan(0, 10),
                             absl::MakeSpan(values).subspan(0, 10), UpdateFlags::kNoExist);
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("0 written")));
  EXPECT_EQ(m.UpdateBatch(keys, absl::MakeSpan(values).subspan(1)).code(),
            absl::StatusCode::kInvalidArgument);

  ASSERT_OK(m.DeleteBatch(absl::MakeSpan(keys).subspan(0, kN / 2)));
  auto rest = m.Keys();
  ASSERT_OK(rest);
  EXPECT_EQ(rest->size(), kN / 2);
  EXPECT_EQ(m.Lookup(keys[0]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(m.Lookup(keys[kN - 1]).ok());
  // Deleting an absent key stops the batch with kNotFound.
  EXPECT_THAT(m.DeleteBatch(absl::MakeSpan(keys).subspan(0, 1)),
              StatusIs(absl::StatusCode::kNotFound));
  // An empty map reads as empty.
  ASSERT_OK(m.DeleteBatch(absl::MakeSpan(keys).subspan(kN / 2)));
  auto none = m.LookupBatch();
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(MapTest, BatchOpsOnArrayIncludingUnsupportedDelete) {
  auto m = Map<uint32_t, uint64_t>::FromFd(CreateMap(BPF_MAP_TYPE_ARRAY, 4, 8, 300));
  ASSERT_OK(m);
  std::vector<uint32_t> keys;
  std::vector<uint64_t> values;
  for (uint32_t i = 0; i < 300; ++i) {
    keys.push_back(i);
    values.push_back(uint64_t{i} * 3);
  }
  ASSERT_OK(m->UpdateBatch(keys, values));
  auto all = m->LookupBatch();
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 300u);
  for (const auto& [k, v] : *all) EXPECT_EQ(v, uint64_t{k} * 3);
  // Arrays have no delete (batch or not): the batch falls back to the loop, which reports the
  // kernel's EINVAL for the first element.
  auto del = m->DeleteBatch(absl::MakeSpan(keys).subspan(0, 3));
  EXPECT_THAT(del, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 of 3 deleted")));
}

TEST_F(MapTest, LookupAllFallsBackWhereTheKernelHasNoBatch) {
  // BPF_MAP_TYPE_LPM_TRIE implements no batch ops: LookupBatch must still return everything.
  struct LpmKey {
    uint32_t prefixlen;
    uint32_t addr;
  };
  auto m = Map<LpmKey, uint32_t>::FromFd(
      CreateMap(BPF_MAP_TYPE_LPM_TRIE, sizeof(LpmKey), 4, 64, "sarena_lpm", BPF_F_NO_PREALLOC));
  ASSERT_OK(m);
  std::vector<LpmKey> keys;
  std::vector<uint32_t> values;
  for (uint32_t i = 0; i < 20; ++i) {
    keys.push_back({24, htonl(0x0a000000u + (i << 8))});
    values.push_back(i);
  }
  ASSERT_TRUE(m->UpdateBatch(keys, values).ok());  // loop fallback
  auto all = m->LookupBatch();
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 20u);
  ASSERT_OK(m->DeleteBatch(keys));
  EXPECT_TRUE(m->Keys()->empty());
}

TEST_F(MapTest, PerCpuValuesOnePerPossibleCpu) {
  auto m = PerCpuMap<uint32_t, EndpointCounters>::FromFd(
      CreateMap(BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(EndpointCounters), 8));
  ASSERT_OK(m);
  auto cpus = NumPossibleCpus();
  ASSERT_OK(cpus);
  EXPECT_EQ(m->num_cpus(), *cpus);
  std::vector<EndpointCounters> values(*cpus);
  for (int i = 0; i < *cpus; ++i) values[i] = {uint64_t(i + 1), uint64_t(100 * (i + 1)), 0, 7};
  ASSERT_OK(m->Update(3, values));
  auto got = m->Lookup(3);
  ASSERT_OK(got);
  ASSERT_EQ(got->size(), size_t(*cpus));
  for (int i = 0; i < *cpus; ++i) EXPECT_EQ((*got)[i].rx_bytes, uint64_t(100 * (i + 1)));
  EndpointCounters sum = SumCounters(*got);
  EXPECT_EQ(sum.rx_packets, uint64_t(*cpus) * (*cpus + 1) / 2);
  EXPECT_EQ(sum.tx_bytes, uint64_t(7) * *cpus);
  EXPECT_EQ(m->Update(3, absl::MakeSpan(values).subspan(1)).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(m->UpdateAll(3, EndpointCounters{}));
  EXPECT_EQ(SumCounters(*m->Lookup(3)).rx_packets, 0u);
  auto all = m->LookupBatch();
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 8u);
  for (const auto& [k, v] : *all) EXPECT_EQ(v.size(), size_t(*cpus));
}

TEST_F(MapTest, PinAndFromPin) {
  ::sarena::testing::ScopedBpffs fs;
  auto m = EndpointHash(16);
  std::string path = fs.path() + "/pinned";
  ASSERT_OK(m.raw().Pin(path));
  EXPECT_THAT(m.raw().Pin(path), StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK(m.Update(KeyN(5), ValueN(5)));
  auto again = Map<EndpointKey, Endpoint>::FromPin(path);
  ASSERT_OK(again);
  EXPECT_EQ(again->info().id, m.info().id);
  EXPECT_TRUE(Equal(*again->Lookup(KeyN(5)), ValueN(5)));
  auto wrong = Map<uint32_t, Endpoint>::FromPin(path);
  EXPECT_THAT(wrong, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(path)));
  auto missing = Map<EndpointKey, Endpoint>::FromPin(fs.path() + "/nothing");
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(MapTest, EnsureBpffsMountsOnceAndCreatesSubdirectories) {
  ::sarena::testing::ScopedBpffs fs;  // mounted a private bpffs on a /tmp directory
  ASSERT_EQ(fs.mounted(), fs.path());
  EXPECT_TRUE(*IsBpffs(fs.path()));
  EXPECT_FALSE(*IsBpffs("/tmp"));
  // Already on bpffs: only directories are created.
  auto nested = EnsureBpffs(fs.path() + "/a/b/c");
  ASSERT_OK(nested);
  EXPECT_EQ(*nested, "");
  EXPECT_TRUE(*IsBpffs(fs.path() + "/a/b/c"));
  auto again = EnsureBpffs(fs.path());
  ASSERT_OK(again);
  EXPECT_EQ(*again, "");
  rmdir((fs.path() + "/a/b/c").c_str());
  rmdir((fs.path() + "/a/b").c_str());
  rmdir((fs.path() + "/a").c_str());
  EXPECT_THAT(IsBpffs("/nonexistent/sarena"), StatusIs(absl::StatusCode::kNotFound));
}

// ---- The real objects ----

TEST_F(MapTest, LoadedMapsMatchTheAbiStructs) {
  ::sarena::testing::ScopedBpffs fs;
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  const Maps& m = objs->maps();
  EXPECT_EQ(m.endpoints.info().key_size, sizeof(sarena_endpoint_key));
  EXPECT_EQ(m.endpoints.info().value_size, sizeof(sarena_endpoint));
  EXPECT_EQ(m.endpoints.info().max_entries, uint32_t{SARENA_MAX_ENDPOINTS});
  EXPECT_EQ(m.endpoints.info().type, uint32_t{BPF_MAP_TYPE_HASH});
  EXPECT_EQ(m.endpoints.info().map_flags & BPF_F_NO_PREALLOC, uint32_t{BPF_F_NO_PREALLOC});
  EXPECT_EQ(m.config.info().value_size, sizeof(sarena_config));
  EXPECT_EQ(m.config.info().max_entries, 1u);
  EXPECT_EQ(m.ep_counters.info().value_size, sizeof(sarena_ep_counters));
  EXPECT_EQ(m.ep_counters.info().max_entries, uint32_t{SARENA_MAX_ENDPOINTS});
  EXPECT_EQ(m.drops.info().value_size, sizeof(sarena_drop_counter));
  EXPECT_EQ(m.drops.info().max_entries, uint32_t{SARENA_DROP_REASON_MAX});
  EXPECT_EQ(m.host_flows.info().key_size, sizeof(sarena_flow_key));
  EXPECT_EQ(m.host_flows.info().type, uint32_t{BPF_MAP_TYPE_LRU_HASH});
  // Kernel names are the ABI names (what the pins are called).
  EXPECT_EQ(m.endpoints.name(), SARENA_MAP_ENDPOINTS);
  EXPECT_EQ(m.config.name(), SARENA_MAP_CONFIG);
  EXPECT_EQ(m.ep_counters.name(), SARENA_MAP_EP_COUNTERS);
  EXPECT_EQ(m.drops.name(), SARENA_MAP_DROPS);
  EXPECT_EQ(m.host_flows.name(), SARENA_MAP_HOST_FLOWS);
  for (const char* name : {SARENA_MAP_ENDPOINTS, SARENA_MAP_CONFIG, SARENA_MAP_EP_COUNTERS,
                           SARENA_MAP_DROPS, SARENA_MAP_HOST_FLOWS}) {
    struct stat st;
    EXPECT_EQ(stat(absl::StrCat(fs.path(), "/", name).c_str(), &st), 0) << name << " not pinned";
  }
  EXPECT_EQ(*objs->prog_id(Program::kFromContainer) != 0, true);
}

TEST_F(MapTest, ObjectsShareMapsThroughPinsAcrossLoads) {
  ::sarena::testing::ScopedBpffs fs;
  auto first = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(first);
  ASSERT_OK(first->maps().endpoints.Update(KeyN(9), ValueN(9)));
  uint32_t id = first->maps().endpoints.info().id;
  first = absl::InternalError("dropped");  // destroy: maps survive through the pins
  auto second = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(second);
  EXPECT_EQ(second->maps().endpoints.info().id, id);
  EXPECT_TRUE(Equal(*second->maps().endpoints.Lookup(KeyN(9)), ValueN(9)));
  // A reader (CLI, diagnoser) opens the same maps by pin.
  auto pinned = Maps::FromPinRoot(fs.path());
  ASSERT_OK(pinned);
  EXPECT_EQ(pinned->endpoints.info().id, id);
  auto cfg = pinned->config.Read();
  ASSERT_OK(cfg);
  EXPECT_EQ(cfg->net_ifindex, 0u);
  EXPECT_THAT(Maps::FromPinRoot(fs.path() + "/nope"), StatusIs(absl::StatusCode::kNotFound));
}

// Readers (the sarena CLI, collect, the metrics endpoint, the example) open the pins read-only:
// they see what the writer wrote, and the kernel refuses every write through their fds.
TEST_F(MapTest, OpenPinnedReadsButCannotWrite) {
  ::sarena::testing::ScopedBpffs fs;
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  const sarena::net::Ipv4 ip = *sarena::net::ParseIpv4("10.244.0.7");
  const Endpoint ep = MakeEndpoint(7, {2, 0, 0, 0, 0, 7}, {2, 0, 0, 0, 1, 7}, 7);
  ASSERT_OK(objs->maps().endpoints.Put(ip, ep));
  ASSERT_OK(objs->maps().config.Write({.net_ifindex = 501}));

  auto ro = Maps::OpenPinned(fs.path());
  ASSERT_OK(ro);
  auto got = ro->endpoints.Get(ip);
  ASSERT_OK(got);
  EXPECT_TRUE(Equal(*got, ep));
  auto slot = ro->endpoints.SlotCopy(ip);
  ASSERT_OK(slot);
  EXPECT_TRUE(slot->has_value());
  EXPECT_EQ(ro->config.Read()->net_ifindex, 501u);
  EXPECT_OK(ro->drops.ReadAll());
  EXPECT_OK(ro->ep_counters.Read(7));

  EXPECT_THAT(ro->endpoints.Put(ip, ep), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(ro->endpoints.RemoveIfOwner(ip, 0).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(ro->config.Write({}), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ro->ep_counters.Reset(7), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ro->MarkFlowOpener(7), StatusIs(absl::StatusCode::kPermissionDenied));
  // Nothing changed behind the writer's back.
  EXPECT_TRUE(Equal(*objs->maps().endpoints.Get(ip), ep));
  EXPECT_EQ(objs->maps().config.Read()->net_ifindex, 501u);
  // The same pins opened for writing (tests, the overlay) still write.
  auto rw = Maps::FromPinRoot(fs.path());
  ASSERT_OK(rw);
  EXPECT_OK(rw->ep_counters.Reset(7));
  EXPECT_THAT(Maps::OpenPinned(fs.path() + "/nope"), StatusIs(absl::StatusCode::kNotFound));
}

// The endpoint map's verbs: by pod address, and a delete that only takes its own entry (an IP
// reused by a new pod must not lose its entry to the old pod's late DEL).
TEST_F(MapTest, EndpointMapVerbsRespectOwnership) {
  ::sarena::testing::ScopedBpffs fs;
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  const EndpointMap& m = objs->maps().endpoints;
  const auto ip = boost::asio::ip::make_address_v4("10.9.0.5");
  const net::Mac mac{2, 0, 0, 0, 0, 5};
  ASSERT_OK(m.Put(ip, MakeEndpoint(7, mac, mac, 3)));
  ASSERT_OK(m.Get(ip));
  EXPECT_EQ(m.Get(ip)->ifindex, 7u);
  EXPECT_EQ(m.Get(boost::asio::ip::make_address_v4("10.9.0.6")).status().code(),
            absl::StatusCode::kNotFound);
  auto other = m.RemoveIfOwner(ip, 8);  // another veth's DEL
  ASSERT_OK(other);
  EXPECT_FALSE(*other);
  EXPECT_OK(m.Get(ip));
  auto addrs = m.Addresses();
  ASSERT_OK(addrs);
  EXPECT_EQ(*addrs, std::vector<net::Ipv4>{ip});
  auto own = m.RemoveIfOwner(ip, 7);
  ASSERT_OK(own);
  EXPECT_TRUE(*own);
  auto again = m.RemoveIfOwner(ip, 7);  // idempotent
  ASSERT_OK(again);
  EXPECT_FALSE(*again);
}

// The endpoint slots (SARENA_MAP_ENDPOINT_SLOTS): Put copies the entry to the slot of the
// address's low 16 bits, a slot held by another address is left alone, RemoveIfOwner clears
// only its own slot, Replace (the trace flag) updates the copy too.
TEST_F(MapTest, EndpointMapKeepsTheSlotsInStep) {
  ::sarena::testing::ScopedBpffs fs;
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  const EndpointMap& m = objs->maps().endpoints;
  ASSERT_TRUE(m.slots().has_value());
  const auto& slots = *m.slots();
  EXPECT_EQ(slots.name(), SARENA_MAP_ENDPOINT_SLOTS);
  EXPECT_EQ(slots.info().type, uint32_t{BPF_MAP_TYPE_ARRAY});
  EXPECT_EQ(slots.info().max_entries, SARENA_ENDPOINT_SLOTS);
  const auto ip = boost::asio::ip::make_address_v4("10.9.1.5");
  const auto twin = boost::asio::ip::make_address_v4("10.8.1.5");  // same low 16 bits
  const uint32_t idx = ::sarena::datapath::EndpointSlotIndex(ip);
  EXPECT_EQ(idx, 0x0105u);
  const net::Mac mac{2, 0, 0, 0, 0, 5};
  ASSERT_OK(m.Put(ip, MakeEndpoint(7, mac, mac, 3)));
  auto slot = slots.Lookup(idx);
  ASSERT_OK(slot);
  EXPECT_EQ(slot->addr_be, net::ToBe32(ip));
  EXPECT_EQ(slot->ep.ifindex, 7u);
  EXPECT_EQ(slot->ep.endpoint_id, 3u);

  ASSERT_TRUE(m.Put(twin, MakeEndpoint(9, mac, mac, 4)).ok());  // collides: hash only
  EXPECT_EQ(slots.Lookup(idx)->addr_be, net::ToBe32(ip));
  EXPECT_EQ(m.Get(twin)->ifindex, 9u);
  Endpoint traced = MakeEndpoint(7, mac, mac, 3, SARENA_EP_F_TRACE);
  ASSERT_OK(m.Replace(MakeEndpointKey(ip), traced));
  EXPECT_EQ(slots.Lookup(idx)->ep.flags, SARENA_EP_F_TRACE);
  EXPECT_EQ(m.Replace(MakeEndpointKey(boost::asio::ip::make_address_v4("10.9.1.6")), traced)
                .code(),
            absl::StatusCode::kNotFound);

  auto twin_gone = m.RemoveIfOwner(twin, 9);  // not the slot's owner: slot untouched
  ASSERT_TRUE(twin_gone.ok() && *twin_gone);
  EXPECT_EQ(slots.Lookup(idx)->addr_be, net::ToBe32(ip));
  auto other = m.RemoveIfOwner(ip, 8);  // another veth's DEL: neither entry nor slot
  ASSERT_TRUE(other.ok() && !*other);
  EXPECT_EQ(slots.Lookup(idx)->addr_be, net::ToBe32(ip));
  auto own = m.RemoveIfOwner(ip, 7);
  ASSERT_TRUE(own.ok() && *own);
  EXPECT_EQ(slots.Lookup(idx)->addr_be, 0u);
  EXPECT_EQ(slots.Lookup(idx)->ep.ifindex, 0u);
}

// An upgrade: a pinned endpoint hash from before the slots existed (entries written, then the
// slot pin removed). The next Load creates the slot map and copies the hash into it.
TEST_F(MapTest, LoadFillsNewSlotsFromAPinnedEndpointHash) {
  ::sarena::testing::ScopedBpffs fs;
  const auto ip = boost::asio::ip::make_address_v4("10.9.2.7");
  const net::Mac mac{2, 0, 0, 0, 0, 7};
  {
    auto objs = Objects::Load({.pin_root = fs.path()});
    ASSERT_OK(objs);
    ASSERT_TRUE(objs->maps().endpoints.Update(MakeEndpointKey(ip), MakeEndpoint(11, mac, mac, 5))
                    .ok());
  }
  ASSERT_EQ(unlink(absl::StrCat(fs.path(), "/", SARENA_MAP_ENDPOINT_SLOTS).c_str()), 0);
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  auto slot = objs->maps().endpoints.slots()->Lookup(::sarena::datapath::EndpointSlotIndex(ip));
  ASSERT_OK(slot);
  EXPECT_EQ(slot->addr_be, net::ToBe32(ip));
  EXPECT_EQ(slot->ep.ifindex, 11u);
  // A reload with the slot pin present reuses it (no second sync needed, entry kept).
  auto again = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(again);
  EXPECT_EQ(again->maps().endpoints.slots()->Lookup(0x0207)->ep.ifindex, 11u);
  auto pinned = Maps::FromPinRoot(fs.path());
  ASSERT_OK(pinned);
  EXPECT_TRUE(pinned->endpoints.slots().has_value());
}

// A downgrade and back: pins changed by a sarenad that knew no slots or openers (hash-only
// writes, a host flow recorded without its mark). The next Load rebuilds every slot from the
// hash (stale ones emptied or rewritten) and marks the endpoints that have recorded flows.
TEST_F(MapTest, LoadReconcilesStaleSlotsAndMarksRecordedFlowOpeners) {
  ::sarena::testing::ScopedBpffs fs;
  const auto kept = boost::asio::ip::make_address_v4("10.9.3.1");
  const auto gone = boost::asio::ip::make_address_v4("10.9.3.2");
  const auto moved = boost::asio::ip::make_address_v4("10.9.3.3");
  const net::Mac mac{2, 0, 0, 0, 0, 3};
  {
    auto objs = Objects::Load({.pin_root = fs.path()});
    ASSERT_OK(objs);
    const EndpointMap& m = objs->maps().endpoints;
    ASSERT_OK(m.Put(kept, MakeEndpoint(21, mac, mac, 1)));
    ASSERT_OK(m.Put(gone, MakeEndpoint(22, mac, mac, 2)));
    ASSERT_OK(m.Put(moved, MakeEndpoint(23, mac, mac, 3)));
    // What an older sarenad does: hash writes only.
    ASSERT_OK(m.Delete(MakeEndpointKey(gone)));
    ASSERT_OK(m.Update(MakeEndpointKey(moved), MakeEndpoint(33, mac, mac, 3)));
    FlowKey flow = {};
    flow.addr_be = net::ToBe32(kept);
    flow.port_be = htons(40000);
    flow.proto = 6;
    ASSERT_OK(objs->maps().host_flows.Update(flow, 1));
    EXPECT_EQ(*objs->maps().flow_openers->Lookup(1), 0u);
  }
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  const auto& slots = *objs->maps().endpoints.slots();
  using ::sarena::datapath::EndpointSlotIndex;
  EXPECT_EQ(slots.Lookup(EndpointSlotIndex(kept))->ep.ifindex, 21u);
  EXPECT_EQ(slots.Lookup(EndpointSlotIndex(gone))->addr_be, 0u) << "stale slot emptied";
  EXPECT_EQ(slots.Lookup(EndpointSlotIndex(moved))->ep.ifindex, 33u) << "stale copy rewritten";
  EXPECT_EQ(*objs->maps().flow_openers->Lookup(1), 1u) << "kept has a recorded flow";
  EXPECT_EQ(*objs->maps().flow_openers->Lookup(3), 0u);
}

TEST_F(MapTest, IncompatiblePinFailsTheLoadWithLibbpfsExplanation) {
  ::sarena::testing::ScopedBpffs fs;
  // A stale sarena_lxc from an older ABI (value 16 bytes instead of 24).
  UniqueFd stale = CreateMap(BPF_MAP_TYPE_HASH, sizeof(EndpointKey), 16, SARENA_MAX_ENDPOINTS,
                             SARENA_MAP_ENDPOINTS, BPF_F_NO_PREALLOC);
  ASSERT_EQ(bpf_obj_pin(stale.get(), absl::StrCat(fs.path(), "/", SARENA_MAP_ENDPOINTS).c_str()),
            0);
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_FALSE(objs.ok());
  std::string msg(objs.status().message());
  EXPECT_THAT(msg, HasSubstr("load BPF object 'from_container'"));
  EXPECT_THAT(msg, HasSubstr(SARENA_MAP_ENDPOINTS));
  EXPECT_THAT(msg, HasSubstr("libbpf")) << "libbpf's own log lines belong in the message";
}

TEST_F(MapTest, LoadRequiresAPinRoot) {
  EXPECT_THAT(Objects::Load({}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(MapTest, EndpointCounterAndDropHelpers) {
  ::sarena::testing::ScopedBpffs fs;
  auto objs = Objects::Load({.pin_root = fs.path()});
  ASSERT_OK(objs);
  const Maps& m = objs->maps();
  EXPECT_EQ(m.ep_counters.Read(SARENA_MAX_ENDPOINTS).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<EndpointCounters> v(m.ep_counters.num_cpus(), EndpointCounters{1, 2, 3, 4});
  ASSERT_OK(m.ep_counters.Update(77, v));
  auto c = m.ep_counters.Read(77);
  ASSERT_OK(c);
  EXPECT_EQ(c->tx_bytes, 4u * m.ep_counters.num_cpus());
  ASSERT_OK(m.ep_counters.Reset(77));
  EXPECT_EQ(m.ep_counters.Read(77)->tx_bytes, 0u);
  auto drops = m.drops.ReadAll();
  ASSERT_OK(drops);
  EXPECT_EQ(drops->size(), size_t{SARENA_DROP_REASON_MAX});
  EXPECT_EQ(DropReasonName(SARENA_DROP_TTL_EXCEEDED), "ttl_exceeded");
  EXPECT_EQ(DropReasonName(SARENA_DROP_SPOOFED_SOURCE), "spoofed_source");
  EXPECT_EQ(DropReasonName(99), "reason_99");
}

// The drop reasons are one list (SARENA_DROP_REASONS): names are unique and stable, each has a
// description, and docs/architecture.md's table lists every one with its value and meaning.
TEST(DropReasons, OneListForTheEnumTheNamesAndTheDocs) {
  std::ifstream in(sarena::testing::SourceDir() + "/docs/architecture.md");
  std::stringstream doc;
  doc << in.rdbuf();
  std::set<std::string> names;
  for (uint32_t r = 1; r < SARENA_DROP_REASON_MAX; ++r) {
    const std::string name = DropReasonName(r);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_NE(name.rfind("reason_", 0), 0u) << r;
    const std::string row = absl::StrCat("| ", r, " | `", name, "` | ", DropReasonDescription(r),
                                         " |");
    EXPECT_NE(doc.str().find(row), std::string::npos) << "docs/architecture.md lacks: " << row;
  }
  EXPECT_EQ(DropReasonName(SARENA_DROP_REASON_MAX), absl::StrCat("reason_", SARENA_DROP_REASON_MAX));
}

TEST(TypesTest, EndpointKeyLayoutAndFormatting) {
  EndpointKey k = MakeEndpointKey(net::Ipv4({10, 244, 1, 5}), 3);
  EXPECT_EQ(k.addr[0], 10);
  EXPECT_EQ(k.addr[3], 5);
  for (int i = 4; i < 16; ++i) EXPECT_EQ(k.addr[i], 0);
  EXPECT_EQ(k.family, SARENA_FAMILY_IPV4);
  EXPECT_EQ(k.pad0, 0);
  EXPECT_EQ(FormatEndpointKey(k), "10.244.1.5 cluster 3");
  EXPECT_EQ(EndpointKeyIpv4(k)->to_string(), "10.244.1.5");
  k.family = SARENA_FAMILY_IPV6;
  EXPECT_FALSE(EndpointKeyIpv4(k).has_value());
  Endpoint ep = MakeEndpoint(7, {0xaa, 0xbb, 0xcc, 0, 0, 1}, {2, 0, 0, 0, 0, 2}, 3);
  EXPECT_EQ(FormatEndpoint(ep),
            "ifindex=7 pod_mac=aa:bb:cc:00:00:01 host_mac=02:00:00:00:00:02 endpoint_id=3 "
            "flags=0x0");
  FlowKey f = {};
  f.addr_be = net::ToBe32(net::Ipv4({10, 0, 0, 1}));
  f.port_be = htons(34567);
  f.proto = 6;
  EXPECT_EQ(FormatFlowKey(f), "10.0.0.1:34567 proto 6");
}

}  // namespace
}  // namespace sarena::bpf
