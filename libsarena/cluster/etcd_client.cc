#include "libsarena/cluster/etcd_client.h"

#include <optional>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libsarena/base/numbers.h"
#include "google/protobuf/util/json_util.h"

namespace sarena::cluster {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using GenericSocket = asio::generic::stream_protocol::socket;
using GenericEndpoint = asio::generic::stream_protocol::endpoint;

constexpr absl::string_view kCompactPayload = "sarena.etcd/compact_revision";
constexpr uint64_t kBodyLimit = 256u << 20;  // a full node list of a large cluster fits

absl::Status IoError(const Endpoint& ep, absl::string_view what,
                     const boost::system::error_code& ec) {
  return absl::UnavailableError(
      absl::StrCat("etcd ", ep.ToString(), ": ", what, ": ", ec.message()));
}

absl::Status Timeout(const Endpoint& ep, absl::string_view what, absl::Duration timeout) {
  return absl::DeadlineExceededError(absl::StrCat("etcd ", ep.ToString(), ": ", what,
                                                  " did not complete within ",
                                                  absl::FormatDuration(timeout)));
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

absl::Status FromJson(absl::string_view json, google::protobuf::Message* m,
                      absl::string_view what) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), m, opts);
  if (!st.ok()) {
    return absl::InternalError(absl::StrCat("etcd answer to ", what, " is not the expected JSON (",
                                            st.ToString(), "): ", json.substr(0, 200)));
  }
  return absl::OkStatus();
}

absl::StatusCode CodeOf(int grpc_code) {
  if (grpc_code <= 0 || grpc_code > 16) return absl::StatusCode::kUnknown;
  return static_cast<absl::StatusCode>(grpc_code);  // absl codes are gRPC's codes
}

/// Incremental state of TakeJsonObject over a growing buffer, so a message arriving in many
/// reads is scanned once, not once per read.
struct JsonScan {
  size_t pos = 0;  // next byte to scan
  int depth = 0;
  bool in_str = false, esc = false;
};

/// Takes the first complete top-level JSON object out of `buf` (string- and escape-aware);
/// `scan` carries the progress over calls while `buf` only grows at its end.
std::optional<std::string> TakeJsonObject(std::string& buf, JsonScan& scan) {
  if (scan.depth == 0 && !scan.in_str) {
    size_t start = buf.find('{', scan.pos);
    if (start == std::string::npos) {
      buf.clear();
      scan = JsonScan{};
      return std::nullopt;
    }
    buf.erase(0, start);
    scan = JsonScan{};
  }
  for (size_t i = scan.pos; i < buf.size(); ++i) {
    char c = buf[i];
    if (scan.in_str) {
      if (scan.esc) scan.esc = false;
      else if (c == '\\') scan.esc = true;
      else if (c == '"') scan.in_str = false;
      continue;
    }
    if (c == '"') scan.in_str = true;
    else if (c == '{') ++scan.depth;
    else if (c == '}' && --scan.depth == 0) {
      std::string obj = buf.substr(0, i + 1);
      buf.erase(0, i + 1);
      scan = JsonScan{};
      return obj;
    }
  }
  scan.pos = buf.size();
  return std::nullopt;
}

std::optional<std::string> TakeJsonObject(std::string& buf) {
  JsonScan scan;
  return TakeJsonObject(buf, scan);
}

/// Runs `ioc` until `*done` or `timeout`. On timeout closes `sock` (aborting the operations) and
/// drains them. Returns true when the operation completed in time.
bool RunUntil(asio::io_context& ioc, GenericSocket& sock, const bool* done,
              absl::Duration timeout) {
  ioc.restart();
  absl::Time deadline = absl::Now() + timeout;
  while (!*done) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    ioc.run_for(absl::ToChronoMilliseconds(left) + std::chrono::milliseconds(1));
    if (ioc.stopped() && !*done) ioc.restart();
  }
  if (*done) return true;
  boost::system::error_code ignored;
  sock.close(ignored);
  ioc.restart();
  ioc.run();
  return false;
}

/// Connects `sock` to `ep` within `timeout`.
absl::Status ConnectTo(asio::io_context& ioc, GenericSocket& sock, const Endpoint& ep,
                       absl::Duration timeout) {
  GenericEndpoint gep;
  if (ep.kind == Endpoint::Kind::kUnix) {
    gep = GenericEndpoint(asio::local::stream_protocol::endpoint(ep.path));
  } else {
    asio::ip::tcp::resolver resolver(ioc);
    boost::system::error_code ec;
    auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
    if (ec || results.empty()) return IoError(ep, "resolve", ec);
    gep = GenericEndpoint(results.begin()->endpoint());
  }
  boost::system::error_code ec;
  if (sock.is_open()) sock.close(ec);
  sock.open(gep.protocol(), ec);
  if (ec) return IoError(ep, "socket", ec);
  bool done = false;
  boost::system::error_code result;
  sock.async_connect(gep, [&](const boost::system::error_code& e) {
    result = e;
    done = true;
  });
  if (!RunUntil(ioc, sock, &done, timeout)) return Timeout(ep, "connect", timeout);
  if (result) {
    sock.close(ec);
    return IoError(ep, "connect", result);
  }
  return absl::OkStatus();
}

http::request<http::string_body> MakeRequest(absl::string_view path, absl::string_view body) {
  http::request<http::string_body> req{http::verb::post, std::string(path), 11};
  req.set(http::field::host, "localhost");
  req.set(http::field::content_type, "application/json");
  req.keep_alive(true);
  req.body() = std::string(body);
  req.prepare_payload();
  return req;
}

absl::Status StreamError(const etcd::GatewayStreamError& e, absl::string_view what) {
  return absl::Status(CodeOf(e.grpc_code()), absl::StrCat("etcd ", what, ": ", e.message()));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string Endpoint::ToString() const {
  if (kind == Kind::kUnix) return absl::StrCat("unix://", path);
  return absl::StrCat("http://", host, ":", port);
}

absl::StatusOr<std::vector<Endpoint>> ParseEndpoints(absl::string_view text) {
  std::vector<Endpoint> out;
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid etcd endpoints '", text, "': no endpoint given"));
  }
  size_t position = 0;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    ++position;
    part = absl::StripAsciiWhitespace(part);
    // "a,", ",a" or "a,,b": an empty element is a typo, never an endpoint to skip.
    if (part.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid etcd endpoints '", text,
                                                      "': endpoint ", position, " is empty"));
    }
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid etcd endpoint '", part, "': ", why));
    };
    Endpoint ep;
    absl::string_view rest = part;
    if (absl::ConsumePrefix(&rest, "unix://")) {
      if (rest.empty() || rest[0] != '/') {
        return bad("a unix endpoint needs an absolute path (unix:///dir/etcd.sock:2379)");
      }
      ep.kind = Endpoint::Kind::kUnix;
      ep.path = std::string(rest);
    } else if (absl::ConsumePrefix(&rest, "http://")) {
      absl::ConsumeSuffix(&rest, "/");
      size_t colon = rest.rfind(':');
      if (colon == absl::string_view::npos || colon == 0) return bad("expected http://host:port");
      const uint64_t port = ParseCanonicalUint(rest.substr(colon + 1), 65535).value_or(0);
      if (port == 0) {
        return bad("the port is not a decimal number in 1..65535");
      }
      ep.kind = Endpoint::Kind::kTcp;
      ep.host = std::string(rest.substr(0, colon));
      if (ep.host.size() > 2 && ep.host.front() == '[' && ep.host.back() == ']') {
        ep.host = ep.host.substr(1, ep.host.size() - 2);
      }
      ep.port = static_cast<uint16_t>(port);
    } else {
      return bad("expected unix:///path or http://host:port (https is not supported)");
    }
    out.push_back(std::move(ep));
  }
  return out;
}

std::string PrefixRangeEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

int64_t CompactRevisionOf(const absl::Status& status) {
  auto p = status.GetPayload(kCompactPayload);
  if (!p) return 0;
  int64_t rev = 0;
  (void)absl::SimpleAtoi(std::string(*p), &rev);
  return rev;
}

// ---------------------------------------------------------------------------------------------

struct EtcdClient::Conn {
  asio::io_context ioc;
  GenericSocket sock{ioc};
  boost::beast::flat_buffer buf;
  size_t endpoint = 0;  // index of the endpoint connected (or to try first)
  bool open = false;
};

EtcdClient::EtcdClient(std::vector<Endpoint> endpoints)
    : endpoints_(std::move(endpoints)), conn_(std::make_unique<Conn>()) {}
EtcdClient::~EtcdClient() = default;

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(absl::string_view endpoints) {
  auto eps = ParseEndpoints(endpoints);
  if (!eps.ok()) return eps.status();
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(*eps)));
}

absl::StatusOr<std::string> EtcdClient::Post(absl::string_view path, absl::string_view body_json,
                                             absl::Duration timeout) {
  Conn& c = *conn_;
  absl::Time deadline = absl::Now() + timeout;
  // A reused keep-alive connection may have been closed by etcd meanwhile: one retry on a fresh
  // connection when the failure came before any answer byte.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = c.open;
    if (!c.open) {
      absl::Status last;
      for (size_t i = 0; i < endpoints_.size(); ++i) {
        size_t idx = (c.endpoint + i) % endpoints_.size();
        last = ConnectTo(c.ioc, c.sock, endpoints_[idx], deadline - absl::Now());
        if (last.ok()) {
          c.endpoint = idx;
          c.open = true;
          c.buf.clear();
          break;
        }
      }
      if (!c.open) return last;
    }
    const Endpoint& ep = endpoints_[c.endpoint];
    auto req = MakeRequest(path, body_json);
    http::response_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    bool done = false;
    boost::system::error_code result;
    bool got_bytes = false;
    http::async_write(c.sock, req, [&](const boost::system::error_code& e, size_t) {
      if (e) {
        result = e;
        done = true;
        return;
      }
      http::async_read(c.sock, c.buf, parser, [&](const boost::system::error_code& e2, size_t n) {
        result = e2;
        got_bytes = n > 0;
        done = true;
      });
    });
    absl::Duration left = deadline - absl::Now();
    if (left < absl::ZeroDuration()) left = absl::ZeroDuration();
    if (!RunUntil(c.ioc, c.sock, &done, left)) {
      c.open = false;
      return Timeout(ep, absl::StrCat("POST ", path), timeout);
    }
    if (result) {
      boost::system::error_code ignored;
      c.sock.close(ignored);
      c.open = false;
      if (reused && !got_bytes && attempt == 0) continue;
      return IoError(ep, absl::StrCat("POST ", path), result);
    }
    auto& resp = parser.get();
    if (!resp.keep_alive()) {
      boost::system::error_code ignored;
      c.sock.close(ignored);
      c.open = false;
    }
    if (resp.result() != http::status::ok) {
      etcd::GatewayError err;
      if (FromJson(resp.body(), &err, path).ok() && err.code() != 0) {
        return absl::Status(CodeOf(err.code()),
                            absl::StrCat("etcd ", path, ": ", err.error().empty() ? err.message()
                                                                                : err.error()));
      }
      return absl::UnavailableError(absl::StrCat("etcd ", ep.ToString(), " ", path, ": HTTP ",
                                                 resp.result_int(), ": ",
                                                 resp.body().substr(0, 200)));
    }
    return std::move(resp.body());
  }
  return absl::UnavailableError("etcd: unreachable");  // not reached
}

template <typename Req, typename Resp>
absl::StatusOr<Resp> EtcdClient::Unary(absl::string_view path, const Req& req,
                                       absl::Duration timeout) {
  auto body = Post(path, ToJson(req), timeout);
  if (!body.ok()) return body.status();
  Resp resp;
  if (auto st = FromJson(*body, &resp, path); !st.ok()) return st;
  return resp;
}

absl::StatusOr<etcd::RangeResponse> EtcdClient::Range(absl::string_view key,
                                                      absl::string_view range_end,
                                                      int64_t revision, int64_t limit,
                                                      absl::Duration timeout) {
  etcd::RangeRequest req;
  req.set_key(std::string(key));
  req.set_range_end(std::string(range_end));
  req.set_revision(revision);
  req.set_limit(limit);
  return Unary<etcd::RangeRequest, etcd::RangeResponse>("/v3/kv/range", req, timeout);
}

absl::StatusOr<etcd::RangeResponse> EtcdClient::RangePrefix(absl::string_view prefix,
                                                            absl::Duration timeout) {
  return Range(prefix, PrefixRangeEnd(prefix), 0, 0, timeout);
}

absl::StatusOr<etcd::PutResponse> EtcdClient::Put(absl::string_view key, absl::string_view value,
                                                  int64_t lease, absl::Duration timeout) {
  etcd::PutRequest req;
  req.set_key(std::string(key));
  req.set_value(std::string(value));
  req.set_lease(lease);
  return Unary<etcd::PutRequest, etcd::PutResponse>("/v3/kv/put", req, timeout);
}

absl::StatusOr<etcd::DeleteRangeResponse> EtcdClient::DeleteRange(absl::string_view key,
                                                                  absl::string_view range_end,
                                                                  absl::Duration timeout) {
  etcd::DeleteRangeRequest req;
  req.set_key(std::string(key));
  req.set_range_end(std::string(range_end));
  return Unary<etcd::DeleteRangeRequest, etcd::DeleteRangeResponse>("/v3/kv/deleterange", req,
                                                                    timeout);
}

absl::StatusOr<etcd::TxnResponse> EtcdClient::Txn(const etcd::TxnRequest& txn,
                                                  absl::Duration timeout) {
  return Unary<etcd::TxnRequest, etcd::TxnResponse>("/v3/kv/txn", txn, timeout);
}

absl::StatusOr<bool> EtcdClient::PutIfAbsent(absl::string_view key, absl::string_view value,
                                             int64_t lease, etcd::KeyValue* existing,
                                             absl::Duration timeout) {
  etcd::TxnRequest txn;
  auto* cmp = txn.add_compare();
  cmp->set_key(std::string(key));
  cmp->set_target(etcd::Compare::CREATE);
  cmp->set_result(etcd::Compare::EQUAL);
  cmp->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(std::string(key));
  put->set_value(std::string(value));
  put->set_lease(lease);
  txn.add_failure()->mutable_request_range()->set_key(std::string(key));
  auto resp = Txn(txn, timeout);
  if (!resp.ok()) return resp.status();
  if (!resp->succeeded() && existing != nullptr) {
    existing->Clear();
    if (resp->responses_size() > 0 && resp->responses(0).response_range().kvs_size() > 0) {
      *existing = resp->responses(0).response_range().kvs(0);
    }
  }
  return resp->succeeded();
}

namespace {
// The compare "mod_revision(key) == mod_revision" (etcd API: Compare, target MOD).
void AddModRevisionEquals(etcd::TxnRequest& txn, absl::string_view key, int64_t mod_revision) {
  auto* cmp = txn.add_compare();
  cmp->set_key(std::string(key));
  cmp->set_target(etcd::Compare::MOD);
  cmp->set_result(etcd::Compare::EQUAL);
  cmp->set_mod_revision(mod_revision);
}
}  // namespace

absl::StatusOr<bool> EtcdClient::PutIfModRevision(absl::string_view key, absl::string_view value,
                                                  int64_t mod_revision, int64_t lease,
                                                  absl::Duration timeout) {
  etcd::TxnRequest txn;
  AddModRevisionEquals(txn, key, mod_revision);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(std::string(key));
  put->set_value(std::string(value));
  put->set_lease(lease);
  auto resp = Txn(txn, timeout);
  if (!resp.ok()) return resp.status();
  return resp->succeeded();
}

absl::StatusOr<bool> EtcdClient::DeleteIfModRevision(absl::string_view key, int64_t mod_revision,
                                                     absl::Duration timeout) {
  etcd::TxnRequest txn;
  AddModRevisionEquals(txn, key, mod_revision);
  txn.add_success()->mutable_request_delete_range()->set_key(std::string(key));
  auto resp = Txn(txn, timeout);
  if (!resp.ok()) return resp.status();
  return resp->succeeded();
}

absl::StatusOr<etcd::LeaseGrantResponse> EtcdClient::LeaseGrant(absl::Duration ttl,
                                                                absl::Duration timeout) {
  etcd::LeaseGrantRequest req;
  req.set_ttl(std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)))));
  auto resp =
      Unary<etcd::LeaseGrantRequest, etcd::LeaseGrantResponse>("/v3/lease/grant", req, timeout);
  if (!resp.ok()) return resp.status();
  if (!resp->error().empty() || resp->id() == 0) {
    return absl::InternalError(absl::StrCat("etcd lease grant (TTL ", req.ttl(),
                                            " s) failed: ", resp->error()));
  }
  return resp;
}

absl::StatusOr<absl::Duration> EtcdClient::LeaseKeepAlive(int64_t id, absl::Duration timeout) {
  etcd::LeaseKeepAliveRequest req;
  req.set_id(id);
  auto body = Post("/v3/lease/keepalive", ToJson(req), timeout);
  if (!body.ok()) return body.status();
  std::string buf = std::move(*body);
  auto obj = TakeJsonObject(buf);
  if (!obj) {
    return absl::InternalError(absl::StrCat("etcd lease keepalive of ", id, ": empty answer"));
  }
  etcd::KeepAliveStreamMessage msg;
  if (auto st = FromJson(*obj, &msg, "/v3/lease/keepalive"); !st.ok()) return st;
  if (msg.has_error()) return StreamError(msg.error(), absl::StrCat("lease keepalive of ", id));
  if (msg.result().ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", id, " has expired or was revoked"));
  }
  return absl::Seconds(msg.result().ttl());
}

absl::StatusOr<absl::Duration> EtcdClient::LeaseTimeToLive(int64_t id, absl::Duration timeout) {
  etcd::LeaseTimeToLiveRequest req;
  req.set_id(id);
  auto resp = Unary<etcd::LeaseTimeToLiveRequest, etcd::LeaseTimeToLiveResponse>(
      "/v3/lease/timetolive", req, timeout);
  if (!resp.ok()) return resp.status();
  if (resp->ttl() < 0) return absl::NotFoundError(absl::StrCat("etcd lease ", id, " not found"));
  return absl::Seconds(resp->ttl());
}

absl::Status EtcdClient::LeaseRevoke(int64_t id, absl::Duration timeout) {
  etcd::LeaseRevokeRequest req;
  req.set_id(id);
  auto resp =
      Unary<etcd::LeaseRevokeRequest, etcd::LeaseRevokeResponse>("/v3/lease/revoke", req, timeout);
  return resp.status();
}

absl::Status EtcdClient::Compact(int64_t revision, absl::Duration timeout) {
  etcd::CompactionRequest req;
  req.set_revision(revision);
  req.set_physical(true);
  auto resp =
      Unary<etcd::CompactionRequest, etcd::CompactionResponse>("/v3/kv/compaction", req, timeout);
  return resp.status();
}

// ---------------------------------------------------------------------------------------------

struct Watch::Stream {
  Endpoint ep;
  asio::io_context ioc;
  GenericSocket sock{ioc};
  boost::beast::flat_buffer buf;
  http::response_parser<http::buffer_body> parser;
  http::request<http::string_body> req;
  char chunk[65536];
  std::string pending;       // body bytes not yet consumed as JSON objects
  JsonScan scan;             // TakeJsonObject's progress through `pending`
  bool reading = false;      // an async read is outstanding
  bool header_done = false;
  absl::Status dead;         // set once the stream is unusable

  void StartRead() {
    reading = true;
    if (!header_done) {
      http::async_read_header(sock, buf, parser, [this](const boost::system::error_code& e,
                                                        size_t) {
        reading = false;
        if (e) {
          dead = IoError(ep, "watch", e);
          return;
        }
        header_done = true;
        if (parser.get().result() != http::status::ok) {
          dead = absl::UnavailableError(absl::StrCat("etcd ", ep.ToString(), " /v3/watch: HTTP ",
                                                     parser.get().result_int()));
        }
      });
      return;
    }
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof(chunk);
    http::async_read_some(sock, buf, parser, [this](boost::system::error_code e, size_t) {
      reading = false;
      size_t n = sizeof(chunk) - parser.get().body().size;
      pending.append(chunk, n);
      if (e == http::error::need_buffer) e = {};
      if (e) {
        dead = IoError(ep, "watch stream", e);
      } else if (parser.is_done()) {
        dead = absl::UnavailableError(absl::StrCat("etcd ", ep.ToString(),
                                                   ": the watch stream ended"));
      }
    });
  }

  /// Next message (created / canceled / events), waiting until `deadline`.
  absl::StatusOr<etcd::WatchResponse> NextMessage(absl::Time deadline, absl::Duration timeout) {
    while (true) {
      if (auto obj = TakeJsonObject(pending, scan)) {
        etcd::WatchStreamMessage msg;
        if (auto st = FromJson(*obj, &msg, "/v3/watch"); !st.ok()) {
          dead = st;
          return st;
        }
        if (msg.has_error()) {
          dead = StreamError(msg.error(), "watch");
          if (dead.code() != absl::StatusCode::kOutOfRange) {
            dead = absl::UnavailableError(dead.message());
          }
          return dead;
        }
        const auto& r = msg.result();
        if (r.canceled()) {
          if (r.compact_revision() > 0) {
            dead = absl::OutOfRangeError(absl::StrCat(
                "etcd watch: revision compacted (compact revision ", r.compact_revision(), ")"));
            dead.SetPayload(kCompactPayload, absl::Cord(absl::StrCat(r.compact_revision())));
          } else {
            dead = absl::UnavailableError(
                absl::StrCat("etcd cancelled the watch: ", r.cancel_reason()));
          }
          return dead;
        }
        return r;
      }
      if (!dead.ok()) return dead;
      if (!reading) StartRead();
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(absl::StrCat(
            "etcd watch: no message within ", absl::FormatDuration(timeout)));
      }
      ioc.restart();
      ioc.run_for(absl::ToChronoMilliseconds(left) + std::chrono::milliseconds(1));
    }
  }

  ~Stream() {
    boost::system::error_code ignored;
    sock.close(ignored);
    ioc.restart();
    ioc.poll();
  }
};

Watch::Watch(std::unique_ptr<Stream> stream) : stream_(std::move(stream)) {}
Watch::~Watch() = default;

absl::StatusOr<WatchBatch> Watch::Next(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    auto msg = stream_->NextMessage(deadline, timeout);
    if (!msg.ok()) return msg.status();
    if (msg->created() && msg->events_size() == 0) continue;
    if (msg->fragment()) {
      return absl::UnimplementedError("etcd watch: fragmented answers are not requested");
    }
    WatchBatch batch;
    batch.revision = msg->header().revision();
    batch.events.assign(msg->events().begin(), msg->events().end());
    return batch;
  }
}

absl::StatusOr<std::unique_ptr<Watch>> EtcdClient::OpenWatch(absl::string_view key,
                                                        absl::string_view range_end,
                                                        int64_t start_revision,
                                                        absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  etcd::WatchRequest wr;
  auto* cr = wr.mutable_create_request();
  cr->set_key(std::string(key));
  cr->set_range_end(std::string(range_end));
  cr->set_start_revision(start_revision);
  absl::Status last = absl::UnavailableError("etcd: no endpoint");
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const Endpoint& ep = endpoints_[(conn_->endpoint + i) % endpoints_.size()];
    auto s = std::make_unique<Watch::Stream>();
    s->ep = ep;
    last = ConnectTo(s->ioc, s->sock, ep, deadline - absl::Now());
    if (!last.ok()) continue;
    s->parser.body_limit(boost::none);
    s->req = MakeRequest("/v3/watch", ToJson(wr));
    bool done = false;
    boost::system::error_code result;
    http::async_write(s->sock, s->req, [&](const boost::system::error_code& e, size_t) {
      result = e;
      done = true;
    });
    if (!RunUntil(s->ioc, s->sock, &done, deadline - absl::Now())) {
      return Timeout(ep, "watch request", timeout);
    }
    if (result) {
      last = IoError(ep, "watch request", result);
      continue;
    }
    // Wait for "created" (or the cancellation of a compacted start revision).
    while (true) {
      auto msg = s->NextMessage(deadline, timeout);
      if (!msg.ok()) return msg.status();
      if (msg->created()) {
        // etcd may put the first events in the created message; keep them for Next().
        if (msg->events_size() > 0) {
          etcd::WatchStreamMessage again;
          *again.mutable_result() = *msg;
          again.mutable_result()->set_created(false);
          s->pending.insert(0, ToJson(again));
          s->scan = JsonScan{};  // `pending` changed at its front
        }
        break;
      }
    }
    return std::unique_ptr<cluster::Watch>(new cluster::Watch(std::move(s)));
  }
  return last;
}

}  // namespace sarena::cluster
