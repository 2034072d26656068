// sarena::cluster::EtcdClient against a real etcd 3.4 (tests/cluster/etcd_fixture.h).
#include "libsarena/cluster/etcd_client.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <thread>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster/etcd_fixture.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::cluster {
namespace {

using sarena::testing::EtcdProcess;
using ::sarena::testing::StatusIs;

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.Start());
    auto c = EtcdClient::Create(etcd_.endpoint());
    ASSERT_OK(c);
    client_ = std::move(*c);
  }
  EtcdProcess etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST(EndpointTest, ParsesUnixAndHttpAndRejectsTheRest) {
  auto eps = ParseEndpoints("unix:///tmp/d/etcd.sock:2379, http://127.0.0.1:2379");
  ASSERT_OK(eps);
  ASSERT_EQ(eps->size(), 2u);
  EXPECT_EQ((*eps)[0].kind, Endpoint::Kind::kUnix);
  EXPECT_EQ((*eps)[0].path, "/tmp/d/etcd.sock:2379");
  EXPECT_EQ((*eps)[1].kind, Endpoint::Kind::kTcp);
  EXPECT_EQ((*eps)[1].host, "127.0.0.1");
  EXPECT_EQ((*eps)[1].port, 2379);
  for (const char* bad : {"", "unix://relative.sock", "https://h:1", "http://h", "http://h:0",
                          "http://h:99999", "tcp://h:1", "http://h:+2379", "http://h:02379",
                          // An empty element is a typo, never skipped: a trailing comma once
                          // dialled the one endpoint before it.
                          "http://h:2379,", ",http://h:2379", "http://h:1,,http://h:2", " , "}) {
    auto r = ParseEndpoints(bad);
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
  EXPECT_EQ(ParseEndpoints("http://h:2379,").status().message(),
            "invalid etcd endpoints 'http://h:2379,': endpoint 2 is empty");
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixRangeEnd("a\xff"), "b");
}

TEST_F(EtcdClientTest, PutRangeDeleteAndPrefix) {
  auto p1 = client_->Put("/t/a", "1");
  ASSERT_OK(p1);
  ASSERT_OK(client_->Put("/t/b", std::string("\0\xff bin", 6)));
  ASSERT_OK(client_->Put("/u/c", "3"));
  auto r = client_->RangePrefix("/t/");
  ASSERT_OK(r);
  ASSERT_EQ(r->kvs_size(), 2);
  EXPECT_EQ(r->kvs(0).key(), "/t/a");
  EXPECT_EQ(r->kvs(0).value(), "1");
  EXPECT_EQ(r->kvs(1).value(), std::string("\0\xff bin", 6));  // base64 round trip
  EXPECT_GT(r->header().revision(), p1->header().revision());
  // Range at an older revision sees the older state.
  auto old = client_->Range("/t/", PrefixRangeEnd("/t/"), p1->header().revision());
  ASSERT_OK(old);
  EXPECT_EQ(old->kvs_size(), 1);
  auto limited = client_->Range("/", PrefixRangeEnd("/"), 0, 1);
  ASSERT_OK(limited);
  EXPECT_EQ(limited->kvs_size(), 1);
  EXPECT_TRUE(limited->more());
  auto d = client_->DeleteRange("/t/", PrefixRangeEnd("/t/"));
  ASSERT_OK(d);
  EXPECT_EQ(d->deleted(), 2);
  auto none = client_->Range("/t/a");
  ASSERT_OK(none);
  EXPECT_EQ(none->kvs_size(), 0);
}

TEST_F(EtcdClientTest, TxnPutIfAbsentAndModRevision) {
  etcd::KeyValue existing;
  auto first = client_->PutIfAbsent("/claim", "alice", 0, &existing);
  ASSERT_OK(first);
  EXPECT_TRUE(*first);
  auto second = client_->PutIfAbsent("/claim", "bob", 0, &existing);
  ASSERT_OK(second);
  EXPECT_FALSE(*second);
  EXPECT_EQ(existing.value(), "alice");
  int64_t rev = existing.mod_revision();
  ASSERT_GT(rev, 0);
  auto stale = client_->PutIfModRevision("/claim", "carol", rev - 1);
  ASSERT_OK(stale);
  EXPECT_FALSE(*stale);
  auto ok = client_->PutIfModRevision("/claim", "dave", rev);
  ASSERT_OK(ok);
  EXPECT_TRUE(*ok);
  auto r = client_->Range("/claim");
  ASSERT_OK(r);
  EXPECT_EQ(r->kvs(0).value(), "dave");
  auto del_stale = client_->DeleteIfModRevision("/claim", rev);
  ASSERT_OK(del_stale);
  EXPECT_FALSE(*del_stale);
  auto del = client_->DeleteIfModRevision("/claim", r->kvs(0).mod_revision());
  ASSERT_OK(del);
  EXPECT_TRUE(*del);
}

TEST_F(EtcdClientTest, LeaseKeepsKeyAliveAndExpiryDeletesIt) {
  auto lease = client_->LeaseGrant(absl::Seconds(2));
  ASSERT_OK(lease);
  ASSERT_OK(client_->Put("/leased", "x", lease->id()));
  for (int i = 0; i < 6; ++i) {  // 3 s of keepalives at 0.5 s: longer than the TTL
    absl::SleepFor(absl::Milliseconds(500));
    auto ttl = client_->LeaseKeepAlive(lease->id());
    ASSERT_OK(ttl);
    EXPECT_GE(*ttl, absl::Seconds(1));
  }
  EXPECT_EQ(client_->Range("/leased")->kvs_size(), 1);
  EXPECT_EQ(client_->Range("/leased")->kvs(0).lease(), lease->id());
  // No more keepalives: etcd expires the lease and deletes the key.
  absl::Time deadline = absl::Now() + absl::Seconds(8);
  while (absl::Now() < deadline && client_->Range("/leased")->kvs_size() == 1) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(client_->Range("/leased")->kvs_size(), 0);
  EXPECT_THAT(client_->LeaseKeepAlive(lease->id()), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client_->LeaseTimeToLive(lease->id()), StatusIs(absl::StatusCode::kNotFound));
  // etcd's own error JSON maps onto the gRPC code: a put on a missing lease is NotFound.
  auto put = client_->Put("/leased", "y", lease->id());
  EXPECT_THAT(put, StatusIs(absl::StatusCode::kNotFound));
  // Revoke deletes the keys at once.
  auto l2 = client_->LeaseGrant(absl::Seconds(30));
  ASSERT_OK(l2);
  ASSERT_OK(client_->Put("/leased2", "z", l2->id()));
  ASSERT_OK(client_->LeaseRevoke(l2->id()));
  EXPECT_EQ(client_->Range("/leased2")->kvs_size(), 0);
}

TEST_F(EtcdClientTest, WatchFromRevisionDeliversHistoryThenLiveEvents) {
  auto a = client_->Put("/w/a", "1");
  ASSERT_OK(a);
  auto b = client_->Put("/w/b", "2");
  ASSERT_OK(b);
  ASSERT_OK(client_->Put("/other", "x"));
  auto w = client_->OpenWatch("/w/", PrefixRangeEnd("/w/"), b->header().revision());
  ASSERT_OK(w);
  std::vector<etcd::Event> got;
  int64_t rev = 0;
  auto collect = [&](size_t want) {
    absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (got.size() < want && absl::Now() < deadline) {
      auto batch = (*w)->Next(absl::Milliseconds(500));
      if (batch.status().code() == absl::StatusCode::kDeadlineExceeded) continue;
      ASSERT_OK(batch);
      rev = batch->revision;
      got.insert(got.end(), batch->events.begin(), batch->events.end());
    }
  };
  collect(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kv().key(), "/w/b");  // from the start revision: /w/a is older
  EXPECT_EQ(got[0].type(), etcd::Event::PUT);
  // Nothing more yet: Next times out and the watch stays usable.
  auto idle = (*w)->Next(absl::Milliseconds(200));
  EXPECT_THAT(idle, StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_OK(client_->DeleteRange("/w/a"));
  ASSERT_OK(client_->Put("/w/c", "3"));
  collect(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].type(), etcd::Event::DELETE);
  EXPECT_EQ(got[1].kv().key(), "/w/a");
  EXPECT_EQ(got[2].kv().key(), "/w/c");
  EXPECT_EQ(got[2].kv().value(), "3");
  EXPECT_EQ(rev, got[2].kv().mod_revision());
}

TEST_F(EtcdClientTest, OneWatchMessageLargerThanManyReadsIsReassembled) {
  ASSERT_OK_AND_ASSIGN(auto w, client_->OpenWatch("/big/", PrefixRangeEnd("/big/"), 0));
  // One transaction of 120 puts of 2 KiB: one revision, so one watch message of ~330 KB of JSON,
  // several times the client's 64 KiB read buffer.
  etcd::TxnRequest txn;
  for (int i = 0; i < 120; ++i) {
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(absl::StrCat("/big/", i));
    put->set_value(std::string(2048, static_cast<char>('a' + i % 26)));
  }
  auto t = client_->Txn(txn);
  ASSERT_OK(t);
  size_t events = 0;
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (events < 120 && absl::Now() < deadline) {
    auto b = w->Next(absl::Seconds(1));
    if (b.status().code() == absl::StatusCode::kDeadlineExceeded) continue;
    ASSERT_OK(b);
    EXPECT_EQ(b->revision, t->header().revision());
    for (const auto& ev : b->events) {
      EXPECT_EQ(ev.kv().value().size(), 2048u);
      ++events;
    }
  }
  EXPECT_EQ(events, 120u);
  auto list = client_->RangePrefix("/big/");
  ASSERT_OK(list);
  EXPECT_EQ(list->kvs_size(), 120);
}

TEST_F(EtcdClientTest, CompactedRevisionIsOutOfRangeWithTheCompactRevision) {
  auto p1 = client_->Put("/c/k", "1");
  ASSERT_OK(p1);
  ASSERT_OK(client_->Put("/c/k", "2"));
  auto p3 = client_->Put("/c/k", "3");
  ASSERT_OK(p3);
  ASSERT_OK(client_->Compact(p3->header().revision()));
  auto r = client_->Range("/c/k", {}, p1->header().revision());
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(client_->Compact(p1->header().revision()), StatusIs(absl::StatusCode::kOutOfRange));
  absl::Status st;
  auto w = client_->OpenWatch("/c/", PrefixRangeEnd("/c/"), p1->header().revision());
  if (!w.ok()) {
    st = w.status();
  } else {
    st = (*w)->Next(absl::Seconds(5)).status();
  }
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_EQ(CompactRevisionOf(st), p3->header().revision());
}

TEST_F(EtcdClientTest, EtcdRestartIsUnavailableThenTheSameClientReconnects) {
  ASSERT_OK(client_->Put("/r/k", "before"));
  ASSERT_OK_AND_ASSIGN(auto w, client_->OpenWatch("/r/", PrefixRangeEnd("/r/"), 0));
  etcd_.Stop();
  auto r = client_->Range("/r/k");
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kUnavailable));
  auto n = w->Next(absl::Seconds(2));
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_TRUE(etcd_.Start());
  auto again = client_->Range("/r/k");
  ASSERT_OK(again);
  ASSERT_EQ(again->kvs_size(), 1);  // same data dir: the data survived
  EXPECT_EQ(again->kvs(0).value(), "before");
}

// http://host:port endpoints: etcd also listens on 127.0.0.1:2379 inside a private network
// namespace; the client runs in a thread that joined that namespace (setns is per thread).
TEST(EtcdClientTcpTest, HttpEndpointsWorkForUnaryCallsAndWatches) {
  ASSERT_TRUE(sarena::testing::IsRoot()) << "needs root for a network namespace (CI is root)";
  sarena::testing::ScopedNetns ns("etcdtcp");
  sarena::testing::RunOk(ns.Exec("ip link set lo up"));
  EtcdProcess etcd(ns.path(), "http://127.0.0.1:2379");
  ASSERT_TRUE(etcd.Start());
  std::vector<std::string> failures;
  std::thread t([&] {
    int fd = open(ns.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      failures.push_back("setns failed");
      return;
    }
    close(fd);
    for (const char* ep : {"http://127.0.0.1:2379", "http://localhost:2379/"}) {
      auto c = EtcdClient::Create(ep);
      if (!c.ok()) {
        failures.push_back(std::string(c.status().message()));
        continue;
      }
      auto put = (*c)->Put("/tcp/k", ep);
      if (!put.ok()) failures.push_back(absl::StrCat(ep, " put: ", put.status().message()));
      auto r = (*c)->Range("/tcp/k");
      if (!r.ok() || r->kvs_size() != 1 || r->kvs(0).value() != ep) {
        failures.push_back(absl::StrCat(ep, " range: ", r.status().message()));
      }
      auto w = (*c)->OpenWatch("/tcp/", PrefixRangeEnd("/tcp/"), put.ok() ? put->header().revision() : 0);
      if (!w.ok()) {
        failures.push_back(absl::StrCat(ep, " watch: ", w.status().message()));
        continue;
      }
      auto b = (*w)->Next(absl::Seconds(5));
      if (!b.ok() || b->events.size() != 1) {
        failures.push_back(absl::StrCat(ep, " watch next: ", b.status().message()));
      }
    }
    auto closed = EtcdClient::Create("http://127.0.0.1:2380");  // nothing listens there
    if ((*closed)->Range("/k").status().code() != absl::StatusCode::kUnavailable) {
      failures.push_back("a closed port is not kUnavailable");
    }
  });
  t.join();
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
}

TEST(EtcdClientDeadlineTest, AServerThatNeverAnswersIsDeadlineExceeded) {
  // A listening unix socket that never accepts: connect succeeds (backlog), no answer comes.
  std::string path = absl::StrCat("/tmp/sarena-mute-", getpid(), ".sock");
  unlink(path.c_str());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  ASSERT_OK_AND_ASSIGN(auto c, EtcdClient::Create("unix://" + path));
  absl::Time start = absl::Now();
  auto r = c->Range("/k", {}, 0, 0, absl::Milliseconds(300));
  absl::Duration took = absl::Now() - start;
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_LT(took, absl::Seconds(2));
  ASSERT_OK_AND_ASSIGN(auto missing, EtcdClient::Create("unix:///nonexistent/dir/etcd.sock:2379"));
  EXPECT_THAT(missing->Range("/k"), StatusIs(absl::StatusCode::kUnavailable));
  close(fd);
  unlink(path.c_str());
}

}  // namespace
}  // namespace sarena::cluster
