// An rtnetlink socket (libmnl, NETLINK_ROUTE) and every link/address/route/rule/neighbour
// operation of sarena::nl.
//
// A netlink socket stays bound to the network namespace it was created in: Socket::OpenIn(ns)
// creates it there (on a RunIn helper thread) and every later call on it acts in `ns`, from any
// thread. The socket asks for extended acks (NETLINK_EXT_ACK) and capped acks (NETLINK_CAP_ACK);
// a kernel error becomes sarena::ErrnoStatus(errno, "<verb> <object> '<name>'", extack text),
// e.g. "add route '10.1.0.0/24': Invalid argument (errno 22): Nexthop has invalid gateway".
// Status codes follow ErrnoToStatusCode: EEXIST -> kAlreadyExists, ENODEV/ENOENT/ESRCH ->
// kNotFound, EPERM -> kPermissionDenied, EINVAL -> kInvalidArgument...
//
// A Socket is not thread-safe: use one per thread, or guard it. All addresses are IPv4.
// Source: rtnetlink(7), netlink(7) "NETLINK_EXT_ACK", libmnl, iproute2 (ip-link, ip-address,
// ip-route, ip-rule, ip-neighbour).
#ifndef LIBSARENA_NETLINK_SOCKET_H_
#define LIBSARENA_NETLINK_SOCKET_H_

#include <linux/netlink.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/addr.h"
#include "libsarena/netlink/link.h"
#include "libsarena/netlink/neigh.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/route.h"
#include "libsarena/netlink/rule.h"
#include "libsarena/netlink/types.h"

struct mnl_socket;

namespace sarena::nl {

/// Result of decoding a netlink error/ack message (NLMSG_ERROR or NLMSG_DONE).
struct AckError {
  int error = 0;                 // positive errno, 0 for a plain ack
  std::string extack;            // NLMSGERR_ATTR_MSG text, empty when the kernel gave none
  int64_t bad_attr_offset = -1;  // NLMSGERR_ATTR_OFFS (byte offset in the request), or -1
};

/// Decodes an NLMSG_ERROR (struct nlmsgerr, with or without NLM_F_CAPPED, extended-ack TLVs
/// when NLM_F_ACK_TLVS is set) or an NLMSG_DONE carrying an int error. Pure: no socket needed.
/// Errors: kInvalidArgument when the message is neither type or is truncated.
absl::StatusOr<AckError> ParseAck(const nlmsghdr& nlh);

/// An rtnetlink socket. Move-only; closes on destruction.
class Socket {
 public:
  /// Opens a NETLINK_ROUTE socket in the calling thread's network namespace, bound with an
  /// automatic port id, with NETLINK_EXT_ACK and NETLINK_CAP_ACK enabled.
  /// Errors: ErrnoStatus of socket/bind ("open netlink socket 'route'").
  static absl::StatusOr<Socket> Open();

  /// Opens the socket inside `ns` (via RunIn); all its operations then act in `ns`.
  static absl::StatusOr<Socket> OpenIn(const Netns& ns);

  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  /// The socket descriptor.
  int fd() const;
  /// The netlink port id the kernel assigned (nl_pid).
  uint32_t portid() const { return portid_; }

  // ---- Low-level: for requests not covered below. `nlh` must live in a buffer of at least
  // MNL_SOCKET_BUFFER_SIZE bytes built with libmnl (mnl_nlmsg_put_header ...). ----

  /// Sends `nlh` with NLM_F_REQUEST|NLM_F_ACK and a fresh sequence number, then reads until
  /// the ack. Every non-error reply message (e.g. the answer to RTM_GETLINK/RTM_GETROUTE) is
  /// passed to `on_reply`. A kernel error returns ErrnoStatus(errno, what, extack); an error of
  /// `on_reply` is returned after the reply is drained (the socket stays usable).
  absl::Status Request(nlmsghdr* nlh, absl::string_view what,
                       absl::FunctionRef<absl::Status(const nlmsghdr&)> on_reply);
  /// Request without reply messages (create/delete/set).
  absl::Status Request(nlmsghdr* nlh, absl::string_view what);
  /// Sends `nlh` with NLM_F_REQUEST|NLM_F_DUMP and calls `on_msg` for each entry until
  /// NLMSG_DONE. An interrupted dump (NLM_F_DUMP_INTR, the table changed meanwhile) is retried
  /// up to 3 times, then kUnavailable. `on_msg` may be called for entries of an interrupted
  /// attempt before a retry, so collect results in a container cleared by `on_restart`.
  absl::Status Dump(nlmsghdr* nlh, absl::string_view what,
                    absl::FunctionRef<absl::Status(const nlmsghdr&)> on_msg,
                    absl::FunctionRef<void()> on_restart);

  // ---- Links (link.h). `what` names in errors: "<verb> link '<name or ifindex N>'". ----

  /// RTM_GETLINK by name. Errors: kNotFound when there is no such link.
  absl::StatusOr<Link> GetLink(absl::string_view name);
  /// RTM_GETLINK by ifindex. Errors: kNotFound when there is no such link.
  absl::StatusOr<Link> GetLink(int ifindex);
  /// Every link of the namespace (RTM_GETLINK dump), ordered by ifindex.
  absl::StatusOr<std::vector<Link>> ListLinks();
  /// Creates a veth pair (NLM_F_CREATE|NLM_F_EXCL); the peer goes to `options.peer_netns` when
  /// set. Both ends are left down. Returns this side as the kernel reports it; its `link` is the
  /// peer's ifindex (in the peer's namespace). Errors: kAlreadyExists when `name` exists here
  /// (or `peer_name` exists where the peer goes), kInvalidArgument for a bad name/MTU.
  absl::StatusOr<Link> CreateVeth(const VethOptions& options);
  /// Creates a link of a kind without kind data ("dummy", "bridge"...). Errors as CreateVeth.
  absl::StatusOr<Link> CreateLink(const LinkOptions& options);
  /// Creates a VXLAN device. Errors as CreateVeth.
  absl::StatusOr<Link> CreateVxlan(const VxlanOptions& options);
  /// RTM_DELLINK. Deleting one end of a veth deletes both. Errors: kNotFound when absent.
  absl::Status DeleteLink(LinkRef link);
  /// Sets IFF_UP (`ip link set LINK up`). Errors: kNotFound when absent.
  absl::Status SetLinkUp(LinkRef link);
  /// Clears IFF_UP (`ip link set LINK down`). Errors: kNotFound when absent.
  absl::Status SetLinkDown(LinkRef link);
  /// Clears (on) or sets (off) IFF_NOARP (`ip link set LINK arp on|off`). With ARP off the
  /// kernel resolves every neighbour on the link to the link's own MAC (NUD_NOARP) instead of
  /// sending ARP requests. Errors: kNotFound when absent.
  absl::Status SetArp(LinkRef link, bool on);
  /// IFLA_MTU, bytes. Errors: kNotFound, kInvalidArgument when out of the device's range
  /// (the extack names the limit).
  absl::Status SetMtu(LinkRef link, uint32_t mtu);
  /// IFLA_ADDRESS. Errors: kNotFound, kInvalidArgument (e.g. a multicast MAC).
  absl::Status SetMac(LinkRef link, const net::Mac& mac);
  /// IFLA_IFALIAS (`ip link set LINK alias TEXT`); an empty `alias` clears it. At most 255
  /// bytes (IFALIASZ - 1). The kernel ignores IFLA_IFALIAS in the RTM_NEWLINK that creates a
  /// link, so this is a separate request. Errors: kNotFound, kInvalidArgument when too long.
  absl::Status SetAlias(LinkRef link, absl::string_view alias);
  /// IFLA_MASTER (enslave to a bridge/bond/VRF); `master` 0 = release (`nomaster`).
  absl::Status SetMaster(LinkRef link, int master_ifindex);
  /// Moves the link into `ns` (IFLA_NET_NS_FD), renaming it to `new_name` when non-empty (the
  /// rename happens atomically with the move). The link gets a new ifindex there only if its
  /// index is taken. Errors: kNotFound, kAlreadyExists when the name is taken in `ns`.
  absl::Status MoveToNetns(LinkRef link, const Netns& ns, absl::string_view new_name = {});
  /// Renames the link (IFLA_IFNAME with ifi_index). Kernels before 6.x refuse to rename an up
  /// link (EBUSY -> kUnavailable); bring it down first to be portable.
  /// Errors: kNotFound, kAlreadyExists when `new_name` exists.
  absl::Status Rename(LinkRef link, absl::string_view new_name);

  // ---- Traffic control (tc.cc) ----
  /// The clsact hook of a device (`tc filter show dev X ingress|egress`).
  enum class TcHook { kIngress, kEgress };
  /// Number of RTM_NEWTFILTER messages a dump of `hook` on `ifindex` returns: 0 when no filter
  /// is there (cls_bpf reports each classifier and each filter, so one filter gives >= 1).
  /// Errors: kNotFound when the device is gone; kInvalidArgument (EINVAL) when it has no
  /// clsact qdisc. Source: rtnetlink(7), RTM_GETTFILTER with NLM_F_DUMP.
  absl::StatusOr<int> CountTcFilters(int ifindex, TcHook hook);

  // ---- Addresses (addr.h) ----

  /// RTM_NEWADDR of `prefix` (address + prefix length, host bits = the address) on `ifindex`.
  /// Errors: kAlreadyExists when present (unless options.replace), kNotFound for a bad ifindex.
  absl::Status AddAddress(int ifindex, const net::Ipv4Prefix& prefix,
                          const AddressOptions& options = {});
  /// AddAddress with only a scope.
  absl::Status AddAddress(int ifindex, const net::Ipv4Prefix& prefix, Scope scope);
  /// RTM_DELADDR. Errors: kNotFound when the address is not there (the kernel's
  /// EADDRNOTAVAIL, errno kept in the message).
  absl::Status DeleteAddress(int ifindex, const net::Ipv4Prefix& prefix);
  /// IPv4 addresses of `ifindex` (0 = every link), as `ip -4 addr show`.
  absl::StatusOr<std::vector<Address>> ListAddresses(int ifindex = 0);

  // ---- Routes (route.h) ----

  /// RTM_NEWROUTE with NLM_F_CREATE|NLM_F_EXCL (`ip route add`). Errors: kAlreadyExists when
  /// the same route exists; kFailedPrecondition when the gateway is not reachable on-link
  /// (ENETUNREACH, extack "Nexthop has invalid gateway"; set `onlink` to force it);
  /// kNotFound for a missing oif; kInvalidArgument for other validation failures (e.g. host
  /// bits in dst: "Invalid prefix for given prefix length"). The extack text is in the message.
  absl::Status AddRoute(const Route& route);
  /// RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE (`ip route replace`). Errors as AddRoute,
  /// without kAlreadyExists.
  absl::Status ReplaceRoute(const Route& route);
  /// RTM_DELROUTE (`ip route del`): matches dst, table and tos, plus priority, gateway and oif
  /// when set, plus the type unless it is kUnicast (kUnicast matches any type, as `ip route del`
  /// without a type keyword does). Protocol and scope are not matched.
  /// Errors: kNotFound (ESRCH) when no route matches.
  absl::Status DeleteRoute(const Route& route);
  /// RTM_GETROUTE for `dst` (`ip route get`): the kernel's own answer (oif, gateway, prefsrc,
  /// table, type...), dst = dst/32 unless lookup.fib_match.
  /// Errors: kNotFound when there is no route (ENETUNREACH) or the route is `unreachable`
  /// (EHOSTUNREACH); kInvalidArgument for a blackhole route (EINVAL); kPermissionDenied for a
  /// prohibit route (EACCES). The errno is always in the message.
  absl::StatusOr<Route> GetRoute(const net::Ipv4& dst, const RouteLookup& lookup = {});
  /// RTM_GETROUTE dump filtered by `filter` (default: table main, like `ip route show`).
  absl::StatusOr<std::vector<Route>> ListRoutes(const RouteFilter& filter = {});

  // ---- Policy rules (rule.h) ----

  /// RTM_NEWRULE with NLM_F_CREATE|NLM_F_EXCL (`ip rule add`). Errors: kAlreadyExists.
  absl::Status AddRule(const Rule& rule);
  /// RTM_DELRULE: deletes the first rule matching every set field (`ip rule del`): priority
  /// and prefixes when set, the table when not kTableUnspec, the action unless kToTable (the
  /// default matches any action), iif/oif when non-empty, fwmark/fwmask when set.
  /// Errors: kNotFound when none matches.
  absl::Status DeleteRule(const Rule& rule);
  /// Every IPv4 rule, in priority order (`ip -4 rule show`).
  absl::StatusOr<std::vector<Rule>> ListRules();

  // ---- Neighbours (neigh.h) ----

  /// RTM_NEWNEIGH `ip` -> `mac` on `ifindex` (default NUD_PERMANENT, `ip neigh add ... nud
  /// permanent`; options.replace for `ip neigh replace`).
  /// Errors: kAlreadyExists when present and !replace, kNotFound for a bad ifindex.
  absl::Status AddNeighbor(int ifindex, const net::Ipv4& ip, const net::Mac& mac,
                           const NeighborOptions& options = {});
  /// RTM_DELNEIGH. Errors: kNotFound when absent.
  absl::Status DeleteNeighbor(int ifindex, const net::Ipv4& ip);
  /// IPv4 neighbour entries of `ifindex` (0 = all), as `ip -4 neigh show`.
  absl::StatusOr<std::vector<Neighbor>> ListNeighbors(int ifindex = 0);

 private:
  explicit Socket(mnl_socket* sock, uint32_t portid) : sock_(sock), portid_(portid) {}
  absl::Status Run(nlmsghdr* nlh, absl::string_view what,
                   absl::FunctionRef<absl::Status(const nlmsghdr&)> on_msg, bool dump,
                   bool* interrupted);
  absl::StatusOr<Link> GetLinkImpl(int ifindex, absl::string_view name);
  absl::StatusOr<int> ResolveIndex(const LinkRef& link);
  absl::Status SetLinkFlags(LinkRef link, bool up);
  absl::Status ModifyRoute(const Route& route, uint16_t type, uint16_t flags,
                           absl::string_view verb);
  absl::Status ModifyRule(const Rule& rule, uint16_t type, uint16_t flags, absl::string_view verb);

  mnl_socket* sock_ = nullptr;
  uint32_t portid_ = 0;
  uint32_t seq_ = 0;
  int last_errno_ = 0;  // errno of the last kernel error reply (0 after success)
};

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_SOCKET_H_
