# sarena_add_layer(<layer> [DEPS <targets>...] [EXTRA_SOURCES ...])
# One static library per folder of libsarena/ (target sarena_<layer>, alias sarena::<layer>).
# Sources are the folder's *.cc files; headers are included as "libsarena/<layer>/x.h".
function(sarena_add_layer layer)
  cmake_parse_arguments(ARG "" "" "DEPS;EXTRA_SOURCES" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_test\\.cc$")
  set(target sarena_${layer})
  if(srcs OR ARG_EXTRA_SOURCES)
    add_library(${target} STATIC ${srcs} ${ARG_EXTRA_SOURCES})
    target_include_directories(${target} PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                               ${CMAKE_SOURCE_DIR}/bpf/include)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                               ${CMAKE_SOURCE_DIR}/bpf/include)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(sarena::${layer} ALIAS ${target})
endfunction()
