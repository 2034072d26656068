#include "libsarena/netlink/addr.h"

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/internal.h"
#include "libsarena/netlink/socket.h"

namespace sarena::nl {

using internal::AttrIpv4;
using internal::AttrStr;
using internal::AttrU32;
using internal::MsgBuf;

absl::StatusOr<Address> ParseAddressMessage(const nlmsghdr& nlh) {
  SARENA_RETURN_IF_ERROR(internal::CheckMessage(nlh, RTM_NEWADDR, sizeof(ifaddrmsg), "address"));
  const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(&nlh));
  if (ifa->ifa_family != AF_INET) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse address: family ", ifa->ifa_family, " is not AF_INET"));
  }
  Address addr;
  addr.ifindex = static_cast<int>(ifa->ifa_index);
  addr.scope = static_cast<Scope>(ifa->ifa_scope);
  addr.flags = ifa->ifa_flags;
  std::optional<net::Ipv4> local, address;
  internal::ForEachAttr(nlh, sizeof(ifaddrmsg), [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case IFA_LOCAL:
        local = AttrIpv4(a);
        break;
      case IFA_ADDRESS:
        address = AttrIpv4(a);
        break;
      case IFA_BROADCAST:
        addr.broadcast = AttrIpv4(a);
        break;
      case IFA_LABEL:
        addr.label = AttrStr(a);
        break;
      case IFA_FLAGS:
        if (auto v = AttrU32(a)) addr.flags = *v;
        break;
      default:
        break;
    }
  });
  // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on point-to-point links
  // and equal to IFA_LOCAL otherwise. Some devices only send IFA_ADDRESS.
  if (!local) local = address;
  if (!local) return absl::InvalidArgumentError("parse address: no IFA_LOCAL/IFA_ADDRESS");
  if (address && *address != *local) addr.peer = address;
  addr.prefix = net::Ipv4Prefix(*local, ifa->ifa_prefixlen);
  return addr;
}

absl::Status Socket::AddAddress(int ifindex, const net::Ipv4Prefix& prefix,
                                const AddressOptions& o) {
  const std::string what =
      absl::StrCat("add address '", prefix.to_string(), "' on ifindex ", ifindex);
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_NEWADDR, NLM_F_CREATE | (o.replace ? NLM_F_REPLACE : NLM_F_EXCL));
  auto* ifa = MsgBuf::PutHeader<ifaddrmsg>(nlh);
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<uint8_t>(prefix.prefix_length());
  ifa->ifa_scope = static_cast<uint8_t>(o.scope);
  ifa->ifa_index = static_cast<uint32_t>(ifindex);
  internal::PutIpv4(nlh, IFA_LOCAL, prefix.address());
  internal::PutIpv4(nlh, IFA_ADDRESS, o.peer ? *o.peer : prefix.address());
  if (o.broadcast) internal::PutIpv4(nlh, IFA_BROADCAST, *o.broadcast);
  if (o.noprefixroute) mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NOPREFIXROUTE);
  return Request(nlh, what);
}

absl::Status Socket::AddAddress(int ifindex, const net::Ipv4Prefix& prefix, Scope scope) {
  AddressOptions options;
  options.scope = scope;
  return AddAddress(ifindex, prefix, options);
}

absl::Status Socket::DeleteAddress(int ifindex, const net::Ipv4Prefix& prefix) {
  const std::string what =
      absl::StrCat("delete address '", prefix.to_string(), "' on ifindex ", ifindex);
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_DELADDR, 0);
  auto* ifa = MsgBuf::PutHeader<ifaddrmsg>(nlh);
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<uint8_t>(prefix.prefix_length());
  ifa->ifa_index = static_cast<uint32_t>(ifindex);
  internal::PutIpv4(nlh, IFA_LOCAL, prefix.address());
  absl::Status st = Request(nlh, what);
  // The kernel answers EADDRNOTAVAIL for "no such address": that is a not-found.
  if (!st.ok() && last_errno_ == EADDRNOTAVAIL) {
    return internal::WithCode(std::move(st), absl::StatusCode::kNotFound);
  }
  return st;
}

absl::StatusOr<std::vector<Address>> Socket::ListAddresses(int ifindex) {
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETADDR, 0);
  auto* ifa = MsgBuf::PutHeader<ifaddrmsg>(nlh);
  ifa->ifa_family = AF_INET;
  std::vector<Address> out;
  SARENA_RETURN_IF_ERROR(Dump(
      nlh,
      ifindex ? absl::StrCat("list addresses 'ifindex ", ifindex, "'") : "list addresses 'all'",
      [&](const nlmsghdr& m) -> absl::Status {
        if (m.nlmsg_type != RTM_NEWADDR) return absl::OkStatus();
        const auto* h = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(&m));
        if (h->ifa_family != AF_INET) return absl::OkStatus();
        if (ifindex != 0 && static_cast<int>(h->ifa_index) != ifindex) return absl::OkStatus();
        SARENA_ASSIGN_OR_RETURN(Address addr, ParseAddressMessage(m));
        out.push_back(std::move(addr));
        return absl::OkStatus();
      },
      [&] { out.clear(); }));
  return out;
}

}  // namespace sarena::nl
