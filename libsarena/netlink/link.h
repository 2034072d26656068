// Network interfaces (rtnetlink RTM_*LINK): the Link record and the options for creating links.
// The operations live on nl::Socket (socket.h).
// Source: rtnetlink(7) "RTM_NEWLINK", <linux/if_link.h>, <linux/veth.h>, ip-link(8).
#ifndef LIBSARENA_NETLINK_LINK_H_
#define LIBSARENA_NETLINK_LINK_H_

#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"

namespace sarena::nl {

class Netns;

/// RFC 2863 operational state (IFLA_OPERSTATE, IF_OPER_* values).
enum class OperState : uint8_t {
  kUnknown = 0,
  kNotPresent = 1,
  kDown = 2,
  kLowerLayerDown = 3,
  kTesting = 4,
  kDormant = 5,
  kUp = 6,
};
/// iproute2 spelling: "UNKNOWN", "NOTPRESENT", "DOWN", "LOWERLAYERDOWN", "TESTING", "DORMANT",
/// "UP".
std::string ToString(OperState state);

/// VXLAN device attributes (IFLA_INFO_DATA of kind "vxlan", IFLA_VXLAN_*).
struct VxlanInfo {
  uint32_t vni = 0;                // IFLA_VXLAN_ID (24-bit VXLAN Network Identifier)
  std::optional<net::Ipv4> local;  // IFLA_VXLAN_LOCAL: source address of the outer header
  std::optional<net::Ipv4> group;  // IFLA_VXLAN_GROUP: default remote (unicast or multicast)
  uint16_t port = 0;               // IFLA_VXLAN_PORT: UDP destination port, host byte order
  int underlay_ifindex = 0;        // IFLA_VXLAN_LINK: "dev" of the underlay, 0 = none
  bool learning = true;            // IFLA_VXLAN_LEARNING
  bool collect_metadata = false;   // IFLA_VXLAN_COLLECT_METADATA (`external`)
};

/// One network interface as the kernel reports it (RTM_NEWLINK reply / dump entry).
struct Link {
  int ifindex = 0;         // ifi_index
  std::string name;        // IFLA_IFNAME (<= 15 chars, IFNAMSIZ - 1)
  std::string kind;        // IFLA_INFO_KIND: "veth", "vxlan", "bridge", "dummy", "ipip"...;
                           // empty for physical devices and loopback
  std::string slave_kind;  // IFLA_INFO_SLAVE_KIND (e.g. "bridge" for a bridge port), or empty
  uint32_t mtu = 0;        // IFLA_MTU, bytes (L3 payload size)
  net::Mac mac{};          // IFLA_ADDRESS (all zeros when the device has no 6-byte address)
  uint32_t flags = 0;      // ifi_flags: IFF_* bits (IFF_UP 0x1, IFF_LOWER_UP 0x10000, ...)
  bool up = false;         // administratively up (IFF_UP), as `ip link set up` sets it
  bool lower_up = false;   // carrier (IFF_LOWER_UP)
  OperState oper_state = OperState::kUnknown;  // IFLA_OPERSTATE
  uint16_t type = 0;  // ifi_type: ARPHRD_* (1 = Ethernet, 772 = loopback, 768 = ipip)
  int master = 0;     // IFLA_MASTER: ifindex of the bridge/bond/VRF, 0 = none
  int link = 0;       // IFLA_LINK: for a veth the peer's ifindex (in the namespace
                      // named by link_netnsid when that is set), 0 = none
  std::optional<int32_t> link_netnsid;  // IFLA_LINK_NETNSID: the peer lives in another netns,
                                        // whose id (as seen from this netns) this is
  uint32_t txqlen = 0;                  // IFLA_TXQLEN, packets
  std::string alias;                    // IFLA_IFALIAS, or empty
  std::optional<VxlanInfo> vxlan;       // set for kind "vxlan"
};

/// Names a link either by ifindex or by name. Converts implicitly from both, so every
/// operation taking a LinkRef accepts `5`, `"eth0"` or a std::string.
class LinkRef {
 public:
  LinkRef(int ifindex) : v_(ifindex) {}                       // NOLINT(runtime/explicit)
  LinkRef(absl::string_view name) : v_(std::string(name)) {}  // NOLINT(runtime/explicit)
  LinkRef(const char* name) : v_(std::string(name)) {}        // NOLINT(runtime/explicit)
  LinkRef(const std::string& name) : v_(name) {}              // NOLINT(runtime/explicit)
  LinkRef(const Link& link) : v_(link.ifindex) {}             // NOLINT(runtime/explicit)

  bool is_index() const { return std::holds_alternative<int>(v_); }
  /// The ifindex (0 when named).
  int ifindex() const { return is_index() ? std::get<int>(v_) : 0; }
  /// The name ("" when given by index).
  const std::string& name() const;
  /// For messages: the name, or "ifindex N".
  std::string ToString() const;

 private:
  std::variant<int, std::string> v_;
};

/// Options for Socket::CreateVeth (a veth pair: `ip link add NAME type veth peer name PEER`).
struct VethOptions {
  std::string name;                   // this side, created in the socket's namespace (required)
  std::string peer_name;              // the other side (required)
  const Netns* peer_netns = nullptr;  // when set, the peer is created directly in this
                                      // namespace (IFLA_NET_NS_FD on the peer); else beside `name`
  std::optional<uint32_t> mtu;        // both ends, bytes; kernel default 1500
  std::optional<net::Mac> mac;        // this side's MAC; kernel picks a random one when unset
  std::optional<net::Mac> peer_mac;   // peer's MAC; random when unset
  std::optional<uint32_t> txqlen;     // both ends
};

/// Options for Socket::CreateLink: a link of a kind that needs no kind-specific data
/// ("dummy", "bridge", "ifb", ...): `ip link add NAME type KIND`.
struct LinkOptions {
  std::string name;             // required
  std::string kind;             // IFLA_INFO_KIND, required
  std::optional<uint32_t> mtu;  // bytes
  std::optional<net::Mac> mac;
  int master = 0;  // IFLA_MASTER, 0 = none
};

/// Options for Socket::CreateVxlan (`ip link add NAME type vxlan id VNI local L dstport P
/// dev D nolearning`).
struct VxlanOptions {
  std::string name;                // required
  uint32_t vni = 0;                // 0 .. 2^24-1
  std::optional<net::Ipv4> local;  // outer source address
  std::optional<net::Ipv4> group;  // default remote (unicast) or multicast group
  uint16_t port = 4789;            // UDP destination port, host byte order (IANA 4789)
  int underlay_ifindex = 0;        // "dev", 0 = none
  bool learning = false;           // Calico and Flannel run VXLAN with learning off
  /// IFLA_VXLAN_COLLECT_METADATA (`external`): the device takes the remote, VNI and flags of
  /// each packet from its tunnel metadata (set by BPF with bpf_skb_set_tunnel_key) and hands
  /// received packets up with theirs (bpf_skb_get_tunnel_key); `vni` is then ignored (the
  /// device is created with id 0, which the kernel requires to receive) and `group` unused.
  bool collect_metadata = false;
  /// IFLA_VXLAN_UDP_CSUM: compute the outer IPv4 UDP checksum (`udpcsum`). Off (zero checksum,
  /// RFC 7348 section 5 allows it) is the kernel default and avoids NIC offload bugs.
  bool udp_csum = false;
  std::optional<uint32_t> mtu;
  std::optional<net::Mac> mac;
};

/// Decodes one RTM_NEWLINK message (a GETLINK reply or dump entry) into a Link.
/// Errors: kInvalidArgument when the message is not RTM_NEWLINK or is truncated.
absl::StatusOr<Link> ParseLinkMessage(const nlmsghdr& nlh);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_LINK_H_
