// Server: a real unix socket in a temp dir, real clients (the library's Client and raw sockets
// that misbehave on purpose), a trivial handler. No privileges needed.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/log.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/rpc/client.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/daemon/server.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::daemon {
namespace {

using rpc::Client;
using rpc::EncodeFrame;
using rpc::EncodeFrameHeader;
using rpc::kMaxFrameBytes;
using rpc::ReadFrame;
using rpc::WriteFrame;

namespace fs = std::filesystem;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

using ::sarena::testing::TempDir;

// Captures the library's log lines for assertions ("a bad client is logged").
class LogCapture {
 public:
  LogCapture() {
    SetMinLogLevel(LogLevel::kDebug);
    SetLogSink([this](LogLevel, absl::string_view msg) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(msg);
    });
  }
  ~LogCapture() { SetLogSink(nullptr); }
  std::string All() const {
    std::lock_guard<std::mutex> lock(mu_);
    return absl::StrJoin(lines_, "\n");
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// Polls `pred` until true or `timeout`.
template <typename Pred>
bool WaitFor(Pred pred, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return pred();
}

UniqueFd ConnectRaw(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::copy(path.begin(), path.end(), addr.sun_path);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "connect " << path << ": " << strerror(errno);
    return UniqueFd();
  }
  return fd;
}

void SendRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

std::string Header(uint32_t len) {
  auto h = EncodeFrameHeader(len);
  return std::string(h.begin(), h.end());
}

// True when the server closes `fd` (EOF or reset) within `timeout`; data before EOF is skipped.
bool ClosedByPeer(int fd, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  char buf[4096];
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, 50);
    if (rc <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) return true;
  }
  return false;
}

v1::Request GcRequest(const std::string& id) {
  v1::Request req;
  auto* ref = req.mutable_gc()->add_valid();
  ref->set_container_id(id);
  ref->set_ifname("eth0");
  return req;
}

// The trivial handler: answers GC by echoing the refs, Status with a version, and counts calls.
// It also measures how many requests ever ran at once (must be 1: requests are serialized).
struct EchoHandler {
  std::atomic<int> calls{0};
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<uid_t> last_uid{static_cast<uid_t>(-1)};
  absl::Duration delay = absl::ZeroDuration();

  v1::Response Handle(const v1::Request& req, const PeerCred& peer) {
    int now = ++in_flight;
    int prev = max_in_flight.load();
    while (now > prev && !max_in_flight.compare_exchange_weak(prev, now)) {
    }
    ++calls;
    last_uid = peer.uid;
    if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
    v1::Response resp;
    if (req.has_gc()) {
      for (const auto& ref : req.gc().valid()) *resp.mutable_gc()->add_removed() = ref;
    } else if (req.has_endpoint_list()) {
      // 5 MiB of records: more than a frame may carry.
      for (int i = 0; i < 5 * 1024; ++i) {
        resp.mutable_endpoint_list()->add_endpoints()->set_netns(std::string(1024, 'x'));
      }
    } else {
      resp.mutable_status()->set_version("echo");
      resp.mutable_status()->set_ready(true);
    }
    --in_flight;
    return resp;
  }
  Handler AsHandler() {
    return [this](const v1::Request& r, const PeerCred& p) { return Handle(r, p); };
  }
};

class DaemonServerTest : public ::testing::Test {
 protected:
  std::string SocketPath() const { return dir_.path() + "/run/sarena/sarenad.sock"; }
  ServerOptions Options() const {
    return ServerOptions{.socket_path = SocketPath(), .allowed_uids = {::getuid()}};
  }
  // Creates and starts a server on a background thread.
  std::unique_ptr<Server> StartServer(ServerOptions options) {
    auto server = Server::Create(std::move(options), handler_.AsHandler());
    EXPECT_OK(server);
    if (!server.ok()) return nullptr;
    EXPECT_OK((*server)->Start());
    return std::move(*server);
  }
  // One GC round trip on a fresh connection; returns the echoed container id.
  std::string RoundTrip(const std::string& id) {
    auto client = Client::Connect(SocketPath());
    if (!client.ok()) return std::string(client.status().message());
    auto resp = client->Call(GcRequest(id), absl::Seconds(10));
    if (!resp.ok()) return std::string(resp.status().message());
    if (resp->gc().removed_size() != 1) return "bad response: " + resp->DebugString();
    return resp->gc().removed(0).container_id();
  }

  LogCapture logs_;
  TempDir dir_{"sarena-srv-"};
  EchoHandler handler_;
};

TEST_F(DaemonServerTest, ServesFiftyConcurrentClientsWithRequestsSerialized) {
  handler_.delay = absl::Microseconds(200);
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  constexpr int kClients = 50;
  constexpr int kRequests = 6;
  std::atomic<int> ok{0};
  std::atomic<int> worker_jobs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto client = Client::Connect(SocketPath());
      ASSERT_OK(client);
      for (int i = 0; i < kRequests; ++i) {
        // Maintenance posted to the worker is serialized with requests too.
        if (i == 0)
          server->PostToWorker([&] {
            int now = ++handler_.in_flight;
            if (now > 1) handler_.max_in_flight = now;
            ++worker_jobs;
            --handler_.in_flight;
          });
        const std::string id = absl::StrCat("ctr-", t, "-", i);
        auto resp = client->Call(GcRequest(id), absl::Seconds(30));
        ASSERT_OK(resp);
        ASSERT_EQ(resp->gc().removed_size(), 1);
        EXPECT_EQ(resp->gc().removed(0).container_id(), id);  // our own answer, in order
        ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  EXPECT_EQ(handler_.calls.load(), kClients * kRequests);
  EXPECT_EQ(handler_.max_in_flight.load(), 1);
  EXPECT_TRUE(WaitFor([&] { return worker_jobs.load() == kClients; }));
  EXPECT_EQ(handler_.last_uid.load(), ::getuid());
  ServerStats s = server->stats();
  EXPECT_EQ(s.requests, uint64_t{kClients * kRequests});
  EXPECT_EQ(s.protocol_errors + s.aborted + s.rejected_peer, 0u);
  EXPECT_TRUE(WaitFor([&] { return server->stats().active_connections == 0; }));
}

TEST_F(DaemonServerTest, ClientDyingInTheMiddleOfAFrameIsDroppedAndLogged) {
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  {
    UniqueFd half_header = ConnectRaw(SocketPath());
    SendRaw(half_header.get(), Header(100).substr(0, 2));
  }  // closed: dies after 2 of 4 header bytes
  {
    UniqueFd half_body = ConnectRaw(SocketPath());
    SendRaw(half_body.get(), Header(100) + std::string(10, 'x'));
  }  // dies after 10 of 100 body bytes
  EXPECT_TRUE(WaitFor([&] { return server->stats().aborted == 2; })) << server->stats().aborted;
  EXPECT_EQ(RoundTrip("after"), "after");
  EXPECT_EQ(handler_.calls.load(), 1);
  EXPECT_THAT(logs_.All(), HasSubstr("connection lost in a frame header (2 of 4 bytes)"));
  EXPECT_THAT(logs_.All(), HasSubstr("connection lost in a frame body (10 of 100 bytes)"));
}

TEST_F(DaemonServerTest, StalledClientIsTimedOutWithoutBlockingOthers) {
  ServerOptions options = Options();
  options.io_timeout = absl::Milliseconds(500);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  UniqueFd stalled = ConnectRaw(SocketPath());
  SendRaw(stalled.get(), Header(64) + "abc");  // and then nothing
  // Everyone else is served meanwhile.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      if (RoundTrip(absl::StrCat("c", t)) == absl::StrCat("c", t)) ++ok;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_TRUE(ClosedByPeer(stalled.get()));
  EXPECT_EQ(server->stats().aborted, 1u);
  EXPECT_THAT(logs_.All(), HasSubstr("receiving a request timed out after 500ms"));
}

TEST_F(DaemonServerTest, IdleConnectionIsClosedAfterIdleTimeout) {
  ServerOptions options = Options();
  options.idle_timeout = absl::Milliseconds(200);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  UniqueFd idle = ConnectRaw(SocketPath());
  EXPECT_TRUE(ClosedByPeer(idle.get()));
  EXPECT_THAT(logs_.All(), HasSubstr("idle connection timed out"));
}

TEST_F(DaemonServerTest, OversizedLengthPrefixClosesTheConnection) {
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  for (uint32_t len : {kMaxFrameBytes + 1, 0xffffffffu}) {
    UniqueFd fd = ConnectRaw(SocketPath());
    SendRaw(fd.get(), Header(len));
    EXPECT_TRUE(ClosedByPeer(fd.get())) << len;
  }
  EXPECT_EQ(server->stats().protocol_errors, 2u);
  EXPECT_EQ(handler_.calls.load(), 0);
  EXPECT_THAT(logs_.All(), HasSubstr("protocol error: frame body of 4294967295 bytes exceeds"));
  EXPECT_EQ(RoundTrip("still-fine"), "still-fine");
}

TEST_F(DaemonServerTest, GarbageBodyClosesTheConnection) {
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  UniqueFd fd = ConnectRaw(SocketPath());
  const std::string garbage(8, '\xff');  // an invalid varint tag: never a Request
  SendRaw(fd.get(), Header(garbage.size()) + garbage);
  EXPECT_TRUE(ClosedByPeer(fd.get()));
  EXPECT_EQ(server->stats().protocol_errors, 1u);
  EXPECT_EQ(handler_.calls.load(), 0);
  EXPECT_THAT(logs_.All(), HasSubstr("is not a valid sarena.rpc.v1.Request"));
  EXPECT_EQ(RoundTrip("still-fine"), "still-fine");
}

TEST_F(DaemonServerTest, RequestWithoutKindGetsAnErrorAndTheConnectionStaysUsable) {
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(SocketPath());
  ASSERT_OK(client);
  auto resp = client->Call(v1::Request(), absl::Seconds(10));
  ASSERT_OK(resp);
  ASSERT_TRUE(resp->has_error());
  EXPECT_EQ(resp->error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(resp->error().message(), HasSubstr("no request kind"));
  auto next = client->Call(GcRequest("next"), absl::Seconds(10));
  ASSERT_OK(next);
  EXPECT_EQ(next->gc().removed(0).container_id(), "next");
}

TEST_F(DaemonServerTest, OversizedResponseBecomesAnError) {
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(SocketPath());
  ASSERT_OK(client);
  v1::Request list;
  list.mutable_endpoint_list();
  auto resp = client->Call(list, absl::Seconds(10));
  ASSERT_OK(resp);
  ASSERT_TRUE(resp->has_error());
  EXPECT_EQ(resp->error().code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(resp->error().message(), HasSubstr("exceeds the limit"));
  ASSERT_OK_AND_ASSIGN(auto next, client->Call(GcRequest("next"), absl::Seconds(10)));

}

TEST_F(DaemonServerTest, PeerWithAUidNotAllowedIsRejectedAndClosed) {
  ServerOptions options = Options();
  options.allowed_uids = {::getuid() + 4242};
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(SocketPath());
  ASSERT_OK(client);
  auto resp = client->Call(GcRequest("x"), absl::Seconds(10));
  ASSERT_OK(resp);
  ASSERT_TRUE(resp->has_error());
  EXPECT_EQ(resp->error().code(), static_cast<int>(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(resp->error().message(),
              HasSubstr(absl::StrCat("uid ", ::getuid(), " is not allowed")));
  EXPECT_TRUE(ClosedByPeer(client->fd()));
  EXPECT_EQ(handler_.calls.load(), 0);
  EXPECT_EQ(server->stats().rejected_peer, 1u);
  EXPECT_THAT(logs_.All(), HasSubstr("is not in the allowed uids"));
}

TEST_F(DaemonServerTest, SocketGetsModeAndParentDirectory) {
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  struct stat st;
  ASSERT_EQ(::lstat(SocketPath().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  server.reset();
  EXPECT_FALSE(fs::exists(SocketPath()));  // removed on destruction
}

TEST_F(DaemonServerTest, StaleSocketFileIsReplaced) {
  fs::create_directories(fs::path(SocketPath()).parent_path());
  {
    // A socket file nobody listens on: what a crashed daemon leaves behind.
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string p = SocketPath();
    std::copy(p.begin(), p.end(), addr.sun_path);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ASSERT_TRUE(fs::exists(SocketPath()));
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(logs_.All(), HasSubstr("removed stale socket"));
  EXPECT_EQ(RoundTrip("x"), "x");
}

TEST_F(DaemonServerTest, SecondServerOnALiveSocketIsRefused) {
  auto first = StartServer(Options());
  ASSERT_NE(first, nullptr);
  auto second = Server::Create(Options(), handler_.AsHandler());
  ASSERT_THAT(second, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(second.status().message(),
            absl::StrCat("another sarenad is listening on '", SocketPath(), "'"));
  // The first one is untouched and still serving.
  EXPECT_TRUE(fs::exists(SocketPath()));
  EXPECT_EQ(RoundTrip("x"), "x");
}

TEST_F(DaemonServerTest, NonSocketFileAtThePathIsNeverReplaced) {
  fs::create_directories(fs::path(SocketPath()).parent_path());
  { std::ofstream(SocketPath()) << "precious"; }
  auto server = Server::Create(Options(), handler_.AsHandler());
  ASSERT_THAT(server,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is not a socket")));
  std::ifstream in(SocketPath());
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

TEST_F(DaemonServerTest, AnUncreatableSocketDirectoryNamesTheSocket) {
  dir_.Write("run", "a regular file where the socket's directory should be");
  auto server = Server::Create(Options(), handler_.AsHandler());
  ASSERT_THAT(server, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr(absl::StrCat("socket '", SocketPath(), "': "))));
  EXPECT_THAT(server.status().message(), HasSubstr("is not a directory"));
}

TEST_F(DaemonServerTest, RunOnTheCallingThreadAndStopFromAnother) {
  ASSERT_OK_AND_ASSIGN(auto server, Server::Create(Options(), handler_.AsHandler()));
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    server->Run();
    returned = true;
  });
  EXPECT_EQ(RoundTrip("x"), "x");
  EXPECT_FALSE(returned.load());
  server->Stop();
  runner.join();
  EXPECT_TRUE(returned.load());
  server->Stop();  // idempotent
}

TEST_F(DaemonServerTest, StopLetsTheRunningRequestFinish) {
  handler_.delay = absl::Milliseconds(300);
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  std::string answer;
  std::thread caller([&] { answer = RoundTrip("slow"); });
  ASSERT_TRUE(WaitFor([&] { return handler_.in_flight.load() == 1; }));
  server->Stop();  // returns once the response was written and everything is closed
  caller.join();
  EXPECT_EQ(answer, "slow");
  // After Stop nothing answers any more.
  auto late = Client::Connect(SocketPath(), absl::Milliseconds(200));
  if (late.ok()) {
    EXPECT_FALSE(late->Call(GcRequest("late"), absl::Seconds(1)).ok());
  }
}

TEST_F(DaemonServerTest, StopFromInsideAHandlerDoesNotDeadlock) {
  Server* raw = nullptr;
  auto created = Server::Create(Options(), [&](const v1::Request& r, const PeerCred& p) {
    raw->Stop();  // e.g. a fatal datapath error: the daemon shuts itself down
    return handler_.Handle(r, p);
  });
  ASSERT_OK(created);
  raw = created->get();
  std::thread runner([&] { raw->Run(); });
  EXPECT_EQ(RoundTrip("last"), "last");  // the running request still gets its answer
  runner.join();                         // and Run returns
}

TEST_F(DaemonServerTest, ClientThatDiesWhileItsRequestRunsDoesNotHurtOthers) {
  handler_.delay = absl::Milliseconds(100);
  auto server = StartServer(Options());
  ASSERT_NE(server, nullptr);
  {
    UniqueFd fd = ConnectRaw(SocketPath());
    auto frame = EncodeFrame(GcRequest("ghost"));
    ASSERT_OK(frame);
    SendRaw(fd.get(), *frame);
    ASSERT_TRUE(WaitFor([&] { return handler_.calls.load() == 1; }));
  }  // gone before its response
  EXPECT_EQ(RoundTrip("alive"), "alive");
  EXPECT_EQ(handler_.calls.load(), 2);
  EXPECT_TRUE(WaitFor([&] { return server->stats().active_connections == 0; }));
}

TEST_F(DaemonServerTest, CreateRejectsBadOptions) {
  EXPECT_THAT(Server::Create(Options(), nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  ServerOptions long_path = Options();
  long_path.socket_path = "/tmp/" + std::string(200, 'a');
  EXPECT_EQ(Server::Create(long_path, handler_.AsHandler()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DaemonErrorResponseTest, CarriesCodeMessageAndCniCode) {
  v1::Response r = ErrorResponse(absl::NotFoundError("endpoint 'x/eth0' not found"), 3);
  EXPECT_EQ(r.error().code(), static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_EQ(r.error().message(), "endpoint 'x/eth0' not found");
  EXPECT_EQ(r.error().cni_code(), 3u);
  EXPECT_EQ(r.kind_case(), v1::Response::KIND_NOT_SET);
}

}  // namespace
}  // namespace sarena::daemon
