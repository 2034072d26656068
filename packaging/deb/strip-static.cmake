# CPACK_PRE_BUILD_SCRIPTS of cmake/SarenaPackage.cmake: runs after CPack has staged the
# components and before it builds the .deb files. Strips the debug information from the staged
# static archives (strip --strip-debug keeps the symbol table the linker needs, as Debian's
# dh_strip does for lib*.a); the build tree's archives are not touched.
find_program(sarena_strip NAMES strip REQUIRED)
if(NOT CPACK_TEMPORARY_INSTALL_DIRECTORY)
  message(FATAL_ERROR "strip-static.cmake: CPACK_TEMPORARY_INSTALL_DIRECTORY is not set")
endif()
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(a IN LISTS archives)
  execute_process(COMMAND ${sarena_strip} --strip-debug "${a}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug '${a}' failed (${rc})")
  endif()
endforeach()
