#include "libsarena/netlink/neigh.h"

#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/internal.h"
#include "libsarena/netlink/socket.h"

namespace sarena::nl {

using internal::AttrIpv4;
using internal::AttrMac;
using internal::MsgBuf;

absl::StatusOr<Neighbor> ParseNeighborMessage(const nlmsghdr& nlh) {
  SARENA_RETURN_IF_ERROR(internal::CheckMessage(nlh, RTM_NEWNEIGH, sizeof(ndmsg), "neighbour"));
  const auto* ndm = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(&nlh));
  if (ndm->ndm_family != AF_INET) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse neighbour: family ", ndm->ndm_family, " is not AF_INET"));
  }
  Neighbor n;
  n.ifindex = ndm->ndm_ifindex;
  n.state = static_cast<NeighState>(ndm->ndm_state);
  n.flags = ndm->ndm_flags;
  bool have_dst = false;
  internal::ForEachAttr(nlh, sizeof(ndmsg), [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case NDA_DST:
        if (auto v = AttrIpv4(a)) {
          n.ip = *v;
          have_dst = true;
        }
        break;
      case NDA_LLADDR:
        n.mac = AttrMac(a);
        break;
      default:
        break;
    }
  });
  if (!have_dst) return absl::InvalidArgumentError("parse neighbour: no NDA_DST");
  return n;
}

absl::Status Socket::AddNeighbor(int ifindex, const net::Ipv4& ip, const net::Mac& mac,
                                 const NeighborOptions& o) {
  const std::string what = absl::StrCat(o.replace ? "replace" : "add", " neighbour '",
                                        ip.to_string(), "' on ifindex ", ifindex);
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_NEWNEIGH, NLM_F_CREATE | (o.replace ? NLM_F_REPLACE : NLM_F_EXCL));
  auto* ndm = MsgBuf::PutHeader<ndmsg>(nlh);
  ndm->ndm_family = AF_INET;
  ndm->ndm_ifindex = ifindex;
  ndm->ndm_state = static_cast<uint16_t>(o.state);
  internal::PutIpv4(nlh, NDA_DST, ip);
  internal::PutMac(nlh, NDA_LLADDR, mac);
  return Request(nlh, what);
}

absl::Status Socket::DeleteNeighbor(int ifindex, const net::Ipv4& ip) {
  const std::string what =
      absl::StrCat("delete neighbour '", ip.to_string(), "' on ifindex ", ifindex);
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_DELNEIGH, 0);
  auto* ndm = MsgBuf::PutHeader<ndmsg>(nlh);
  ndm->ndm_family = AF_INET;
  ndm->ndm_ifindex = ifindex;
  internal::PutIpv4(nlh, NDA_DST, ip);
  return Request(nlh, what);
}

absl::StatusOr<std::vector<Neighbor>> Socket::ListNeighbors(int ifindex) {
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETNEIGH, 0);
  MsgBuf::PutHeader<ndmsg>(nlh)->ndm_family = AF_INET;
  std::vector<Neighbor> out;
  SARENA_RETURN_IF_ERROR(Dump(
      nlh,
      ifindex ? absl::StrCat("list neighbours 'ifindex ", ifindex, "'") : "list neighbours 'all'",
      [&](const nlmsghdr& m) -> absl::Status {
        if (m.nlmsg_type != RTM_NEWNEIGH) return absl::OkStatus();
        const auto* h = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(&m));
        if (h->ndm_family != AF_INET) return absl::OkStatus();
        if (ifindex != 0 && h->ndm_ifindex != ifindex) return absl::OkStatus();
        SARENA_ASSIGN_OR_RETURN(Neighbor n, ParseNeighborMessage(m));
        out.push_back(std::move(n));
        return absl::OkStatus();
      },
      [&] { out.clear(); }));
  return out;
}

}  // namespace sarena::nl
