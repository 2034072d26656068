# SARENA_SANITIZE=ON (clang++ only; see .ci/build-asan): every C/C++ target is built with
# ASan + UBSan (UBSan fatal) and libFuzzer's coverage instrumentation; fuzz executables
# (tests/fuzz, sarena_add_fuzz_target in tests/CMakeLists.txt) link -fsanitize=fuzzer.
# The BPF objects (clang -target bpf custom commands) are not affected.
if(SARENA_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SARENA_SANITIZE needs clang++ (libFuzzer); use .ci/build-asan")
  endif()
  set(SARENA_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer)
  add_compile_options(${SARENA_SAN_FLAGS} -fsanitize=fuzzer-no-link)
  add_link_options(-fsanitize=address,undefined)
endif()
