// sarena::cluster::Agent, ListNodes and DeleteNode against a real etcd 3.4 started per test
// (tests/cluster/etcd_fixture.h). Short leases (2 s, etcd's minimum) and grace periods keep the
// tier fast; the timing assertions have wide margins.
#include "libsarena/cluster/agent.h"

#include <atomic>
#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "libsarena/base/log.h"
#include "libsarena/cluster/etcd_client.h"
#include "tests/cluster/etcd_fixture.h"
#include "tests/lib/status_matchers.h"

namespace sarena::cluster {
namespace {

using sarena::testing::EtcdProcess;
using ::sarena::testing::StatusIs;

/// Captures every log message of the process (the library reports through the log sink).
class LogCapture {
 public:
  LogCapture() {
    SetLogSink([this](LogLevel, absl::string_view m) {
      absl::MutexLock l(&mu_);
      lines_.emplace_back(m);
    });
  }
  ~LogCapture() { SetLogSink(nullptr); }
  bool Contains(absl::string_view needle) const {
    absl::MutexLock l(&mu_);
    for (const auto& s : lines_) {
      if (absl::StrContains(s, needle)) return true;
    }
    return false;
  }
  std::string All() const {
    absl::MutexLock l(&mu_);
    std::string out;
    for (const auto& s : lines_) absl::StrAppend(&out, s, "\n");
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_;
};

/// Records every table the agent applies.
class Applied {
 public:
  Agent::ApplyFn Fn() {
    return [this](const PeerTable& t) {
      absl::MutexLock l(&mu_);
      tables_.push_back(t);
      return fail_ ? absl::UnavailableError("test: apply refused") : absl::OkStatus();
    };
  }
  void SetFail(bool f) {
    absl::MutexLock l(&mu_);
    fail_ = f;
  }
  std::vector<PeerTable> tables() const {
    absl::MutexLock l(&mu_);
    return tables_;
  }
  size_t count() const {
    absl::MutexLock l(&mu_);
    return tables_.size();
  }
  /// Waits until the latest applied table satisfies `pred`.
  bool WaitFor(const std::function<bool(const PeerTable&)>& pred,
               absl::Duration timeout = absl::Seconds(10)) const {
    absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      {
        absl::MutexLock l(&mu_);
        if (!tables_.empty() && pred(tables_.back())) return true;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<PeerTable> tables_;
  bool fail_ = false;
};

bool Has(const PeerTable& t, const std::string& name) { return t.peers.count(name) > 0; }

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.Start());
    auto c = EtcdClient::Create(etcd_.endpoint());
    ASSERT_OK(c);
    client_ = std::move(*c);
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "--- library log ---\n%s", log_.All().c_str());
  }
  AgentOptions Options(const std::string& name, const std::string& underlay) {
    AgentOptions o;
    o.endpoints = etcd_.endpoint();
    o.node_name = name;
    o.cluster_cidr = *net::ParseIpv4Prefix("10.244.0.0/16");
    o.node_mask_len = 24;
    o.underlay = *net::ParseIpv4(underlay);
    o.tunnel_port = 8472;
    o.mtu = 1500;
    o.routing_mode = "tunnel";
    o.lease_ttl = absl::Seconds(2);
    o.peer_grace = absl::Seconds(3);
    o.boot_id = "boot-" + name;
    o.max_retry_backoff = absl::Milliseconds(500);
    return o;
  }
  std::unique_ptr<Agent> Make(AgentOptions o, Applied* applied) {
    auto a = Agent::Create(std::move(o), applied->Fn());
    EXPECT_OK(a);
    return a.ok() ? std::move(*a) : nullptr;
  }
  /// Writes a node record straight into etcd (no lease), as a simulated peer.
  void PutRecord(const std::string& name, uint32_t id, const std::string& addr,
                 const std::string& cidr) {
    v1::NodeRecord r;
    r.set_name(name);
    r.set_node_id(id);
    auto* a = r.add_addresses();
    a->set_family(v1::IPV4);
    a->set_address(addr);
    auto* c = r.add_pod_cidrs();
    c->set_family(v1::IPV4);
    c->set_cidr(cidr);
    r.set_tunnel_port(8472);
    r.set_mtu(1500);
    r.set_routing_mode("tunnel");
    ASSERT_OK(client_->Put(NodeKey(name), RecordToJson(r)));
  }

  LogCapture log_;
  EtcdProcess etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(AgentTest, RegisterClaimsCidrAndIdWritesALeasedRecordAndReusesClaimsAfterRestart) {
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  auto reg = a->Register(absl::Seconds(10));
  ASSERT_OK(reg);
  EXPECT_EQ(reg->pod_cidr.to_string(), "10.244.0.0/24");
  EXPECT_EQ(reg->node_id, 1u);
  auto rec = client_->Range(NodeKey("node-a"));
  ASSERT_OK(rec);
  ASSERT_EQ(rec->kvs_size(), 1);
  EXPECT_NE(rec->kvs(0).lease(), 0);
  auto peer = ParseNodeRecord(rec->kvs(0).key(), rec->kvs(0).value());
  ASSERT_OK(peer);
  EXPECT_EQ(peer->underlay.to_string(), "192.0.2.1");
  ASSERT_EQ(peer->pod_cidrs.size(), 1u);
  EXPECT_EQ(peer->pod_cidrs[0].to_string(), "10.244.0.0/24");
  auto cfg = client_->Range(kConfigKey);
  ASSERT_EQ(cfg->kvs_size(), 1);
  EXPECT_TRUE(absl::StrContains(cfg->kvs(0).value(), "10.244.0.0/16"));

  Applied applied_b;
  auto b = Make(Options("node-b", "192.0.2.2"), &applied_b);
  auto reg_b = b->Register(absl::Seconds(10));
  ASSERT_OK(reg_b);
  EXPECT_EQ(reg_b->pod_cidr.to_string(), "10.244.1.0/24");
  EXPECT_EQ(reg_b->node_id, 2u);

  // A restart (new agent, new boot) of node-a gets the same claims back.
  a.reset();
  auto opts = Options("node-a", "192.0.2.1");
  opts.boot_id = "boot-2";
  auto a2 = Make(opts, &applied);
  auto reg2 = a2->Register(absl::Seconds(10));
  ASSERT_OK(reg2);
  EXPECT_EQ(reg2->pod_cidr, reg->pod_cidr);
  EXPECT_EQ(reg2->node_id, reg->node_id);

  // A different cluster CIDR than the stored config is refused.
  auto wrong = Options("node-c", "192.0.2.3");
  wrong.cluster_cidr = *net::ParseIpv4Prefix("10.99.0.0/16");
  auto c = Make(wrong, &applied);
  auto reg_c = c->Register(absl::Seconds(5));
  EXPECT_THAT(reg_c, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(absl::StrContains(reg_c.status().message(), "10.99.0.0/16"));
}

TEST_F(AgentTest, ClaimRaceNeverGivesOneCidrToTwoNodesAndExhaustionIsNamed) {
  // A /23 cluster CIDR holds two /24 pod CIDRs; four nodes race for them.
  std::vector<std::unique_ptr<Agent>> agents;
  Applied applied;
  for (int i = 0; i < 4; ++i) {
    auto o = Options(absl::StrCat("race-", i), absl::StrCat("192.0.2.", 10 + i));
    o.cluster_cidr = *net::ParseIpv4Prefix("10.250.0.0/23");
    agents.push_back(Make(o, &applied));
  }
  std::vector<absl::StatusOr<Registration>> results(4, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[i] = agents[i]->Register(absl::Seconds(10)); });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> won;
  int exhausted = 0;
  for (const auto& r : results) {
    if (r.ok()) {
      EXPECT_TRUE(won.insert(r->pod_cidr.to_string()).second) << "two nodes got "
                                                              << r->pod_cidr.to_string();
    } else {
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted));
      EXPECT_TRUE(absl::StrContains(r.status().message(), "10.250.0.0/23")) << r.status();
      ++exhausted;
    }
  }
  EXPECT_EQ(won.size(), 2u);
  EXPECT_EQ(exhausted, 2);
  auto claims = client_->RangePrefix(kPodCidrsPrefix);
  ASSERT_OK(claims);
  EXPECT_EQ(claims->kvs_size(), 2);

  // An explicitly given pod CIDR that another node owns is kAlreadyExists naming the owner.
  auto o = Options("late", "192.0.2.99");
  o.cluster_cidr.reset();
  o.pod_cidr = *net::ParseIpv4Prefix("10.250.0.0/24");
  auto late = Make(o, &applied);
  auto r = late->Register(absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_TRUE(absl::StrContains(r.status().message(), "race-")) << r.status();
}

TEST_F(AgentTest, RegisterRetriesWithBackoffWhileEtcdIsDown) {
  etcd_.Stop();
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  absl::StatusOr<Registration> reg = absl::UnknownError("not run");
  std::thread t([&] { reg = a->Register(absl::Seconds(15)); });
  absl::SleepFor(absl::Milliseconds(1500));
  EXPECT_FALSE(a->status().connected);
  ASSERT_TRUE(etcd_.Start());
  t.join();
  ASSERT_OK(reg);
  EXPECT_TRUE(log_.Contains("unreachable (attempt 2)")) << log_.All();
  EXPECT_TRUE(a->status().registered);
}

TEST_F(AgentTest, ListThenWatchDeliversPeersAndSyncs) {
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  ASSERT_OK(a->Register(absl::Seconds(10)));
  PutRecord("sim-1", 100, "198.51.100.1", "10.244.100.0/24");  // before the list
  a->Start();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "sim-1"); }));
  EXPECT_TRUE(a->status().synced);
  EXPECT_FALSE(Has(applied.tables().back(), "node-a"));  // never itself
  Applied applied_b;
  auto b = Make(Options("node-b", "192.0.2.2"), &applied_b);
  auto reg_b = b->Register(absl::Seconds(10));
  ASSERT_OK(reg_b);
  b->Start();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "node-b"); }));
  const PeerNode pb = applied.tables().back().peers.at("node-b");
  EXPECT_EQ(pb.underlay.to_string(), "192.0.2.2");
  ASSERT_EQ(pb.pod_cidrs.size(), 1u);
  EXPECT_EQ(pb.pod_cidrs[0], reg_b->pod_cidr);
  EXPECT_EQ(pb.node_id, reg_b->node_id);
  EXPECT_EQ(pb.tunnel_port, 8472);
  EXPECT_FALSE(pb.lost);
  AgentStatus st = a->status();
  EXPECT_TRUE(st.connected);
  EXPECT_TRUE(st.registered);
  EXPECT_EQ(st.peers.peers.size(), 2u);
  EXPECT_GT(st.revision, 0);
  // Both agents keep their leases alive well past the TTL.
  absl::SleepFor(absl::Seconds(3));
  EXPECT_EQ(client_->Range(NodeKey("node-a"))->kvs_size(), 1);
  EXPECT_EQ(client_->Range(NodeKey("node-b"))->kvs_size(), 1);
}

TEST_F(AgentTest, CorruptRecordsAreSkippedWithTheKeyLoggedAndWithdrawNothing) {
  Applied applied;
  PutRecord("good", 7, "198.51.100.7", "10.244.7.0/24");
  ASSERT_TRUE(client_->Put(NodeKey("bad-json"), "{not json").ok());
  ASSERT_TRUE(client_->Put(NodeKey("bad-family"),
                           R"({"name":"bad-family","node_id":9,"addresses":[{"family":"IPV4",)"
                           R"("address":"2001:db8::1"}],"pod_cidrs":[{"family":"IPV4",)"
                           R"("cidr":"10.244.9.0/24"}]})")
                  .ok());
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  ASSERT_OK(a->Register(absl::Seconds(10)));
  a->Start();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "good"); }));
  auto t = applied.tables().back();
  EXPECT_EQ(t.peers.size(), 1u);
  EXPECT_TRUE(log_.Contains("/sarena/v1/nodes/bad-json")) << log_.All();
  EXPECT_TRUE(log_.Contains("/sarena/v1/nodes/bad-family")) << log_.All();
  // The good peer's record turns corrupt: skipped, the peer stays as it was.
  ASSERT_OK(client_->Put(NodeKey("good"), R"({"name":"good","node_id":"x"})"));
  PutRecord("later", 8, "198.51.100.8", "10.244.8.0/24");  // proves the watch moved on
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "later"); }));
  for (const auto& table : applied.tables()) EXPECT_TRUE(Has(table, "good"));
  EXPECT_EQ(applied.tables().back().peers.at("good").underlay.to_string(), "198.51.100.7");
  EXPECT_FALSE(applied.tables().back().peers.at("good").lost);
}

TEST_F(AgentTest, LostPeerIsKeptForTheGracePeriodThenWithdrawnUnlessItReRegisters) {
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  ASSERT_OK(a->Register(absl::Seconds(10)));
  a->Start();
  // node-b registers but never keeps its lease alive (as if its daemon died): TTL 2 s.
  Applied applied_b;
  auto b = Make(Options("node-b", "192.0.2.2"), &applied_b);
  ASSERT_OK(b->Register(absl::Seconds(10)));
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "node-b"); }));
  ASSERT_TRUE(applied.WaitFor(
      [](const PeerTable& t) { return Has(t, "node-b") && t.peers.at("node-b").lost; }));
  absl::Time lost_at = absl::Now();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return !Has(t, "node-b"); }));
  absl::Duration kept = absl::Now() - lost_at;
  EXPECT_GE(kept, absl::Milliseconds(2500)) << "withdrawn before the 3 s grace";
  EXPECT_LE(kept, absl::Seconds(5));

  // node-c dies the same way but re-registers within the grace: never withdrawn.
  size_t before = applied.count();
  Applied applied_c;
  auto c = Make(Options("node-c", "192.0.2.3"), &applied_c);
  ASSERT_OK(c->Register(absl::Seconds(10)));
  ASSERT_TRUE(applied.WaitFor(
      [](const PeerTable& t) { return Has(t, "node-c") && t.peers.at("node-c").lost; }));
  auto c2 = Make(Options("node-c", "192.0.2.3"), &applied_c);
  ASSERT_OK(c2->Register(absl::Seconds(10)));
  c2->Start();
  ASSERT_TRUE(applied.WaitFor(
      [](const PeerTable& t) { return Has(t, "node-c") && !t.peers.at("node-c").lost; }));
  absl::SleepFor(absl::Seconds(4));  // past the grace period
  auto tables = applied.tables();
  bool seen = false;
  for (size_t i = before; i < tables.size(); ++i) {
    if (Has(tables[i], "node-c")) seen = true;
    else if (seen) ADD_FAILURE() << "node-c withdrawn in table " << i;
  }
  EXPECT_TRUE(Has(tables.back(), "node-c"));
  EXPECT_FALSE(tables.back().peers.at("node-c").lost);
}

TEST_F(AgentTest, AddressChangeIsOneInPlaceUpdate) {
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  ASSERT_OK(a->Register(absl::Seconds(10)));
  PutRecord("sim", 5, "198.51.100.5", "10.244.5.0/24");
  a->Start();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "sim"); }));
  size_t before = applied.count();
  PutRecord("sim", 5, "198.51.100.55", "10.244.5.0/24");
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) {
    return Has(t, "sim") && t.peers.at("sim").underlay.to_string() == "198.51.100.55";
  }));
  auto tables = applied.tables();
  EXPECT_EQ(tables.size(), before + 1) << "one apply for one change";
  EXPECT_FALSE(tables.back().peers.at("sim").lost);
  EXPECT_EQ(tables.back().peers.at("sim").node_id, 5u);
  // The same record re-put (no content change) applies nothing.
  PutRecord("sim", 5, "198.51.100.55", "10.244.5.0/24");
  PutRecord("marker", 6, "198.51.100.6", "10.244.6.0/24");
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "marker"); }));
  EXPECT_EQ(applied.count(), before + 2);
}

TEST_F(AgentTest, ApplyErrorsAreRetriedAndALostLeaseIsReRegistered) {
  Applied applied;
  applied.SetFail(true);
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  auto reg = a->Register(absl::Seconds(10));
  ASSERT_OK(reg);
  a->Start();
  absl::SleepFor(absl::Milliseconds(800));
  EXPECT_GE(applied.count(), 2u) << "a failed apply is retried";
  EXPECT_FALSE(a->status().synced);
  EXPECT_TRUE(absl::StrContains(a->status().last_error, "apply refused"));
  applied.SetFail(false);
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!a->status().synced && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(a->status().synced);
  // Someone revokes node-a's lease: the record goes; the agent grants a new one and re-puts.
  int64_t lease = a->status().lease_id;
  ASSERT_OK(client_->LeaseRevoke(lease));
  EXPECT_EQ(client_->Range(NodeKey("node-a"))->kvs_size(), 0);
  deadline = absl::Now() + absl::Seconds(5);
  while (client_->Range(NodeKey("node-a"))->kvs_size() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  auto rec = client_->Range(NodeKey("node-a"));
  ASSERT_EQ(rec->kvs_size(), 1);
  EXPECT_NE(rec->kvs(0).lease(), lease);
  EXPECT_EQ(a->status().registration->pod_cidr, reg->pod_cidr);
  EXPECT_TRUE(log_.Contains("was lost; registering again")) << log_.All();
}

TEST_F(AgentTest, EtcdDown20sWithdrawsNothingAndTheWatchResumesAcrossACompaction) {
  // node-a reaches etcd through a symlink to its socket, so the test can keep node-a away from
  // the restarted etcd until the history it missed has been compacted.
  std::string link = etcd_.dir() + "/via-link.sock";
  ASSERT_EQ(symlink(etcd_.socket_path().c_str(), link.c_str()), 0);
  Applied applied;
  auto oa = Options("node-a", "192.0.2.1");
  oa.endpoints = "unix://" + link;
  oa.lease_ttl = absl::Seconds(10);
  auto ob = Options("node-b", "192.0.2.2");
  ob.lease_ttl = absl::Seconds(10);
  auto a = Make(oa, &applied);
  Applied applied_b;
  auto b = Make(ob, &applied_b);
  ASSERT_OK(a->Register(absl::Seconds(10)));
  ASSERT_OK(b->Register(absl::Seconds(10)));
  a->Start();
  b->Start();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "node-b"); }));
  etcd_.Stop();
  absl::Time until = absl::Now() + absl::Seconds(20);
  bool saw_disconnected = false;
  while (absl::Now() < until) {
    AgentStatus st = a->status();
    if (!st.connected) saw_disconnected = true;
    ASSERT_TRUE(Has(st.peers, "node-b"));
    ASSERT_FALSE(st.peers.peers.at("node-b").lost);
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_TRUE(saw_disconnected);
  ASSERT_EQ(unlink(link.c_str()), 0);
  ASSERT_TRUE(etcd_.Start());
  // node-a cannot reach etcd yet: a new node appears and the history is compacted, so node-a's
  // watch cannot resume from its revision and it must list again.
  PutRecord("sim-new", 50, "198.51.100.50", "10.244.50.0/24");
  ASSERT_TRUE(client_->Put("/scratch", "1").ok());  // compact past node-a's next revision
  ASSERT_OK(client_->DeleteRange("/scratch"));
  auto r = client_->Range("x");
  ASSERT_OK(r);
  ASSERT_OK(client_->Compact(r->header().revision()));
  ASSERT_EQ(symlink(etcd_.socket_path().c_str(), link.c_str()), 0);
  ASSERT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "sim-new"); },
                              absl::Seconds(15)));
  for (const auto& t : applied.tables()) {
    if (!t.peers.empty()) EXPECT_TRUE(Has(t, "node-b"));
  }
  EXPECT_FALSE(applied.tables().back().peers.at("node-b").lost);
  EXPECT_TRUE(a->status().connected);
  EXPECT_TRUE(log_.Contains("compacted")) << log_.All();
  // And the resumed watch delivers live events again.
  PutRecord("sim-live", 51, "198.51.100.51", "10.244.51.0/24");
  EXPECT_TRUE(applied.WaitFor([](const PeerTable& t) { return Has(t, "sim-live"); }));
}

TEST_F(AgentTest, ListNodesShowsLivenessAndDeleteNodeReleasesClaims) {
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  auto reg = a->Register(absl::Seconds(10));
  ASSERT_OK(reg);
  PutRecord("static", 9, "198.51.100.9", "10.244.9.0/24");
  auto list = ListNodes(etcd_.endpoint());
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  const NodeListing& na = (*list)[0];
  EXPECT_EQ(na.name, "node-a");
  EXPECT_TRUE(na.has_record);
  EXPECT_TRUE(na.live);
  EXPECT_TRUE(na.error.empty());
  EXPECT_EQ(na.claimed_pod_cidrs, std::vector<std::string>{"10.244.0.0/24"});
  EXPECT_EQ(na.claimed_node_ids, std::vector<uint32_t>{reg->node_id});
  EXPECT_FALSE((*list)[1].live);  // no lease
  const int64_t lease_a = a->status().lease_id;
  auto del = DeleteNode(etcd_.endpoint(), "node-a");
  ASSERT_OK(del);
  EXPECT_TRUE(del->record_deleted);
  EXPECT_TRUE(del->lease_revoked);
  EXPECT_THAT(client_->LeaseTimeToLive(lease_a), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(del->released_pod_cidrs, std::vector<std::string>{"10.244.0.0/24"});
  EXPECT_EQ(del->released_node_ids, std::vector<uint32_t>{reg->node_id});
  EXPECT_EQ(client_->RangePrefix(kPodCidrsPrefix)->kvs_size(), 0);
  EXPECT_THAT(DeleteNode(etcd_.endpoint(), "node-a"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(DeleteNode(etcd_.endpoint(), "Bad/Name").status().code(),
            absl::StatusCode::kInvalidArgument);
  // The released CIDR is claimable again.
  Applied applied_b;
  auto b = Make(Options("node-b", "192.0.2.2"), &applied_b);
  auto reg_b = b->Register(absl::Seconds(10));
  ASSERT_OK(reg_b);
  EXPECT_EQ(reg_b->pod_cidr.to_string(), "10.244.0.0/24");
}

TEST_F(AgentTest, ARunningNodeDeletedByTheOperatorRegistersAgainFromScratch) {
  Applied applied;
  auto a = Make(Options("node-a", "192.0.2.1"), &applied);
  ASSERT_OK(a->Register(absl::Seconds(10)));
  a->Start();
  ASSERT_TRUE(applied.WaitFor([](const PeerTable&) { return true; }));
  int64_t lease = a->status().lease_id;
  auto del = DeleteNode(etcd_.endpoint(), "node-a");
  ASSERT_OK(del);
  EXPECT_TRUE(del->lease_revoked);
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (absl::Now() < deadline && (client_->Range(NodeKey("node-a"))->kvs_size() == 0 ||
                                    client_->RangePrefix(kPodCidrsPrefix)->kvs_size() == 0)) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  auto rec = client_->Range(NodeKey("node-a"));
  ASSERT_EQ(rec->kvs_size(), 1) << log_.All();
  EXPECT_NE(rec->kvs(0).lease(), lease);
  EXPECT_EQ(client_->RangePrefix(kPodCidrsPrefix)->kvs_size(), 1);
  EXPECT_EQ(client_->RangePrefix(kNodeIdsPrefix)->kvs_size(), 1);
  EXPECT_TRUE(a->status().registered);
}

}  // namespace
}  // namespace sarena::cluster
