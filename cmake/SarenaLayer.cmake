# sarena_add_layer(<layer> [DEPS <targets>...] [EXTRA_SOURCES ...])
# One static library per folder of libsarena/ (target sarena_<layer>, alias sarena::<layer>, the
# same name `find_package(libsarena)` exports). Sources are the folder's *.cc files; headers are
# included as "libsarena/<layer>/x.h".
#
# The layer's public headers (docs/install.md) are the target's file sets HEADERS (source tree)
# and generated_headers (build tree), which cmake/SarenaInstall.cmake installs to
# <includedir>/libsarena/<layer>/:
#   - every <layer>/*.h except the internal ones: a header is internal when it declares the
#     namespace sarena::<ns>::internal (netlink/internal.h, bpf/libbpf_log.h); no public header
#     may include one (tests/e2e/install_test.sh compiles each installed header alone);
#   - the protoc headers of EXTRA_SOURCES: for each x.pb.cc, the x.pb.h next to it in the build
#     tree (protobuf_generate_cpp's convention), because public headers include them.
include(GNUInstallDirs)

function(sarena_add_layer layer)
  cmake_parse_arguments(ARG "" "" "DEPS;EXTRA_SOURCES" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_test\\.cc$")
  set(target sarena_${layer})
  # In the build tree: the repository root ("libsarena/<layer>/x.h"), the build root (generated
  # "libsarena/<layer>/x.pb.h", "bpf/<name>.skel.h") and bpf/include ("sarena/abi.h"). Installed,
  # all three live under <includedir>.
  set(includes $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}> $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}>
               $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/bpf/include>
               $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(srcs OR ARG_EXTRA_SOURCES)
    add_library(${target} STATIC ${srcs} ${ARG_EXTRA_SOURCES})
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${target} ${scope} ${includes})
  target_link_libraries(${target} ${scope} ${ARG_DEPS})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${layer})

  file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  set(public_headers)
  foreach(h ${headers})
    file(STRINGS ${h} internal_ns REGEX "^namespace sarena::[a-z_]+::internal")
    if(NOT internal_ns)
      list(APPEND public_headers ${h})
    endif()
  endforeach()
  set(generated_headers)
  foreach(s ${ARG_EXTRA_SOURCES})
    if(s MATCHES "\\.pb\\.cc$")
      string(REGEX REPLACE "\\.pb\\.cc$" ".pb.h" pb_header ${s})
      list(APPEND generated_headers ${pb_header})
    endif()
  endforeach()
  # Two file sets: one file set's base directories may not nest (the build tree may be inside
  # the source tree). SarenaInstall.cmake installs both under <includedir>.
  if(public_headers)
    target_sources(${target} ${scope} FILE_SET HEADERS BASE_DIRS ${CMAKE_SOURCE_DIR}
                   FILES ${public_headers})
  endif()
  if(generated_headers)
    target_sources(${target} ${scope} FILE_SET generated_headers TYPE HEADERS
                   BASE_DIRS ${CMAKE_BINARY_DIR} FILES ${generated_headers})
  endif()
  add_library(sarena::${layer} ALIAS ${target})
endfunction()
