# Installation of the library (component "dev"): public headers, layer libraries, the exported
# sarena:: targets with a CMake package config and a pkg-config file. See docs/install.md.
#
#   <prefix>/include/libsarena/<layer>/*.h          public headers (the HEADERS file set of each
#                                                   layer, cmake/SarenaLayer.cmake), *.pb.h too
#   <prefix>/include/sarena/abi.h                   the BPF ABI header (bpf/include/sarena/abi.h)
#   <prefix>/<libdir>/libsarena_<layer>.a           one static library per layer
#   <prefix>/<libdir>/cmake/libsarena/              libsarenaConfig.cmake, ...ConfigVersion.cmake,
#                                                   libsarenaTargets*.cmake (sarena::<layer>,
#                                                   sarena::sarena)
#   <prefix>/<libdir>/pkgconfig/libsarena.pc
#
# Nothing else is installed in this component (executables are component "sarena",
# cmake/SarenaPackage.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SARENA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/libsarena)

# The layers are what the umbrella target links (libsarena/CMakeLists.txt is the one list).
get_target_property(sarena_layers libsarena INTERFACE_LINK_LIBRARIES)
set_target_properties(libsarena PROPERTIES EXPORT_NAME sarena)

install(TARGETS ${sarena_layers} libsarena EXPORT libsarenaTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILE_SET generated_headers DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(FILES ${CMAKE_SOURCE_DIR}/bpf/include/sarena/abi.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sarena COMPONENT dev)
install(EXPORT libsarenaTargets NAMESPACE sarena:: DESTINATION ${SARENA_CMAKE_DIR}
        COMPONENT dev)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/libsarenaConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/libsarenaConfig.cmake
                              INSTALL_DESTINATION ${SARENA_CMAKE_DIR})
# 0.x: a minor release may change the API, so 0.1 only satisfies requests for 0.1.*.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/libsarenaConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/libsarenaConfig.cmake
              ${CMAKE_BINARY_DIR}/libsarenaConfigVersion.cmake
        DESTINATION ${SARENA_CMAKE_DIR} COMPONENT dev)

# --- pkg-config -------------------------------------------------------------------------------
# Libs: the layer archives in link order (every layer before the layers it links: a reverse
# post-order of the layer graph), then what they link outside libsarena as pkg-config modules.
# The archives are static only, so their dependencies are Requires, not Requires.private: a plain
# `pkg-config --libs libsarena` must name them (Requires.private only counts with --static).
set(sarena_pc_order)
set(sarena_pc_external)
function(sarena_pc_visit target)
  get_property(done GLOBAL PROPERTY SARENA_PC_DONE_${target})
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY SARENA_PC_DONE_${target} TRUE)
  get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
  foreach(dep ${deps})
    if(dep IN_LIST sarena_layers)
      sarena_pc_visit(${dep})
    else()
      set_property(GLOBAL APPEND PROPERTY SARENA_PC_EXTERNAL ${dep})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY SARENA_PC_POSTORDER ${target})
endfunction()
foreach(layer ${sarena_layers})
  sarena_pc_visit(${layer})
endforeach()
get_property(postorder GLOBAL PROPERTY SARENA_PC_POSTORDER)
get_property(external GLOBAL PROPERTY SARENA_PC_EXTERNAL)
list(REVERSE postorder)
set(SARENA_PC_LIBS "")
foreach(t ${postorder})
  string(APPEND SARENA_PC_LIBS " -l${t}")
endforeach()
# CMake target -> pkg-config module. A dependency missing here stops the configure: add it.
list(REMOVE_DUPLICATES external)
set(SARENA_PC_REQUIRES)
set(SARENA_PC_EXTRA_LIBS "")
foreach(dep ${external})
  if(dep MATCHES "^absl::(.+)$")
    list(APPEND SARENA_PC_REQUIRES absl_${CMAKE_MATCH_1})
  elseif(dep STREQUAL "protobuf::libprotobuf")
    list(APPEND SARENA_PC_REQUIRES protobuf)
  elseif(dep STREQUAL "PkgConfig::LIBBPF")
    list(APPEND SARENA_PC_REQUIRES libbpf)
  elseif(dep STREQUAL "PkgConfig::LIBMNL")
    list(APPEND SARENA_PC_REQUIRES libmnl)
  elseif(dep STREQUAL "OpenSSL::Crypto")
    list(APPEND SARENA_PC_REQUIRES libcrypto)
  elseif(dep STREQUAL "Threads::Threads")
    set(SARENA_PC_EXTRA_LIBS " -pthread")
  elseif(dep STREQUAL "Boost::headers")
    # header-only here, in the compiler's default include path on Debian (no .pc file)
  else()
    message(FATAL_ERROR "cmake/SarenaInstall.cmake: no pkg-config module known for '${dep}' "
                        "(a libsarena layer links it): add it to the mapping")
  endif()
endforeach()
list(SORT SARENA_PC_REQUIRES)
list(JOIN SARENA_PC_REQUIRES ", " SARENA_PC_REQUIRES)
string(APPEND SARENA_PC_LIBS "${SARENA_PC_EXTRA_LIBS}")

# The .pc file holds absolute paths, so it is written at install time for the prefix actually
# installed to (`cmake --install --prefix P`, CPack's /usr), into a directory of its own per
# prefix (concurrent installs from one build tree do not share a file), removed once installed.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "libsarena.pc needs CMAKE_INSTALL_LIBDIR/INCLUDEDIR relative to the prefix")
endif()
install(CODE "
  set(SARENA_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(SARENA_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(SARENA_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(SARENA_PC_VERSION \"${PROJECT_VERSION}\")
  set(SARENA_PC_REQUIRES \"${SARENA_PC_REQUIRES}\")
  set(SARENA_PC_LIBS \"${SARENA_PC_LIBS}\")
  string(MD5 sarena_pc_key \"\${CMAKE_INSTALL_PREFIX}\")
  set(sarena_pc \"${CMAKE_BINARY_DIR}/libsarena-pc/\${sarena_pc_key}/libsarena.pc\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/libsarena.pc.in\" \"\${sarena_pc}\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
       TYPE FILE FILES \"\${sarena_pc}\")
  file(REMOVE_RECURSE \"${CMAKE_BINARY_DIR}/libsarena-pc/\${sarena_pc_key}\")
" COMPONENT dev)
