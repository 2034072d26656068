// Small rtnetlink vocabulary shared by addresses, routes and rules: scopes and routing tables.
// Source: rtnetlink(7), <linux/rtnetlink.h>, iproute2's /etc/iproute2/rt_scopes and rt_tables.
#ifndef LIBSARENA_NETLINK_TYPES_H_
#define LIBSARENA_NETLINK_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace sarena::nl {

/// Address / route scope (rtm_scope, ifa_scope): the distance to the destination.
/// Values are the kernel's RT_SCOPE_* numbers; any other value may appear and is kept as is.
enum class Scope : uint8_t {
  kUniverse = 0,  // RT_SCOPE_UNIVERSE: "global" in iproute2
  kSite = 200,    // RT_SCOPE_SITE
  kLink = 253,    // RT_SCOPE_LINK: on-link, no gateway
  kHost = 254,    // RT_SCOPE_HOST: local addresses
  kNowhere = 255  // RT_SCOPE_NOWHERE
};

/// iproute2 names: "global", "site", "link", "host", "nowhere"; other values as their number.
std::string ToString(Scope scope);
/// Inverse of ToString (also accepts "universe" and decimal numbers); nullopt when unknown.
std::optional<Scope> ParseScope(absl::string_view text);

/// Well-known routing table ids (RT_TABLE_*). Table ids are 32-bit (RTA_TABLE / FRA_TABLE).
inline constexpr uint32_t kTableUnspec = 0;
inline constexpr uint32_t kTableDefault = 253;
inline constexpr uint32_t kTableMain = 254;
inline constexpr uint32_t kTableLocal = 255;

/// iproute2 names for table ids: "main", "local", "default", "unspec", else the number.
std::string TableName(uint32_t table);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_TYPES_H_
