#include "libsarena/datapath/objects.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>

#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bpf/from_container.skel.h"
#include "bpf/from_host.skel.h"
#include "bpf/from_netdev.skel.h"
#include "bpf/from_overlay.skel.h"
#include "bpf/noop.skel.h"
#include "bpf/to_overlay.skel.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/bpf/libbpf_log.h"
#include "libsarena/bpf/link.h"

namespace sarena::datapath {

using bpf::Map;
using bpf::PerCpuMap;
using bpf::GetProgramInfo;
using bpf::ProgramInfo;
namespace internal = bpf::internal;
namespace {

// An owned duplicate of a libbpf-owned fd, so typed maps outlive nothing they should not.
absl::StatusOr<UniqueFd> Dup(int fd, absl::string_view what) {
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) return ErrnoStatus(errno, absl::StrCat("duplicate fd of ", what));
  return UniqueFd(copy);
}

template <typename M>
absl::StatusOr<M> MapFromLibbpf(const struct bpf_map* map) {
  SARENA_ASSIGN_OR_RETURN(UniqueFd fd, Dup(bpf_map__fd(map), bpf_map__name(map)));
  return M::FromFd(std::move(fd));
}

template <typename M>
absl::StatusOr<M> MapFromPin(absl::string_view pin_root, absl::string_view name,
                             bpf::PinAccess access) {
  return M::FromPin(absl::StrCat(pin_root, "/", name), access);
}

// Opens and loads one skeleton. `Skel` is the bpftool-generated struct; the three functions
// are its __open_opts / __load / __destroy.
template <typename Skel>
absl::StatusOr<Skel*> OpenAndLoad(absl::string_view name, const std::string& pin_root,
                                  Skel* (*open)(const struct bpf_object_open_opts*),
                                  int (*load)(Skel*), void (*destroy)(Skel*)) {
  internal::LibbpfLogCapture capture;
  LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_root.c_str());
  Skel* skel = open(&opts);
  if (skel == nullptr) {
    int err = errno ? errno : EINVAL;
    return ErrnoStatus(err, absl::StrCat("open BPF object '", name, "'"), capture.Text());
  }
  int ret = load(skel);
  if (ret < 0) {
    std::string log = capture.Text();
    destroy(skel);
    return ErrnoStatus(-ret, absl::StrCat("load BPF object '", name, "'"), log);
  }
  return skel;
}

}  // namespace

absl::string_view ToString(Program program) {
  switch (program) {
    case Program::kFromContainer:
      return "from_container";
    case Program::kFromHost:
      return "from_host";
    case Program::kNoop:
      return "noop";
    case Program::kFromOverlay:
      return "from_overlay";
    case Program::kToOverlay:
      return "to_overlay";
    case Program::kFromNetdev:
      return "from_netdev";
  }
  return "unknown";
}

// ---- Maps ----

absl::StatusOr<Maps> Maps::FromPinRoot(absl::string_view pin_root) {
  return Open(pin_root, bpf::PinAccess::kReadWrite);
}

absl::StatusOr<Maps> Maps::OpenPinned(absl::string_view pin_root) {
  return Open(pin_root, bpf::PinAccess::kReadOnly);
}

absl::StatusOr<Maps> Maps::Open(absl::string_view pin_root, bpf::PinAccess access) {
  SARENA_ASSIGN_OR_RETURN(auto endpoints, (MapFromPin<Map<EndpointKey, Endpoint>>(
                                              pin_root, SARENA_MAP_ENDPOINTS, access)));
  SARENA_ASSIGN_OR_RETURN(auto config, OpenPinnedMap<ConfigMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto ep_counters, OpenPinnedMap<EndpointCounterMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto drops, OpenPinnedMap<DropMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto host_flows, OpenPinnedMap<HostFlowMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto tunnels, OpenPinnedMap<TunnelMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto peers, OpenPinnedMap<PeerMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto overlay_config, OpenPinnedMap<OverlayConfigMap>(pin_root, access));
  SARENA_ASSIGN_OR_RETURN(auto node_counters, OpenPinnedMap<NodeCounterMap>(pin_root, access));
  // The slot map is optional here: a datapath older than it has only the hash (the programs
  // then never read slots, and this view writes none).
  std::optional<EndpointMap::SlotMap> slots;
  absl::StatusOr<EndpointMap::SlotMap> slot_pin =
      MapFromPin<EndpointMap::SlotMap>(pin_root, SARENA_MAP_ENDPOINT_SLOTS, access);
  if (slot_pin.ok()) {
    slots.emplace(std::move(*slot_pin));
  } else if (!absl::IsNotFound(slot_pin.status())) {
    return slot_pin.status();
  }
  std::optional<Map<uint32_t, uint32_t>> flow_openers;
  auto openers_pin = MapFromPin<Map<uint32_t, uint32_t>>(pin_root, SARENA_MAP_FLOW_OPENERS, access);
  if (openers_pin.ok()) {
    flow_openers.emplace(std::move(*openers_pin));
  } else if (!absl::IsNotFound(openers_pin.status())) {
    return openers_pin.status();
  }
  return Maps{EndpointMap(std::move(endpoints), std::move(slots)),
              std::move(config),
              std::move(ep_counters),
              std::move(drops),
              std::move(host_flows),
              std::move(tunnels),
              std::move(peers),
              std::move(overlay_config),
              std::move(node_counters),
              std::move(flow_openers)};
}

absl::Status Maps::MarkFlowOpener(uint32_t endpoint_id) const {
  if (endpoint_id >= SARENA_MAX_ENDPOINTS) {
    return absl::InvalidArgumentError(absl::StrCat("mark host-flow opener: endpoint id ",
                                                   endpoint_id, " must be < ",
                                                   SARENA_MAX_ENDPOINTS));
  }
  if (!flow_openers) return absl::OkStatus();
  return flow_openers->Update(endpoint_id, 1);
}

absl::Status Maps::MarkRecordedFlowOpeners() const {
  if (!flow_openers) return absl::OkStatus();
  SARENA_ASSIGN_OR_RETURN(std::vector<net::Ipv4> openers, host_flows.Openers());
  for (const net::Ipv4& addr : openers) {
    absl::StatusOr<Endpoint> ep = endpoints.Get(addr);
    if (absl::IsNotFound(ep.status())) continue;  // its pod is gone: nothing to mark
    if (!ep.ok()) return ep.status();
    SARENA_RETURN_IF_ERROR(MarkFlowOpener(ep->endpoint_id));
  }
  return absl::OkStatus();
}

// ---- Objects ----

struct Objects::Impl {
  std::string pin_root;
  struct from_container* from_container = nullptr;
  struct from_host* from_host = nullptr;
  struct noop* noop = nullptr;
  struct from_overlay* from_overlay = nullptr;
  struct to_overlay* to_overlay = nullptr;
  struct from_netdev* from_netdev = nullptr;
  std::optional<Maps> maps;

  ~Impl() {
    if (from_overlay != nullptr) from_overlay__destroy(from_overlay);
    if (to_overlay != nullptr) to_overlay__destroy(to_overlay);
    if (from_netdev != nullptr) from_netdev__destroy(from_netdev);
    if (from_container != nullptr) from_container__destroy(from_container);
    if (from_host != nullptr) from_host__destroy(from_host);
    if (noop != nullptr) noop__destroy(noop);
  }
};

Objects::Objects(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Objects::Objects(Objects&&) noexcept = default;
Objects& Objects::operator=(Objects&&) noexcept = default;
Objects::~Objects() = default;

absl::StatusOr<Objects> Objects::Load(const ObjectsOptions& options) {
  if (options.pin_root.empty()) {
    return absl::InvalidArgumentError("load BPF objects: pin_root (a bpffs directory) is required");
  }
  auto impl = std::make_unique<Impl>();
  impl->pin_root = options.pin_root;
  SARENA_ASSIGN_OR_RETURN(impl->from_container,
                          OpenAndLoad<struct from_container>(
                              "from_container", impl->pin_root, from_container__open_opts,
                              from_container__load, from_container__destroy));
  SARENA_ASSIGN_OR_RETURN(
      impl->from_host,
      OpenAndLoad<struct from_host>("from_host", impl->pin_root, from_host__open_opts,
                                    from_host__load, from_host__destroy));
  SARENA_ASSIGN_OR_RETURN(impl->noop,
                          OpenAndLoad<struct noop>("noop", impl->pin_root, noop__open_opts,
                                                   noop__load, noop__destroy));
  SARENA_ASSIGN_OR_RETURN(impl->from_overlay,
                          OpenAndLoad<struct from_overlay>(
                              "from_overlay", impl->pin_root, from_overlay__open_opts,
                              from_overlay__load, from_overlay__destroy));
  SARENA_ASSIGN_OR_RETURN(impl->to_overlay,
                          OpenAndLoad<struct to_overlay>("to_overlay", impl->pin_root,
                                                         to_overlay__open_opts, to_overlay__load,
                                                         to_overlay__destroy));
  SARENA_ASSIGN_OR_RETURN(impl->from_netdev,
                          OpenAndLoad<struct from_netdev>(
                              "from_netdev", impl->pin_root, from_netdev__open_opts,
                              from_netdev__load, from_netdev__destroy));

  // Typed maps over from_container's (pinned, shared) maps; checks sizes against abi.h.
  const auto& m = impl->from_container->maps;
  SARENA_ASSIGN_OR_RETURN(auto endpoints,
                          (MapFromLibbpf<Map<EndpointKey, Endpoint>>(m.sarena_lxc)));
  SARENA_ASSIGN_OR_RETURN(auto config, (MapFromLibbpf<Map<uint32_t, Config>>(m.sarena_cfg)));
  SARENA_ASSIGN_OR_RETURN(auto ep_counters,
                          (MapFromLibbpf<PerCpuMap<uint32_t, EndpointCounters>>(m.sarena_ep_ctr)));
  SARENA_ASSIGN_OR_RETURN(auto drops,
                          (MapFromLibbpf<PerCpuMap<uint32_t, DropCounter>>(m.sarena_drops)));
  SARENA_ASSIGN_OR_RETURN(auto host_flows,
                          (MapFromLibbpf<Map<FlowKey, uint64_t>>(m.sarena_flows)));
  SARENA_ASSIGN_OR_RETURN(auto tunnels, (MapFromLibbpf<Map<TunnelKey, Tunnel>>(m.sarena_tun)));
  SARENA_ASSIGN_OR_RETURN(auto peers, (MapFromLibbpf<Map<PeerKey, Peer>>(m.sarena_peers)));
  SARENA_ASSIGN_OR_RETURN(auto overlay_config,
                          (MapFromLibbpf<Map<uint32_t, OverlayConfig>>(m.sarena_ovl)));
  SARENA_ASSIGN_OR_RETURN(auto node_counters,
                          (MapFromLibbpf<PerCpuMap<uint32_t, NodeCounters>>(m.sarena_node_ctr)));
  SARENA_ASSIGN_OR_RETURN(auto slots,
                          (MapFromLibbpf<EndpointMap::SlotMap>(m.sarena_lxc4)));
  SARENA_ASSIGN_OR_RETURN(auto flow_openers,
                          (MapFromLibbpf<Map<uint32_t, uint32_t>>(m.sarena_flow_eps)));
  impl->maps.emplace(Maps{EndpointMap(std::move(endpoints), std::move(slots)),
                          ConfigMap(std::move(config)),
                          EndpointCounterMap(std::move(ep_counters)),
                          DropMap(std::move(drops)),
                          HostFlowMap(std::move(host_flows)),
                          TunnelMap(std::move(tunnels)),
                          PeerMap(std::move(peers)),
                          OverlayConfigMap(std::move(overlay_config)),
                          NodeCounterMap(std::move(node_counters)),
                          std::move(flow_openers)});
  // The pins may have been written by another sarenad version (an upgrade that created the slot
  // or opener map next to populated pins, a downgrade that left them stale): rebuild the slots
  // from the hash, and mark every endpoint that has a recorded host flow as an opener, so the
  // fast paths never disagree with the hash and no recorded flow's reply skips the LRU.
  SARENA_RETURN_IF_ERROR(impl->maps->endpoints.ReconcileSlots().status());
  SARENA_RETURN_IF_ERROR(impl->maps->MarkRecordedFlowOpeners());
  return Objects(std::move(impl));
}

int Objects::prog_fd(Program program) const {
  switch (program) {
    case Program::kFromContainer:
      return bpf_program__fd(impl_->from_container->progs.from_container);
    case Program::kFromHost:
      return bpf_program__fd(impl_->from_host->progs.from_host);
    case Program::kNoop:
      return bpf_program__fd(impl_->noop->progs.noop);
    case Program::kFromOverlay:
      return bpf_program__fd(impl_->from_overlay->progs.from_overlay);
    case Program::kToOverlay:
      return bpf_program__fd(impl_->to_overlay->progs.to_overlay);
    case Program::kFromNetdev:
      return bpf_program__fd(impl_->from_netdev->progs.from_netdev);
  }
  return -1;
}

absl::StatusOr<uint32_t> Objects::prog_id(Program program) const {
  SARENA_ASSIGN_OR_RETURN(ProgramInfo info, GetProgramInfo(prog_fd(program)));
  return info.id;
}

const Maps& Objects::maps() const { return *impl_->maps; }

const std::string& Objects::pin_root() const { return impl_->pin_root; }

}  // namespace sarena::datapath
