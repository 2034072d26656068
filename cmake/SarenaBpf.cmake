# sarena_add_bpf_object(<name> SOURCES <file.bpf.c> [HEADERS ...] [INCLUDES <dir>...])
# Compiles one BPF object with clang -target bpf, then generates its libbpf skeleton with
# `bpftool gen skeleton`. Produces ${CMAKE_BINARY_DIR}/bpf/<name>.bpf.o and
# ${CMAKE_BINARY_DIR}/bpf/<name>.skel.h, and appends the header to the SARENA_BPF_SKELETONS
# global property so the bpf layer can depend on them.
find_program(SARENA_CLANG NAMES clang clang-14 REQUIRED)
find_program(SARENA_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
set(SARENA_BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${SARENA_BPF_OUT})

function(sarena_add_bpf_object name)
  cmake_parse_arguments(ARG "" "" "SOURCES;HEADERS;INCLUDES" ${ARGN})
  set(extra_includes)
  foreach(dir ${ARG_INCLUDES})
    list(APPEND extra_includes -I${dir})
  endforeach()
  set(obj ${SARENA_BPF_OUT}/${name}.bpf.o)
  set(skel ${SARENA_BPF_OUT}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${SARENA_CLANG} -target bpf -O2 -g -Wall -Werror
            -D__TARGET_ARCH_x86
            ${extra_includes} -I${CMAKE_SOURCE_DIR}/bpf/include -I${CMAKE_SOURCE_DIR}/bpf
            -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}
            -c ${ARG_SOURCES} -o ${obj}
    DEPENDS ${ARG_SOURCES} ${ARG_HEADERS}
    COMMENT "BPF ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${SARENA_BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "bpftool gen skeleton ${name}"
    VERBATIM)
  set_property(GLOBAL APPEND PROPERTY SARENA_BPF_SKELETONS ${skel})
endfunction()
