#include "libsarena/model/k8s.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/packet.h"
#include "libsarena/model/snapshot.h"
#include "libsarena/model/snapshot_layout.h"

namespace sarena::model {

const std::string* FindLabel(const Labels& labels, absl::string_view key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& kv, absl::string_view k) { return kv.first < k; });
  if (it != labels.end() && it->first == key) return &it->second;
  return nullptr;
}

bool SelectorMatches(const Labels& selector, const Labels& labels) {
  for (const auto& [k, v] : selector) {
    const std::string* lv = FindLabel(labels, k);
    if (!lv || *lv != v) return false;
  }
  return true;
}

std::string Pod::Key() const { return absl::StrCat(namespace_, "/", name); }

const ContainerPort* Pod::FindPort(absl::string_view port_name, uint8_t proto) const {
  for (const auto& p : ports) {
    if (p.name == port_name && p.proto == proto) return &p;
  }
  return nullptr;
}

std::optional<net::Ipv4> Node::PrimaryIp() const {
  if (!internal_ips.empty()) return internal_ips.front();
  if (!external_ips.empty()) return external_ips.front();
  if (calico_ipv4_address) return calico_ipv4_address->address();
  return std::nullopt;
}

absl::string_view ToString(ServiceType type) {
  switch (type) {
    case ServiceType::kClusterIP: return "ClusterIP";
    case ServiceType::kNodePort: return "NodePort";
    case ServiceType::kLoadBalancer: return "LoadBalancer";
    case ServiceType::kExternalName: return "ExternalName";
  }
  return "?";
}

std::string Service::Key() const { return absl::StrCat(namespace_, "/", name); }

const ServicePort* Service::FindPort(uint16_t port, uint8_t proto) const {
  for (const auto& p : ports) {
    if (p.port == port && p.proto == proto) return &p;
  }
  return nullptr;
}

const ServicePort* Service::FindNodePort(uint16_t node_port, uint8_t proto) const {
  for (const auto& p : ports) {
    if (p.node_port != 0 && p.node_port == node_port && p.proto == proto) return &p;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------

namespace {

using PairKey = std::pair<absl::string_view, absl::string_view>;

std::string Sub(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

absl::StatusOr<const JsonValue*> GetObject(const JsonValue& obj, absl::string_view key,
                                           absl::string_view file, absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    return JsonFieldError(file, Sub(path, key),
                          absl::StrCat("expected an object, got ", ToString(v->type())));
  }
  return v;
}

absl::StatusOr<const JsonValue*> GetArray(const JsonValue& obj, absl::string_view key,
                                          absl::string_view file, absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    return JsonFieldError(file, Sub(path, key),
                          absl::StrCat("expected an array, got ", ToString(v->type())));
  }
  return v;
}

absl::StatusOr<std::string> GetStr(const JsonValue& obj, absl::string_view key,
                                   absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(obj, key, file, path));
  return s ? std::string(*s) : std::string();
}

absl::StatusOr<Labels> GetLabels(const JsonValue& obj, absl::string_view key,
                                 absl::string_view file, absl::string_view path) {
  Labels out;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* m, GetObject(obj, key, file, path));
  if (m == nullptr) return out;
  out.reserve(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const JsonValue& v = m->value(i);
    if (v.is_null()) continue;
    if (!v.is_string()) {
      return JsonFieldError(file, absl::StrCat(Sub(path, key), ".", m->key(i).str()),
                            "expected a string");
    }
    out.emplace_back(std::string(m->key(i).str()), std::string(v.str()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<uint8_t> GetProtocol(const JsonValue& obj, absl::string_view file,
                                    absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(obj, "protocol", file, path));
  if (!s || s->empty()) return kProtoTcp;
  auto p = ParseProto(*s, "protocol");
  if (!p.ok()) return JsonFieldError(file, Sub(path, "protocol"), p.status().message());
  return *p;
}

absl::StatusOr<uint16_t> GetPort(const JsonValue& obj, absl::string_view key,
                                 absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto v, JsonGetInt(obj, key, file, path, 0, 65535));
  return static_cast<uint16_t>(v.value_or(0));
}

// The list items of a kubectl document (List, typed list, a bare array, or one object).
absl::StatusOr<std::vector<std::pair<const JsonValue*, std::string>>> Items(const JsonDoc& doc) {
  std::vector<std::pair<const JsonValue*, std::string>> out;
  const JsonValue& root = doc.root();
  const JsonValue* kind = root.Find("kind");
  bool status = kind != nullptr && kind->is_string() && kind->str() == "Status";
  // A kubectl Status (an API error answer, which has "metadata" too) is not an object of the
  // list: JsonListItems names it.
  // A list kind ("List", "PodList", ...) without "items" is a truncated or foreign document,
  // never one object: kubectl -o json prints "items": [] for an empty list.
  bool list_kind = kind != nullptr && kind->is_string() && absl::EndsWith(kind->str(), "List");
  if (list_kind && root.Find("items", false) == nullptr) {
    return JsonFieldError(doc.file_name(), "items",
                          absl::StrCat("missing: a ", kind->str(),
                                       " without \"items\" (kubectl -o json prints \"items\": [] "
                                       "for an empty list)"));
  }
  if (root.is_object() && root.Find("items", false) == nullptr && root.Find("metadata") != nullptr &&
      !status) {
    out.emplace_back(&root, std::string());
    return out;
  }
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  out.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = JsonIndexPath(prefix, i);
    if (!it.is_object()) return JsonFieldError(doc.file_name(), p, "expected an object");
    out.emplace_back(&it, std::move(p));
  }
  return out;
}

struct Meta {
  std::string name, namespace_, uid;
};

absl::StatusOr<Meta> GetMeta(const JsonValue& it, absl::string_view file, const std::string& p,
                             bool namespaced) {
  Meta m;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* meta, GetObject(it, "metadata", file, p));
  if (meta == nullptr) return JsonFieldError(file, Sub(p, "metadata"), "missing");
  std::string mp = Sub(p, "metadata");
  SARENA_ASSIGN_OR_RETURN(m.name, GetStr(*meta, "name", file, mp));
  if (m.name.empty()) return JsonFieldError(file, Sub(mp, "name"), "missing");
  if (namespaced) {
    SARENA_ASSIGN_OR_RETURN(m.namespace_, GetStr(*meta, "namespace", file, mp));
    if (m.namespace_.empty()) m.namespace_ = "default";
  }
  SARENA_ASSIGN_OR_RETURN(m.uid, GetStr(*meta, "uid", file, mp));
  return m;
}

absl::StatusOr<bool> ReadyCondition(const JsonValue& status, absl::string_view file,
                                    const std::string& sp) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* conds, GetArray(status, "conditions", file, sp));
  if (conds == nullptr) return false;
  for (size_t i = 0; i < conds->size(); ++i) {
    const JsonValue& c = (*conds)[i];
    if (!c.is_object()) continue;
    const JsonValue* type = c.Find("type");
    const JsonValue* st = c.Find("status");
    if (type && type->is_string() && type->str() == "Ready") {
      return st && st->is_string() && st->str() == "True";
    }
  }
  return false;
}

absl::StatusOr<std::optional<net::Ipv4>> AnnotationIpv4(const Labels& ann, absl::string_view key,
                                                        absl::string_view file,
                                                        absl::string_view path) {
  const std::string* v = FindLabel(ann, key);
  if (v == nullptr || v->empty()) return std::optional<net::Ipv4>();
  absl::string_view s = *v;
  if (size_t slash = s.find('/'); slash != absl::string_view::npos) s = s.substr(0, slash);
  auto ip = net::ParseIpv4(s);
  if (!ip.ok()) {
    return JsonFieldError(file, absl::StrCat(path, ".metadata.annotations[\"", key, "\"]"),
                          absl::StrCat("invalid IPv4 address '", *v, "'"));
  }
  return std::optional<net::Ipv4>(*ip);
}

}  // namespace

struct Cluster::Index {
  absl::flat_hash_map<PairKey, uint32_t> pod_by_key;
  absl::flat_hash_map<uint32_t, uint32_t> pod_by_ip;
  // Addresses more than one live (Running / Pending / no phase) non-hostNetwork pod claims.
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> live_pods_by_shared_ip;
  absl::flat_hash_map<absl::string_view, std::vector<uint32_t>> pods_by_node;
  absl::flat_hash_map<absl::string_view, uint32_t> node_by_name;
  absl::flat_hash_map<uint32_t, uint32_t> node_by_ip;
  std::vector<uint8_t> cidr_lens;  // longest first
  absl::flat_hash_map<uint64_t, uint32_t> node_by_cidr;
  absl::flat_hash_map<PairKey, uint32_t> svc_by_key;
  absl::flat_hash_map<uint32_t, uint32_t> svc_by_ip;
  absl::flat_hash_map<uint32_t, uint32_t> svc_by_nodeport;  // (proto << 16) | port
};

Cluster::Cluster() : index_(std::make_unique<Index>()) {}
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

namespace {

// One item of a pod list (`p` its JSON path, for errors).
absl::Status ParsePodItem(const JsonValue& it, absl::string_view file, const std::string& p,
                          Pod* pod) {
  SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
  pod->name = std::move(m.name);
  pod->namespace_ = std::move(m.namespace_);
  pod->uid = std::move(m.uid);
  if (const JsonValue* meta = it.Find("metadata")) {
    std::string mp = Sub(p, "metadata");
    SARENA_ASSIGN_OR_RETURN(pod->labels, GetLabels(*meta, "labels", file, mp));
    SARENA_ASSIGN_OR_RETURN(pod->annotations, GetLabels(*meta, "annotations", file, mp));
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* spec, GetObject(it, "spec", file, p));
  if (spec != nullptr) {
    std::string sp = Sub(p, "spec");
    SARENA_ASSIGN_OR_RETURN(pod->node_name, GetStr(*spec, "nodeName", file, sp));
    SARENA_ASSIGN_OR_RETURN(auto hn, JsonGetBool(*spec, "hostNetwork", file, sp));
    pod->host_network = hn.value_or(false);
    SARENA_ASSIGN_OR_RETURN(const JsonValue* containers, GetArray(*spec, "containers", file, sp));
    if (containers != nullptr) {
      for (size_t c = 0; c < containers->size(); ++c) {
        const JsonValue& ct = (*containers)[c];
        std::string cp = JsonIndexPath(Sub(sp, "containers"), c);
        if (!ct.is_object()) return JsonFieldError(file, cp, "expected an object");
        SARENA_ASSIGN_OR_RETURN(const JsonValue* ports, GetArray(ct, "ports", file, cp));
        if (ports == nullptr) continue;
        for (size_t k = 0; k < ports->size(); ++k) {
          const JsonValue& pt = (*ports)[k];
          std::string pp = JsonIndexPath(Sub(cp, "ports"), k);
          if (!pt.is_object()) return JsonFieldError(file, pp, "expected an object");
          ContainerPort port;
          SARENA_ASSIGN_OR_RETURN(port.name, GetStr(pt, "name", file, pp));
          SARENA_ASSIGN_OR_RETURN(port.container_port, GetPort(pt, "containerPort", file, pp));
          SARENA_ASSIGN_OR_RETURN(port.host_port, GetPort(pt, "hostPort", file, pp));
          SARENA_ASSIGN_OR_RETURN(port.proto, GetProtocol(pt, file, pp));
          pod->ports.push_back(std::move(port));
        }
      }
    }
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* status, GetObject(it, "status", file, p));
  if (status != nullptr) {
    std::string sp = Sub(p, "status");
    SARENA_ASSIGN_OR_RETURN(pod->phase, GetStr(*status, "phase", file, sp));
    SARENA_ASSIGN_OR_RETURN(pod->pod_ip, JsonGetIpv4(*status, "podIP", file, sp));
    SARENA_ASSIGN_OR_RETURN(pod->host_ip, JsonGetIpv4(*status, "hostIP", file, sp));
    SARENA_ASSIGN_OR_RETURN(const JsonValue* ips, GetArray(*status, "podIPs", file, sp));
    if (ips != nullptr) {
      for (size_t k = 0; k < ips->size(); ++k) {
        const JsonValue& e = (*ips)[k];
        std::string ep = JsonIndexPath(Sub(sp, "podIPs"), k);
        if (!e.is_object()) return JsonFieldError(file, ep, "expected an object");
        SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(e, "ip", file, ep));
        if (ip) pod->pod_ips.push_back(*ip);
      }
    }
    if (pod->pod_ips.empty() && pod->pod_ip) pod->pod_ips.push_back(*pod->pod_ip);
    if (!pod->pod_ip && !pod->pod_ips.empty()) pod->pod_ip = pod->pod_ips.front();
    SARENA_ASSIGN_OR_RETURN(pod->ready, ReadyCondition(*status, file, sp));
  }
  return absl::OkStatus();
}

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

// Pods of `path` parsed in parallel slices; nullopt when the file cannot be split (then the
// caller parses it whole). Errors only for I/O failures.
absl::StatusOr<std::optional<std::vector<Pod>>> ParsePodsSliced(int fd, size_t size,
                                                                const std::string& path,
                                                                absl::string_view rel,
                                                                size_t slice_bytes) {
  using Result = std::optional<std::vector<Pod>>;
  std::string head;
  SARENA_RETURN_IF_ERROR(PreadAll(fd, 0, std::min<size_t>(size, 1u << 20), &head, path));
  size_t items = FindItemsArray(head);
  if (items == absl::string_view::npos) return Result();
  size_t first = SkipWsAt(head, items);
  size_t nl = head.rfind('\n', first);
  if (first >= head.size() || head[first] != '{' || nl == absl::string_view::npos || nl < items) {
    return Result();
  }
  std::string indent(head.substr(nl + 1, first - nl - 1));
  if (indent.find_first_not_of(' ') != std::string::npos) return Result();
  // The head must close as a document once the array is: `{ ..., "items": []}`.
  if (!JsonDoc::ParseBorrowed(absl::StrCat(head.substr(0, items), "]}"), rel).ok()) {
    return Result();
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
  if (cuts.empty()) return Result();
  std::vector<std::pair<size_t, size_t>> ranges;  // [begin, end)
  size_t begin = items;
  for (size_t c : cuts) {
    ranges.emplace_back(begin, c);
    begin = c + 1;
  }
  ranges.emplace_back(begin, size);

  std::vector<std::vector<Pod>> parts(ranges.size());
  std::vector<absl::Status> errors(ranges.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    std::string text;
    const std::string item_path = "items[]";
    for (size_t k; !failed && (k = next.fetch_add(1)) < ranges.size();) {
      auto [b, e] = ranges[k];
      absl::Status st = PreadAll(fd, b, e - b, &text, path);
      if (st.ok() && text.size() != e - b) st = absl::DataLossError("file changed while read");
      absl::string_view rest;
      bool last = k + 1 == ranges.size();
      absl::StatusOr<JsonDoc> doc = absl::UnknownError("");
      if (st.ok()) {
        doc = JsonDoc::ParseBorrowedSequence(text, rel, last ? &rest : nullptr, &kPodSkipKeys);
        if (!doc.ok()) st = doc.status();
      }
      if (st.ok() && last) {
        // The tail must close the document: `{"items": []` + rest.
        st = JsonDoc::ParseBorrowed(absl::StrCat("{\"items\":[]", rest), rel).status();
      }
      if (st.ok()) {
        const JsonValue& arr = doc->root();
        parts[k].resize(arr.size());
        for (size_t j = 0; j < arr.size() && st.ok(); ++j) {
          if (!arr[j].is_object()) {
            st = absl::InvalidArgumentError("not an object");
          } else {
            st = ParsePodItem(arr[j], rel, item_path, &parts[k][j]);
          }
        }
      }
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

}  // namespace

absl::Status Cluster::ParsePods(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  pods_.reserve(pods_.size() + items.size());
  for (const auto& [itp, p] : items) {
    Pod pod;
    SARENA_RETURN_IF_ERROR(ParsePodItem(*itp, file, p, &pod));
    pods_.push_back(std::move(pod));
  }
  return absl::OkStatus();
}

absl::Status Cluster::ParseNodes(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  nodes_.reserve(nodes_.size() + items.size());
  for (const auto& [itp, p] : items) {
    const JsonValue& it = *itp;
    Node node;
    SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, false));
    node.name = std::move(m.name);
    if (const JsonValue* meta = it.Find("metadata")) {
      std::string mp = Sub(p, "metadata");
      SARENA_ASSIGN_OR_RETURN(node.labels, GetLabels(*meta, "labels", file, mp));
      SARENA_ASSIGN_OR_RETURN(node.annotations, GetLabels(*meta, "annotations", file, mp));
    }
    if (const std::string* a = FindLabel(node.annotations, "projectcalico.org/IPv4Address");
        a != nullptr && !a->empty()) {
      auto pfx = net::ParseIpv4Prefix(*a);
      if (!pfx.ok()) {
        return JsonFieldError(
            file, absl::StrCat(p, ".metadata.annotations[\"projectcalico.org/IPv4Address\"]"),
            absl::StrCat("invalid IPv4 address/prefix '", *a, "'"));
      }
      node.calico_ipv4_address = *pfx;
    }
    SARENA_ASSIGN_OR_RETURN(node.calico_ipip_tunnel_addr,
                            AnnotationIpv4(node.annotations, "projectcalico.org/IPv4IPIPTunnelAddr", file, p));
    SARENA_ASSIGN_OR_RETURN(node.calico_vxlan_tunnel_addr,
                            AnnotationIpv4(node.annotations, "projectcalico.org/IPv4VXLANTunnelAddr", file, p));
    SARENA_ASSIGN_OR_RETURN(node.calico_wireguard_addr,
                            AnnotationIpv4(node.annotations, "projectcalico.org/IPv4WireguardInterfaceAddr", file, p));
    SARENA_ASSIGN_OR_RETURN(const JsonValue* spec, GetObject(it, "spec", file, p));
    if (spec != nullptr) {
      std::string sp = Sub(p, "spec");
      SARENA_ASSIGN_OR_RETURN(const JsonValue* cidrs, GetArray(*spec, "podCIDRs", file, sp));
      std::vector<std::pair<std::string, std::string>> texts;
      if (cidrs != nullptr) {
        for (size_t k = 0; k < cidrs->size(); ++k) {
          if (!(*cidrs)[k].is_string()) {
            return JsonFieldError(file, JsonIndexPath(Sub(sp, "podCIDRs"), k), "expected a string");
          }
          texts.emplace_back(std::string((*cidrs)[k].str()), JsonIndexPath(Sub(sp, "podCIDRs"), k));
        }
      }
      if (texts.empty()) {
        SARENA_ASSIGN_OR_RETURN(auto c, JsonGetString(*spec, "podCIDR", file, sp));
        if (c && !c->empty()) texts.emplace_back(std::string(*c), Sub(sp, "podCIDR"));
      }
      for (const auto& [t, tp] : texts) {
        if (t.find(':') != std::string::npos) continue;
        auto pfx = net::ParseIpv4Prefix(t, tp);
        if (!pfx.ok()) return JsonFieldError(file, tp, absl::StrCat("invalid CIDR '", t, "'"));
        node.pod_cidrs.push_back(pfx->canonical());
      }
      SARENA_ASSIGN_OR_RETURN(auto un, JsonGetBool(*spec, "unschedulable", file, sp));
      node.unschedulable = un.value_or(false);
    }
    SARENA_ASSIGN_OR_RETURN(const JsonValue* status, GetObject(it, "status", file, p));
    if (status != nullptr) {
      std::string sp = Sub(p, "status");
      SARENA_ASSIGN_OR_RETURN(const JsonValue* addrs, GetArray(*status, "addresses", file, sp));
      if (addrs != nullptr) {
        for (size_t k = 0; k < addrs->size(); ++k) {
          const JsonValue& a = (*addrs)[k];
          std::string ap = JsonIndexPath(Sub(sp, "addresses"), k);
          if (!a.is_object()) return JsonFieldError(file, ap, "expected an object");
          SARENA_ASSIGN_OR_RETURN(std::string type, GetStr(a, "type", file, ap));
          if (type == "Hostname") {
            SARENA_ASSIGN_OR_RETURN(node.hostname, GetStr(a, "address", file, ap));
            continue;
          }
          if (type != "InternalIP" && type != "ExternalIP") continue;
          SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(a, "address", file, ap));
          if (!ip) continue;
          (type == "InternalIP" ? node.internal_ips : node.external_ips).push_back(*ip);
        }
      }
      SARENA_ASSIGN_OR_RETURN(node.ready, ReadyCondition(*status, file, sp));
    }
    nodes_.push_back(std::move(node));
  }
  return absl::OkStatus();
}

absl::Status Cluster::ParseServices(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  services_.reserve(services_.size() + items.size());
  for (const auto& [itp, p] : items) {
    const JsonValue& it = *itp;
    Service svc;
    SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
    svc.name = std::move(m.name);
    svc.namespace_ = std::move(m.namespace_);
    Labels annotations;
    if (const JsonValue* meta = it.Find("metadata")) {
      SARENA_ASSIGN_OR_RETURN(annotations, GetLabels(*meta, "annotations", file, Sub(p, "metadata")));
    }
    SARENA_ASSIGN_OR_RETURN(const JsonValue* spec, GetObject(it, "spec", file, p));
    if (spec == nullptr) return JsonFieldError(file, Sub(p, "spec"), "missing");
    std::string sp = Sub(p, "spec");
    SARENA_ASSIGN_OR_RETURN(std::string type, GetStr(*spec, "type", file, sp));
    if (type.empty() || type == "ClusterIP") svc.type = ServiceType::kClusterIP;
    else if (type == "NodePort") svc.type = ServiceType::kNodePort;
    else if (type == "LoadBalancer") svc.type = ServiceType::kLoadBalancer;
    else if (type == "ExternalName") svc.type = ServiceType::kExternalName;
    else return JsonFieldError(file, Sub(sp, "type"), absl::StrCat("unknown Service type '", type, "'"));
    std::vector<std::pair<std::string, std::string>> ips;
    SARENA_ASSIGN_OR_RETURN(const JsonValue* cips, GetArray(*spec, "clusterIPs", file, sp));
    if (cips != nullptr) {
      for (size_t k = 0; k < cips->size(); ++k) {
        if (!(*cips)[k].is_string()) {
          return JsonFieldError(file, JsonIndexPath(Sub(sp, "clusterIPs"), k), "expected a string");
        }
        ips.emplace_back(std::string((*cips)[k].str()), JsonIndexPath(Sub(sp, "clusterIPs"), k));
      }
    }
    if (ips.empty()) {
      SARENA_ASSIGN_OR_RETURN(std::string cip, GetStr(*spec, "clusterIP", file, sp));
      if (!cip.empty()) ips.emplace_back(cip, Sub(sp, "clusterIP"));
    }
    for (const auto& [t, tp] : ips) {
      if (t == "None") {
        svc.headless = true;
        continue;
      }
      if (t.empty() || t.find(':') != std::string::npos) continue;
      auto ip = net::ParseIpv4(t);
      if (!ip.ok()) return JsonFieldError(file, tp, absl::StrCat("invalid IPv4 address '", t, "'"));
      svc.cluster_ips.push_back(*ip);
    }
    SARENA_ASSIGN_OR_RETURN(const JsonValue* ports, GetArray(*spec, "ports", file, sp));
    if (ports != nullptr) {
      for (size_t k = 0; k < ports->size(); ++k) {
        const JsonValue& pt = (*ports)[k];
        std::string pp = JsonIndexPath(Sub(sp, "ports"), k);
        if (!pt.is_object()) return JsonFieldError(file, pp, "expected an object");
        ServicePort port;
        SARENA_ASSIGN_OR_RETURN(port.name, GetStr(pt, "name", file, pp));
        SARENA_ASSIGN_OR_RETURN(port.proto, GetProtocol(pt, file, pp));
        SARENA_ASSIGN_OR_RETURN(port.port, GetPort(pt, "port", file, pp));
        SARENA_ASSIGN_OR_RETURN(port.node_port, GetPort(pt, "nodePort", file, pp));
        if (const JsonValue* tp = pt.Find("targetPort"); tp != nullptr) {
          if (tp->is_number()) {
            auto n = tp->AsInt();
            if (!n || *n < 0 || *n > 65535) {
              return JsonFieldError(file, Sub(pp, "targetPort"), "port out of range");
            }
            port.target_port.number = static_cast<uint16_t>(*n);
          } else if (tp->is_string()) {
            // IntOrString: a numeric string is a number.
            auto n = tp->AsInt(/*allow_string=*/true);
            if (n && *n >= 0 && *n <= 65535) port.target_port.number = static_cast<uint16_t>(*n);
            else port.target_port.name = std::string(tp->str());
          } else {
            return JsonFieldError(file, Sub(pp, "targetPort"), "expected a number or a string");
          }
        }
        if (port.target_port.name.empty() && port.target_port.number == 0) {
          port.target_port.number = port.port;
        }
        svc.ports.push_back(std::move(port));
      }
    }
    SARENA_ASSIGN_OR_RETURN(svc.selector, GetLabels(*spec, "selector", file, sp));
    SARENA_ASSIGN_OR_RETURN(std::string etp, GetStr(*spec, "externalTrafficPolicy", file, sp));
    svc.external_traffic_policy_local = etp == "Local";
    SARENA_ASSIGN_OR_RETURN(std::string itpol, GetStr(*spec, "internalTrafficPolicy", file, sp));
    svc.internal_traffic_policy_local = itpol == "Local";
    SARENA_ASSIGN_OR_RETURN(const JsonValue* ranges,
                            GetArray(*spec, "loadBalancerSourceRanges", file, sp));
    std::vector<std::pair<std::string, std::string>> range_texts;
    if (ranges != nullptr) {
      for (size_t k = 0; k < ranges->size(); ++k) {
        std::string rp = JsonIndexPath(Sub(sp, "loadBalancerSourceRanges"), k);
        if (!(*ranges)[k].is_string()) return JsonFieldError(file, rp, "expected a string");
        range_texts.emplace_back(std::string((*ranges)[k].str()), rp);
      }
    } else if (const std::string* a = FindLabel(
                   annotations, "service.beta.kubernetes.io/load-balancer-source-ranges");
               a != nullptr) {
      // The legacy annotation, honoured when the field is absent.
      for (absl::string_view part : absl::StrSplit(*a, ',', absl::SkipWhitespace())) {
        range_texts.emplace_back(std::string(absl::StripAsciiWhitespace(part)),
                                 absl::StrCat(p, ".metadata.annotations[\"service.beta.kubernetes.io/"
                                                 "load-balancer-source-ranges\"]"));
      }
    }
    for (const auto& [t, rp] : range_texts) {
      if (t.find(':') != std::string::npos) continue;
      auto pfx = net::ParseIpv4Prefix(t, rp);
      if (!pfx.ok()) return JsonFieldError(file, rp, absl::StrCat("invalid CIDR '", t, "'"));
      svc.load_balancer_source_ranges.push_back(pfx->canonical());
    }
    SARENA_ASSIGN_OR_RETURN(const JsonValue* eips, GetArray(*spec, "externalIPs", file, sp));
    if (eips != nullptr) {
      for (size_t k = 0; k < eips->size(); ++k) {
        std::string ep = JsonIndexPath(Sub(sp, "externalIPs"), k);
        if (!(*eips)[k].is_string()) return JsonFieldError(file, ep, "expected a string");
        absl::string_view t = (*eips)[k].str();
        if (t.find(':') != absl::string_view::npos) continue;
        auto ip = net::ParseIpv4(t);
        if (!ip.ok()) return JsonFieldError(file, ep, absl::StrCat("invalid IPv4 address '", t, "'"));
        svc.external_ips.push_back(*ip);
      }
    }
    SARENA_ASSIGN_OR_RETURN(svc.health_check_node_port, GetPort(*spec, "healthCheckNodePort", file, sp));
    SARENA_ASSIGN_OR_RETURN(std::string aff, GetStr(*spec, "sessionAffinity", file, sp));
    svc.session_affinity_client_ip = aff == "ClientIP";
    SARENA_ASSIGN_OR_RETURN(svc.external_name, GetStr(*spec, "externalName", file, sp));
    SARENA_ASSIGN_OR_RETURN(const JsonValue* status, GetObject(it, "status", file, p));
    if (status != nullptr) {
      std::string stp = Sub(p, "status");
      SARENA_ASSIGN_OR_RETURN(const JsonValue* lb, GetObject(*status, "loadBalancer", file, stp));
      if (lb != nullptr) {
        std::string lp = Sub(stp, "loadBalancer");
        SARENA_ASSIGN_OR_RETURN(const JsonValue* ing, GetArray(*lb, "ingress", file, lp));
        if (ing != nullptr) {
          for (size_t k = 0; k < ing->size(); ++k) {
            std::string ip_path = JsonIndexPath(Sub(lp, "ingress"), k);
            if (!(*ing)[k].is_object()) return JsonFieldError(file, ip_path, "expected an object");
            SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4((*ing)[k], "ip", file, ip_path));
            if (ip) svc.load_balancer_ips.push_back(*ip);
          }
        }
      }
    }
    services_.push_back(std::move(svc));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<std::vector<EndpointGroup::Port>> GroupPorts(const JsonValue& obj,
                                                            absl::string_view file,
                                                            absl::string_view path) {
  std::vector<EndpointGroup::Port> out;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ports, GetArray(obj, "ports", file, path));
  if (ports == nullptr) return out;
  for (size_t k = 0; k < ports->size(); ++k) {
    const JsonValue& pt = (*ports)[k];
    std::string pp = JsonIndexPath(Sub(path, "ports"), k);
    if (!pt.is_object()) return JsonFieldError(file, pp, "expected an object");
    EndpointGroup::Port port;
    SARENA_ASSIGN_OR_RETURN(port.name, GetStr(pt, "name", file, pp));
    SARENA_ASSIGN_OR_RETURN(port.port, GetPort(pt, "port", file, pp));
    SARENA_ASSIGN_OR_RETURN(port.proto, GetProtocol(pt, file, pp));
    out.push_back(std::move(port));
  }
  return out;
}

absl::Status TargetRef(const JsonValue& obj, absl::string_view file, absl::string_view path,
                       Backend* b) {
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ref, GetObject(obj, "targetRef", file, path));
  if (ref == nullptr) return absl::OkStatus();
  std::string rp = Sub(path, "targetRef");
  SARENA_ASSIGN_OR_RETURN(std::string kind, GetStr(*ref, "kind", file, rp));
  if (!kind.empty() && kind != "Pod") return absl::OkStatus();
  SARENA_ASSIGN_OR_RETURN(b->pod_name, GetStr(*ref, "name", file, rp));
  SARENA_ASSIGN_OR_RETURN(b->pod_namespace, GetStr(*ref, "namespace", file, rp));
  return absl::OkStatus();
}

}  // namespace

absl::Status Cluster::ParseEndpointSlices(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  endpoints_.clear();
  files_.endpoint_slices = true;
  for (const auto& [itp, p] : items) {
    const JsonValue& it = *itp;
    SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
    Labels labels;
    if (const JsonValue* meta = it.Find("metadata")) {
      SARENA_ASSIGN_OR_RETURN(labels, GetLabels(*meta, "labels", file, Sub(p, "metadata")));
    }
    const std::string* svc = FindLabel(labels, "kubernetes.io/service-name");
    if (svc == nullptr || svc->empty()) continue;  // not owned by a Service
    SARENA_ASSIGN_OR_RETURN(std::string at, GetStr(it, "addressType", file, p));
    if (!at.empty() && at != "IPv4") continue;
    EndpointGroup g;
    SARENA_ASSIGN_OR_RETURN(g.ports, GroupPorts(it, file, p));
    SARENA_ASSIGN_OR_RETURN(const JsonValue* eps, GetArray(it, "endpoints", file, p));
    if (eps != nullptr) {
      for (size_t k = 0; k < eps->size(); ++k) {
        const JsonValue& e = (*eps)[k];
        std::string ep = JsonIndexPath(Sub(p, "endpoints"), k);
        if (!e.is_object()) return JsonFieldError(file, ep, "expected an object");
        Backend base;
        SARENA_ASSIGN_OR_RETURN(base.node_name, GetStr(e, "nodeName", file, ep));
        SARENA_RETURN_IF_ERROR(TargetRef(e, file, ep, &base));
        SARENA_ASSIGN_OR_RETURN(const JsonValue* cond, GetObject(e, "conditions", file, ep));
        if (cond != nullptr) {
          std::string cp = Sub(ep, "conditions");
          SARENA_ASSIGN_OR_RETURN(auto ready, JsonGetBool(*cond, "ready", file, cp));
          SARENA_ASSIGN_OR_RETURN(auto serving, JsonGetBool(*cond, "serving", file, cp));
          SARENA_ASSIGN_OR_RETURN(auto term, JsonGetBool(*cond, "terminating", file, cp));
          base.ready = ready.value_or(true);
          base.serving = serving.value_or(base.ready);
          base.terminating = term.value_or(false);
        }
        SARENA_ASSIGN_OR_RETURN(const JsonValue* addrs, GetArray(e, "addresses", file, ep));
        if (addrs == nullptr) continue;
        for (size_t a = 0; a < addrs->size(); ++a) {
          std::string ap = JsonIndexPath(Sub(ep, "addresses"), a);
          if (!(*addrs)[a].is_string()) return JsonFieldError(file, ap, "expected a string");
          absl::string_view t = (*addrs)[a].str();
          if (t.find(':') != absl::string_view::npos) continue;
          auto ip = net::ParseIpv4(t);
          if (!ip.ok()) return JsonFieldError(file, ap, absl::StrCat("invalid IPv4 address '", t, "'"));
          Backend b = base;
          b.ip = *ip;
          g.addresses.push_back(std::move(b));
        }
      }
    }
    endpoints_[absl::StrCat(m.namespace_, "/", *svc)].push_back(std::move(g));
  }
  return absl::OkStatus();
}

absl::Status Cluster::ParseEndpoints(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  SARENA_ASSIGN_OR_RETURN(auto items, Items(doc));
  endpoints_.clear();
  files_.endpoint_slices = false;
  for (const auto& [itp, p] : items) {
    const JsonValue& it = *itp;
    SARENA_ASSIGN_OR_RETURN(Meta m, GetMeta(it, file, p, true));
    std::vector<EndpointGroup>& groups = endpoints_[absl::StrCat(m.namespace_, "/", m.name)];
    SARENA_ASSIGN_OR_RETURN(const JsonValue* subsets, GetArray(it, "subsets", file, p));
    if (subsets == nullptr) continue;
    for (size_t s = 0; s < subsets->size(); ++s) {
      const JsonValue& ss = (*subsets)[s];
      std::string spath = JsonIndexPath(Sub(p, "subsets"), s);
      if (!ss.is_object()) return JsonFieldError(file, spath, "expected an object");
      EndpointGroup g;
      SARENA_ASSIGN_OR_RETURN(g.ports, GroupPorts(ss, file, spath));
      for (const char* key : {"addresses", "notReadyAddresses"}) {
        bool ready = absl::string_view(key) == "addresses";
        SARENA_ASSIGN_OR_RETURN(const JsonValue* addrs, GetArray(ss, key, file, spath));
        if (addrs == nullptr) continue;
        for (size_t a = 0; a < addrs->size(); ++a) {
          const JsonValue& ad = (*addrs)[a];
          std::string ap = JsonIndexPath(Sub(spath, key), a);
          if (!ad.is_object()) return JsonFieldError(file, ap, "expected an object");
          SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(ad, "ip", file, ap));
          if (!ip) continue;
          Backend b;
          b.ip = *ip;
          b.ready = ready;
          b.serving = ready;
          SARENA_ASSIGN_OR_RETURN(b.node_name, GetStr(ad, "nodeName", file, ap));
          SARENA_RETURN_IF_ERROR(TargetRef(ad, file, ap, &b));
          g.addresses.push_back(std::move(b));
        }
      }
      groups.push_back(std::move(g));
    }
  }
  return absl::OkStatus();
}

absl::Status Cluster::ParseIpPools(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(ip_pools_, sarena::model::ParseIpPools(json, file));
  has_ip_pools_ = true;
  return absl::OkStatus();
}

void Cluster::AddPod(Pod pod) { pods_.push_back(std::move(pod)); }
void Cluster::AddNode(Node node) { nodes_.push_back(std::move(node)); }
void Cluster::AddService(Service service) { services_.push_back(std::move(service)); }
void Cluster::SetEndpoints(absl::string_view namespace_, absl::string_view service,
                           std::vector<EndpointGroup> groups) {
  endpoints_[absl::StrCat(namespace_, "/", service)] = std::move(groups);
}
void Cluster::AddIpPool(IpPool pool) {
  ip_pools_.push_back(std::move(pool));
  has_ip_pools_ = true;
}

void Cluster::Finalize() {
  auto ix = std::make_unique<Index>();
  ix->pod_by_key.reserve(pods_.size());
  ix->pod_by_ip.reserve(pods_.size());
  absl::flat_hash_map<uint32_t, uint32_t> first_live_by_ip;
  auto live = [](const Pod& p) {
    return p.phase == "Running" || p.phase == "Pending" || p.phase.empty();
  };
  for (uint32_t i = 0; i < pods_.size(); ++i) {
    const Pod& p = pods_[i];
    ix->pod_by_key.emplace(PairKey(p.namespace_, p.name), i);
    if (!p.node_name.empty()) ix->pods_by_node[p.node_name].push_back(i);
    if (p.host_network) continue;
    for (const net::Ipv4& ip : p.pod_ips) {
      if (live(p)) {
        auto [first, fresh] = first_live_by_ip.emplace(ip.to_uint(), i);
        if (!fresh && first->second != i) {
          std::vector<uint32_t>& shared = ix->live_pods_by_shared_ip[ip.to_uint()];
          if (shared.empty()) shared.push_back(first->second);
          if (shared.back() != i) shared.push_back(i);
        }
      }
      auto [it, inserted] = ix->pod_by_ip.emplace(ip.to_uint(), i);
      if (!inserted) {
        // Prefer a running pod over finished ones that kept their IP in status.
        const Pod& old = pods_[it->second];
        bool old_live = live(old);
        bool new_live = live(p);
        if (new_live && !old_live) it->second = i;
      }
    }
  }
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    ix->node_by_name.emplace(n.name, i);
    for (const auto& ip : n.internal_ips) ix->node_by_ip.emplace(ip.to_uint(), i);
    for (const auto& ip : n.external_ips) ix->node_by_ip.emplace(ip.to_uint(), i);
    if (n.calico_ipv4_address) ix->node_by_ip.emplace(n.calico_ipv4_address->address().to_uint(), i);
    for (const auto* ip : {&n.calico_ipip_tunnel_addr, &n.calico_vxlan_tunnel_addr,
                           &n.calico_wireguard_addr}) {
      if (*ip) ix->node_by_ip.emplace((*ip)->to_uint(), i);
    }
    for (const auto& c : n.pod_cidrs) {
      uint8_t len = static_cast<uint8_t>(c.prefix_length());
      ix->node_by_cidr.emplace((static_cast<uint64_t>(len) << 32) | c.network().to_uint(), i);
      if (std::find(ix->cidr_lens.begin(), ix->cidr_lens.end(), len) == ix->cidr_lens.end()) {
        ix->cidr_lens.push_back(len);
      }
    }
  }
  std::sort(ix->cidr_lens.begin(), ix->cidr_lens.end(), std::greater<uint8_t>());
  for (uint32_t i = 0; i < services_.size(); ++i) {
    const Service& s = services_[i];
    ix->svc_by_key.emplace(PairKey(s.namespace_, s.name), i);
    for (const auto& ip : s.cluster_ips) ix->svc_by_ip.emplace(ip.to_uint(), i);
    for (const auto& ip : s.load_balancer_ips) ix->svc_by_ip.emplace(ip.to_uint(), i);
    for (const auto& ip : s.external_ips) ix->svc_by_ip.emplace(ip.to_uint(), i);
    for (const auto& p : s.ports) {
      if (p.node_port != 0) {
        ix->svc_by_nodeport.emplace((static_cast<uint32_t>(p.proto) << 16) | p.node_port, i);
      }
    }
  }
  index_ = std::move(ix);
}

const Pod* Cluster::FindPod(absl::string_view namespace_, absl::string_view name) const {
  auto it = index_->pod_by_key.find(PairKey(namespace_, name));
  return it == index_->pod_by_key.end() ? nullptr : &pods_[it->second];
}

const Pod* Cluster::FindPodByIp(const net::Ipv4& ip) const {
  auto it = index_->pod_by_ip.find(ip.to_uint());
  return it == index_->pod_by_ip.end() ? nullptr : &pods_[it->second];
}

std::vector<const Pod*> Cluster::LivePodsSharingIp(const net::Ipv4& ip) const {
  std::vector<const Pod*> out;
  auto it = index_->live_pods_by_shared_ip.find(ip.to_uint());
  if (it == index_->live_pods_by_shared_ip.end()) return out;
  out.reserve(it->second.size());
  for (uint32_t i : it->second) out.push_back(&pods_[i]);
  return out;
}

std::vector<const Pod*> Cluster::PodsOnNode(absl::string_view node) const {
  std::vector<const Pod*> out;
  auto it = index_->pods_by_node.find(node);
  if (it == index_->pods_by_node.end()) return out;
  out.reserve(it->second.size());
  for (uint32_t i : it->second) out.push_back(&pods_[i]);
  return out;
}

const Node* Cluster::FindNode(absl::string_view name) const {
  auto it = index_->node_by_name.find(name);
  return it == index_->node_by_name.end() ? nullptr : &nodes_[it->second];
}

const Node* Cluster::FindNodeByIp(const net::Ipv4& ip) const {
  auto it = index_->node_by_ip.find(ip.to_uint());
  return it == index_->node_by_ip.end() ? nullptr : &nodes_[it->second];
}

const Node* Cluster::FindNodeByPodCidr(const net::Ipv4& ip) const {
  uint32_t a = ip.to_uint();
  for (uint8_t len : index_->cidr_lens) {
    uint32_t mask = len == 0 ? 0 : (0xffffffffu << (32 - len));
    auto it = index_->node_by_cidr.find((static_cast<uint64_t>(len) << 32) | (a & mask));
    if (it != index_->node_by_cidr.end()) return &nodes_[it->second];
  }
  return nullptr;
}

const Service* Cluster::FindService(absl::string_view namespace_, absl::string_view name) const {
  auto it = index_->svc_by_key.find(PairKey(namespace_, name));
  return it == index_->svc_by_key.end() ? nullptr : &services_[it->second];
}

const Service* Cluster::FindServiceByIp(const net::Ipv4& ip) const {
  auto it = index_->svc_by_ip.find(ip.to_uint());
  return it == index_->svc_by_ip.end() ? nullptr : &services_[it->second];
}

const Service* Cluster::FindServiceByNodePort(uint16_t node_port, uint8_t proto) const {
  auto it = index_->svc_by_nodeport.find((static_cast<uint32_t>(proto) << 16) | node_port);
  return it == index_->svc_by_nodeport.end() ? nullptr : &services_[it->second];
}

const std::vector<EndpointGroup>* Cluster::FindEndpoints(absl::string_view namespace_,
                                                         absl::string_view name) const {
  // Keys are "ns/name"; build it on the stack to avoid a heap allocation for short names.
  char buf[320];
  std::string heap;
  absl::string_view key;
  if (namespace_.size() + name.size() + 1 <= sizeof(buf)) {
    std::memcpy(buf, namespace_.data(), namespace_.size());
    buf[namespace_.size()] = '/';
    std::memcpy(buf + namespace_.size() + 1, name.data(), name.size());
    key = absl::string_view(buf, namespace_.size() + 1 + name.size());
  } else {
    heap = absl::StrCat(namespace_, "/", name);
    key = heap;
  }
  auto it = endpoints_.find(key);
  return it == endpoints_.end() ? nullptr : &it->second;
}

std::vector<Backend> Cluster::BackendsFor(const Service& service, const ServicePort& port) const {
  std::vector<Backend> out;
  const std::vector<EndpointGroup>* groups = FindEndpoints(service.namespace_, service.name);
  if (groups == nullptr) return out;
  for (const EndpointGroup& g : *groups) {
    const EndpointGroup::Port* gp = nullptr;
    for (const auto& candidate : g.ports) {
      if (candidate.proto != port.proto) continue;
      if (candidate.name == port.name) {
        gp = &candidate;
        break;
      }
    }
    if (gp == nullptr && port.name.empty() && g.ports.size() == 1 && g.ports[0].proto == port.proto) {
      gp = &g.ports[0];
    }
    if (gp == nullptr) continue;
    for (const Backend& b : g.addresses) {
      Backend x = b;
      x.port = gp->port;
      x.proto = gp->proto;
      out.push_back(std::move(x));
    }
  }
  return out;
}

const IpPool* Cluster::FindIpPool(const net::Ipv4& ip) const {
  return sarena::model::FindIpPool(ip_pools_, ip);
}

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

Cluster::SelectedPods Cluster::CountSelectedPods(const Service& service) const {
  SelectedPods n;
  if (service.selector.empty()) return n;
  for (const Pod& p : pods_) {
    if (p.namespace_ != service.namespace_ || !SelectorMatches(service.selector, p.labels)) {
      continue;
    }
    ++n.pods;
    if (p.ready) ++n.ready;
  }
  return n;
}

}  // namespace sarena::model
