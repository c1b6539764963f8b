# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Build types, warnings, sanitizers and compiler caching shared by every component.
include_guard(GLOBAL)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_C_STANDARD 11)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

# Release when no build type is given; "None" (what Debian's debhelper passes) adds no flags of
# its own, so the packager's CFLAGS/CXXFLAGS decide; "Sanitize" is Debug plus ASan and UBSan,
# the configuration CI runs the unit tests under.
set(RDMA_QOS_BUILD_TYPES Release Debug RelWithDebInfo MinSizeRel None Sanitize)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
set_property(CACHE CMAKE_BUILD_TYPE PROPERTY STRINGS ${RDMA_QOS_BUILD_TYPES})
if(NOT CMAKE_BUILD_TYPE IN_LIST RDMA_QOS_BUILD_TYPES)
  message(FATAL_ERROR "CMAKE_BUILD_TYPE must be one of: ${RDMA_QOS_BUILD_TYPES} (or empty)")
endif()

set(_san "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer")
# Line tables are all a sanitizer report needs for file:line in its stacks; full debug info
# (variables, types) is the Debug build's, and costs the Sanitize build about a tenth of its
# compile time.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(_san_debug "-gline-tables-only")
else()
  set(_san_debug "-g1")
endif()
# C++ at -O0: the sanitizers find the same faults there, and clang compiles a library file in
# 10-45% less time (measured side by side on policy/parser.cpp, sa-responder/answer.cpp and
# kmod-shim/lsd.cpp), where the Sanitize build's compile is most of its cost and its tests a
# small part. C keeps -O1: OpenSM's complib headers define inline functions that link only
# when inlined.
set(CMAKE_C_FLAGS_SANITIZE "-O1 ${_san_debug} ${_san}" CACHE STRING "" FORCE)
set(CMAKE_CXX_FLAGS_SANITIZE "-O0 ${_san_debug} ${_san}" CACHE STRING "" FORCE)
# Results nobody examined abort in the builds that test (common/result.h), never in the ones
# that ship: Debian's None build defines no NDEBUG, so NDEBUG cannot say which is which.
add_compile_definitions("$<$<CONFIG:Debug,Sanitize>:RDMA_QOS_CHECK_RESULTS>")
set(CMAKE_EXE_LINKER_FLAGS_SANITIZE "${_san}" CACHE STRING "" FORCE)
set(CMAKE_SHARED_LINKER_FLAGS_SANITIZE "${_san}" CACHE STRING "" FORCE)
mark_as_advanced(CMAKE_C_FLAGS_SANITIZE CMAKE_CXX_FLAGS_SANITIZE
                 CMAKE_EXE_LINKER_FLAGS_SANITIZE CMAKE_SHARED_LINKER_FLAGS_SANITIZE)
# Under clang, every library of the Sanitize build also carries libFuzzer's coverage
# instrumentation: without it the fuzz targets see only their own few edges and mutate blind
# (the fuzzer runtime itself is linked only into the fuzz targets).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options("$<$<CONFIG:Sanitize>:-fsanitize=fuzzer-no-link>")
  # The Sanitize build links with LLVM's lld where it is installed: its sanitized programs are
  # large (the biggest test program links in 6.3 s with GNU ld, 1.6 s with lld), and the
  # unit-tests target's 47 links run on the tail of the test command (74 s of CPU, 31 with lld).
  find_program(RDMA_QOS_LLD NAMES ld.lld)
  mark_as_advanced(RDMA_QOS_LLD)
  if(RDMA_QOS_LLD)
    add_link_options("$<$<CONFIG:Sanitize>:-fuse-ld=lld>")
  endif()
endif()

# A developer build (scripts/run-tests.sh and CI turn it on) builds the tests and benchmarks and
# treats warnings as errors; a build from a release or a distribution package does neither, so a
# newer compiler's new warning does not break it.
option(RDMA_QOS_DEVELOPER "Development build: tests, benchmarks and -Werror" OFF)
option(RDMA_QOS_BUILD_TESTS "Build the tests" ${RDMA_QOS_DEVELOPER})
option(RDMA_QOS_BUILD_BENCH "Build the benchmarks" ${RDMA_QOS_DEVELOPER})
option(RDMA_QOS_WERROR "Treat warnings in rdma-qos code as errors" ${RDMA_QOS_DEVELOPER})

find_program(RDMA_QOS_CCACHE ccache)
if(RDMA_QOS_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  # ccache serves files that use a precompiled header (the tests share one) only when told the
  # header's macros and timestamps may be trusted. Paths are hashed relative to the source tree,
  # so a second checkout (a git worktree) with its build directory at the same place in it
  # reuses the first one's objects.
  set(_ccache "${CMAKE_COMMAND}" -E env
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}" "${RDMA_QOS_CCACHE}")
  set(CMAKE_C_COMPILER_LAUNCHER ${_ccache})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_ccache})
endif()

# Warnings apply to our targets only (third-party headers come in as SYSTEM).
add_library(rdma_qos_warnings INTERFACE)
target_compile_options(rdma_qos_warnings INTERFACE -Wall -Wextra -Wshadow -Wformat=2
                       $<$<BOOL:${RDMA_QOS_WERROR}>:-Werror>)
add_library(rdmaqos::warnings ALIAS rdma_qos_warnings)

include(GNUInstallDirs)

# rdma_qos_component_library(NAME SOURCES ... [DEPS ...] [PRIVATE_DEPS ...] [INCLUDE dir]): a
# static library of one component with its public headers under <component>/include, or with
# INCLUDE under `dir` (relative to the component): the internal library of a program or module
# that the component's own tests link too, its headers staying in src/.
function(rdma_qos_component_library name)
  cmake_parse_arguments(ARG "" "INCLUDE" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(NOT ARG_INCLUDE)
    set(ARG_INCLUDE include)
  endif()
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_INCLUDE}")
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE rdmaqos::warnings ${ARG_PRIVATE_DEPS})
endfunction()

# What a library or module exports is its version script's business: the script is passed to
# the linker and relinks the target when it changes.
function(_rdma_qos_version_script target map)
  target_link_options(${target} PRIVATE "-Wl,--version-script=${map}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${map}")
endfunction()

# rdma_qos_shared_library(TARGET OUTPUT_NAME n VERSION v SOVERSION s MAP file SOURCES ...
#                         [LIBS ...] [INCLUDE dir] [OUTPUT_DIRECTORY dir]): a shared library for
# programs to link, with its soname and exported symbols, installed in libdir.
function(rdma_qos_shared_library target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME;VERSION;SOVERSION;MAP;INCLUDE;OUTPUT_DIRECTORY"
                        "SOURCES;LIBS" ${ARGN})
  add_library(${target} SHARED ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME}
                        VERSION ${ARG_VERSION} SOVERSION ${ARG_SOVERSION})
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
  if(ARG_INCLUDE)
    target_include_directories(${target} PUBLIC "${ARG_INCLUDE}")
  endif()
  _rdma_qos_version_script(${target} "${ARG_MAP}")
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} rdmaqos::warnings)
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# rdma_qos_module(TARGET MAP file DESTINATION dir SOURCES ... [LIBS ...] [OUTPUT_NAME n]
#                 [NO_PREFIX] [OUTPUT_DIRECTORY dir] [HIDDEN] [LINK_OPTIONS ...]): a module another
# program loads (dlopen or LD_PRELOAD), no soname, only its version script's symbols exported,
# installed in DESTINATION (relative to the prefix). HIDDEN compiles its C++ with hidden
# visibility (a module whose entry points are C files keeps the default). NO_PREFIX: the file is
# TARGET.so, not libTARGET.so.
function(rdma_qos_module target)
  cmake_parse_arguments(ARG "HIDDEN;NO_PREFIX" "MAP;DESTINATION;OUTPUT_NAME;OUTPUT_DIRECTORY"
                        "SOURCES;LIBS;LINK_OPTIONS" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  if(ARG_NO_PREFIX)
    set_target_properties(${target} PROPERTIES PREFIX "")
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
  if(ARG_HIDDEN)
    set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden
                          VISIBILITY_INLINES_HIDDEN ON)
  endif()
  _rdma_qos_version_script(${target} "${ARG_MAP}")
  target_link_options(${target} PRIVATE ${ARG_LINK_OPTIONS})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} rdmaqos::warnings)
  install(TARGETS ${target} LIBRARY DESTINATION "${ARG_DESTINATION}")
endfunction()

# rdma_qos_program(TARGET SOURCES ... [LIBS ...] [DAEMON]): a command, installed in bindir, or
# with DAEMON a daemon, installed in sbindir (its systemd units: rdma_qos_systemd_unit in udev/).
function(rdma_qos_program target)
  cmake_parse_arguments(ARG "DAEMON" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} rdmaqos::warnings)
  if(ARG_DAEMON)
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
  else()
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endfunction()
