#include "libsarena/live/netns_scan.h"

#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/socket.h"

namespace sarena::live {
namespace {

// IPv4 addresses of the calling thread's namespace, loopback excluded.
absl::StatusOr<std::vector<net::Ipv4>> Addresses() {
  SARENA_ASSIGN_OR_RETURN(nl::Socket sock, nl::Socket::Open());
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Address> addrs, sock.ListAddresses());
  std::vector<net::Ipv4> out;
  for (const nl::Address& a : addrs) {
    net::Ipv4 ip = a.prefix.address();
    if (ip.is_loopback()) continue;
    out.push_back(ip);
  }
  return out;
}

// RTM_GETNSID with NETNSA_FD: the id the calling thread's namespace gives `fd`'s namespace
// (-1 when none is assigned). rtnetlink(7), net/core/net_namespace.c rtnl_net_getid.
absl::StatusOr<int32_t> NsidOf(int sock, int fd, uint32_t seq) {
  struct {
    nlmsghdr nh;
    rtgenmsg g;
    char pad[3];
    nlattr a;
    uint32_t fd;
  } req = {};
  req.nh.nlmsg_len = sizeof(req);
  req.nh.nlmsg_type = RTM_GETNSID;
  req.nh.nlmsg_flags = NLM_F_REQUEST;
  req.nh.nlmsg_seq = seq;
  req.g.rtgen_family = AF_UNSPEC;
  req.a.nla_len = NLA_HDRLEN + sizeof(uint32_t);
  req.a.nla_type = NETNSA_FD;
  req.fd = static_cast<uint32_t>(fd);
  if (send(sock, &req, sizeof(req), 0) < 0) return ErrnoStatus(errno, "send RTM_GETNSID");
  char buf[1024];
  ssize_t n = recv(sock, buf, sizeof(buf), 0);
  if (n < 0) return ErrnoStatus(errno, "recv RTM_NEWNSID");
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, static_cast<size_t>(n));
       h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
      return ErrnoStatus(-e->error, "RTM_GETNSID");
    }
    if (h->nlmsg_type != RTM_NEWNSID) continue;
    int len = static_cast<int>(h->nlmsg_len) - NLMSG_LENGTH(sizeof(rtgenmsg));
    // Attributes start after the (aligned) rtgenmsg.
    auto* a = reinterpret_cast<nlattr*>(static_cast<char*>(NLMSG_DATA(h)) + NLMSG_ALIGN(sizeof(rtgenmsg)));
    for (; len >= static_cast<int>(sizeof(nlattr)) && a->nla_len >= sizeof(nlattr) &&
           a->nla_len <= static_cast<unsigned>(len);
         len -= NLA_ALIGN(a->nla_len),
         a = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(a) + NLA_ALIGN(a->nla_len))) {
      if ((a->nla_type & NLA_TYPE_MASK) == NETNSA_NSID) {
        int32_t id;
        std::memcpy(&id, reinterpret_cast<char*>(a) + NLA_HDRLEN, sizeof(id));
        return id;
      }
    }
    return -1;
  }
  return -1;
}

}  // namespace

std::vector<std::string> NamedNetns() {
  return ListDir(std::string(nl::kNetnsRunDir)).value_or(std::vector<std::string>{});
}

absl::StatusOr<std::vector<NetnsInfo>> ScanNetns() {
  std::vector<NetnsInfo> out;
  SARENA_ASSIGN_OR_RETURN(nl::Netns self, nl::Netns::Current());
  NetnsInfo cur;
  cur.path = "/proc/self/ns/net";
  cur.inode = self.inode();
  cur.current = true;
  SARENA_ASSIGN_OR_RETURN(cur.addrs, Addresses());
  out.push_back(std::move(cur));
  for (const std::string& name : NamedNetns()) {
    auto ns = nl::Netns::Open(name);
    if (!ns.ok()) continue;
    if (*ns == self) {
      if (out[0].name.empty()) out[0].name = name;
      continue;
    }
    NetnsInfo info;
    info.path = ns->path();
    info.name = name;
    info.inode = ns->inode();
    auto addrs = nl::RunInWithResult(*ns, [] { return Addresses(); });
    if (!addrs.ok()) continue;
    info.addrs = *std::move(addrs);
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> VethPeerNetnsNames() {
  SARENA_ASSIGN_OR_RETURN(nl::Socket sock, nl::Socket::Open());
  SARENA_ASSIGN_OR_RETURN(std::vector<nl::Link> links, sock.ListLinks());
  std::vector<int32_t> wanted;
  for (const nl::Link& l : links) {
    if (l.kind == "veth" && l.link_netnsid) wanted.push_back(*l.link_netnsid);
  }
  std::vector<std::string> out;
  if (wanted.empty()) return out;
  UniqueFd nl_sock(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!nl_sock.valid()) return ErrnoStatus(errno, "open NETLINK_ROUTE socket");
  timeval tv{1, 0};
  setsockopt(nl_sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  uint32_t seq = 1;
  for (const std::string& name : NamedNetns()) {
    auto ns = nl::Netns::Open(name);
    if (!ns.ok()) continue;
    auto id = NsidOf(nl_sock.get(), ns->fd(), seq++);
    if (!id.ok() || *id < 0) continue;
    if (std::find(wanted.begin(), wanted.end(), *id) != wanted.end()) out.push_back(name);
  }
  return out;
}

}  // namespace sarena::live
