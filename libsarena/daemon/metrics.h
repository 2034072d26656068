// The Prometheus text exposition format, version 0.0.4 (Prometheus documentation, "Exposition
// formats", https://prometheus.io/docs/instrumenting/exposition_formats/): a small data model of
// metric families, the writer that renders them, a fixed-bucket histogram, and sarenad's CNI
// request figures (counts by verb and result, the latency histogram).
//
// The writer knows nothing of sarenad: it renders any families (metrics_node.h builds sarenad's;
// metrics_server.h serves them over HTTP). It refuses what Prometheus would reject or
// `promtool check metrics` would lint: invalid metric or label names, a counter whose name does
// not end in "_total", a histogram with the reserved label "le", a family named twice, a label
// named twice in one sample.
#ifndef LIBSARENA_DAEMON_METRICS_H_
#define LIBSARENA_DAEMON_METRICS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::daemon {

/// The Content-Type of a text-format 0.0.4 response.
inline constexpr char kExpositionContentType[] = "text/plain; version=0.0.4; charset=utf-8";

/// The metric types this writer renders (the format's "# TYPE" values "counter", "gauge",
/// "histogram").
enum class MetricType { kCounter, kGauge, kHistogram };

/// "counter", "gauge", "histogram".
absl::string_view ToString(MetricType type);

/// One label: name and value. Names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__"
/// (reserved); values are any UTF-8 text (the writer escapes them).
using Labels = std::vector<std::pair<std::string, std::string>>;

/// A histogram's state: `upper_bounds` strictly increasing and finite (seconds, bytes, ...);
/// `bucket_counts[i]` = observations v with upper_bounds[i-1] < v <= upper_bounds[i] — NOT
/// cumulative, the writer accumulates — and bucket_counts.back() = those above the last bound
/// (the +Inf bucket), so bucket_counts.size() == upper_bounds.size() + 1; `sum` of the
/// observed values; count = the total of bucket_counts.
struct HistogramValue {
  std::vector<double> upper_bounds;
  std::vector<uint64_t> bucket_counts;
  double sum = 0;
  uint64_t count = 0;
};

/// One time series of a family: its labels and its value (counter, gauge) or histogram.
struct MetricSample {
  Labels labels;
  double value = 0;          // kCounter / kGauge
  HistogramValue histogram;  // kHistogram
};

/// A metric family: one "# HELP" and one "# TYPE" line, then its samples. `name` matches
/// [a-zA-Z_:][a-zA-Z0-9_:]*; a counter's ends in "_total" (the sample name is the family name
/// in format 0.0.4); a histogram's samples are <name>_bucket{le="..."}, <name>_sum and
/// <name>_count.
struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::vector<MetricSample> samples;
};

/// Renders `families` in their order, each as "# HELP name text", "# TYPE name type" and one
/// line per sample ("name{l1=\"v1\",...} value"); histograms as cumulative buckets ending in
/// le="+Inf" (whose count equals _count), then _sum and _count. Every line ends in "\n".
/// Errors: kInvalidArgument naming the family (and label) for a bad metric or label name, a
/// counter not ending in "_total", the label "le" on a histogram, a duplicate family or label
/// name, or a histogram whose bounds are not strictly increasing and finite or whose counts do
/// not match its bounds and count.
absl::StatusOr<std::string> WriteExposition(absl::Span<const MetricFamily> families);

/// A label value as the format writes it between double quotes: backslash -> \\, double quote
/// -> \", line feed -> \n; everything else as is.
std::string EscapeLabelValue(absl::string_view value);
/// A HELP text as the format writes it: backslash -> \\, line feed -> \n.
std::string EscapeHelp(absl::string_view help);
/// A sample value (or histogram bound) as the format writes it, text that reads back as the
/// same double: integral values below 2^63 in decimal ("42", "1700000000"), others the
/// shortest round-trip form of std::to_chars ("0.005", "1e+20"), "+Inf", "-Inf", "NaN".
std::string FormatSampleValue(double value);

/// A histogram with fixed bucket bounds, safe to Observe and Snapshot from any thread.
class Histogram {
 public:
  /// `upper_bounds` strictly increasing and finite (checked by WriteExposition on output).
  explicit Histogram(std::vector<double> upper_bounds);
  /// Counts `value` in the first bucket whose bound is >= value (the +Inf one when none).
  void Observe(double value);
  HistogramValue Snapshot() const;

 private:
  mutable std::mutex mu_;
  HistogramValue v_;
};

/// sarena_cni_request_duration_seconds' bucket bounds, seconds: 1 ms to 10 s in 1-2.5-5 steps.
const std::vector<double>& CniLatencyBuckets();

/// The CNI requests sarenad executed: sarena_cni_requests_total{verb,result} and
/// sarena_cni_request_duration_seconds{verb}. Thread-safe. Every verb's "ok" series and
/// histogram exist (zero) from the start, so rate() works from the first scrape.
class CniRequestMetrics {
 public:
  CniRequestMetrics();
  /// The CNI verb a request carries out (CNI spec 1.1.0 operations): "ADD" (EndpointAdd), "DEL"
  /// (EndpointDel), "CHECK" (EndpointCheck), "STATUS" (Status), "GC" (Gc); nullopt for
  /// EndpointList (the CLI's, not a CNI operation) and an unset kind.
  static std::optional<absl::string_view> VerbOf(const rpc::v1::Request& request);
  /// "ok" when `response` has no error, else the CNI error code it reports as decimal text
  /// (Error.cni_code, or cni::DefaultCniCode of Error.code when that is 0), e.g. "7", "11".
  static std::string ResultOf(const rpc::v1::Response& response);
  /// Counts one executed request of a CNI verb (others are ignored); `elapsed` from the request
  /// being received to its response being ready.
  void Observe(const rpc::v1::Request& request, const rpc::v1::Response& response,
               absl::Duration elapsed);
  /// Appends the two families.
  void AppendFamilies(std::vector<MetricFamily>* out) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> requests_;  // (verb, result)
  std::map<std::string, Histogram> durations_;                         // by verb
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_METRICS_H_
