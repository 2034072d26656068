#include "libsarena/datapath/datapath.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/log.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/bpf/bpffs.h"
#include "libsarena/datapath/naming.h"

namespace sarena::datapath {
namespace {

absl::Status Unpin(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("remove pin '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<HookProgram> AttachedPrograms(int ifindex) {
  std::vector<HookProgram> out;
  for (bpf::Direction dir : {bpf::Direction::kIngress, bpf::Direction::kEgress}) {
    absl::StatusOr<std::vector<bpf::AttachedProgram>> progs = bpf::QueryAttached(ifindex, dir);
    if (!progs.ok()) continue;
    for (bpf::AttachedProgram& p : *progs) out.push_back({dir, std::move(p)});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Datapath>> Datapath::Open(const DatapathOptions& options,
                                                         const HostDevice& host,
                                                         const net::Ipv4& node_ip,
                                                         const net::Ipv4Prefix& pod_cidr) {
  SARENA_ASSIGN_OR_RETURN(std::string mounted, bpf::EnsureBpffs(options.bpffs));
  if (!mounted.empty()) SARENA_LOG(Info, "mounted bpffs at ", mounted);
  SARENA_RETURN_IF_ERROR(MakeDirs(absl::StrCat(options.bpffs, "/links"), 0700));
  SARENA_ASSIGN_OR_RETURN(datapath::Objects objects,
                          datapath::Objects::Load({.pin_root = options.bpffs}));

  bpf::AttachMode mode = options.attach_mode;
  if (mode == bpf::AttachMode::kAuto) {
    mode = bpf::KernelHasTcx() ? bpf::AttachMode::kTcx : bpf::AttachMode::kTc;
  }
  SARENA_LOG(Info, "BPF programs loaded, maps pinned under ", options.bpffs, ", attach mode ",
             bpf::ToString(mode));

  datapath::Config cfg{};
  cfg.node_ip_be = net::ToBe32(node_ip);
  cfg.host_ifindex = static_cast<uint32_t>(host.host.ifindex);
  cfg.net_ifindex = static_cast<uint32_t>(host.net.ifindex);
  std::memcpy(cfg.host_mac, host.host.mac.data(), 6);
  std::memcpy(cfg.net_mac, host.net.mac.data(), 6);
  cfg.flags = options.redirect_peer ? SARENA_CFG_F_REDIRECT_PEER : 0;
  cfg.pod_cidr_be = net::ToBe32(pod_cidr.canonical().address());
  cfg.pod_cidr_len = pod_cidr.prefix_length();
  SARENA_RETURN_IF_ERROR(objects.maps().config.Write(cfg));

  std::unique_ptr<Datapath> dp(new Datapath(options, std::move(objects), mode));
  SARENA_RETURN_IF_ERROR(dp->Attach(datapath::Program::kFromHost, kHostDevice, host.host.ifindex,
                                    bpf::Direction::kEgress));
  return dp;
}

std::string Datapath::LinkPinPath(absl::string_view ifname, bpf::Direction direction) const {
  // bpffs refuses names containing '.' (EPERM: reserved for its preloaded iterators such as
  // maps.debug), so a dotted interface name ("eth0.100") gets '-' instead.
  std::string name(ifname);
  std::replace(name.begin(), name.end(), '.', '-');
  return absl::StrCat(options_.bpffs, "/links/", name, "_", bpf::ToString(direction));
}

absl::StatusOr<int> Datapath::RemoveLinkPinsExcept(absl::string_view ifname_prefix,
                                                   const std::set<std::string>& keep) const {
  std::set<std::string> wanted;
  for (const std::string& ifname : keep) {
    for (bpf::Direction d : {bpf::Direction::kIngress, bpf::Direction::kEgress}) {
      wanted.insert(LinkPinPath(ifname, d));
    }
  }
  const std::string dir = absl::StrCat(options_.bpffs, "/links");
  const std::string prefix = LinkPinPath(ifname_prefix, bpf::Direction::kIngress)
                                 .substr(dir.size() + 1, ifname_prefix.size());
  int removed = 0;
  absl::StatusOr<std::vector<std::string>> names = ListDir(dir);
  if (absl::IsNotFound(names.status())) return 0;  // nothing was ever pinned
  if (!names.ok()) return names.status();
  std::vector<std::string> stale;
  for (const std::string& name : *names) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string path = absl::StrCat(dir, "/", name);
    if (!wanted.count(path)) stale.push_back(path);
  }
  for (const std::string& path : stale) {
    SARENA_LOG(Warning, "removing orphan link pin ", path);
    SARENA_RETURN_IF_ERROR(Unpin(path));
    ++removed;
  }
  return removed;
}

absl::Status Datapath::Attach(datapath::Program program, absl::string_view ifname, int ifindex,
                              bpf::Direction direction) {
  const int prog_fd = objects_.prog_fd(program);
  const std::string pin = LinkPinPath(ifname, direction);
  if (mode_ == bpf::AttachMode::kTc) {
    return bpf::Link::AttachTc(prog_fd, ifindex, direction).status();
  }
  absl::StatusOr<bpf::Link> pinned = bpf::Link::FromPin(pin);
  if (pinned.ok()) {
    if (pinned->ifindex() == ifindex) {
      SARENA_RETURN_IF_ERROR(pinned->Update(prog_fd));
      SARENA_LOG(Info, "updated ", ToString(program), " on ", ifname, " ",
                 bpf::ToString(direction), " (link ", pinned->link_id(), ")");
      return absl::OkStatus();
    }
    // A stale pin: its device is gone (defunct link) or was recreated with another ifindex.
    SARENA_LOG(Warning, "replacing stale link pin ", pin, " (ifindex ", pinned->ifindex(),
               ", device now ", ifindex, ")");
    (void)pinned->Detach();
    SARENA_RETURN_IF_ERROR(Unpin(pin));
  } else if (!absl::IsNotFound(pinned.status())) {
    SARENA_LOG(Warning, "ignoring unusable pin ", pin, ": ", pinned.status().message());
    SARENA_RETURN_IF_ERROR(Unpin(pin));
  }
  SARENA_ASSIGN_OR_RETURN(bpf::Link link, bpf::Link::AttachTcx(prog_fd, ifindex, direction));
  absl::Status pinned_st = link.Pin(pin);
  if (!pinned_st.ok()) {
    (void)link.Detach();
    return pinned_st;
  }
  return absl::OkStatus();
}

absl::Status Datapath::AttachTc(datapath::Program program, int ifindex,
                                bpf::Direction direction) {
  return bpf::Link::AttachTc(objects_.prog_fd(program), ifindex, direction).status();
}

absl::Status Datapath::RemoveTcCopy(datapath::Program program, int ifindex, nl::Socket& sock) {
  absl::StatusOr<std::vector<bpf::AttachedProgram>> progs =
      bpf::QueryAttached(ifindex, bpf::Direction::kIngress);
  if (absl::IsNotFound(progs.status())) return absl::OkStatus();  // the device is gone
  if (!progs.ok()) return progs.status();
  const bool ours = std::any_of(progs->begin(), progs->end(), [&](const bpf::AttachedProgram& p) {
    return p.mode == bpf::AttachMode::kTc && p.name == ToString(program);
  });
  if (!ours) return absl::OkStatus();
  SARENA_RETURN_IF_ERROR(bpf::DetachTcFilter(ifindex, bpf::Direction::kIngress));
  for (nl::Socket::TcHook hook : {nl::Socket::TcHook::kIngress, nl::Socket::TcHook::kEgress}) {
    absl::StatusOr<int> n = sock.CountTcFilters(ifindex, hook);
    if (absl::IsNotFound(n.status()) || absl::IsInvalidArgument(n.status())) {
      return absl::OkStatus();  // device or qdisc gone
    }
    if (!n.ok()) return n.status();
    if (*n > 0) return absl::OkStatus();  // someone else's filters: the qdisc stays
  }
  return bpf::DeleteClsact(ifindex);
}

absl::StatusOr<std::optional<bpf::Link>> Datapath::TakeLinkPin(absl::string_view ifname,
                                                                bpf::Direction direction) {
  const std::string pin = LinkPinPath(ifname, direction);
  absl::StatusOr<bpf::Link> link = bpf::Link::FromPin(pin);
  if (absl::IsNotFound(link.status())) return std::nullopt;
  if (!link.ok()) return link.status();
  SARENA_RETURN_IF_ERROR(Unpin(pin));
  return std::optional<bpf::Link>(std::move(*link));
}

absl::Status Datapath::Detach(absl::string_view ifname, int ifindex, bpf::Direction direction) {
  const std::string pin = LinkPinPath(ifname, direction);
  absl::StatusOr<bpf::Link> pinned = bpf::Link::FromPin(pin);
  if (pinned.ok()) {
    absl::Status st = pinned->Detach();
    if (!st.ok() && !absl::IsNotFound(st)) return st;
  }
  SARENA_RETURN_IF_ERROR(Unpin(pin));
  // tc filters are not pinned; remove the filter at the default handle/priority if present.
  if (mode_ == bpf::AttachMode::kTc && ifindex > 0) return bpf::DetachTcFilter(ifindex, direction);
  return absl::OkStatus();
}

absl::StatusOr<bool> Datapath::IsAttached(datapath::Program program, int ifindex,
                                          bpf::Direction direction) const {
  SARENA_ASSIGN_OR_RETURN(std::vector<bpf::AttachedProgram> progs,
                          bpf::QueryAttached(ifindex, direction));
  for (const bpf::AttachedProgram& p : progs) {
    if (p.name == ToString(program)) return true;
  }
  return false;
}

}  // namespace sarena::datapath
