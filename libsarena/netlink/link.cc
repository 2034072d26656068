#include "libsarena/netlink/link.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/internal.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/socket.h"

namespace sarena::nl {

using internal::AttrIpv4;
using internal::AttrMac;
using internal::AttrStr;
using internal::AttrU16;
using internal::AttrU32;
using internal::AttrU8;
using internal::ForEachNested;
using internal::MsgBuf;

std::string ToString(OperState state) {
  switch (state) {
    case OperState::kUnknown:
      return "UNKNOWN";
    case OperState::kNotPresent:
      return "NOTPRESENT";
    case OperState::kDown:
      return "DOWN";
    case OperState::kLowerLayerDown:
      return "LOWERLAYERDOWN";
    case OperState::kTesting:
      return "TESTING";
    case OperState::kDormant:
      return "DORMANT";
    case OperState::kUp:
      return "UP";
  }
  return absl::StrCat(static_cast<int>(state));
}

const std::string& LinkRef::name() const {
  static const std::string* const kEmpty = new std::string();
  return is_index() ? *kEmpty : std::get<std::string>(v_);
}

std::string LinkRef::ToString() const {
  return is_index() ? absl::StrCat("ifindex ", ifindex()) : name();
}

namespace {

VxlanInfo ParseVxlan(const nlattr* data) {
  VxlanInfo info;
  ForEachNested(data, [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case IFLA_VXLAN_ID:
        if (auto v = AttrU32(a)) info.vni = *v;
        break;
      case IFLA_VXLAN_LOCAL:
        info.local = AttrIpv4(a);
        break;
      case IFLA_VXLAN_GROUP:
        info.group = AttrIpv4(a);
        break;
      case IFLA_VXLAN_PORT:  // __be16
        if (auto v = AttrU16(a)) info.port = ntohs(*v);
        break;
      case IFLA_VXLAN_LINK:
        if (auto v = AttrU32(a)) info.underlay_ifindex = static_cast<int>(*v);
        break;
      case IFLA_VXLAN_LEARNING:
        if (auto v = AttrU8(a)) info.learning = *v != 0;
        break;
      case IFLA_VXLAN_COLLECT_METADATA:
        if (auto v = AttrU8(a)) info.collect_metadata = *v != 0;
        break;
      default:
        break;
    }
  });
  return info;
}

// Puts the common optional attributes of a new link.
void PutLinkBasics(nlmsghdr* nlh, absl::string_view name, std::optional<uint32_t> mtu,
                   const std::optional<net::Mac>& mac, std::optional<uint32_t> txqlen) {
  mnl_attr_put_strz(nlh, IFLA_IFNAME, std::string(name).c_str());
  if (mtu) mnl_attr_put_u32(nlh, IFLA_MTU, *mtu);
  if (mac) internal::PutMac(nlh, IFLA_ADDRESS, *mac);
  if (txqlen) mnl_attr_put_u32(nlh, IFLA_TXQLEN, *txqlen);
}

// Starts an RTM_NEWLINK/SETLINK/DELLINK for `link`: by ifindex, or by IFLA_IFNAME.
nlmsghdr* StartLinkMsg(MsgBuf& buf, uint16_t type, uint16_t flags, const LinkRef& link,
                       ifinfomsg** ifi_out = nullptr) {
  nlmsghdr* nlh = buf.Start(type, flags);
  auto* ifi = MsgBuf::PutHeader<ifinfomsg>(nlh);
  ifi->ifi_family = AF_UNSPEC;
  if (link.is_index()) {
    ifi->ifi_index = link.ifindex();
  } else {
    mnl_attr_put_strz(nlh, IFLA_IFNAME, link.name().c_str());
  }
  if (ifi_out) *ifi_out = ifi;
  return nlh;
}

}  // namespace

absl::StatusOr<Link> ParseLinkMessage(const nlmsghdr& nlh) {
  SARENA_RETURN_IF_ERROR(internal::CheckMessage(nlh, RTM_NEWLINK, sizeof(ifinfomsg), "link"));
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(&nlh));
  Link link;
  link.ifindex = ifi->ifi_index;
  link.flags = ifi->ifi_flags;
  link.up = (ifi->ifi_flags & IFF_UP) != 0;
  link.lower_up = (ifi->ifi_flags & IFF_LOWER_UP) != 0;
  link.type = ifi->ifi_type;
  const nlattr* info_data = nullptr;
  internal::ForEachAttr(nlh, sizeof(ifinfomsg), [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case IFLA_IFNAME:
        link.name = AttrStr(a);
        break;
      case IFLA_MTU:
        if (auto v = AttrU32(a)) link.mtu = *v;
        break;
      case IFLA_ADDRESS:
        if (auto m = AttrMac(a)) link.mac = *m;
        break;
      case IFLA_OPERSTATE:
        if (auto v = AttrU8(a)) link.oper_state = static_cast<OperState>(*v);
        break;
      case IFLA_MASTER:
        if (auto v = AttrU32(a)) link.master = static_cast<int>(*v);
        break;
      case IFLA_LINK:
        if (auto v = AttrU32(a)) link.link = static_cast<int>(*v);
        break;
      case IFLA_LINK_NETNSID:
        if (auto v = AttrU32(a)) link.link_netnsid = static_cast<int32_t>(*v);
        break;
      case IFLA_TXQLEN:
        if (auto v = AttrU32(a)) link.txqlen = *v;
        break;
      case IFLA_IFALIAS:
        link.alias = AttrStr(a);
        break;
      case IFLA_LINKINFO:
        ForEachNested(a, [&](const nlattr* b) {
          switch (mnl_attr_get_type(b)) {
            case IFLA_INFO_KIND:
              link.kind = AttrStr(b);
              break;
            case IFLA_INFO_SLAVE_KIND:
              link.slave_kind = AttrStr(b);
              break;
            case IFLA_INFO_DATA:
              info_data = b;
              break;
            default:
              break;
          }
        });
        break;
      default:
        break;
    }
  });
  if (info_data != nullptr && link.kind == "vxlan") link.vxlan = ParseVxlan(info_data);
  return link;
}

// ---- Socket: links ----

absl::StatusOr<Link> Socket::GetLinkImpl(int ifindex, absl::string_view name) {
  const std::string what =
      absl::StrCat("get link '", name.empty() ? absl::StrCat("ifindex ", ifindex) : name, "'");
  if (!name.empty()) SARENA_RETURN_IF_ERROR(internal::CheckIfName(name, "link name"));
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETLINK, 0);
  auto* ifi = MsgBuf::PutHeader<ifinfomsg>(nlh);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  if (!name.empty()) mnl_attr_put_strz(nlh, IFLA_IFNAME, std::string(name).c_str());
  mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  std::optional<Link> out;
  SARENA_RETURN_IF_ERROR(Request(nlh, what, [&](const nlmsghdr& m) -> absl::Status {
    if (m.nlmsg_type != RTM_NEWLINK) return absl::OkStatus();
    SARENA_ASSIGN_OR_RETURN(Link l, ParseLinkMessage(m));
    out = std::move(l);
    return absl::OkStatus();
  }));
  if (!out) return absl::NotFoundError(absl::StrCat(what, ": no reply"));
  return *std::move(out);
}

absl::StatusOr<Link> Socket::GetLink(absl::string_view name) { return GetLinkImpl(0, name); }

absl::StatusOr<Link> Socket::GetLink(int ifindex) {
  if (ifindex <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("get link 'ifindex ", ifindex, "': ifindex must be positive"));
  }
  return GetLinkImpl(ifindex, {});
}

absl::StatusOr<std::vector<Link>> Socket::ListLinks() {
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETLINK, 0);
  MsgBuf::PutHeader<ifinfomsg>(nlh)->ifi_family = AF_UNSPEC;
  mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  std::vector<Link> links;
  SARENA_RETURN_IF_ERROR(Dump(
      nlh, "list links 'all'",
      [&](const nlmsghdr& m) -> absl::Status {
        if (m.nlmsg_type != RTM_NEWLINK) return absl::OkStatus();
        SARENA_ASSIGN_OR_RETURN(Link l, ParseLinkMessage(m));
        links.push_back(std::move(l));
        return absl::OkStatus();
      },
      [&] { links.clear(); }));
  std::sort(links.begin(), links.end(),
            [](const Link& a, const Link& b) { return a.ifindex < b.ifindex; });
  return links;
}

absl::StatusOr<int> Socket::ResolveIndex(const LinkRef& link) {
  if (link.is_index()) return link.ifindex();
  SARENA_ASSIGN_OR_RETURN(Link l, GetLink(link.name()));
  return l.ifindex;
}

absl::StatusOr<Link> Socket::CreateVeth(const VethOptions& o) {
  const std::string what = absl::StrCat("create veth '", o.name, "'");
  SARENA_RETURN_IF_ERROR(internal::CheckIfName(o.name, "veth name"));
  SARENA_RETURN_IF_ERROR(internal::CheckIfName(o.peer_name, "veth peer name"));
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  MsgBuf::PutHeader<ifinfomsg>(nlh)->ifi_family = AF_UNSPEC;
  PutLinkBasics(nlh, o.name, o.mtu, o.mac, o.txqlen);
  nlattr* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  nlattr* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  nlattr* peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  // The peer nest starts with its own struct ifinfomsg, then the peer's IFLA_* attributes.
  MsgBuf::PutHeader<ifinfomsg>(nlh)->ifi_family = AF_UNSPEC;
  PutLinkBasics(nlh, o.peer_name, o.mtu, o.peer_mac, o.txqlen);
  if (o.peer_netns != nullptr) {
    mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, static_cast<uint32_t>(o.peer_netns->fd()));
  }
  mnl_attr_nest_end(nlh, peer);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  SARENA_RETURN_IF_ERROR(Request(nlh, what));
  return GetLink(o.name);
}

absl::StatusOr<Link> Socket::CreateLink(const LinkOptions& o) {
  const std::string what = absl::StrCat("create ", o.kind, " '", o.name, "'");
  SARENA_RETURN_IF_ERROR(internal::CheckIfName(o.name, "link name"));
  if (o.kind.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": kind is required"));
  }
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  MsgBuf::PutHeader<ifinfomsg>(nlh)->ifi_family = AF_UNSPEC;
  PutLinkBasics(nlh, o.name, o.mtu, o.mac, std::nullopt);
  if (o.master > 0) mnl_attr_put_u32(nlh, IFLA_MASTER, static_cast<uint32_t>(o.master));
  nlattr* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, o.kind.c_str());
  mnl_attr_nest_end(nlh, linkinfo);
  SARENA_RETURN_IF_ERROR(Request(nlh, what));
  return GetLink(o.name);
}

absl::StatusOr<Link> Socket::CreateVxlan(const VxlanOptions& o) {
  const std::string what = absl::StrCat("create vxlan '", o.name, "'");
  SARENA_RETURN_IF_ERROR(internal::CheckIfName(o.name, "vxlan name"));
  if (o.vni >= (1u << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": vni ", o.vni, " exceeds 24 bits"));
  }
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  MsgBuf::PutHeader<ifinfomsg>(nlh)->ifi_family = AF_UNSPEC;
  PutLinkBasics(nlh, o.name, o.mtu, o.mac, std::nullopt);
  nlattr* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "vxlan");
  nlattr* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  // A collect-metadata device must have VNI 0: the kernel maps every received VNI to 0 when
  // looking the device up (vxlan_vs_find_vni), so one created with another id receives nothing.
  mnl_attr_put_u32(nlh, IFLA_VXLAN_ID, o.collect_metadata ? 0 : o.vni);
  if (o.local) internal::PutIpv4(nlh, IFLA_VXLAN_LOCAL, *o.local);
  if (o.group) internal::PutIpv4(nlh, IFLA_VXLAN_GROUP, *o.group);
  mnl_attr_put_u16(nlh, IFLA_VXLAN_PORT, htons(o.port));
  if (o.underlay_ifindex > 0) {
    mnl_attr_put_u32(nlh, IFLA_VXLAN_LINK, static_cast<uint32_t>(o.underlay_ifindex));
  }
  mnl_attr_put_u8(nlh, IFLA_VXLAN_LEARNING, o.learning ? 1 : 0);
  if (o.collect_metadata) mnl_attr_put_u8(nlh, IFLA_VXLAN_COLLECT_METADATA, 1);
  mnl_attr_put_u8(nlh, IFLA_VXLAN_UDP_CSUM, o.udp_csum ? 1 : 0);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  SARENA_RETURN_IF_ERROR(Request(nlh, what));
  return GetLink(o.name);
}

absl::Status Socket::DeleteLink(LinkRef link) {
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_DELLINK, 0, link);
  return Request(nlh, absl::StrCat("delete link '", link.ToString(), "'"));
}

absl::Status Socket::SetLinkFlags(LinkRef link, bool up) {
  MsgBuf buf;
  ifinfomsg* ifi = nullptr;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, link, &ifi);
  ifi->ifi_change = IFF_UP;
  ifi->ifi_flags = up ? IFF_UP : 0;
  return Request(nlh, absl::StrCat("set link '", link.ToString(), "' ", up ? "up" : "down"));
}

absl::Status Socket::SetArp(LinkRef link, bool on) {
  MsgBuf buf;
  ifinfomsg* ifi = nullptr;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, link, &ifi);
  ifi->ifi_change = IFF_NOARP;
  ifi->ifi_flags = on ? 0 : IFF_NOARP;
  return Request(nlh, absl::StrCat("set link '", link.ToString(), "' arp ", on ? "on" : "off"));
}

absl::Status Socket::SetLinkUp(LinkRef link) { return SetLinkFlags(std::move(link), true); }
absl::Status Socket::SetLinkDown(LinkRef link) { return SetLinkFlags(std::move(link), false); }

absl::Status Socket::SetMtu(LinkRef link, uint32_t mtu) {
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, link);
  mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
  return Request(nlh, absl::StrCat("set mtu of link '", link.ToString(), "' to ", mtu));
}

absl::Status Socket::SetMac(LinkRef link, const net::Mac& mac) {
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, link);
  internal::PutMac(nlh, IFLA_ADDRESS, mac);
  return Request(nlh,
                 absl::StrCat("set mac of link '", link.ToString(), "' to ", net::FormatMac(mac)));
}

absl::Status Socket::SetAlias(LinkRef link, absl::string_view alias) {
  if (alias.size() > 255) {
    return absl::InvalidArgumentError(absl::StrCat("invalid alias of link '", link.ToString(),
                                                   "': ", alias.size(),
                                                   " bytes, at most 255 (IFALIASZ - 1)"));
  }
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, link);
  // Not NUL-terminated: the kernel takes the attribute's length (an empty one clears the alias).
  mnl_attr_put(nlh, IFLA_IFALIAS, alias.size(), alias.data());
  return Request(nlh, absl::StrCat("set alias of link '", link.ToString(), "'"));
}

absl::Status Socket::SetMaster(LinkRef link, int master_ifindex) {
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, link);
  mnl_attr_put_u32(nlh, IFLA_MASTER, static_cast<uint32_t>(master_ifindex));
  return Request(
      nlh, absl::StrCat("set master of link '", link.ToString(), "' to ifindex ", master_ifindex));
}

absl::Status Socket::MoveToNetns(LinkRef link, const Netns& ns, absl::string_view new_name) {
  const std::string what =
      absl::StrCat("move link '", link.ToString(), "' to netns '", ns.path(), "'");
  LinkRef target = link;
  if (!new_name.empty()) {
    SARENA_RETURN_IF_ERROR(internal::CheckIfName(new_name, "new link name"));
    // IFLA_IFNAME selects the device when ifi_index is 0, so renaming needs the index.
    SARENA_ASSIGN_OR_RETURN(int index, ResolveIndex(link));
    target = LinkRef(index);
  }
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, target);
  mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, static_cast<uint32_t>(ns.fd()));
  if (!new_name.empty()) mnl_attr_put_strz(nlh, IFLA_IFNAME, std::string(new_name).c_str());
  return Request(nlh, what);
}

absl::Status Socket::Rename(LinkRef link, absl::string_view new_name) {
  const std::string what = absl::StrCat("rename link '", link.ToString(), "' to '", new_name, "'");
  SARENA_RETURN_IF_ERROR(internal::CheckIfName(new_name, "new link name"));
  SARENA_ASSIGN_OR_RETURN(int index, ResolveIndex(link));
  MsgBuf buf;
  nlmsghdr* nlh = StartLinkMsg(buf, RTM_SETLINK, 0, LinkRef(index));
  mnl_attr_put_strz(nlh, IFLA_IFNAME, std::string(new_name).c_str());
  return Request(nlh, what);
}

}  // namespace sarena::nl
