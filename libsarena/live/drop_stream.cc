#include "libsarena/live/drop_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/diag/report.pb.h"
#include "libsarena/live/drop_names.h"
#include "libsarena/live/netns_scan.h"
#include "libsarena/live/probe.h"
#include "libsarena/model/packet.h"
#include "libsarena/netlink/netns.h"

namespace sarena::live {
namespace {

// nsfs inode -> name under /var/run/netns, for the namespaces there now (at most
// kMaxNetnsNames).
std::map<uint64_t, std::string> NamedInodes() {
  std::map<uint64_t, std::string> out;
  for (const std::string& n : NamedNetns()) {
    if (out.size() >= kMaxNetnsNames) break;
    auto ns = nl::Netns::Open(n);
    if (ns.ok()) out.emplace(ns->inode(), n);  // the first name of a namespace wins
  }
  return out;
}

absl::Status WriteReadyFile(const std::string& path) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create ready file '", tmp, "'"));
  static constexpr char kText[] = "attached\n";
  ssize_t n = write(fd, kText, sizeof(kText) - 1);
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(sizeof(kText) - 1)) {
    unlink(tmp.c_str());
    return ErrnoStatus(n < 0 ? err : EIO, absl::StrCat("write ready file '", tmp, "'"));
  }
  if (rename(tmp.c_str(), path.c_str()) < 0) {
    int e = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(e, absl::StrCat("rename ready file to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string TcpFlagsText(uint8_t flags) {
  std::vector<const char*> f;
  if (flags & 0x02) f.push_back("SYN");
  if (flags & 0x10) f.push_back("ACK");
  if (flags & 0x01) f.push_back("FIN");
  if (flags & 0x04) f.push_back("RST");
  if (flags & 0x08) f.push_back("PSH");
  return absl::StrJoin(f, ",");
}

std::string DropJsonLine(const NamedDrop& d) {
  diag::v1::KernelDropEvent e;
  e.set_kernel_reason(d.reason);
  e.set_reason_code(d.raw.reason);
  e.set_location(d.location);
  e.set_netns_inode(d.raw.netns_inode);
  e.set_netns(d.netns);
  e.set_current_netns(d.current_netns);
  e.set_ifindex(d.raw.ifindex);
  e.set_device(d.raw.ifname);
  diag::v1::Packet* p = e.mutable_packet();
  p->set_src(d.raw.src.to_string());
  p->set_dst(d.raw.dst.to_string());
  p->set_sport(d.raw.sport);
  p->set_dport(d.raw.dport);
  p->set_proto(d.raw.eth_proto == 0x0806 ? "arp" : model::ProtoName(d.raw.proto));
  if (d.raw.eth_proto == 0x0800 && d.raw.proto == 6) e.set_tcp_flags(TcpFlagsText(d.raw.tcp_flags));
  e.set_ts_ns(d.raw.ts_ns);
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = false;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  // Printing a message of plain fields cannot fail.
  (void)google::protobuf::util::MessageToJsonString(e, &out, opts);
  out.push_back('\n');
  return out;
}

absl::StatusOr<std::set<uint64_t>> ResolveDropStreamNetns(const DropStreamOptions& opt) {
  std::set<uint64_t> inodes;
  for (const std::string& n : opt.netns) {
    if (n.empty()) return absl::InvalidArgumentError("--netns needs a namespace name");
    auto ns = nl::Netns::Open(n);
    if (!ns.ok()) {
      return absl::Status(ns.status().code(), absl::StrCat("--netns ", n, ": ",
                                                           ns.status().message()));
    }
    inodes.insert(ns->inode());
  }
  return inodes;
}

absl::Status StreamDrops(const DropStreamOptions& opt, const volatile std::sig_atomic_t* stop,
                         const std::function<bool(const NamedDrop&)>& sink,
                         DropStreamStats* stats_out) {
  DropStreamStats local_stats;
  DropStreamStats& stats = stats_out != nullptr ? *stats_out : local_stats;
  stats = DropStreamStats{};
  SARENA_ASSIGN_OR_RETURN(nl::Netns self, nl::Netns::Current());
  const uint64_t self_inode = self.inode();
  std::map<uint64_t, std::string> names = NamedInodes();
  SARENA_ASSIGN_OR_RETURN(std::set<uint64_t> wanted, ResolveDropStreamNetns(opt));
  // Every IPv4/ARP drop of the machine; the namespace filter is applied here.
  SARENA_ASSIGN_OR_RETURN(datapath::DropTraceProgram tracer, datapath::DropTraceProgram::Start({}));
  if (!opt.ready_file.empty()) SARENA_RETURN_IF_ERROR(WriteReadyFile(opt.ready_file));
  struct RemoveReady {
    std::string path;
    ~RemoveReady() {
      if (!path.empty()) unlink(path.c_str());
    }
  } remove_ready{opt.ready_file};

  std::map<uint64_t, std::string> symbols;
  uint64_t names_read_ns = MonotonicNs();
  const uint64_t start = MonotonicNs();
  // No end when the duration does not fit the ns clock (it would wrap to a time long past).
  const bool fits = opt.duration_ms <= (UINT64_MAX - start) / 1000000ull;
  const uint64_t end = opt.duration_ms && fits ? start + opt.duration_ms * 1000000ull : 0;
  const int poll_ms = std::clamp(opt.poll_ms, 1, 1000);
  int final_drains = 0;  // reads since the stop; 0: not stopping yet
  bool more = false;     // the last read came back full: read again without waiting
  while (true) {
    bool stopping = final_drains > 0 || (stop && *stop) || (end && MonotonicNs() >= end);
    int wait = stopping || more ? 0 : poll_ms;
    if (end && wait > 0) {
      uint64_t now = MonotonicNs();
      uint64_t left_ms = now >= end ? 0 : (end - now) / 1000000ull + 1;
      wait = static_cast<int>(std::min<uint64_t>(left_ms, static_cast<uint64_t>(wait)));
    }
    SARENA_ASSIGN_OR_RETURN(datapath::DropTraceBatch batch, tracer.Drain(wait));
    more = batch.more;
    stats.lost = batch.lost;
    stats.read += batch.drops.size();
    for (datapath::DropTraceEvent& r : batch.drops) {
      if (!wanted.empty() && !wanted.count(r.netns_inode)) continue;
      NamedDrop d;
      d.reason = DropReasonName(r.reason);
      if (opt.symbols && r.location) {
        auto it = symbols.find(r.location);
        if (it == symbols.end()) {
          if (symbols.size() >= kMaxSymbols) symbols.clear();
          it = symbols.emplace(r.location, KernelSymbol(r.location)).first;
        }
        d.location = it->second;
      }
      d.current_netns = r.netns_inode == self_inode;
      auto n = names.find(r.netns_inode);
      // A namespace named after the stream began: read the names again, at most once a second.
      if (n == names.end() && r.netns_inode && MonotonicNs() - names_read_ns > 1000000000ull) {
        names = NamedInodes();
        names_read_ns = MonotonicNs();
        n = names.find(r.netns_inode);
      }
      if (n != names.end()) d.netns = n->second;
      d.raw = std::move(r);
      ++stats.delivered;
      if (!sink(d)) return absl::OkStatus();
    }
    if (!stopping) continue;
    // Stopping: what the ring holds now is read too, a bounded number of reads at most.
    ++final_drains;
    if (!more) break;
    if (final_drains >= kFinalDrains) {
      stats.left_unread = true;
      break;
    }
  }
  return absl::OkStatus();
}

}  // namespace sarena::live
