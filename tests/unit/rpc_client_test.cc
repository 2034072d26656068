// The sarenad wire framing (4-byte big-endian length + protobuf body, 4 MiB max) over real
// socketpairs / pipes / unix sockets, and the blocking Client the CNI plugin uses.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/cni/error.h"
#include "libsarena/rpc/client.h"
#include "libsarena/rpc/framing.h"
#include "libsarena/rpc/kind.h"
#include "libsarena/rpc/sarenad.pb.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::rpc {
namespace {

using ::sarena::testing::TempDir;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

struct Pair {
  UniqueFd a, b;
};

Pair SocketPair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void WriteRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

std::string Header(uint32_t len) {
  auto h = EncodeFrameHeader(len);
  return std::string(h.begin(), h.end());
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

v1::Request AddRequest() {
  v1::Request r;
  auto* add = r.mutable_endpoint_add();
  add->mutable_ref()->set_container_id("3f6940ab");
  add->mutable_ref()->set_ifname("eth0");
  add->set_netns("/var/run/netns/pod1");
  add->set_mtu(1450);
  add->set_pod_namespace("default");
  add->set_pod_name("web-0");
  return r;
}

TEST(RpcKind, NamesComeFromTheSchemaAndPairRequestsWithResponses) {
  EXPECT_EQ(RequestKindName(v1::Request::kEndpointAdd), "endpoint_add");
  EXPECT_EQ(RequestKindName(v1::Request::kGc), "gc");
  EXPECT_EQ(RequestKindName(v1::Request::KIND_NOT_SET), "nothing");
  EXPECT_EQ(ResponseKindName(v1::Response::kEndpointList), "endpoint_list");
  // No out-of-range KindCase is tried: the enum has no fixed underlying type, so a value past its range is
  // undefined behaviour (UBSan aborts on it), and a parsed message can only carry a declared case.
  // Every request kind has exactly one response kind of the same name.
  const auto* req = v1::Request::descriptor()->FindOneofByName("kind");
  const auto* resp = v1::Response::descriptor()->FindOneofByName("kind");
  ASSERT_NE(req, nullptr);
  ASSERT_NE(resp, nullptr);
  ASSERT_EQ(req->field_count(), resp->field_count());
  for (int i = 0; i < req->field_count(); ++i) {
    auto rk = static_cast<v1::Request::KindCase>(req->field(i)->number());
    int matches = 0;
    for (int j = 0; j < resp->field_count(); ++j) {
      matches += KindsMatch(rk, static_cast<v1::Response::KindCase>(resp->field(j)->number()));
    }
    EXPECT_EQ(matches, 1) << req->field(i)->name();
  }
  EXPECT_FALSE(KindsMatch(v1::Request::kEndpointAdd, v1::Response::kEndpointDel));
  EXPECT_FALSE(KindsMatch(v1::Request::KIND_NOT_SET, v1::Response::KIND_NOT_SET));
}

TEST(DaemonFraming, HeaderIsBigEndianLength) {
  auto h = EncodeFrameHeader(0x01020304);
  EXPECT_EQ(h[0], 0x01);
  EXPECT_EQ(h[1], 0x02);
  EXPECT_EQ(h[2], 0x03);
  EXPECT_EQ(h[3], 0x04);
  absl::StatusOr<uint32_t> len = DecodeFrameHeader(EncodeFrameHeader(0x00030405));
  ASSERT_OK(len);
  EXPECT_EQ(*len, 0x00030405u);
  v1::Request r = AddRequest();
  absl::StatusOr<std::string> frame = EncodeFrame(r);
  ASSERT_OK(frame);
  ASSERT_EQ(frame->size(), kFrameHeaderBytes + r.ByteSizeLong());
  EXPECT_EQ(frame->substr(0, 4), Header(static_cast<uint32_t>(r.ByteSizeLong())));
  EXPECT_EQ(frame->substr(4), r.SerializeAsString());
}

TEST(DaemonFraming, LimitIsFourMiB) {
  EXPECT_EQ(kMaxFrameBytes, 4u * 1024 * 1024);
  EXPECT_OK(DecodeFrameHeader(EncodeFrameHeader(kMaxFrameBytes)));
  absl::StatusOr<uint32_t> over = DecodeFrameHeader(EncodeFrameHeader(kMaxFrameBytes + 1));
  EXPECT_THAT(over, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("4194305")));
}

TEST(DaemonFraming, RoundTripOverSocketPair) {
  Pair p = SocketPair();
  v1::Request sent = AddRequest();
  ASSERT_OK(WriteFrame(p.a.get(), sent, absl::Seconds(5)));
  v1::Response resp;
  resp.mutable_error()->set_code(8);
  resp.mutable_error()->set_message("no free address in 10.244.1.0/30");
  resp.mutable_error()->set_cni_code(101);
  ASSERT_OK(WriteFrame(p.a.get(), resp, absl::Seconds(5)));

  v1::Request got;
  ASSERT_OK(ReadFrame(p.b.get(), &got, absl::Seconds(5)));
  EXPECT_EQ(got.SerializeAsString(), sent.SerializeAsString());
  EXPECT_EQ(got.endpoint_add().pod_name(), "web-0");
  v1::Response got_resp;
  ASSERT_OK(ReadFrame(p.b.get(), &got_resp, absl::Seconds(5)));
  EXPECT_EQ(got_resp.error().cni_code(), 101u);
  EXPECT_FALSE(Readable(p.b.get()));  // exactly two frames, nothing more
}

TEST(DaemonFraming, EmptyMessageIsAZeroLengthFrame) {
  Pair p = SocketPair();
  v1::Request empty;
  ASSERT_OK(WriteFrame(p.a.get(), empty, absl::Seconds(1)));
  char buf[8];
  ASSERT_EQ(::read(p.b.get(), buf, sizeof buf), 4);
  EXPECT_EQ(std::string(buf, 4), Header(0));
  ASSERT_OK(WriteFrame(p.a.get(), empty, absl::Seconds(1)));
  v1::Request got = AddRequest();  // cleared by ReadFrame
  ASSERT_OK(ReadFrame(p.b.get(), &got, absl::Seconds(1)));
  EXPECT_EQ(got.kind_case(), v1::Request::KIND_NOT_SET);
}

TEST(DaemonFraming, LargeFrameNeedsManyReadsAndWrites) {
  Pair p = SocketPair();
  v1::Response big;
  for (int i = 0; i < 20000; ++i) {
    v1::Endpoint* e = big.mutable_endpoint_list()->add_endpoints();
    e->mutable_ref()->set_container_id(absl::StrCat("container-", i));
    e->set_ip(absl::StrCat("10.", i / 65536, ".", (i / 256) % 256, ".", i % 256));
  }
  ASSERT_GT(big.ByteSizeLong(), 512u * 1024);  // far more than a socket buffer
  ASSERT_LT(big.ByteSizeLong(), kMaxFrameBytes);
  absl::Status write_status;
  std::thread writer([&] { write_status = WriteFrame(p.a.get(), big, absl::Seconds(10)); });
  v1::Response got;
  absl::Status read_status = ReadFrame(p.b.get(), &got, absl::Seconds(10));
  writer.join();
  ASSERT_OK(write_status);
  ASSERT_OK(read_status);
  ASSERT_EQ(got.endpoint_list().endpoints_size(), 20000);
  EXPECT_EQ(got.endpoint_list().endpoints(19999).ref().container_id(), "container-19999");
}

TEST(DaemonFraming, OversizeIsRefusedOnBothSides) {
  Pair p = SocketPair();
  v1::Response huge;
  huge.mutable_error()->set_message(std::string(kMaxFrameBytes, 'x'));
  EXPECT_THAT(EncodeFrame(huge), StatusIs(absl::StatusCode::kResourceExhausted));
  absl::Status s = WriteFrame(p.a.get(), huge, absl::Seconds(1));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_FALSE(Readable(p.b.get()));  // nothing was written

  // A peer announcing more than 4 MiB: refused before reading (or allocating) the body.
  WriteRaw(p.a.get(), Header(kMaxFrameBytes + 1) + "abc");
  v1::Response got;
  s = ReadFrame(p.b.get(), &got, absl::Seconds(1));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("exceeds the limit")));
}

TEST(DaemonFraming, TruncatedHeaderBodyAndCleanClose) {
  {
    Pair p = SocketPair();
    p.a.Reset();  // closed between frames
    v1::Request r;
    absl::Status s = ReadFrame(p.b.get(), &r, absl::Seconds(1));
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("closed by peer")));
  }
  {
    Pair p = SocketPair();
    WriteRaw(p.a.get(), Header(100).substr(0, 2));
    p.a.Reset();
    v1::Request r;
    absl::Status s = ReadFrame(p.b.get(), &r, absl::Seconds(1));
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("2 of 4 header bytes")));
  }
  {
    Pair p = SocketPair();
    WriteRaw(p.a.get(), Header(100) + std::string(10, 'a'));
    p.a.Reset();
    v1::Request r;
    absl::Status s = ReadFrame(p.b.get(), &r, absl::Seconds(1));
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("10 of 100 body bytes")));
  }
}

TEST(DaemonFraming, GarbageBodyIsDataLoss) {
  Pair p = SocketPair();
  WriteRaw(p.a.get(), Header(3) + "\xff\xff\xff");
  v1::Response r;
  absl::Status s = ReadFrame(p.b.get(), &r, absl::Seconds(1));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("sarena.rpc.v1.Response")));
}

TEST(DaemonFraming, ReadTimesOut) {
  Pair p = SocketPair();
  WriteRaw(p.a.get(), Header(10) + "abc");  // a partial frame, then silence
  v1::Request r;
  absl::Time start = absl::Now();
  absl::Status s = ReadFrame(p.b.get(), &r, absl::Milliseconds(100));
  absl::Duration took = absl::Now() - start;
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("3 of 10")));
  EXPECT_GE(took, absl::Milliseconds(95));
  EXPECT_LT(took, absl::Seconds(5));
}

TEST(DaemonFraming, WriteTimesOutWhenNobodyReads) {
  Pair p = SocketPair();
  v1::Response big;
  big.mutable_error()->set_message(std::string(3 * 1024 * 1024, 'x'));
  absl::Status s = WriteFrame(p.a.get(), big, absl::Milliseconds(100));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("bytes written")));
}

TEST(DaemonFraming, WriteToClosedPeerIsUnavailableNotSigpipe) {
  Pair p = SocketPair();
  p.b.Reset();
  absl::Status s = WriteFrame(p.a.get(), AddRequest(), absl::Seconds(1));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;  // and the process is still alive
}

TEST(DaemonFraming, WorksOverPipes) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd r(fds[0]), w(fds[1]);
  ASSERT_OK(WriteFrame(w.get(), AddRequest(), absl::Seconds(1)));
  v1::Request got;
  ASSERT_OK(ReadFrame(r.get(), &got, absl::Seconds(1)));
  EXPECT_EQ(got.endpoint_add().netns(), "/var/run/netns/pod1");

  // Larger than the pipe buffer: written in PIPE_BUF pieces as the reader drains it.
  v1::Response big;
  big.mutable_error()->set_message(std::string(300 * 1024, 'p'));
  absl::Status write_status;
  std::thread writer([&] { write_status = WriteFrame(w.get(), big, absl::Seconds(10)); });
  v1::Response got_big;
  absl::Status read_status = ReadFrame(r.get(), &got_big, absl::Seconds(10));
  writer.join();
  EXPECT_OK(write_status);
  ASSERT_OK(read_status);
  EXPECT_EQ(got_big.error().message().size(), 300u * 1024);
}

// A unix-socket peer speaking the framing, serving one connection with `handler`.
class ScriptedPeer {
 public:
  using Handler = std::function<void(int conn_fd)>;

  explicit ScriptedPeer(Handler handler) {
    listen_fd_.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_.get(), 4), 0);
    thread_ = std::thread([this, handler] {
      UniqueFd conn(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn) handler(conn.get());
    });
  }
  ~ScriptedPeer() { thread_.join(); }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_{"sarena-client-test-"};
  std::string path_ = dir_.Path("sarenad.sock");
  UniqueFd listen_fd_;
  std::thread thread_;
};

TEST(DaemonClient, UnreachableSocketIsUnavailableWithPathAndErrno) {
  absl::StatusOr<Client> c = Client::Connect("/nonexistent/sarenad.sock", absl::Seconds(1));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(c.status().message(), HasSubstr("'/nonexistent/sarenad.sock'"));
  EXPECT_THAT(c.status().message(), HasSubstr("errno 2"));
  EXPECT_EQ(cni::CniCodeOf(c.status()), 11u);

  // A socket file nobody listens on: refused.
  TempDir dir("sarena-client-test-");
  std::string path = dir.Path("dead.sock");
  {
    UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }  // closed without listen: the file stays, nothing accepts
  c = Client::Connect(path, absl::Seconds(1));
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("errno 111")));

  c = Client::Connect(std::string(120, 'x'), absl::Seconds(1));
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Client::Connect("", absl::Seconds(1)), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(DaemonClient, CallsInOrderOnOneConnection) {
  ScriptedPeer peer([](int fd) {
    for (int i = 0; i < 3; ++i) {
      v1::Request req;
      if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
      v1::Response resp;
      resp.mutable_status()->set_endpoints(static_cast<uint32_t>(i));
      resp.mutable_status()->set_pod_cidr(req.has_status() ? "status" : "other");
      if (!WriteFrame(fd, resp, absl::Seconds(5)).ok()) return;
    }
  });
  absl::StatusOr<Client> c = Client::Connect(peer.path());
  ASSERT_OK(c);
  EXPECT_EQ(c->socket_path(), peer.path());
  v1::Request req;
  req.mutable_status();
  for (uint32_t i = 0; i < 3; ++i) {
    absl::StatusOr<v1::Response> r = c->CallChecked(req, absl::Seconds(5));
    ASSERT_OK(r);
    EXPECT_EQ(r->status().endpoints(), i);
    EXPECT_EQ(r->status().pod_cidr(), "status");
  }
}

TEST(DaemonClient, DaemonErrorsKeepTheirCniCode) {
  ScriptedPeer peer([](int fd) {
    v1::Request req;
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    v1::Response resp;
    *resp.mutable_error() = ProtoErrorFromStatus(
        cni::MakeCniError(cni::ErrorCode::kIpamExhausted, absl::StatusCode::kResourceExhausted,
                          "allocate IP in pod CIDR '10.244.1.0/30': no free address"));
    (void)WriteFrame(fd, resp, absl::Seconds(5));
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    v1::Response wrong;
    wrong.mutable_gc();  // answers an ADD with GC
    (void)WriteFrame(fd, wrong, absl::Seconds(5));
  });
  absl::StatusOr<Client> c = Client::Connect(peer.path());
  ASSERT_OK(c);

  // Call: the daemon's error is data, not a transport failure.
  absl::StatusOr<v1::Response> raw = c->Call(AddRequest());
  ASSERT_OK(raw);
  ASSERT_TRUE(raw->has_error());
  EXPECT_EQ(raw->error().cni_code(), 101u);
  EXPECT_EQ(raw->error().code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  absl::Status s = StatusFromError(raw->error());
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(cni::CniCodeOf(s), 101u);
  EXPECT_THAT(s.message(), HasSubstr("no free address"));

  absl::StatusOr<v1::Response> mismatched = c->CallChecked(AddRequest());
  EXPECT_THAT(mismatched, StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(cni::CniCodeOf(mismatched.status()), 105u);
  EXPECT_THAT(mismatched.status().message(), HasSubstr("gc to endpoint_add"));
}

TEST(DaemonClient, PeerDyingMidRequestBreaksTheClient) {
  ScriptedPeer peer([](int fd) {
    v1::Request req;
    (void)ReadFrame(fd, &req, absl::Seconds(5));
    WriteRaw(fd, Header(50) + "partial");  // then the daemon "crashes"
  });
  absl::StatusOr<Client> c = Client::Connect(peer.path());
  ASSERT_OK(c);
  absl::StatusOr<v1::Response> r = c->Call(AddRequest(), absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(peer.path())));
  r = c->Call(AddRequest(), absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(DaemonClient, SilentDaemonTimesOut) {
  ScriptedPeer peer([](int fd) {
    v1::Request req;
    (void)ReadFrame(fd, &req, absl::Seconds(5));
    absl::SleepFor(absl::Milliseconds(400));  // never answers in time
  });
  absl::StatusOr<Client> c = Client::Connect(peer.path());
  ASSERT_OK(c);
  absl::StatusOr<v1::Response> r = c->Call(AddRequest(), absl::Milliseconds(100));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(cni::CniCodeOf(r.status()), 11u);
}

TEST(DaemonClient, ProtoErrorConversion) {
  v1::Error e = ProtoErrorFromStatus(absl::NotFoundError("endpoint 'x/eth0' not found"));
  EXPECT_EQ(e.code(), static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_EQ(e.cni_code(), 3u);
  absl::Status back = StatusFromError(e);
  EXPECT_THAT(back, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(back.message(), "endpoint 'x/eth0' not found");
  // Garbage codes from a peer never make an OK status.
  v1::Error weird;
  weird.set_code(0);
  EXPECT_FALSE(StatusFromError(weird).ok());
  weird.set_code(999);
  EXPECT_THAT(StatusFromError(weird), StatusIs(absl::StatusCode::kUnknown));
}

// Issue 10 defect 7: the plugin trusted whatever answered on daemonSocket. A reply of the wrong
// kind, an empty reply, a garbage or oversized frame are errors naming the socket path.
TEST(DaemonClient, BadRepliesAreErrorsNamingTheSocket) {
  ScriptedPeer peer([](int fd) {
    v1::Request req;
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    v1::Response wrong;
    wrong.mutable_endpoint_add();  // answers STATUS with ADD
    if (!WriteFrame(fd, wrong, absl::Seconds(5)).ok()) return;
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    if (!WriteFrame(fd, v1::Response(), absl::Seconds(5)).ok()) return;  // no kind at all
  });
  absl::StatusOr<Client> c = Client::Connect(peer.path());
  ASSERT_OK(c);
  v1::Request req;
  req.mutable_status();
  absl::StatusOr<v1::Response> r = c->CallChecked(req, absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(cni::CniCodeOf(r.status()), 105u);
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrCat("sarenad at '", peer.path(), "' answered endpoint_add to status")));
  r = c->CallChecked(req, absl::Seconds(5));
  EXPECT_EQ(cni::CniCodeOf(r.status()), 105u) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("answered nothing to status"));
  EXPECT_THAT(r.status().message(), HasSubstr(peer.path()));
  // CheckResponseKind on its own: an error reply is always a valid answer.
  v1::Response err;
  err.mutable_error()->set_message("x");
  EXPECT_OK(CheckResponseKind(req, err, "/s"));

  ScriptedPeer garbage([](int fd) {
    v1::Request req;
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    WriteRaw(fd, Header(6) + "\xff\xff\xff\xff\xff\xff");
  });
  c = Client::Connect(garbage.path());
  ASSERT_OK(c);
  r = c->CallChecked(req, absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(garbage.path())));

  ScriptedPeer huge([](int fd) {
    v1::Request req;
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    WriteRaw(fd, Header(0xfffffff0u));
  });
  c = Client::Connect(huge.path());
  ASSERT_OK(c);
  r = c->CallChecked(req, absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr(huge.path())));
}

// A listener created by this (root) process in a root-owned 0700 directory, then served by a
// forked child that first drops to `uid`: SO_PEERCRED reports the uid at listen() time.
class ForkedPeer {
 public:
  explicit ForkedPeer(uid_t uid) {
    UniqueFd listen_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    v1::Response resp;
    resp.mutable_status()->set_ready(true);
    std::string frame = *EncodeFrame(resp);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::alarm(20);
      if (::setuid(uid) != 0 || ::listen(listen_fd.get(), 4) != 0) ::_exit(1);
      char ok = 1;
      (void)!::write(ready[1], &ok, 1);
      int conn = ::accept(listen_fd.get(), nullptr, nullptr);
      char buf[256];
      if (conn >= 0 && ::read(conn, buf, sizeof buf) > 0) {
        (void)!::write(conn, frame.data(), frame.size());
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    char ok = 0;
    EXPECT_EQ(::read(ready[0], &ok, 1), 1) << "child could not drop to uid " << uid;
    ::close(ready[0]);
  }
  ~ForkedPeer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_{"sarena-client-peer-"};
  std::string path_ = dir_.Path("sarenad.sock");
  pid_t pid_ = -1;
};

TEST(DaemonClient, TrustsOnlyARootPeer) {
  EXPECT_EQ(TrustedDaemonUids().front(), 0u);
  if (::geteuid() == 0) {
    EXPECT_EQ(TrustedDaemonUids(), std::vector<uid_t>{0});
    ForkedPeer nobody(65534);
    absl::StatusOr<Client> c = Client::ConnectTrusted(nobody.path(), absl::Seconds(2));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c, StatusIs(absl::StatusCode::kPermissionDenied));
    EXPECT_EQ(cni::CniCodeOf(c.status()), 106u);
    EXPECT_THAT(c.status().message(),
                HasSubstr(absl::StrCat("refusing sarenad socket '", nobody.path(), "'")));
    EXPECT_THAT(c.status().message(), HasSubstr("served by uid 65534"));
    EXPECT_THAT(c.status().message(), HasSubstr("want uid 0"));

    ForkedPeer root(0);  // the same setup served by root is trusted and works
    c = Client::ConnectTrusted(root.path(), absl::Seconds(2));
    ASSERT_OK(c);
    v1::Request req;
    req.mutable_status();
    absl::StatusOr<v1::Response> r = c->CallChecked(req, absl::Seconds(5));
    ASSERT_OK(r);
    EXPECT_TRUE(r->status().ready());
  } else {
    // Unprivileged run: the peer is this uid, which a root-only allow list refuses.
    ScriptedPeer self([](int) {});
    absl::StatusOr<Client> c = Client::Connect(self.path());
    ASSERT_OK(c);
    absl::Status s = c->VerifyPeer({0});
    EXPECT_EQ(cni::CniCodeOf(s), 106u) << s;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("served by uid ", ::geteuid())));
    EXPECT_OK(c->VerifyPeer(TrustedDaemonUids()));
  }
}

TEST(DaemonClient, SocketDirectoryMustBeOwnersOnly) {
  TempDir tmp("sarena-client-dir-");
  const std::string& dir = tmp.path();
  std::string sock = tmp.Path("sarenad.sock");
  EXPECT_TRUE(CheckSocketDirectory(sock).ok());  // 0700, ours
  for (auto [mode, says] : std::vector<std::pair<mode_t, std::string>>{
           {0777, "writable by group and others (mode 0777)"},
           {0775, "writable by its group (mode 0775)"},
           {01757, "writable by others (mode 01757)"}}) {
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    absl::Status s = CheckSocketDirectory(sock);
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kPermissionDenied));
    EXPECT_EQ(cni::CniCodeOf(s), 106u);
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("refusing sarenad socket '", sock,
                                                    "': its directory '", dir, "' is ", says)));
    // ConnectTrusted refuses before connecting.
    EXPECT_EQ(cni::CniCodeOf(Client::ConnectTrusted(sock, absl::Seconds(1)).status()), 106u);
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_OK(CheckSocketDirectory(sock));
  absl::Status s = CheckSocketDirectory(sock, {12345});  // owner not in the allow list
  EXPECT_EQ(cni::CniCodeOf(s), 106u) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("its directory '", dir, "' is owned by uid ",
                                                  ::geteuid(), ", want uid 12345")));
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    s = CheckSocketDirectory(sock);
    EXPECT_EQ(cni::CniCodeOf(s), 106u) << s;
    EXPECT_THAT(s.message(), HasSubstr("is owned by uid 65534, want uid 0"));
    ASSERT_EQ(::chown(dir.c_str(), 0, 0), 0);
  }
  // A regular file where the socket should be.
  tmp.Write("sarenad.sock", "x");
  s = CheckSocketDirectory(sock);
  EXPECT_EQ(cni::CniCodeOf(s), 106u) << s;
  EXPECT_THAT(s.message(), HasSubstr("is not a socket"));
  // A missing directory is "unreachable" like Connect (11), not untrusted.
  s = CheckSocketDirectory(dir + "/nope/sarenad.sock");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(cni::CniCodeOf(s), 11u);
}

TEST(DaemonClient, RequestWithInvalidUtf8IsRefusedBeforeSending) {
  ScriptedPeer peer([](int fd) {
    v1::Request req;
    if (!ReadFrame(fd, &req, absl::Seconds(5)).ok()) return;
    v1::Response resp;
    resp.mutable_status();
    (void)WriteFrame(fd, resp, absl::Seconds(5));
  });
  absl::StatusOr<Client> c = Client::Connect(peer.path());
  ASSERT_OK(c);
  v1::Request bad = AddRequest();
  bad.mutable_endpoint_add()->set_pod_name("web-\xff");
  absl::StatusOr<v1::Response> r = c->Call(bad, absl::Seconds(5));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(r.status().message(), HasSubstr("'endpoint_add.pod_name' is not valid UTF-8 (offset 4)"));
  v1::Request gc;
  gc.mutable_gc()->add_valid()->set_ifname("eth0");
  gc.mutable_gc()->add_valid()->set_ifname("e\xc3");
  EXPECT_THAT(CheckRequestUtf8(gc).message(), HasSubstr("'gc.valid[1].ifname'"));
  // Nothing was sent, and the connection is still in step for the next call.
  v1::Request ok;
  ok.mutable_status();
  r = c->CallChecked(ok, absl::Seconds(5));
  EXPECT_OK(r);
}

}  // namespace
}  // namespace sarena::rpc
