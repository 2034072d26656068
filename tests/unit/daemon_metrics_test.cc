// The Prometheus exposition writer (libsarena/daemon/metrics.h), sarenad's metric families
// (metrics_node.h) and the HTTP endpoint (metrics_server.h): the text format 0.0.4 parsed back
// line by line (escaping, cumulative histogram buckets, +Inf, _sum/_count), checked by the real
// `promtool check metrics` with no lint warning, and served by a real Server + MetricsServer
// over TCP on 127.0.0.1 (404/405, the connection limit, the timeout, 503 while the worker is
// busy, the CNI request counts fed by the server's observer).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/log.h"
#include "libsarena/cni/error.h"
#include "libsarena/daemon/metrics.h"
#include "libsarena/daemon/metrics_node.h"
#include "libsarena/daemon/metrics_server.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/rpc/client.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::daemon {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tcp = asio::ip::tcp;

// One parsed sample line: name, labels (unescaped), value text.
struct Line {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

// Parses the sample lines of a text-format page (a strict reader of what the format allows:
// name, optional {k="v",...} with \\ \" \n escapes, one space, the value). Comment lines are
// returned in `comments`. Fails the test on a malformed line.
std::vector<Line> Parse(const std::string& text, std::vector<std::string>* comments = nullptr) {
  std::vector<Line> out;
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "the page does not end in a line feed";
  for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (l[0] == '#') {
      if (comments) comments->emplace_back(l);
      continue;
    }
    Line s;
    size_t i = 0;
    while (i < l.size() && l[i] != '{' && l[i] != ' ') s.name.push_back(l[i++]);
    if (i < l.size() && l[i] == '{') {
      ++i;
      while (i < l.size() && l[i] != '}') {
        std::string k, v;
        while (i < l.size() && l[i] != '=') k.push_back(l[i++]);
        EXPECT_EQ(l.substr(i, 2), "=\"") << l;
        i += 2;
        while (i < l.size() && l[i] != '"') {
          if (l[i] == '\\' && i + 1 < l.size()) {
            ++i;
            v.push_back(l[i] == 'n' ? '\n' : l[i]);
          } else {
            v.push_back(l[i]);
          }
          ++i;
        }
        ++i;  // closing quote
        s.labels[k] = v;
        if (i < l.size() && l[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    EXPECT_EQ(l.substr(i, 1), " ") << "no single space before the value: " << l;
    s.value = std::string(l.substr(i + 1));
    EXPECT_EQ(s.value.find(' '), std::string::npos) << "a timestamp or garbage after the value: " << l;
    out.push_back(std::move(s));
  }
  return out;
}

// The value of the one sample `name` whose labels include `want`; "" when there is none.
std::string ValueOf(const std::vector<Line>& lines, const std::string& name,
                    const std::map<std::string, std::string>& want = {}) {
  std::string found;
  int n = 0;
  for (const Line& l : lines) {
    if (l.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = l.labels.find(k);
      match = match && it != l.labels.end() && it->second == v;
    }
    if (match) {
      found = l.value;
      ++n;
    }
  }
  EXPECT_LE(n, 1) << name << ": several samples match";
  return found;
}

// `promtool check metrics` (Debian's prometheus package) on `text`: exit 0 and no lint output.
void ExpectPromtoolClean(const std::string& text) {
  testing::CommandResult r = testing::Run("promtool check metrics", text);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "") << "promtool lint warnings";
}

TEST(MetricsWriterTest, CounterAndGaugeWithEscapedLabelsParseBack) {
  std::vector<MetricFamily> f = {
      {.name = "demo_requests_total",
       .type = MetricType::kCounter,
       .help = "Requests; a help text with a backslash \\ and\na line feed.",
       .samples = {{.labels = {{"path", "a\\b\"c\nd"}, {"code", "200"}}, .value = 7},
                   {.labels = {{"path", "/"}, {"code", "500"}}, .value = 0}}},
      {.name = "demo_temperature_celsius",
       .type = MetricType::kGauge,
       .help = "A gauge without labels.",
       .samples = {{.value = -2.5}}},
  };
  absl::StatusOr<std::string> text = WriteExposition(f);
  ASSERT_OK(text);
  std::vector<std::string> comments;
  std::vector<Line> lines = Parse(*text, &comments);
  EXPECT_THAT(comments, ::testing::ElementsAre(
                            "# HELP demo_requests_total Requests; a help text with a backslash "
                            "\\\\ and\\na line feed.",
                            "# TYPE demo_requests_total counter",
                            "# HELP demo_temperature_celsius A gauge without labels.",
                            "# TYPE demo_temperature_celsius gauge"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].name, "demo_requests_total");
  EXPECT_EQ(lines[0].labels.at("path"), "a\\b\"c\nd");  // round-trips through the escapes
  EXPECT_EQ(lines[0].labels.at("code"), "200");
  EXPECT_EQ(lines[0].value, "7");
  EXPECT_EQ(lines[2].name, "demo_temperature_celsius");
  EXPECT_TRUE(lines[2].labels.empty());
  EXPECT_EQ(lines[2].value, "-2.5");
  // The raw line, escapes as the format spells them.
  EXPECT_THAT(*text, HasSubstr("demo_requests_total{path=\"a\\\\b\\\"c\\nd\",code=\"200\"} 7\n"));
  ExpectPromtoolClean(*text);
}

TEST(MetricsWriterTest, HistogramBucketsAreCumulativeEndInInfAndCarrySumAndCount) {
  Histogram h({0.001, 0.01, 0.1});
  for (double v : {0.0005, 0.001, 0.003, 0.003, 0.05, 20.0}) h.Observe(v);
  HistogramValue snap = h.Snapshot();
  EXPECT_THAT(snap.bucket_counts, ::testing::ElementsAre(2, 2, 1, 1));  // 0.001 is in le=0.001
  std::vector<MetricFamily> f = {{.name = "demo_latency_seconds",
                                  .type = MetricType::kHistogram,
                                  .help = "Latency.",
                                  .samples = {{.labels = {{"verb", "ADD"}}, .histogram = snap}}}};
  absl::StatusOr<std::string> text = WriteExposition(f);
  ASSERT_OK(text);
  std::vector<Line> lines = Parse(*text);
  ASSERT_EQ(lines.size(), 6u);  // 3 bounds + +Inf + _sum + _count
  const char* want_le[] = {"0.001", "0.01", "0.1", "+Inf"};
  const char* want_n[] = {"2", "4", "5", "6"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(lines[i].name, "demo_latency_seconds_bucket");
    EXPECT_EQ(lines[i].labels.at("verb"), "ADD");
    double le = 0, want = 0;
    if (i < 3) {  // Prometheus parses le as a float: compare the numbers
      ASSERT_TRUE(absl::SimpleAtod(lines[i].labels.at("le"), &le)) << lines[i].labels.at("le");
      ASSERT_TRUE(absl::SimpleAtod(want_le[i], &want));
      EXPECT_EQ(le, want);
    } else {
      EXPECT_EQ(lines[i].labels.at("le"), "+Inf");
    }
    EXPECT_EQ(lines[i].value, want_n[i]) << "bucket " << i;
  }
  EXPECT_EQ(lines[4].name, "demo_latency_seconds_sum");
  double sum = 0;
  ASSERT_TRUE(absl::SimpleAtod(lines[4].value, &sum));
  EXPECT_DOUBLE_EQ(sum, 0.0005 + 0.001 + 0.003 + 0.003 + 0.05 + 20.0);
  EXPECT_EQ(lines[5].name, "demo_latency_seconds_count");
  EXPECT_EQ(lines[5].value, "6");
  EXPECT_EQ(lines[3].value, lines[5].value) << "+Inf bucket == _count";
  ExpectPromtoolClean(*text);
}

TEST(MetricsWriterTest, RefusesWhatPrometheusRejectsOrLints) {
  auto err = [](MetricFamily f) {
    absl::StatusOr<std::string> r = WriteExposition({f});
    EXPECT_FALSE(r.ok()) << "accepted " << f.name;
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_THAT(err({.name = "demo_requests", .type = MetricType::kCounter}), HasSubstr("_total"));
  EXPECT_THAT(err({.name = "9lives", .type = MetricType::kGauge}), HasSubstr("invalid metric name"));
  EXPECT_THAT(err({.name = "a-b", .type = MetricType::kGauge}), HasSubstr("'a-b'"));
  EXPECT_THAT(err({.name = "g", .samples = {{.labels = {{"__x", "1"}}}}}),
              HasSubstr("invalid label name '__x'"));
  EXPECT_THAT(err({.name = "g", .samples = {{.labels = {{"a.b", "1"}}}}}),
              HasSubstr("invalid label name 'a.b'"));
  EXPECT_THAT(err({.name = "g", .samples = {{.labels = {{"a", "1"}, {"a", "2"}}}}}),
              HasSubstr("label 'a' given twice"));
  HistogramValue ok{.upper_bounds = {1}, .bucket_counts = {0, 0}};
  EXPECT_THAT(err({.name = "h",
                   .type = MetricType::kHistogram,
                   .samples = {{.labels = {{"le", "1"}}, .histogram = ok}}}),
              HasSubstr("'le' is reserved"));
  EXPECT_THAT(err({.name = "h",
                   .type = MetricType::kHistogram,
                   .samples = {{.histogram = {.upper_bounds = {2, 1}, .bucket_counts = {0, 0, 0}}}}}),
              HasSubstr("strictly increasing"));
  EXPECT_THAT(err({.name = "h",
                   .type = MetricType::kHistogram,
                   .samples = {{.histogram = {.upper_bounds = {1}, .bucket_counts = {1, 0}, .count = 2}}}}),
              HasSubstr("count 2"));
  absl::StatusOr<std::string> twice =
      WriteExposition({MetricFamily{.name = "g"}, MetricFamily{.name = "g"}});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("'g' given twice"));
}

TEST(MetricsWriterTest, ValuesAndEscapes) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(42), "42");
  EXPECT_EQ(FormatSampleValue(1700000000), "1700000000");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(1e20), "1e+20");
  EXPECT_EQ(FormatSampleValue(0.005), "0.005");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatSampleValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
  EXPECT_EQ(EscapeLabelValue("x\\y\"z\nw"), "x\\\\y\\\"z\\nw");
  EXPECT_EQ(EscapeLabelValue("ünïcode"), "ünïcode");
  EXPECT_EQ(EscapeHelp("a \"quoted\" \\ \n"), "a \"quoted\" \\\\ \\n");
}

v1::Request Kind(int which) {
  v1::Request r;
  switch (which) {
    case 0: r.mutable_endpoint_add(); break;
    case 1: r.mutable_endpoint_del(); break;
    case 2: r.mutable_endpoint_check(); break;
    case 3: r.mutable_status(); break;
    case 4: r.mutable_gc(); break;
    default: r.mutable_endpoint_list(); break;
  }
  return r;
}

TEST(CniRequestMetricsTest, VerbsResultsAndLatencyHistogram) {
  EXPECT_EQ(CniRequestMetrics::VerbOf(Kind(0)), "ADD");
  EXPECT_EQ(CniRequestMetrics::VerbOf(Kind(1)), "DEL");
  EXPECT_EQ(CniRequestMetrics::VerbOf(Kind(2)), "CHECK");
  EXPECT_EQ(CniRequestMetrics::VerbOf(Kind(3)), "STATUS");
  EXPECT_EQ(CniRequestMetrics::VerbOf(Kind(4)), "GC");
  EXPECT_EQ(CniRequestMetrics::VerbOf(Kind(5)), std::nullopt);  // EndpointList: the CLI's
  v1::Response ok;
  v1::Response try_later;
  try_later.mutable_error()->set_cni_code(11);
  v1::Response unmapped;  // cni_code 0: the plugin's default mapping of the absl code
  unmapped.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(CniRequestMetrics::ResultOf(ok), "ok");
  EXPECT_EQ(CniRequestMetrics::ResultOf(try_later), "11");
  EXPECT_EQ(CniRequestMetrics::ResultOf(unmapped),
            absl::StrCat(static_cast<uint32_t>(
                cni::DefaultCniCode(absl::StatusCode::kInvalidArgument))));

  CniRequestMetrics m;
  m.Observe(Kind(0), ok, absl::Milliseconds(3));
  m.Observe(Kind(0), ok, absl::Milliseconds(40));
  m.Observe(Kind(0), try_later, absl::Seconds(30));
  m.Observe(Kind(5), ok, absl::Milliseconds(1));  // not counted
  std::vector<MetricFamily> f;
  m.AppendFamilies(&f);
  absl::StatusOr<std::string> text = WriteExposition(f);
  ASSERT_OK(text);
  std::vector<Line> lines = Parse(*text);
  EXPECT_EQ(ValueOf(lines, "sarena_cni_requests_total", {{"verb", "ADD"}, {"result", "ok"}}), "2");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_requests_total", {{"verb", "ADD"}, {"result", "11"}}), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_requests_total", {{"verb", "GC"}, {"result", "ok"}}), "0")
      << "every verb's ok series exists from the start";
  EXPECT_EQ(ValueOf(lines, "sarena_cni_request_duration_seconds_count", {{"verb", "ADD"}}), "3");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_request_duration_seconds_bucket",
                    {{"verb", "ADD"}, {"le", "0.005"}}), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_request_duration_seconds_bucket",
                    {{"verb", "ADD"}, {"le", "10"}}), "2");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_request_duration_seconds_bucket",
                    {{"verb", "ADD"}, {"le", "+Inf"}}), "3");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_request_duration_seconds_bucket",
                    {{"verb", "ADD"}, {"le", "0.001"}}), "0");
  ExpectPromtoolClean(*text);
}

NodeFigures SampleFigures(bool cluster) {
  NodeFigures f;
  v1::StatusResponse s;
  s.set_ready(true);
  s.set_pod_cidr("10.244.1.0/24");
  s.set_endpoints(2);
  s.set_ips_used(2);
  s.set_ips_free(251);
  s.set_attach_mode("tcx");
  if (cluster) {
    v1::ClusterStatus* c = s.mutable_cluster();
    c->set_node_name("n1");
    c->set_node_id(1);
    c->set_routing_mode("tunnel");
    c->set_etcd_connected(true);
    c->set_registered(true);
    c->set_synced(true);
    c->set_last_apply_unix(1700000000);
    c->set_last_apply_duration_seconds(0.004);
    v1::PeerStatus* p = c->add_peers();
    p->set_name("n2");
    p->set_node_id(2);
    p->set_tx_packets(5);
    p->set_rx_bytes(700);
    v1::PeerStatus* q = c->add_peers();
    q->set_name("n3");
    q->set_node_id(3);
    q->set_lost(true);
  }
  f.status = s;
  v1::EndpointListResponse list;
  v1::Endpoint* e = list.add_endpoints();
  e->mutable_ref()->set_container_id("c0ffee");
  e->mutable_ref()->set_ifname("eth0");
  e->set_endpoint_id(3);
  e->set_pod_namespace("default");
  e->set_pod_name("web \"1\"");
  e->set_host_ifname("lxc0123456789a");
  e->mutable_counters()->set_rx_packets(10);
  e->mutable_counters()->set_tx_bytes(1500);
  f.endpoints = list;
  std::vector<datapath::DropCounter> drops(SARENA_DROP_REASON_MAX);
  drops[SARENA_DROP_TTL_EXCEEDED].packets = 4;
  drops[SARENA_DROP_TTL_EXCEEDED].bytes = 336;
  f.drops = drops;
  return f;
}

TEST(NodeFamiliesTest, EndpointDropIpamAttachAndCluster) {
  absl::StatusOr<std::string> text = WriteExposition(NodeFamilies(SampleFigures(true)));
  ASSERT_OK(text);
  std::vector<Line> lines = Parse(*text);
  const std::map<std::string, std::string> ep = {{"endpoint_id", "3"},   {"namespace", "default"},
                                                 {"pod", "web \"1\""},    {"container_id", "c0ffee"},
                                                 {"interface", "eth0"},  {"host_interface", "lxc0123456789a"}};
  auto dir = [&ep](const char* d) {
    auto l = ep;
    l["direction"] = d;
    return l;
  };
  EXPECT_EQ(ValueOf(lines, "sarena_endpoint_packets_total", dir("rx")), "10");
  EXPECT_EQ(ValueOf(lines, "sarena_endpoint_packets_total", dir("tx")), "0");
  EXPECT_EQ(ValueOf(lines, "sarena_endpoint_bytes_total", dir("tx")), "1500");
  EXPECT_EQ(ValueOf(lines, "sarena_drop_packets_total", {{"reason", "ttl_exceeded"}}), "4");
  EXPECT_EQ(ValueOf(lines, "sarena_drop_bytes_total", {{"reason", "ttl_exceeded"}}), "336");
  // Every reason of the one list but "none", by its name.
  for (uint32_t r = 1; r < SARENA_DROP_REASON_MAX; ++r) {
    EXPECT_NE(ValueOf(lines, "sarena_drop_packets_total", {{"reason", datapath::DropReasonName(r)}}),
              "")
        << datapath::DropReasonName(r);
  }
  EXPECT_EQ(ValueOf(lines, "sarena_drop_packets_total", {{"reason", "none"}}), "");
  EXPECT_EQ(ValueOf(lines, "sarena_ipam_used_addresses", {{"pod_cidr", "10.244.1.0/24"}}), "2");
  EXPECT_EQ(ValueOf(lines, "sarena_ipam_free_addresses", {{"pod_cidr", "10.244.1.0/24"}}), "251");
  EXPECT_EQ(ValueOf(lines, "sarena_attach_mode_info", {{"mode", "tcx"}}), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_ready"), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_peers_known"), "2");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_peers_ready"), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_etcd_connected"), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_last_apply_timestamp_seconds"), "1700000000");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_last_apply_duration_seconds"), "0.004");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_peer_packets_total",
                    {{"peer", "n2"}, {"node_id", "2"}, {"direction", "tx"}}), "5");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_peer_bytes_total", {{"peer", "n2"}, {"direction", "rx"}}),
            "700");
  EXPECT_EQ(ValueOf(lines, "sarena_cluster_peer_lost", {{"peer", "n3"}}), "1");
  ExpectPromtoolClean(*text);

  absl::StatusOr<std::string> single = WriteExposition(NodeFamilies(SampleFigures(false)));
  ASSERT_OK(single);
  EXPECT_THAT(*single, ::testing::Not(HasSubstr("sarena_cluster_")));
  // Nothing known yet (a clustered node before bring-up): families, no samples, still valid.
  absl::StatusOr<std::string> empty = WriteExposition(NodeFamilies(NodeFigures{}));
  ASSERT_OK(empty);
  EXPECT_TRUE(Parse(*empty).empty());
  ExpectPromtoolClean(*empty);
}

TEST(ListenAddressTest, Forms) {
  auto at = [](const char* text) { return ParseListenAddress(text, "--metrics-address"); };
  ASSERT_OK(at("127.0.0.1:9964"));
  EXPECT_EQ(FormatEndpoint(*at("127.0.0.1:9964")), "127.0.0.1:9964");
  ASSERT_OK(at("[::1]:9964"));
  EXPECT_EQ(FormatEndpoint(*at("[::1]:9964")), "[::1]:9964");
  ASSERT_OK(at(":9964"));
  EXPECT_EQ(FormatEndpoint(*at(":9964")), "[::]:9964");
  for (const char* bad : {"", "9964", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "localhost:9964", "::1:9964", "[127.0.0.1]:9964", "[::1]9964",
                          "1.2.3.4:99x", "[]:9964"}) {
    absl::StatusOr<tcp::endpoint> r = at(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument));
      EXPECT_THAT(std::string(r.status().message()),
                  StartsWith(absl::StrCat("invalid --metrics-address '", bad, "'")));
    }
  }
}

// --- the HTTP endpoint on a real Server -----------------------------------------------------

struct HttpAnswer {
  int status = 0;
  std::string content_type;
  std::string body;
};

HttpAnswer HttpDo(uint16_t port, http::verb method, const std::string& target) {
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(method, target, 11);
  req.set(http::field::host, "127.0.0.1");
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  boost::system::error_code ec;
  http::read(s, buf, res, ec);
  if (ec) return {};
  return {static_cast<int>(res.result_int()), std::string(res[http::field::content_type]),
          res.body()};
}

// Sends `request` as bytes and returns everything the server writes until it closes.
std::string RawExchange(uint16_t port, const std::string& request) {
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  asio::write(s, asio::buffer(request));
  std::string out;
  boost::system::error_code ec;
  asio::read(s, asio::dynamic_buffer(out), ec);
  return out;
}

// Seconds until the peer closes a connection that sends nothing (-1 when not within `limit`).
double SecondsUntilClosed(uint16_t port, absl::Duration limit) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{.tv_sec = static_cast<time_t>(absl::ToInt64Seconds(limit)), .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const absl::Time t0 = absl::Now();
  char c;
  ssize_t n = ::read(fd, &c, 1);
  ::close(fd);
  return n == 0 || (n < 0 && errno == ECONNRESET) ? absl::ToDoubleSeconds(absl::Now() - t0) : -1;
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_) server_->Stop();
    metrics_.reset();  // after the I/O thread stopped, before the Server
    server_.reset();
  }

  // A Server whose handler answers ADD ok, or fails it with CNI code 11 for container "later";
  // its observer feeds cni_; a MetricsServer on 127.0.0.1:<free port> rendering cni_'s families.
  void StartServers(MetricsServerOptions mo) {
    ServerOptions so;
    so.socket_path = dir_.Path("s.sock");
    so.allowed_uids = {};
    so.observe = [this](const v1::Request& q, const v1::Response& r, absl::Duration d) {
      cni_.Observe(q, r, d);
    };
    auto server = Server::Create(so, [](const v1::Request& q, const PeerCred&) {
      v1::Response r;
      if (q.has_endpoint_add() && q.endpoint_add().ref().container_id() == "later") {
        r.mutable_error()->set_cni_code(11);
        r.mutable_error()->set_message("try again later");
      } else if (q.has_endpoint_add()) {
        r.mutable_endpoint_add();
      }
      return r;
    });
    ASSERT_OK(server);
    server_ = *std::move(server);
    mo.address = tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0);
    auto metrics = MetricsServer::Create(*server_, mo, [this]() -> absl::StatusOr<std::string> {
      renders_on_worker_ += (std::this_thread::get_id() != io_thread_) ? 1 : 0;
      std::vector<MetricFamily> f;
      cni_.AppendFamilies(&f);
      return WriteExposition(f);
    });
    ASSERT_OK(metrics);
    metrics_ = *std::move(metrics);
    port_ = metrics_->local_endpoint().port();
    ASSERT_NE(port_, 0);
    ASSERT_OK(server_->Start());
    // The I/O thread's id, for "rendered on the worker, not the I/O thread".
    std::atomic<bool> got{false};
    asio::post(server_->io_context(), [this, &got] {
      io_thread_ = std::this_thread::get_id();
      got = true;
    });
    while (!got) absl::SleepFor(absl::Milliseconds(1));
  }

  testing::TempDir dir_{"sarena-metrics-"};
  CniRequestMetrics cni_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<MetricsServer> metrics_;
  uint16_t port_ = 0;
  std::thread::id io_thread_;
  std::atomic<int> renders_on_worker_{0};
};

TEST_F(MetricsServerTest, ServesMetricsCountsRequestsAnd404sOtherPaths) {
  StartServers({});
  for (const char* cid : {"a", "b", "later"}) {
    auto c = rpc::Client::Connect(dir_.Path("s.sock"));
    ASSERT_OK(c);
    v1::Request q;
    q.mutable_endpoint_add()->mutable_ref()->set_container_id(cid);
    ASSERT_OK(c->Call(q));
  }
  HttpAnswer a = HttpDo(port_, http::verb::get, "/metrics");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "text/plain; version=0.0.4; charset=utf-8");
  std::vector<Line> lines = Parse(a.body);
  EXPECT_EQ(ValueOf(lines, "sarena_cni_requests_total", {{"verb", "ADD"}, {"result", "ok"}}), "2");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_requests_total", {{"verb", "ADD"}, {"result", "11"}}), "1");
  EXPECT_EQ(ValueOf(lines, "sarena_cni_request_duration_seconds_count", {{"verb", "ADD"}}), "3");
  EXPECT_GE(renders_on_worker_.load(), 1) << "rendered on the worker thread";
  ExpectPromtoolClean(a.body);
  EXPECT_EQ(HttpDo(port_, http::verb::get, "/metrics?x=1").status, 200);
  EXPECT_EQ(HttpDo(port_, http::verb::get, "/").status, 404);
  EXPECT_EQ(HttpDo(port_, http::verb::get, "/metricsx").status, 404);
  EXPECT_EQ(HttpDo(port_, http::verb::post, "/metrics").status, 405);
  MetricsServerStats st = metrics_->stats();
  EXPECT_EQ(st.served, 2u);
  EXPECT_EQ(st.rejected, 3u);

  // HEAD /metrics: GET's status line and headers, Content-Length of the page, no body.
  const std::string head = RawExchange(port_, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  const size_t end = head.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << head;
  EXPECT_EQ(end + 4, head.size()) << "a HEAD response has no body: " << head;
  const size_t cl = head.find("Content-Length: ");
  ASSERT_NE(cl, std::string::npos) << head;
  EXPECT_GT(std::stoul(head.substr(cl + 16)), 1000u) << "the GET page's length";
  EXPECT_THAT(RawExchange(port_, "PUT /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
              HasSubstr("Allow: GET, HEAD\r\n"));
}

TEST_F(MetricsServerTest, OversizedRequestIsRefused) {
  StartServers({.max_request_bytes = 512});
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  http::request<http::string_body> req(http::verb::get, "/metrics", 11);
  req.set("X-Padding", std::string(4096, 'x'));
  boost::system::error_code ec;
  http::write(s, req, ec);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(s, buf, res, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result_int(), 431u);
}

TEST_F(MetricsServerTest, SilentConnectionsAreBoundedInNumberAndTime) {
  StartServers({.max_connections = 3,
                .timeout = absl::Seconds(2),
                .collect_timeout = absl::Milliseconds(300)});
  // Three silent peers hold every slot; a fourth is closed at once; all are gone after timeout.
  std::vector<std::thread> holders;
  std::vector<double> held(3, -1);
  for (int i = 0; i < 3; ++i) {
    holders.emplace_back([&, i] { held[i] = SecondsUntilClosed(port_, absl::Seconds(5)); });
  }
  ASSERT_TRUE([&] {
    for (int i = 0; i < 500 && metrics_->stats().active < 3; ++i) absl::SleepFor(absl::Milliseconds(2));
    return metrics_->stats().active == 3;
  }());
  std::atomic<int> refusal_lines{0};
  sarena::SetLogSink([&refusal_lines](sarena::LogLevel, absl::string_view m) {
    if (absl::StrContains(m, "metrics: connection refused")) ++refusal_lines;
  });
  const double refused = SecondsUntilClosed(port_, absl::Seconds(5));
  EXPECT_GE(refused, 0);
  EXPECT_LT(refused, 1.0) << "the connection beyond max_connections is closed at once, not by "
                             "the 2 s timeout";
  // A flood of refused connections is logged once, not once each.
  for (int i = 0; i < 20; ++i) EXPECT_GE(SecondsUntilClosed(port_, absl::Seconds(1)), 0);
  sarena::SetLogSink(nullptr);
  EXPECT_EQ(refusal_lines.load(), 1) << "21 refusals within 10 s: one log line";
  for (auto& t : holders) t.join();
  for (double h : held) {
    EXPECT_GE(h, 1.5) << "closed by the timeout, not before";
    EXPECT_LT(h, 5.0) << "closed by the timeout";
  }
  EXPECT_EQ(metrics_->stats().refused, 21u);
  EXPECT_EQ(metrics_->stats().timed_out, 3u);
  // And the server still answers.
  EXPECT_EQ(HttpDo(port_, http::verb::get, "/metrics").status, 200);
}

TEST_F(MetricsServerTest, BusyWorkerGets503AndScrapesShareOneRendering) {
  StartServers({.timeout = absl::Seconds(3), .collect_timeout = absl::Milliseconds(300)});
  std::atomic<bool> release{false};
  server_->PostToWorker([&release] {
    while (!release) absl::SleepFor(absl::Milliseconds(5));
  });
  std::vector<std::thread> scrapes;
  std::vector<int> codes(4, 0);
  for (int i = 0; i < 4; ++i) {
    scrapes.emplace_back([&, i] { codes[i] = HttpDo(port_, http::verb::get, "/metrics").status; });
  }
  for (auto& t : scrapes) t.join();
  EXPECT_THAT(codes, ::testing::Each(503));
  EXPECT_EQ(metrics_->stats().renders, 1u) << "one rendering queued on the worker, not four";
  release = true;
  for (int i = 0; i < 200 && renders_on_worker_.load() < 1; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(HttpDo(port_, http::verb::get, "/metrics").status, 200);
}

}  // namespace
}  // namespace sarena::daemon
