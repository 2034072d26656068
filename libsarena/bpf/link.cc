#include "libsarena/bpf/link.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/bpf/libbpf_log.h"

namespace sarena::bpf {
namespace {

constexpr int kENOTSUPP = 524;            // kernel-internal errno (include/linux/errno.h)
constexpr uint32_t kBpfLinkTypeTcx = 11;  // enum bpf_link_type BPF_LINK_TYPE_TCX (Linux 6.6)

uint32_t TcxAttachType(Direction d) {
  return d == Direction::kIngress ? kBpfTcxIngress : kBpfTcxEgress;
}

bpf_tc_attach_point TcAttachPoint(Direction d) {
  return d == Direction::kIngress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
}

std::string Where(int ifindex, Direction d) {
  return absl::StrCat("ifindex ", ifindex, " ", ToString(d));
}

// bpf_attr.query as of Linux 6.6 (include/uapi/linux/bpf.h); Debian 12's 6.1 headers and
// libbpf 1.1.2 lack target_ifindex/link_ids/revision.
struct QueryAttr {
  uint32_t target_ifindex;  // union with target_fd
  uint32_t attach_type;
  uint32_t query_flags;
  uint32_t attach_flags;
  uint64_t prog_ids;  // user pointer to __u32[count]
  uint32_t count;     // in: capacity; out: number attached
  uint32_t pad;
  uint64_t prog_attach_flags;
  uint64_t link_ids;  // user pointer to __u32[count]
  uint64_t link_attach_flags;
  uint64_t revision;
};

// Raw BPF_PROG_QUERY for a TCX hook. Returns prog ids and link ids (same length), or the errno.
int QueryTcx(int ifindex, Direction d, std::vector<uint32_t>* prog_ids,
             std::vector<uint32_t>* link_ids) {
  uint32_t cap = 16;
  while (true) {
    prog_ids->assign(cap, 0);
    link_ids->assign(cap, 0);
    QueryAttr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.target_ifindex = static_cast<uint32_t>(ifindex);
    attr.attach_type = TcxAttachType(d);
    attr.prog_ids = reinterpret_cast<uintptr_t>(prog_ids->data());
    attr.link_ids = reinterpret_cast<uintptr_t>(link_ids->data());
    attr.count = cap;
    long ret = syscall(__NR_bpf, BPF_PROG_QUERY, &attr, sizeof(attr));
    if (ret < 0 && errno == ENOSPC && attr.count > cap) {
      cap = attr.count;
      continue;
    }
    if (ret < 0) return errno;
    prog_ids->resize(attr.count);
    link_ids->resize(attr.count);
    return 0;
  }
}

struct LinkInfo {
  uint32_t type = 0;
  uint32_t id = 0;
  uint32_t prog_id = 0;
  uint32_t ifindex = 0;
  uint32_t attach_type = 0;
};

absl::StatusOr<LinkInfo> GetLinkInfo(int link_fd) {
  bpf_link_info info;
  std::memset(&info, 0, sizeof(info));
  uint32_t len = sizeof(info);
  int ret = bpf_obj_get_info_by_fd(link_fd, &info, &len);
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("get info of link fd ", link_fd));
  LinkInfo out;
  out.type = info.type;
  out.id = info.id;
  out.prog_id = info.prog_id;
  // The TCX member of the union is {__u32 ifindex; __u32 attach_type;}, laid out exactly like
  // the netns member {__u32 netns_ino; __u32 attach_type;} the 6.1 headers know.
  out.ifindex = info.netns.netns_ino;
  out.attach_type = info.netns.attach_type;
  return out;
}

}  // namespace

absl::string_view ToString(Direction direction) {
  return direction == Direction::kIngress ? "ingress" : "egress";
}

absl::string_view ToString(AttachMode mode) {
  switch (mode) {
    case AttachMode::kAuto:
      return "auto";
    case AttachMode::kTcx:
      return "tcx";
    case AttachMode::kTc:
      return "tc";
  }
  return "unknown";
}

absl::StatusOr<ProgramInfo> GetProgramInfo(int prog_fd) {
  bpf_prog_info info;
  std::memset(&info, 0, sizeof(info));
  uint32_t len = sizeof(info);
  int ret = bpf_obj_get_info_by_fd(prog_fd, &info, &len);
  if (ret < 0) return ErrnoStatus(-ret, absl::StrCat("get info of program fd ", prog_fd));
  return ProgramInfo{.id = info.id, .type = info.type, .name = info.name};
}

Link::Link(AttachMode mode, UniqueFd fd, int ifindex, Direction direction, TcOptions tc,
           uint32_t prog_id, uint32_t link_id)
    : mode_(mode),
      fd_(std::move(fd)),
      ifindex_(ifindex),
      direction_(direction),
      tc_(tc),
      prog_id_(prog_id),
      link_id_(link_id) {}

absl::StatusOr<Link> Link::AttachTcx(int prog_fd, int ifindex, Direction direction) {
  internal::LibbpfLogCapture capture;
  int fd = bpf_link_create(prog_fd, ifindex, static_cast<bpf_attach_type>(TcxAttachType(direction)),
                           nullptr);
  if (fd < 0) {
    return ErrnoStatus(-fd, absl::StrCat("attach tcx program to ", Where(ifindex, direction)),
                       capture.Text());
  }
  UniqueFd link(fd);
  SARENA_ASSIGN_OR_RETURN(LinkInfo info, GetLinkInfo(link.get()));
  return Link(AttachMode::kTcx, std::move(link), ifindex, direction, TcOptions{}, info.prog_id,
              info.id);
}

absl::StatusOr<Link> Link::AttachTc(int prog_fd, int ifindex, Direction direction,
                                    const TcOptions& tc) {
  internal::LibbpfLogCapture capture;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = TcAttachPoint(direction));
  int ret = bpf_tc_hook_create(&hook);
  if (ret < 0 && ret != -EEXIST) {
    return ErrnoStatus(-ret, absl::StrCat("create clsact qdisc on ", Where(ifindex, direction)),
                       capture.Text());
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE,
              .handle = tc.handle, .priority = tc.priority);
  ret = bpf_tc_attach(&hook, &opts);
  if (ret < 0) {
    return ErrnoStatus(-ret, absl::StrCat("attach tc program to ", Where(ifindex, direction)),
                       capture.Text());
  }
  return Link(AttachMode::kTc, UniqueFd(), ifindex, direction, tc, opts.prog_id, 0);
}

absl::StatusOr<Link> Link::Attach(int prog_fd, int ifindex, Direction direction,
                                  const AttachOptions& options) {
  switch (options.mode) {
    case AttachMode::kTcx:
      return AttachTcx(prog_fd, ifindex, direction);
    case AttachMode::kTc:
      return AttachTc(prog_fd, ifindex, direction, options.tc);
    case AttachMode::kAuto:
      break;
  }
  auto tcx = AttachTcx(prog_fd, ifindex, direction);
  if (tcx.ok()) return tcx;
  // Only "this kernel has no TCX" falls back; a missing device or a bad program does not.
  absl::StatusCode code = tcx.status().code();
  bool no_tcx = code == absl::StatusCode::kInvalidArgument ||
                code == absl::StatusCode::kUnimplemented ||
                (code == absl::StatusCode::kInternal && !KernelHasTcx());
  if (!no_tcx) return tcx.status();
  auto tc = AttachTc(prog_fd, ifindex, direction, options.tc);
  if (tc.ok()) return tc;
  return absl::Status(tc.status().code(), absl::StrCat(tc.status().message(),
                                                       " (after tcx failed: ",
                                                       tcx.status().message(), ")"));
}

absl::StatusOr<Link> Link::FromPin(absl::string_view path) {
  std::string p(path);
  int fd = bpf_obj_get(p.c_str());
  if (fd < 0) return ErrnoStatus(-fd, absl::StrCat("open pinned link '", path, "'"));
  UniqueFd link(fd);
  auto info = GetLinkInfo(link.get());
  if (!info.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("open pinned link '", path, "': not a BPF link: ", info.status().message()));
  }
  if (info->type != kBpfLinkTypeTcx) {
    return absl::InvalidArgumentError(absl::StrCat("open pinned link '", path,
                                                   "': link type ", info->type, " is not tcx"));
  }
  Direction d = info->attach_type == kBpfTcxEgress ? Direction::kEgress : Direction::kIngress;
  return Link(AttachMode::kTcx, std::move(link), static_cast<int>(info->ifindex), d, TcOptions{},
              info->prog_id, info->id);
}

absl::Status Link::Pin(absl::string_view path) const {
  if (mode_ != AttachMode::kTcx) {
    return absl::FailedPreconditionError(absl::StrCat(
        "pin tc attachment on ", Where(ifindex_, direction_), " at '", path,
        "': a tc filter is not a link; it already outlives the process"));
  }
  std::string p(path);
  int ret = bpf_obj_pin(fd_.get(), p.c_str());
  if (ret < 0) {
    return ErrnoStatus(-ret, absl::StrCat("pin tcx link on ", Where(ifindex_, direction_),
                                          " at '", path, "'"));
  }
  return absl::OkStatus();
}

absl::Status Link::Update(int new_prog_fd) {
  if (mode_ == AttachMode::kTc) {
    SARENA_ASSIGN_OR_RETURN(Link replaced, AttachTc(new_prog_fd, ifindex_, direction_, tc_));
    prog_id_ = replaced.prog_id_;
    return absl::OkStatus();
  }
  int ret = bpf_link_update(fd_.get(), new_prog_fd, nullptr);
  if (ret < 0) {
    return ErrnoStatus(-ret, absl::StrCat("update tcx link on ", Where(ifindex_, direction_)));
  }
  SARENA_ASSIGN_OR_RETURN(LinkInfo info, GetLinkInfo(fd_.get()));
  prog_id_ = info.prog_id;
  return absl::OkStatus();
}

absl::Status DetachTcFilter(int ifindex, Direction direction, const TcOptions& tc) {
  internal::LibbpfLogCapture capture;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = TcAttachPoint(direction));
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = tc.handle, .priority = tc.priority);
  int ret = bpf_tc_detach(&hook, &opts);
  // ENOENT: no filter there any more; EINVAL: no clsact qdisc; ENODEV: no device.
  if (ret == -ENOENT || ret == -EINVAL || ret == -ENODEV) return absl::OkStatus();
  if (ret < 0) {
    return ErrnoStatus(-ret, absl::StrCat("detach tc program from ", Where(ifindex, direction)),
                       capture.Text());
  }
  return absl::OkStatus();
}

absl::Status Link::Detach() {
  if (mode_ == AttachMode::kTc) return DetachTcFilter(ifindex_, direction_, tc_);
  int ret = bpf_link_detach(fd_.get());
  // The kernel treats detaching a detached TCX link as success; ENOLINK is accepted too.
  if (ret < 0 && ret != -ENOLINK) {
    return ErrnoStatus(-ret, absl::StrCat("detach tcx link from ", Where(ifindex_, direction_)));
  }
  return absl::OkStatus();
}

absl::Status DeleteClsact(int ifindex) {
  internal::LibbpfLogCapture capture;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
              .attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
  int ret = bpf_tc_hook_destroy(&hook);
  if (ret == -ENOENT || ret == -EINVAL || ret == -ENODEV) return absl::OkStatus();
  if (ret < 0) {
    return ErrnoStatus(-ret, absl::StrCat("delete clsact qdisc of ifindex ", ifindex),
                       capture.Text());
  }
  return absl::OkStatus();
}

bool KernelHasTcx() {
  static const bool has = [] {
    std::vector<uint32_t> progs, links;
    return QueryTcx(1, Direction::kIngress, &progs, &links) == 0;
  }();
  return has;
}

absl::StatusOr<std::vector<AttachedProgram>> QueryAttached(int ifindex, Direction direction,
                                                           const TcOptions& tc) {
  std::vector<AttachedProgram> out;
  std::vector<uint32_t> prog_ids, link_ids;
  int err = QueryTcx(ifindex, direction, &prog_ids, &link_ids);
  if (err == ENODEV) {
    return ErrnoStatus(err, absl::StrCat("query programs on ", Where(ifindex, direction)));
  }
  if (err != 0 && err != EINVAL && err != kENOTSUPP && err != EOPNOTSUPP) {
    return ErrnoStatus(err, absl::StrCat("query tcx programs on ", Where(ifindex, direction)));
  }
  for (size_t i = 0; i < prog_ids.size(); ++i) {
    AttachedProgram p;
    p.mode = AttachMode::kTcx;
    p.prog_id = prog_ids[i];
    p.link_id = link_ids[i];
    int fd = bpf_prog_get_fd_by_id(prog_ids[i]);
    if (fd >= 0) {
      UniqueFd owned(fd);
      if (auto info = GetProgramInfo(fd); info.ok()) p.name = info->name;
    }
    out.push_back(std::move(p));
  }

  internal::LibbpfLogCapture capture;  // bpf_tc_query warns on "not found"; keep it quiet
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = TcAttachPoint(direction));
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = tc.handle, .priority = tc.priority);
  int ret = bpf_tc_query(&hook, &opts);
  if (ret == 0) {
    AttachedProgram p;
    p.mode = AttachMode::kTc;
    p.prog_id = opts.prog_id;
    int fd = bpf_prog_get_fd_by_id(opts.prog_id);
    if (fd >= 0) {
      UniqueFd owned(fd);
      if (auto info = GetProgramInfo(fd); info.ok()) p.name = info->name;
    }
    out.push_back(std::move(p));
  } else if (ret == -ENODEV) {
    return ErrnoStatus(ENODEV, absl::StrCat("query programs on ", Where(ifindex, direction)));
  }
  // Other errors (ENOENT: no filter there; EINVAL: no clsact qdisc) mean "nothing attached".
  return out;
}

}  // namespace sarena::bpf
