# Installation of the executables and system files (component "sarena") and the Debian packages
# built by CPack: libsarena-dev (component dev, cmake/SarenaInstall.cmake) and sarena (component
# sarena, below). See docs/packaging.md.
#
#   cpack -G DEB --config <build>/CPackConfig.cmake -B DIR   (or: ninja -C <build> package)
#     -> DIR/libsarena-dev_<version>-1_<arch>.deb, DIR/sarena_<version>-1_<arch>.deb
#
# Component "sarena" (paths for the /usr prefix CPack installs to):
#   /usr/sbin/sarenad                          the node daemon
#   /usr/lib/cni/sarena-cni                    the CNI plugin, where Debian's runtimes look for
#                                              plugins (containernetworking-plugins, podman)
#   /usr/bin/sarena, /usr/bin/sarena-diag      the operator CLI and the path diagnoser
#   /usr/libexec/sarena/sarena-diag-live       the diagnoser's kernel-reading commands (collect,
#                                              drops, trace --live), which sarena-diag execs;
#                                              not on PATH (docs/diagnoser.md "Two executables")
#   /lib/systemd/system/sarenad.service        systemd unit (not enabled or started by the package)
#   /etc/default/sarenad                       its flags (SARENAD_OPTS), a conffile
#   /usr/share/man/man{1,8}/*.gz               man pages generated from --help with help2man
#   /usr/share/doc/sarena/                     copyright, packaging.md, examples/10-sarena.conflist
# With another prefix P (`cmake --install --prefix P`), /etc is P/etc and the unit goes to
# P/lib/systemd/system: nothing outside P is written.
include(GNUInstallDirs)

set(SARENA_PACKAGING_DIR ${CMAKE_SOURCE_DIR}/packaging)

# --- executables ------------------------------------------------------------------------------
install(TARGETS sarenad RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT sarena)
install(TARGETS sarena sarena-diag RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT sarena)
# sarena-diag finds it as ../libexec/sarena/ from its own directory (tools/CMakeLists.txt).
install(TARGETS sarena-diag-live RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/sarena
        COMPONENT sarena)
# Not multiarch: Debian's CNI plugin directory is /usr/lib/cni on every architecture.
install(TARGETS sarena-cni RUNTIME DESTINATION lib/cni COMPONENT sarena)

# --- man pages: help2man on each executable's --help, at build time ---------------------------
# The version is the project's (help2man does not run --version): the man page states the
# version of the package it ships in. <tool>.h2m in packaging/man/ adds FILES / SEE ALSO.
find_program(SARENA_HELP2MAN help2man)
find_program(SARENA_GZIP gzip REQUIRED)
if(NOT SARENA_HELP2MAN)
  message(FATAL_ERROR "help2man not found: the man pages of the sarena package are generated "
                      "with it (Debian package help2man, see .ci/install-deps)")
endif()
set(SARENA_MAN_DIR ${CMAKE_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${SARENA_MAN_DIR})
set(sarena_man_pages)
# tool | section | NAME line
foreach(entry
    "sarenad|8|sarena node daemon (eBPF CNI datapath)"
    "sarena-cni|8|sarena CNI plugin, executed by container runtimes"
    "sarena|1|sarena operator CLI: daemon status, endpoints, drops, cluster nodes"
    "sarena-diag|1|sarena network path diagnoser: collect a snapshot, trace a packet")
  string(REPLACE "|" ";" entry "${entry}")
  list(GET entry 0 tool)
  list(GET entry 1 section)
  list(GET entry 2 name_line)
  set(page ${SARENA_MAN_DIR}/${tool}.${section})
  add_custom_command(
    OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E env --unset=CNI_COMMAND
            ${SARENA_HELP2MAN} --no-info --section=${section} --name=${name_line}
            --source=libsarena --manual=sarena --version-string=${PROJECT_VERSION}
            --opt-include=${SARENA_PACKAGING_DIR}/man/${tool}.h2m
            --output=${page} $<TARGET_FILE:${tool}>
    # -n: no name or time stamp in the gzip header (Debian policy 12.3: reproducible).
    COMMAND ${SARENA_GZIP} -9nf ${page}
    DEPENDS ${tool} ${SARENA_PACKAGING_DIR}/man/${tool}.h2m
    COMMENT "help2man ${tool}.${section}"
    VERBATIM)
  list(APPEND sarena_man_pages ${page}.gz)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT sarena)
endforeach()
# Part of `all` (CPack installs the pages from the build tree), except in the ASan+UBSan tree
# (SARENA_SANITIZE), which is not packaged.
if(SARENA_SANITIZE)
  add_custom_target(sarena-man DEPENDS ${sarena_man_pages})
else()
  add_custom_target(sarena-man ALL DEPENDS ${sarena_man_pages})
endif()

# --- documentation, example conflist ----------------------------------------------------------
set(SARENA_DOC_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/sarena)
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${SARENA_DOC_DIR} RENAME copyright
        COMPONENT sarena)
install(FILES ${CMAKE_SOURCE_DIR}/docs/packaging.md DESTINATION ${SARENA_DOC_DIR}
        COMPONENT sarena)
# A sample only, never /etc/cni/net.d: a conflist there is picked up by every runtime at once
# (the first in lexical order is the default network), before sarenad is configured.
install(FILES ${SARENA_PACKAGING_DIR}/10-sarena.conflist DESTINATION ${SARENA_DOC_DIR}/examples
        COMPONENT sarena)
# Debian policy 12.5: every package ships its copyright file.
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libsarena-dev RENAME copyright COMPONENT dev)

# --- /etc/default/sarenad and the systemd unit: outside the prefix only for the /usr prefix -----
# systemd.pc names the system unit directory (/lib/systemd/system on Debian 12).
find_package(PkgConfig REQUIRED)
pkg_get_variable(SARENA_SYSTEMD_UNIT_DIR systemd systemdsystemunitdir)
if(NOT SARENA_SYSTEMD_UNIT_DIR)
  set(SARENA_SYSTEMD_UNIT_DIR /lib/systemd/system)
endif()
# The unit names /usr/sbin/sarenad, /etc/default/sarenad and /usr/share/doc/sarena; with another
# prefix those paths are rewritten to the installed ones (systemd also loads units from
# /usr/local/lib/systemd/system, so a /usr/local install must not start a missing /usr/sbin one).
install(CODE "
  set(sarena_unit \"${SARENA_PACKAGING_DIR}/sarenad.service\")
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(sarena_etc /etc)
    set(sarena_unit_dir \"${SARENA_SYSTEMD_UNIT_DIR}\")
  else()
    set(sarena_etc \"\${CMAKE_INSTALL_PREFIX}/etc\")
    set(sarena_unit_dir \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
    file(READ \"\${sarena_unit}\" sarena_text)
    string(REPLACE /usr/sbin/sarenad \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}/sarenad\"
           sarena_text \"\${sarena_text}\")
    string(REPLACE /etc/default/sarenad \"\${sarena_etc}/default/sarenad\"
           sarena_text \"\${sarena_text}\")
    string(REPLACE /usr/share/doc/sarena \"\${CMAKE_INSTALL_PREFIX}/${SARENA_DOC_DIR}\"
           sarena_text \"\${sarena_text}\")
    string(MD5 sarena_key \"\${CMAKE_INSTALL_PREFIX}\")
    set(sarena_unit \"${CMAKE_BINARY_DIR}/sarenad-unit/\${sarena_key}/sarenad.service\")
    file(WRITE \"\${sarena_unit}\" \"\${sarena_text}\")
  endif()
  file(INSTALL DESTINATION \"\${sarena_etc}/default\" TYPE FILE RENAME sarenad
       FILES \"${SARENA_PACKAGING_DIR}/sarenad.default\")
  file(INSTALL DESTINATION \"\${sarena_unit_dir}\" TYPE FILE FILES \"\${sarena_unit}\")
  if(NOT CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    file(REMOVE_RECURSE \"${CMAKE_BINARY_DIR}/sarenad-unit/\${sarena_key}\")
  endif()
" COMPONENT sarena)

# --- CPack: one Debian package per component --------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sarena)
set(CPACK_PACKAGE_VENDOR "libsarena")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL dev sarena)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER
    "libsarena maintainers <maintainers@users.noreply.a-seed-5f57bec9.example>")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the ELF files' shared libraries (dpkg-shlibdeps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Maintainer scripts 0755 and conffiles 0644 whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Executables without their debug information (as dh_strip does).
set(CPACK_STRIP_FILES ON)
# Static archives: strip --strip-debug in the staging directory (keeps the symbol table).
set(CPACK_PRE_BUILD_SCRIPTS ${SARENA_PACKAGING_DIR}/deb/strip-static.cmake)

set(CPACK_DEBIAN_SARENA_PACKAGE_NAME sarena)
set(CPACK_DEBIAN_SARENA_PACKAGE_SECTION net)
set(CPACK_DEBIAN_SARENA_DESCRIPTION
    "eBPF CNI datapath for Kubernetes-style pods: node daemon, CNI plugin, CLI
sarena connects pods (network namespaces created by a container runtime) to the node
through eBPF programs attached with tcx or tc (addresses from its own IPAM),
and optionally joins a multi-node cluster through etcd (VXLAN or native routing).

This package contains sarenad (the node daemon, with a systemd unit that is
installed neither enabled nor started: set its flags in /etc/default/sarenad),
the CNI plugin sarena-cni in /usr/lib/cni, the operator CLI sarena, the path
diagnoser sarena-diag (its kernel-reading commands in /usr/libexec/sarena),
their man pages and a sample CNI network configuration.")
# Beside the shared libraries (dpkg-shlibdeps): `sarena-diag collect` runs ip and bridge
# (iproute2) and, on a node, iptables-save; `sarena-diag trace --svg` runs dot (graphviz).
set(CPACK_DEBIAN_SARENA_PACKAGE_DEPENDS "iproute2")
set(CPACK_DEBIAN_SARENA_PACKAGE_RECOMMENDS "iptables")
set(CPACK_DEBIAN_SARENA_PACKAGE_SUGGESTS "graphviz")
set(CPACK_DEBIAN_SARENA_PACKAGE_CONTROL_EXTRA
    ${SARENA_PACKAGING_DIR}/deb/conffiles ${SARENA_PACKAGING_DIR}/deb/postinst
    ${SARENA_PACKAGING_DIR}/deb/prerm ${SARENA_PACKAGING_DIR}/deb/postrm)

# libsarena-dev: static archives and headers only, so dpkg-shlibdeps finds nothing; Depends are
# the -dev packages of what the layers link (the pkg-config Requires of libsarena.pc). The
# generated *.pb.h only compile with the protobuf headers of the protoc that wrote them, and the
# archives only link with the Abseil release they were built against: both are pinned to their
# upstream release.
set(sarena_dev_depends "libbpf-dev (>= 1:${LIBBPF_VERSION})" "libmnl-dev (>= ${LIBMNL_VERSION})"
    "libssl-dev" "libboost-dev (>= 1.74)" "pkg-config | pkgconf")
if(Protobuf_VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)")
  math(EXPR next_patch "${CMAKE_MATCH_3} + 1")
  list(APPEND sarena_dev_depends "libprotobuf-dev (>= ${Protobuf_VERSION})"
       "libprotobuf-dev (<< ${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${next_patch})")
else()
  list(APPEND sarena_dev_depends libprotobuf-dev)
endif()
if(absl_VERSION MATCHES "^([0-9]+)")
  math(EXPR next_release "${CMAKE_MATCH_1} + 1")
  list(APPEND sarena_dev_depends "libabsl-dev (>= ${CMAKE_MATCH_1})"
       "libabsl-dev (<< ${next_release})")
else()
  list(APPEND sarena_dev_depends libabsl-dev)
endif()
list(JOIN sarena_dev_depends ", " sarena_dev_depends)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libsarena-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${sarena_dev_depends}")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "eBPF CNI datapath and network path model: development files
libsarena is the library behind sarena: BPF map and link handling, netlink, the
CNI plugin protocol, the node daemon's endpoint and IPAM logic, and a model of a
node's network path that traces a packet through routes, netfilter and eBPF.

This package contains the public headers, one static library per layer, the
CMake package (find_package(libsarena CONFIG), targets sarena::*) and
libsarena.pc for pkg-config.")

include(CPack)
