// EndpointStore: put/get/delete/list, persistence, atomic replacement, crash leftovers, and
// corrupt-record reporting — on a real directory, no privileges needed.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/daemon/state_store.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::daemon {
namespace {

namespace fs = std::filesystem;
using ::google::protobuf::util::MessageDifferencer;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

using ::sarena::testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
}

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

v1::Endpoint MakeEndpoint(const std::string& id, const std::string& ifname, const std::string& ip) {
  v1::Endpoint ep;
  ep.mutable_ref()->set_container_id(id);
  ep.mutable_ref()->set_ifname(ifname);
  ep.set_netns("/var/run/netns/" + id);
  ep.set_ip(ip);
  ep.set_prefix_len(32);
  ep.set_gateway("10.244.1.1");
  ep.set_pod_mac("aa:bb:cc:dd:ee:01");
  ep.set_host_ifname("lxc0123456789a");
  ep.set_host_ifindex(42);
  ep.set_host_mac("aa:bb:cc:dd:ee:02");
  ep.set_endpoint_id(7);
  ep.set_mtu(1500);
  ep.set_pod_namespace("default");
  ep.set_pod_name("web-" + id);
  return ep;
}

class DaemonEndpointStoreTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<EndpointStore>> Open() {
    return EndpointStore::Open({.state_dir = dir_.path()});
  }
  std::string Dir() const { return dir_.path() + "/endpoints"; }
  TempDir dir_{"sarena-store-"};
};

TEST_F(DaemonEndpointStoreTest, PutGetListDelete) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  v1::Endpoint a = MakeEndpoint("ctr-a", "eth0", "10.244.1.2");
  v1::Endpoint b = MakeEndpoint("ctr-b", "eth0", "10.244.1.3");
  ASSERT_OK(store->Put(b));
  ASSERT_OK(store->Put(a));
  EXPECT_EQ(store->size(), 2u);
  auto got = store->Get(EndpointKey{"ctr-a", "eth0"});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(*got, a));
  EXPECT_FALSE(store->Get(EndpointKey{"ctr-a", "eth1"}).has_value());

  std::vector<v1::Endpoint> list = store->List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].ref().container_id(), "ctr-a");  // ordered by key
  EXPECT_EQ(list[1].ref().container_id(), "ctr-b");
  EXPECT_EQ(FilesIn(Dir()), (std::set<std::string>{"lock", "ctr-a:eth0.json", "ctr-b:eth0.json"}));

  auto deleted = store->Delete(EndpointKey{"ctr-a", "eth0"});
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  auto again = store->Delete(EndpointKey{"ctr-a", "eth0"});
  ASSERT_OK(again);
  EXPECT_FALSE(*again);  // idempotent
  EXPECT_FALSE(store->Get(EndpointKey{"ctr-a", "eth0"}).has_value());
  EXPECT_EQ(FilesIn(Dir()), (std::set<std::string>{"lock", "ctr-b:eth0.json"}));
}

TEST_F(DaemonEndpointStoreTest, RecordsSurviveReopenAndCountersAreNotPersisted) {
  v1::Endpoint a = MakeEndpoint("ctr-a", "eth0", "10.244.1.2");
  {
    auto store = Open();
    ASSERT_OK(store);
    v1::Endpoint with_counters = a;
    with_counters.mutable_counters()->set_rx_packets(99);
    ASSERT_OK((*store)->Put(with_counters));
    EXPECT_FALSE((*store)->Get(EndpointKey{"ctr-a", "eth0"})->has_counters());
  }
  const std::string json = ReadFile(Dir() + "/ctr-a:eth0.json");
  EXPECT_THAT(json, HasSubstr("\"host_ifname\": \"lxc0123456789a\""));  // proto field names
  EXPECT_THAT(json, ::testing::Not(HasSubstr("counters")));

  ASSERT_OK_AND_ASSIGN(auto store, Open());
  auto got = store->Get(EndpointKey{"ctr-a", "eth0"});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(*got, a)) << got->DebugString();
}

TEST_F(DaemonEndpointStoreTest, PutReplacesAtomicallyAndLeavesNoTemporaries) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Put(MakeEndpoint("ctr-a", "eth0", "10.244.1.2")));
  const std::string path = Dir() + "/ctr-a:eth0.json";
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const ino_t before = st.st_ino;
  ASSERT_OK(store->Put(MakeEndpoint("ctr-a", "eth0", "10.244.1.9")));
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_NE(st.st_ino, before);  // a new inode renamed over the old one, never rewritten in place
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(FilesIn(Dir()), (std::set<std::string>{"lock", "ctr-a:eth0.json"}));
  EXPECT_THAT(ReadFile(path), HasSubstr("10.244.1.9"));
}

TEST_F(DaemonEndpointStoreTest, FailedPutLeavesNeitherRecordNorTemporary) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  // Make the rename target impossible to replace: a non-empty directory of the same name.
  ASSERT_TRUE(fs::create_directories(Dir() + "/ctr-x:eth0.json/blocker"));
  absl::Status st = store->Put(MakeEndpoint("ctr-x", "eth0", "10.244.1.4"));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("ctr-x:eth0.json"));
  EXPECT_FALSE(store->Get(EndpointKey{"ctr-x", "eth0"}).has_value());
  for (const std::string& f : FilesIn(Dir())) EXPECT_THAT(f, ::testing::Not(HasSubstr(".tmp-")));
}

TEST_F(DaemonEndpointStoreTest, InterruptedWriteLeftoverIsRemovedAndTheOldRecordKept) {
  {
    auto store = Open();
    ASSERT_OK(store);
    ASSERT_OK((*store)->Put(MakeEndpoint("ctr-a", "eth0", "10.244.1.2")));
  }
  // What a crash between write and rename leaves: a torn temporary beside the intact record.
  WriteFile(Dir() + "/.tmp-ctr-a:eth0.json.777.3", "{\"ref\": {\"container_id\": \"ctr");
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_EQ(store->Get(EndpointKey{"ctr-a", "eth0"})->ip(), "10.244.1.2");
  EXPECT_EQ(FilesIn(Dir()), (std::set<std::string>{"lock", "ctr-a:eth0.json"}));
}

TEST_F(DaemonEndpointStoreTest, KeysThatAnUnderscoreSeparatorWouldConfuseStayApart) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Put(MakeEndpoint("a_b", "c", "10.244.1.2")));
  ASSERT_OK(store->Put(MakeEndpoint("a", "b_c", "10.244.1.3")));
  EXPECT_EQ(store->Get(EndpointKey{"a_b", "c"})->ip(), "10.244.1.2");
  EXPECT_EQ(store->Get(EndpointKey{"a", "b_c"})->ip(), "10.244.1.3");
}

TEST_F(DaemonEndpointStoreTest, InvalidRefsAreRejected) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  v1::Endpoint no_ref;
  EXPECT_THAT(store->Put(no_ref), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(store->Put(MakeEndpoint("../../etc", "eth0", "1.2.3.4")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Put(MakeEndpoint("abc", "a/b", "1.2.3.4")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Delete(EndpointKey{"abc", ".."}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FilesIn(Dir()), (std::set<std::string>{"lock"}));
}

TEST_F(DaemonEndpointStoreTest, SecondOpenIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto first, Open());
  auto second = Open();
  EXPECT_THAT(second, StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(DaemonEndpointStoreTest, ConcurrentPutsAndDeletes) {
  auto opened = Open();
  ASSERT_OK(opened);
  EndpointStore* store = opened->get();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([store, t] {
      for (int i = 0; i < 10; ++i) {
        std::string id = absl::StrCat("c", t, "-", i);
        EXPECT_OK(store->Put(MakeEndpoint(id, "eth0", absl::StrCat("10.0.", t, ".", i))));
        if (i % 2 == 1) EXPECT_TRUE(*store->Delete(EndpointKey{id, "eth0"}));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store->size(), 40u);
  opened->reset();
  ASSERT_OK_AND_ASSIGN(auto reopened, Open());
  EXPECT_EQ(reopened->size(), 40u);
  EXPECT_EQ(reopened->Get(EndpointKey{"c3-4", "eth0"})->ip(), "10.0.3.4");
}

struct CorruptCase {
  const char* name;
  const char* file;
  const char* content;
  const char* expect;
};
void PrintTo(const CorruptCase& c, std::ostream* os) { *os << c.name; }


class DaemonEndpointStoreCorruptTest : public DaemonEndpointStoreTest,
                                       public ::testing::WithParamInterface<CorruptCase> {};

TEST_P(DaemonEndpointStoreCorruptTest, IsReportedWithFileAndContentAndLeftUntouched) {
  const CorruptCase& c = GetParam();
  {
    auto store = Open();
    ASSERT_OK(store);
    ASSERT_OK((*store)->Put(MakeEndpoint("good", "eth0", "10.244.1.2")));
  }
  const std::string path = Dir() + "/" + c.file;
  WriteFile(path, c.content);
  auto store = Open();
  ASSERT_THAT(store, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr(c.expect));
  EXPECT_THAT(store.status().message(), HasSubstr("1 corrupt record"));
  EXPECT_EQ(ReadFile(path), c.content);  // never deleted or reset
  EXPECT_TRUE(fs::exists(Dir() + "/good:eth0.json"));
}

// Issue 10: a CNI_CONTAINERID over ~245 bytes made the record's file name exceed NAME_MAX, so
// ADD's record write and every later DEL failed forever.
TEST_F(DaemonEndpointStoreTest, LongContainerIdIsStoredUnderAHashedNameAndReloads) {
  const std::string long_id = "c" + std::string(299, 'x');
  {
    auto store = Open();
    ASSERT_OK(store);
    ASSERT_OK((*store)->Put(MakeEndpoint(long_id, "eth0", "10.244.1.9")));
    ASSERT_OK((*store)->Put(MakeEndpoint("short", "eth0", "10.244.1.8")));
  }
  const std::string name = EndpointStore::FileName(EndpointKey{long_id, "eth0"});
  EXPECT_LE(name.size(), 255u);
  EXPECT_EQ(name.rfind("sha256-", 0), 0u) << name;
  EXPECT_TRUE(fs::exists(Dir() + "/" + name));
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_TRUE(store->Get(EndpointKey{long_id, "eth0"}).has_value());
  EXPECT_EQ(store->Get(EndpointKey{long_id, "eth0"})->ip(), "10.244.1.9");
  auto deleted = store->Delete(EndpointKey{long_id, "eth0"});
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  EXPECT_FALSE(fs::exists(Dir() + "/" + name));
}

TEST_F(DaemonEndpointStoreTest, HashedNameWhoseRecordIsAnotherKeyIsCorrupt) {
  const std::string long_id = "c" + std::string(299, 'x');
  {
    auto store = Open();
    ASSERT_OK(store);
    ASSERT_OK((*store)->Put(MakeEndpoint(long_id, "eth0", "10.244.1.9")));
  }
  const std::string path = Dir() + "/" + EndpointStore::FileName(EndpointKey{long_id, "eth0"});
  std::string content = ReadFile(path);
  content.replace(content.find("\"eth0\""), 6, "\"eth1\"");
  WriteFile(path, content);
  auto store = Open();
  ASSERT_THAT(store, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr("does not match the file name"));
}

// Issue 10: a record with a bad address or MAC loaded fine and was refused only in the middle
// of the daemon's reconcile, without its file named. Now Open refuses it, naming file and field.
struct BadFieldCase {
  const char* name;
  const char* field;
  const char* bad_json_value;
};
void PrintTo(const BadFieldCase& c, std::ostream* os) { *os << c.name; }

class DaemonEndpointStoreBadFieldTest : public DaemonEndpointStoreTest,
                                        public ::testing::WithParamInterface<BadFieldCase> {};

TEST_P(DaemonEndpointStoreBadFieldTest, IsRefusedAtOpenNamingFileAndField) {
  const BadFieldCase& c = GetParam();
  v1::Endpoint ep = MakeEndpoint("ctr-a", "eth0", "10.244.1.2");
  google::protobuf::util::JsonPrintOptions po;
  po.preserve_proto_field_names = true;
  po.always_print_primitive_fields = true;
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(ep, &json, po).ok());
  const std::string key = absl::StrCat("\"", c.field, "\":");
  const size_t at = json.find(key);
  ASSERT_NE(at, std::string::npos) << json;
  const size_t value_start = at + key.size();
  const size_t value_end = json.find_first_of(",}", value_start);
  json.replace(value_start, value_end - value_start, c.bad_json_value);
  ::mkdir(Dir().c_str(), 0700);
  const std::string path = Dir() + "/ctr-a:eth0.json";
  WriteFile(path, json);
  auto store = Open();
  ASSERT_FALSE(store.ok()) << json;
  EXPECT_THAT(store, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr(absl::StrCat("invalid ", c.field)));
  EXPECT_EQ(ReadFile(path), json);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, DaemonEndpointStoreBadFieldTest,
    ::testing::Values(BadFieldCase{"Ip", "ip", "\"10.244.1\""},
                      BadFieldCase{"PrefixLen", "prefix_len", "24"},
                      BadFieldCase{"Gateway", "gateway", "\"\""},
                      BadFieldCase{"PodMac", "pod_mac", "\"zz:bb\""},
                      BadFieldCase{"HostIfname", "host_ifname", "\"lxc-much-too-long-name\""},
                      BadFieldCase{"EndpointId", "endpoint_id", "0"},
                      BadFieldCase{"Mtu", "mtu", "70000"}),
    [](const ::testing::TestParamInfo<BadFieldCase>& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Cases, DaemonEndpointStoreCorruptTest,
    ::testing::Values(
        CorruptCase{"Truncated", "ctr-a:eth0.json", "{\"ref\": {\"container_id\": \"ctr",
                    "has content \"{\\\"ref\\\": {\\\"container_id\\\": \\\"ctr\""},
        CorruptCase{"Empty", "ctr-a:eth0.json", "", "not an Endpoint in JSON"},
        CorruptCase{"WrongType", "ctr-a:eth0.json", "{\"mtu\": \"big\"}",
                    "not an Endpoint in JSON"},
        CorruptCase{"RefMismatch", "ctr-a:eth0.json",
                    "{\"ref\": {\"container_id\": \"ctr-b\", \"ifname\": \"eth0\"}}",
                    "its ref 'ctr-b/eth0' does not match the file name"},
        CorruptCase{"BadName", "notes.txt", "hello", "name does not end in .json"},
        CorruptCase{"NoSeparator", "ctr-a.json", "{}", "not <containerID>:<ifname>.json"}),
    [](const ::testing::TestParamInfo<CorruptCase>& info) { return info.param.name; });

}  // namespace
}  // namespace sarena::daemon
