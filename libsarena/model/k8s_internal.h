// Private to model/ (not installed: it declares sarena::model::internal): what the pieces of
// Cluster share. The public API is k8s.h; its implementation is split by concern:
//   * Kubernetes object JSON (kubectl -o json): k8s_json.cc (the field readers below, list items,
//     metadata), k8s_pods_nodes.cc (Pods, Nodes), k8s_services.cc (Services, EndpointSlices,
//     Endpoints, IPPools),
//   * k8s_load.cc: Cluster::Load, the cluster/ directory of a snapshot, pods.json parsed in
//     parallel slices when it is large,
//   * k8s.cc: the semantics: label selectors, the lookup index (Finalize), Service resolution
//     (ports, node ports, endpoints and the backends of a Service port), the pods a Service
//     selects.
#ifndef LIBSARENA_MODEL_K8S_INTERNAL_H_
#define LIBSARENA_MODEL_K8S_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/json.h"
#include "libsarena/model/k8s.h"

namespace sarena::model::internal {

// ---------------------------------------------------------------------------------------------
// kubectl JSON field readers (k8s_json.cc). Errors are JsonFieldError's (InvalidArgument naming
// the file and the field's path); an absent field is nullptr / empty / 0.

// `path`.`key` (just `key` at the root).
std::string Sub(absl::string_view path, absl::string_view key);

absl::StatusOr<const JsonValue*> GetObject(const JsonValue& obj, absl::string_view key,
                                           absl::string_view file, absl::string_view path);
absl::StatusOr<const JsonValue*> GetArray(const JsonValue& obj, absl::string_view key,
                                          absl::string_view file, absl::string_view path);
absl::StatusOr<std::string> GetStr(const JsonValue& obj, absl::string_view key,
                                   absl::string_view file, absl::string_view path);
// A string map (labels, annotations, a selector), sorted by key; null values are skipped.
absl::StatusOr<Labels> GetLabels(const JsonValue& obj, absl::string_view key,
                                 absl::string_view file, absl::string_view path);
// "protocol" (TCP when absent or empty) as an IP protocol number.
absl::StatusOr<uint8_t> GetProtocol(const JsonValue& obj, absl::string_view file,
                                    absl::string_view path);
absl::StatusOr<uint16_t> GetPort(const JsonValue& obj, absl::string_view key,
                                 absl::string_view file, absl::string_view path);

// The list items of a kubectl document (List, typed list, a bare array, or one object), each with
// its JSON path.
absl::StatusOr<std::vector<std::pair<const JsonValue*, std::string>>> Items(const JsonDoc& doc);

struct Meta {
  std::string name, namespace_, uid;
};

// metadata.name (required), .namespace ("default" when `namespaced` and unset), .uid.
absl::StatusOr<Meta> GetMeta(const JsonValue& it, absl::string_view file, const std::string& p,
                             bool namespaced);

// Whether status.conditions has Ready=True.
absl::StatusOr<bool> ReadyCondition(const JsonValue& status, absl::string_view file,
                                    const std::string& sp);

// An annotation holding an IPv4 address (an "/len" suffix is dropped); nullopt when unset.
absl::StatusOr<std::optional<net::Ipv4>> AnnotationIpv4(const Labels& ann, absl::string_view key,
                                                        absl::string_view file,
                                                        absl::string_view path);

// ---------------------------------------------------------------------------------------------
// Pods (k8s_pods_nodes.cc), also read by the sliced reader of a large pods.json (k8s_load.cc).

// One item of a pod list (`p` its JSON path, for errors).
absl::Status ParsePodItem(const JsonValue& it, absl::string_view file, const std::string& p,
                          Pod* pod);

}  // namespace sarena::model::internal

#endif  // LIBSARENA_MODEL_K8S_INTERNAL_H_
