# Every dependency comes from Debian 12 packages (see .ci/install-deps).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)
pkg_check_modules(LIBMNL REQUIRED IMPORTED_TARGET libmnl)
find_package(absl REQUIRED)
find_package(Protobuf REQUIRED)
find_package(Boost 1.74 REQUIRED)  # Asio and Graph are header-only here
find_package(Threads REQUIRED)
if(SARENA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SARENA_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# OpenSSL's libcrypto (Debian libssl-dev) for SHA-256 of host-side veth names (docs/architecture.md
# "The node datapath": "lxc" + first 11 hex of sha256(containerID + ifname)); a well-kept hash
# beats our own.
find_package(OpenSSL REQUIRED)
