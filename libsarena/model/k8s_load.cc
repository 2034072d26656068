// Cluster::Load: the cluster/ directory of a snapshot. A large pods.json is read and parsed in
// parallel slices (ParsePodsSliced) on its own thread while the other files are read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/k8s_internal.h"
#include "libsarena/model/snapshot_layout.h"

namespace sarena::model {

namespace {

using internal::ParsePodItem;

// kubectl prints big lists with 4-space indentation, so a pod list of 150,000 pods is ~1.3 GB.
// LoadPodsFile reads and parses such a file in slices on every core: the items are split where
// the text shows a boundary between two items at the first item's indentation
// ("\n<indent>},\n<indent>{" — a raw newline never occurs inside a JSON string), each slice is
// read with pread and parsed as a value sequence (JsonDoc::ParseBorrowedSequence), and dropped
// once its pods are extracted. The split is only a guess: it is correct because every slice must
// parse as complete values and the head / tail must close the document — the concatenation is
// then exactly the items array. Anything unexpected (compact JSON, a slice that does not parse)
// falls back to reading the whole file and parsing it in one piece, which also gives the exact
// error message.

absl::Status PreadAll(int fd, size_t off, size_t len, std::string* out, const std::string& path) {
  out->resize(len);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, out->data() + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("read file '", path, "'"));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  return absl::OkStatus();
}

// Position after the JSON string starting at s[i] == '"', or npos.
size_t SkipJsonString(absl::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return absl::string_view::npos;
}

// Position after the JSON value starting at s[i], or npos (strings and brackets are matched;
// literals and numbers end at a delimiter). Only used on the small head of a list.
size_t SkipJsonValue(absl::string_view s, size_t i) {
  constexpr size_t npos = absl::string_view::npos;
  if (i >= s.size()) return npos;
  if (s[i] == '"') return SkipJsonString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    for (; i < s.size(); ++i) {
      char d = s[i];
      if (d == '"') {
        i = SkipJsonString(s, i);
        if (i == npos) return npos;
        --i;
      } else if (d == '{' || d == '[') {
        ++depth;
      } else if ((d == '}' || d == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return npos;
  }
  while (i < s.size() && std::strchr(" \t\r\n,}]", s[i]) == nullptr) ++i;
  return i;
}

size_t SkipWsAt(absl::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return i;
}

// In the head of a kubectl list, the offset just after the '[' of the root's "items" array,
// or npos when the head does not look like `{ ..., "items": [`.
size_t FindItemsArray(absl::string_view head) {
  size_t i = SkipWsAt(head, 0);
  if (i >= head.size() || head[i] != '{') return absl::string_view::npos;
  ++i;
  while (true) {
    i = SkipWsAt(head, i);
    if (i >= head.size() || head[i] != '"') return absl::string_view::npos;
    size_t kend = SkipJsonString(head, i);
    if (kend == absl::string_view::npos) return kend;
    absl::string_view key = head.substr(i + 1, kend - i - 2);
    i = SkipWsAt(head, kend);
    if (i >= head.size() || head[i] != ':') return absl::string_view::npos;
    i = SkipWsAt(head, i + 1);
    if (key == "items") {
      return (i < head.size() && head[i] == '[') ? i + 1 : absl::string_view::npos;
    }
    i = SkipJsonValue(head, i);
    if (i == absl::string_view::npos) return i;
    i = SkipWsAt(head, i);
    if (i >= head.size() || head[i] != ',') return absl::string_view::npos;
    ++i;
  }
}

// Members of a pod that ParsePodItem never reads, often most of its text: the slices skip
// building them (their syntax is still checked).
const std::vector<absl::string_view> kPodSkipKeys = {
    "managedFields", "ownerReferences", "volumes",          "tolerations",  "affinity",
    "volumeMounts",  "env",             "envFrom",          "resources",    "readinessProbe",
    "livenessProbe", "startupProbe",    "containerStatuses", "initContainerStatuses",
    "securityContext", "lifecycle",     "args",             "command"};

// Where the item list of a pretty-printed pods.json can be cut: the [begin, end) byte ranges of
// its slices, each a sequence of whole items; empty when the file cannot be split (compact JSON,
// a head that does not close as a document, no boundary found). Errors only for I/O failures.
using Ranges = std::vector<std::pair<size_t, size_t>>;
absl::StatusOr<Ranges> SliceRanges(int fd, size_t size, const std::string& path,
                                   absl::string_view rel, size_t slice_bytes) {
  std::string head;
  SARENA_RETURN_IF_ERROR(PreadAll(fd, 0, std::min<size_t>(size, 1u << 20), &head, path));
  size_t items = FindItemsArray(head);
  if (items == absl::string_view::npos) return Ranges();
  size_t first = SkipWsAt(head, items);
  size_t nl = head.rfind('\n', first);
  if (first >= head.size() || head[first] != '{' || nl == absl::string_view::npos || nl < items) {
    return Ranges();
  }
  std::string indent(head.substr(nl + 1, first - nl - 1));
  if (indent.find_first_not_of(' ') != std::string::npos) return Ranges();
  // The head must close as a document once the array is: `{ ..., "items": []}`.
  if (!JsonDoc::ParseBorrowed(absl::StrCat(head.substr(0, items), "]}"), rel).ok()) {
    return Ranges();
  }
  const std::string pattern = absl::StrCat("\n", indent, "},\n", indent, "{");
  // Slice boundaries: offsets of the ',' between two items.
  std::vector<size_t> cuts;
  size_t slices = std::clamp<size_t>(size / std::max<size_t>(slice_bytes, 1), 2, 4096);
  std::string window;
  for (size_t i = 1; i < slices; ++i) {
    size_t target = size / slices * i;
    if (!cuts.empty() && target <= cuts.back()) continue;
    SARENA_RETURN_IF_ERROR(PreadAll(
        fd, target, std::clamp<size_t>(slice_bytes, size_t{64} << 10, size_t{4} << 20), &window,
        path));
    size_t at = window.find(pattern);
    if (at == std::string::npos) continue;
    size_t cut = target + at + 1 + indent.size() + 1;  // the ',' after '}'
    if (cut <= items || (!cuts.empty() && cut <= cuts.back())) continue;
    cuts.push_back(cut);
  }
  if (cuts.empty()) return Ranges();
  Ranges ranges;  // [begin, end)
  size_t begin = items;
  for (size_t c : cuts) {
    ranges.emplace_back(begin, c);
    begin = c + 1;
  }
  ranges.emplace_back(begin, size);
  return ranges;
}

// The pods of one slice ([b, e) of the file, `last` when it holds the document's tail), read
// into *text. An error: I/O, or InvalidArgument when the slice does not parse.
absl::Status ParseSlice(int fd, size_t b, size_t e, bool last, const std::string& path,
                        absl::string_view rel, std::string* text, std::vector<Pod>* pods) {
  const std::string item_path = "items[]";
  absl::Status st = PreadAll(fd, b, e - b, text, path);
  if (st.ok() && text->size() != e - b) st = absl::DataLossError("file changed while read");
  absl::string_view rest;
  absl::StatusOr<JsonDoc> doc = absl::UnknownError("");
  if (st.ok()) {
    doc = JsonDoc::ParseBorrowedSequence(*text, rel, last ? &rest : nullptr, &kPodSkipKeys);
    if (!doc.ok()) st = doc.status();
  }
  if (st.ok() && last) {
    // The tail must close the document: `{"items": []` + rest.
    st = JsonDoc::ParseBorrowed(absl::StrCat("{\"items\":[]", rest), rel).status();
  }
  if (st.ok()) {
    const JsonValue& arr = doc->root();
    pods->resize(arr.size());
    for (size_t j = 0; j < arr.size() && st.ok(); ++j) {
      if (!arr[j].is_object()) {
        st = absl::InvalidArgumentError("not an object");
      } else {
        st = ParsePodItem(arr[j], rel, item_path, &(*pods)[j]);
      }
    }
  }
  return st;
}

// The slices parsed on up to 8 threads; nullopt when one does not parse (then the caller parses
// the file whole for the exact error). Errors only for I/O failures.
absl::StatusOr<std::optional<std::vector<Pod>>> ParseSlicesInParallel(int fd,
                                                                      const Ranges& ranges,
                                                                      const std::string& path,
                                                                      absl::string_view rel) {
  using Result = std::optional<std::vector<Pod>>;
  std::vector<std::vector<Pod>> parts(ranges.size());
  std::vector<absl::Status> errors(ranges.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    std::string text;
    for (size_t k; !failed && (k = next.fetch_add(1)) < ranges.size();) {
      absl::Status st = ParseSlice(fd, ranges[k].first, ranges[k].second,
                                   k + 1 == ranges.size(), path, rel, &text, &parts[k]);
      if (!st.ok()) {
        errors[k] = st;
        failed = true;
      }
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 8));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (failed) {
    for (const absl::Status& e : errors) {
      if (!e.ok() && !absl::IsInvalidArgument(e)) return e;  // I/O
    }
    return Result();  // parse it whole for the exact error
  }
  size_t total = 0;
  for (const auto& v : parts) total += v.size();
  std::vector<Pod> out;
  out.reserve(total);
  for (auto& v : parts) {
    for (Pod& pod : v) out.push_back(std::move(pod));
    std::vector<Pod>().swap(v);
  }
  return Result(std::move(out));
}

// Pods of `path` parsed in parallel slices; nullopt when the file cannot be split (then the
// caller parses it whole). Errors only for I/O failures.
absl::StatusOr<std::optional<std::vector<Pod>>> ParsePodsSliced(int fd, size_t size,
                                                                const std::string& path,
                                                                absl::string_view rel,
                                                                size_t slice_bytes) {
  using Result = std::optional<std::vector<Pod>>;
  SARENA_ASSIGN_OR_RETURN(Ranges ranges, SliceRanges(fd, size, path, rel, slice_bytes));
  if (ranges.empty()) return Result();
  return ParseSlicesInParallel(fd, ranges, path, rel);
}

}  // namespace

absl::StatusOr<Cluster> Cluster::Load(absl::string_view dir, const ClusterLoadOptions& options) {
  // pods.json dominates a large snapshot (150,000 pods = ~230 MB as kubectl prints it): it is
  // read and parsed on its own thread while this thread takes the other files.
  using Parser = absl::Status (Cluster::*)(absl::string_view, absl::string_view);
  auto load = [dir](Cluster* c, absl::string_view name, Parser parse,
                    bool record_missing) -> absl::StatusOr<bool> {
    std::string path = absl::StrCat(dir, "/", name);
    std::string rel = ClusterPath(name);
    auto text = ReadFileToString(path);
    if (!text.ok()) {
      if (absl::IsNotFound(text.status())) {
        if (record_missing) c->files_.missing.push_back(rel);
        return false;
      }
      return text.status();
    }
    SARENA_RETURN_IF_ERROR((c->*parse)(*text, rel));
    c->files_.loaded.push_back(rel);
    return true;
  };
  Cluster pods_part;
  absl::Status pods_status;
  std::thread pods_thread([&] {
    // A large pods.json is parsed in slices on every core (ParsePodsSliced).
    std::string path = absl::StrCat(dir, "/", kPodsFile);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<size_t>(st.st_size) >= options.parallel_min_bytes) {
      auto pods = ParsePodsSliced(fd, static_cast<size_t>(st.st_size), path, ClusterPath(kPodsFile),
                                  options.slice_bytes);
      ::close(fd);
      if (!pods.ok()) {
        pods_status = pods.status();
        return;
      }
      if (*pods) {
        pods_part.pods_ = std::move(**pods);
        pods_part.files_.loaded.push_back(ClusterPath(kPodsFile));
        return;
      }
    } else if (fd >= 0) {
      ::close(fd);
    }
    pods_status = load(&pods_part, kPodsFile, &Cluster::ParsePods, true).status();
  });
  Cluster c;
  absl::Status rest = [&]() -> absl::Status {
    SARENA_RETURN_IF_ERROR(load(&c, kNodesFile, &Cluster::ParseNodes, true).status());
    SARENA_RETURN_IF_ERROR(load(&c, kServicesFile, &Cluster::ParseServices, true).status());
    SARENA_ASSIGN_OR_RETURN(bool slices,
                            load(&c, kEndpointSlicesFile, &Cluster::ParseEndpointSlices, false));
    if (!slices) {
      SARENA_ASSIGN_OR_RETURN(bool eps, load(&c, kEndpointsFile, &Cluster::ParseEndpoints, false));
      if (!eps) c.files_.missing.push_back(ClusterPath(kEndpointSlicesFile));
    }
    return load(&c, kIpPoolsFile, &Cluster::ParseIpPools, true).status();
  }();
  pods_thread.join();
  SARENA_RETURN_IF_ERROR(pods_status);
  SARENA_RETURN_IF_ERROR(rest);
  c.pods_ = std::move(pods_part.pods_);
  for (auto* list : {&pods_part.files_.loaded, &pods_part.files_.missing}) {
    auto& dst = list == &pods_part.files_.loaded ? c.files_.loaded : c.files_.missing;
    dst.insert(dst.begin(), list->begin(), list->end());
  }
  c.Finalize();
  return c;
}

}  // namespace sarena::model
