#include "libsarena/daemon/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/cni/error.h"

namespace sarena::daemon {
namespace {

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) { return IsNameStart(c, colon) || (c >= '0' && c <= '9'); }

// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names: the same without ':' (data model doc).
bool ValidName(absl::string_view name, bool colon) {
  if (name.empty() || !IsNameStart(name[0], colon)) return false;
  return std::all_of(name.begin(), name.end(), [colon](char c) { return IsNameChar(c, colon); });
}

absl::Status CheckLabels(const MetricFamily& f, const Labels& labels) {
  std::set<absl::string_view> seen;
  for (const auto& [name, value] : labels) {
    if (!ValidName(name, false) || absl::StartsWith(name, "__")) {
      return absl::InvalidArgumentError(absl::StrCat("metric '", f.name, "': invalid label name '",
                                                     name, "' ([a-zA-Z_][a-zA-Z0-9_]*, not __*)"));
    }
    if (f.type == MetricType::kHistogram && name == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("metric '", f.name, "': label 'le' is reserved for histogram buckets"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric '", f.name, "': label '", name, "' given twice in one sample"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckHistogram(const MetricFamily& f, const HistogramValue& h) {
  const std::vector<double>& b = h.upper_bounds;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(b[i]) || (i > 0 && !(b[i] > b[i - 1]))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram '", f.name, "': bucket bounds must be finite and strictly increasing (bound ",
          i, " is ", FormatSampleValue(b[i]), ")"));
    }
  }
  uint64_t total = 0;
  for (uint64_t c : h.bucket_counts) total += c;
  if (h.bucket_counts.size() != b.size() + 1 || total != h.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "histogram '", f.name, "': ", h.bucket_counts.size(), " bucket counts totalling ", total,
        " for ", b.size(), " bounds (+Inf) and count ", h.count, " (want bounds + 1, total = count)"));
  }
  return absl::OkStatus();
}

// name{a="x",b="y"} — `extra` (the histogram's le) goes last.
void AppendSeries(std::string* out, absl::string_view name, const Labels& labels,
                  absl::string_view extra_name = {}, absl::string_view extra_value = {}) {
  absl::StrAppend(out, name);
  if (labels.empty() && extra_name.empty()) return;
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    absl::StrAppend(out, first ? "" : ",", k, "=\"", EscapeLabelValue(v), "\"");
    first = false;
  }
  if (!extra_name.empty()) {
    absl::StrAppend(out, first ? "" : ",", extra_name, "=\"", extra_value, "\"");
  }
  out->push_back('}');
}

}  // namespace

absl::string_view ToString(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

namespace {
// Backslash and line feed always; the double quote too inside a label value.
std::string Escape(absl::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\' || (quote && c == '"')) {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}
}  // namespace

std::string EscapeLabelValue(absl::string_view value) { return Escape(value, true); }
std::string EscapeHelp(absl::string_view help) { return Escape(help, false); }

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 9.2e18) return absl::StrCat(static_cast<int64_t>(v));
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
  return std::string(buf, r.ptr);
}

absl::StatusOr<std::string> WriteExposition(absl::Span<const MetricFamily> families) {
  std::string out;
  std::set<absl::string_view> names;
  for (const MetricFamily& f : families) {
    if (!ValidName(f.name, true)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid metric name '", f.name, "' ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
    }
    if (f.type == MetricType::kCounter && !absl::EndsWith(f.name, "_total")) {
      return absl::InvalidArgumentError(
          absl::StrCat("counter '", f.name, "': a counter's name ends in '_total'"));
    }
    if (!names.insert(f.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("metric family '", f.name, "' given twice"));
    }
    absl::StrAppend(&out, "# HELP ", f.name, " ", EscapeHelp(f.help), "\n", "# TYPE ", f.name,
                    " ", ToString(f.type), "\n");
    for (const MetricSample& s : f.samples) {
      if (absl::Status st = CheckLabels(f, s.labels); !st.ok()) return st;
      if (f.type != MetricType::kHistogram) {
        AppendSeries(&out, f.name, s.labels);
        absl::StrAppend(&out, " ", FormatSampleValue(s.value), "\n");
        continue;
      }
      const HistogramValue& h = s.histogram;
      if (absl::Status st = CheckHistogram(f, h); !st.ok()) return st;
      const std::string bucket = absl::StrCat(f.name, "_bucket");
      uint64_t cumulative = 0;
      for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
        cumulative += h.bucket_counts[i];
        AppendSeries(&out, bucket, s.labels, "le", FormatSampleValue(h.upper_bounds[i]));
        absl::StrAppend(&out, " ", cumulative, "\n");
      }
      AppendSeries(&out, bucket, s.labels, "le", "+Inf");
      absl::StrAppend(&out, " ", h.count, "\n");
      AppendSeries(&out, absl::StrCat(f.name, "_sum"), s.labels);
      absl::StrAppend(&out, " ", FormatSampleValue(h.sum), "\n");
      AppendSeries(&out, absl::StrCat(f.name, "_count"), s.labels);
      absl::StrAppend(&out, " ", h.count, "\n");
    }
  }
  return out;
}

Histogram::Histogram(std::vector<double> upper_bounds) {
  v_.bucket_counts.assign(upper_bounds.size() + 1, 0);
  v_.upper_bounds = std::move(upper_bounds);
}

void Histogram::Observe(double value) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(v_.upper_bounds.begin(), v_.upper_bounds.end(), value) -
      v_.upper_bounds.begin());
  std::lock_guard<std::mutex> lock(mu_);
  ++v_.bucket_counts[i];
  v_.sum += value;
  ++v_.count;
}

HistogramValue Histogram::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return v_;
}

const std::vector<double>& CniLatencyBuckets() {
  static const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                               0.25,  0.5,    1,     2.5,  5,     10};
  return kBuckets;
}

namespace {
constexpr absl::string_view kVerbs[] = {"ADD", "DEL", "CHECK", "STATUS", "GC"};
}  // namespace

CniRequestMetrics::CniRequestMetrics() {
  for (absl::string_view verb : kVerbs) {
    requests_[{std::string(verb), "ok"}] = 0;
    durations_.emplace(std::piecewise_construct, std::forward_as_tuple(verb),
                       std::forward_as_tuple(CniLatencyBuckets()));
  }
}

std::optional<absl::string_view> CniRequestMetrics::VerbOf(const rpc::v1::Request& request) {
  switch (request.kind_case()) {
    case rpc::v1::Request::kEndpointAdd:
      return kVerbs[0];
    case rpc::v1::Request::kEndpointDel:
      return kVerbs[1];
    case rpc::v1::Request::kEndpointCheck:
      return kVerbs[2];
    case rpc::v1::Request::kStatus:
      return kVerbs[3];
    case rpc::v1::Request::kGc:
      return kVerbs[4];
    case rpc::v1::Request::kEndpointList:
    case rpc::v1::Request::KIND_NOT_SET:
      break;
  }
  return std::nullopt;
}

std::string CniRequestMetrics::ResultOf(const rpc::v1::Response& response) {
  if (!response.has_error()) return "ok";
  uint32_t code = response.error().cni_code();
  if (code == 0) {
    code = static_cast<uint32_t>(
        cni::DefaultCniCode(static_cast<absl::StatusCode>(response.error().code())));
  }
  return absl::StrCat(code);
}

void CniRequestMetrics::Observe(const rpc::v1::Request& request,
                                const rpc::v1::Response& response, absl::Duration elapsed) {
  std::optional<absl::string_view> verb = VerbOf(request);
  if (!verb) return;
  const std::string result = ResultOf(response);
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{std::string(*verb), result}];
  durations_.at(std::string(*verb)).Observe(absl::ToDoubleSeconds(elapsed));
}

void CniRequestMetrics::AppendFamilies(std::vector<MetricFamily>* out) const {
  MetricFamily requests{
      .name = "sarena_cni_requests_total",
      .type = MetricType::kCounter,
      .help = "CNI requests sarenad executed, by verb (ADD, DEL, CHECK, STATUS, GC) and result "
              "(ok, or the CNI error code returned)."};
  MetricFamily durations{
      .name = "sarena_cni_request_duration_seconds",
      .type = MetricType::kHistogram,
      .help = "Time from a CNI request's arrival at sarenad to its response being ready "
              "(queueing behind other requests included), by verb."};
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, n] : requests_) {
    requests.samples.push_back(
        {.labels = {{"verb", key.first}, {"result", key.second}}, .value = static_cast<double>(n)});
  }
  for (const auto& [verb, h] : durations_) {
    durations.samples.push_back({.labels = {{"verb", verb}}, .histogram = h.Snapshot()});
  }
  out->push_back(std::move(requests));
  out->push_back(std::move(durations));
}

}  // namespace sarena::daemon
