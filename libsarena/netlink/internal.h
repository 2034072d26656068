// Internal helpers of libsarena/netlink (not part of the public API): message buffers and
// attribute accessors over libmnl.
#ifndef LIBSARENA_NETLINK_INTERNAL_H_
#define LIBSARENA_NETLINK_INTERNAL_H_

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"

namespace sarena::nl::internal {

/// A zeroed, aligned buffer holding one request message (MNL_SOCKET_BUFFER_SIZE bytes).
class MsgBuf {
 public:
  MsgBuf() { std::memset(buf_, 0, sizeof buf_); }
  /// Starts a message of `type` with `flags` (NLM_F_REQUEST/ACK/DUMP are added by Socket) and
  /// a zeroed family header of `hdr_size` bytes; returns the header.
  nlmsghdr* Start(uint16_t type, uint16_t flags) {
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf_);
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = flags;
    return nlh;
  }
  template <typename T>
  static T* PutHeader(nlmsghdr* nlh) {
    return static_cast<T*>(mnl_nlmsg_put_extra_header(nlh, sizeof(T)));
  }
  static constexpr size_t kSize = 8192;

 private:
  alignas(8) char buf_[kSize];
};

/// Payload of an attribute as u8/u16/u32/s32, or nullopt when too short.
inline std::optional<uint8_t> AttrU8(const nlattr* a) {
  if (mnl_attr_get_payload_len(a) < 1) return std::nullopt;
  return *static_cast<const uint8_t*>(mnl_attr_get_payload(a));
}
inline std::optional<uint16_t> AttrU16(const nlattr* a) {
  if (mnl_attr_get_payload_len(a) < 2) return std::nullopt;
  uint16_t v;
  std::memcpy(&v, mnl_attr_get_payload(a), 2);
  return v;
}
inline std::optional<uint32_t> AttrU32(const nlattr* a) {
  if (mnl_attr_get_payload_len(a) < 4) return std::nullopt;
  uint32_t v;
  std::memcpy(&v, mnl_attr_get_payload(a), 4);
  return v;
}
/// NUL-terminated (or not) string payload, bounded by the attribute length.
inline std::string AttrStr(const nlattr* a) {
  const char* p = static_cast<const char*>(mnl_attr_get_payload(a));
  return std::string(p, strnlen(p, mnl_attr_get_payload_len(a)));
}
/// IPv4 address payload (4 bytes, network byte order).
inline std::optional<net::Ipv4> AttrIpv4(const nlattr* a) {
  auto v = AttrU32(a);
  if (!v) return std::nullopt;
  return net::FromBe32(*v);
}
/// 6-byte MAC payload; nullopt for other lengths.
inline std::optional<net::Mac> AttrMac(const nlattr* a) {
  if (mnl_attr_get_payload_len(a) != 6) return std::nullopt;
  net::Mac m;
  std::memcpy(m.data(), mnl_attr_get_payload(a), 6);
  return m;
}
inline void PutIpv4(nlmsghdr* nlh, uint16_t type, const net::Ipv4& ip) {
  mnl_attr_put_u32(nlh, type, net::ToBe32(ip));
}
inline void PutMac(nlmsghdr* nlh, uint16_t type, const net::Mac& mac) {
  mnl_attr_put(nlh, type, mac.size(), mac.data());
}

/// Calls fn(const nlattr*) for each attribute of `nlh` after a family header of `offset` bytes.
template <typename Fn>
void ForEachAttr(const nlmsghdr& nlh, size_t offset, Fn fn) {
  const auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(&nlh, offset));
  const char* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(&nlh));
  while (mnl_attr_ok(a, static_cast<int>(tail - reinterpret_cast<const char*>(a)))) {
    fn(a);
    a = mnl_attr_next(a);
  }
}

/// Calls fn(const nlattr*) for each attribute nested in `nest`.
template <typename Fn>
void ForEachNested(const nlattr* nest, Fn fn) {
  const auto* a = static_cast<const nlattr*>(mnl_attr_get_payload(nest));
  const char* tail = reinterpret_cast<const char*>(nest) + nest->nla_len;
  while (mnl_attr_ok(a, static_cast<int>(tail - reinterpret_cast<const char*>(a)))) {
    fn(a);
    a = mnl_attr_next(a);
  }
}

/// Checks that `nlh` has type `type` and a payload of at least `hdr_size` bytes.
absl::Status CheckMessage(const nlmsghdr& nlh, uint16_t type, size_t hdr_size,
                          absl::string_view what);

/// Validates an interface name for `field` (1..15 chars, no '/', ':' or whitespace).
absl::Status CheckIfName(absl::string_view name, absl::string_view field);

/// ErrnoStatus with `err` but the status code replaced by `code` (keeps the message).
absl::Status WithCode(absl::Status status, absl::StatusCode code);

}  // namespace sarena::nl::internal

#endif  // LIBSARENA_NETLINK_INTERNAL_H_
