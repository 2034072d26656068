// Loading the sarena BPF objects (from the skeletons generated from bpf/*.bpf.c) and the typed
// view of the maps they share.
//
// Every object defines the same maps with LIBBPF_PIN_BY_NAME; Objects::Load opens each skeleton
// with bpf_object_open_opts.pin_root_path = options.pin_root, so the first load creates and pins
// <pin_root>/<name> for every map of sarena/abi.h (SARENA_MAP_*), and every later load — the other
// objects, a restarted daemon, a test — reuses the pinned maps instead of creating new ones.
// Programs are not pinned here: attach them (link.h) and pin the links.
#ifndef LIBSARENA_DATAPATH_OBJECTS_H_
#define LIBSARENA_DATAPATH_OBJECTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/bpf/map.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/maps.h"

namespace sarena::datapath {

/// The BPF programs of the datapath, one per attach point.
enum class Program {
  kFromContainer,  // bpf/from_container.bpf.c: TCX ingress of each pod's host-side veth
  kFromHost,       // bpf/from_host.bpf.c: TCX egress of sarena_host
  kNoop,           // bpf/noop.bpf.c: returns TC_ACT_OK; benchmark baseline
  kFromOverlay,    // bpf/from_overlay.bpf.c: TCX ingress of sarena_vxlan (decapsulated frames)
  kToOverlay,      // bpf/to_overlay.bpf.c: TCX egress of sarena_vxlan (sets the tunnel key)
  kFromNetdev,     // bpf/from_netdev.bpf.c: TCX ingress of the uplink (native routing)
};

/// The program (and ELF function) name: "from_container", "from_host", "noop", "from_overlay",
/// "to_overlay", "from_netdev".
absl::string_view ToString(Program program);

/// The shared maps, typed with the structs of sarena/abi.h. Move-only (owns one fd per map).
struct Maps {
  EndpointMap endpoints;                 // SARENA_MAP_ENDPOINTS, hash (+ SARENA_MAP_ENDPOINT_SLOTS)
  ConfigMap config;                      // SARENA_MAP_CONFIG, array of 1
  EndpointCounterMap ep_counters;        // SARENA_MAP_EP_COUNTERS, by endpoint_id
  DropMap drops;                         // SARENA_MAP_DROPS, by sarena_drop_reason
  HostFlowMap host_flows;                // SARENA_MAP_HOST_FLOWS, LRU, value = ns
  TunnelMap tunnels;                     // SARENA_MAP_TUNNELS, LPM trie
  PeerMap peers;                         // SARENA_MAP_PEERS, hash
  OverlayConfigMap overlay_config;       // SARENA_MAP_OVERLAY_CONFIG, array of 1
  NodeCounterMap node_counters;          // SARENA_MAP_NODE_COUNTERS, by node_id
  /// SARENA_MAP_FLOW_OPENERS, array by endpoint_id (nonzero: the endpoint opened a host flow).
  /// nullopt only in pinned views of a datapath older than the map.
  std::optional<bpf::Map<uint32_t, uint32_t>> flow_openers;

  /// Opens the maps pinned as <pin_root>/<SARENA_MAP_*> (e.g. by a running sarenad) for reading
  /// and writing, checking their key/value sizes against sarena/abi.h. For writers next to a
  /// running datapath (tests, the overlay). Errors: kNotFound naming the missing pin,
  /// kFailedPrecondition on a layout mismatch.
  static absl::StatusOr<Maps> FromPinRoot(absl::string_view pin_root);
  /// The same maps opened read-only (bpf_obj_get with BPF_F_RDONLY): every read verb works,
  /// every write fails in the kernel with kPermissionDenied (EPERM). For readers that must never
  /// change a running node's datapath: the `sarena` CLI, sarena-diag collect, the metrics
  /// endpoint, examples/list_endpoints. Errors: as FromPinRoot.
  static absl::StatusOr<Maps> OpenPinned(absl::string_view pin_root);

  /// Marks `endpoint_id` as an opener of host flows (SARENA_MAP_FLOW_OPENERS), so that
  /// from_container consults SARENA_MAP_HOST_FLOWS for packets to it. Whoever writes a host flow
  /// other than the datapath (tests, an upgrade) calls this. No-op without the map.
  /// kInvalidArgument when >= SARENA_MAX_ENDPOINTS; map errors otherwise.
  absl::Status MarkFlowOpener(uint32_t endpoint_id) const;
  /// Marks the endpoint of every address that has a record in SARENA_MAP_HOST_FLOWS as an opener
  /// (records of addresses without an endpoint are skipped). Objects::Load calls it, so pins
  /// written by a sarenad older than the opener map lose no reply. Errors: map errors.
  absl::Status MarkRecordedFlowOpeners() const;

 private:
  static absl::StatusOr<Maps> Open(absl::string_view pin_root, bpf::PinAccess access);
};

struct ObjectsOptions {
  /// bpffs directory where the maps are pinned by name (e.g. "/sys/fs/bpf/sarena"). Must exist
  /// and be on a bpffs (see EnsureBpffs in bpffs.h). Required.
  std::string pin_root;
};

/// The loaded objects: from_container, from_host, noop, from_overlay, to_overlay, from_netdev. Move-only. Destroying it closes the
/// program fds (attached programs stay alive through their links) and the map fds (maps stay
/// alive through their pins).
class Objects {
 public:
  /// Opens and loads every skeleton with pin_root_path = options.pin_root, then opens typed maps
  /// over the loaded map fds (checking key/value sizes against sarena/abi.h).
  /// Errors: kInvalidArgument for an empty pin_root; the load's errno as ErrnoStatus
  /// ("load BPF object 'from_container': ...") with libbpf's log — including the verifier log
  /// and "couldn't reuse pinned map" for an incompatible existing pin — as the detail text;
  /// kFailedPrecondition on a size mismatch.
  static absl::StatusOr<Objects> Load(const ObjectsOptions& options);

  Objects(Objects&&) noexcept;
  Objects& operator=(Objects&&) noexcept;
  ~Objects();

  /// Program fd (owned by this object; dup it to keep it beyond this object's lifetime).
  int prog_fd(Program program) const;
  /// Kernel id of the loaded program (what QueryAttached reports). kInternal on failure.
  absl::StatusOr<uint32_t> prog_id(Program program) const;
  /// The typed maps (fds of their own, valid while this object lives).
  const Maps& maps() const;
  /// options.pin_root.
  const std::string& pin_root() const;

 private:
  struct Impl;
  explicit Objects(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_OBJECTS_H_
