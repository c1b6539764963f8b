# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# One precompiled header for every GoogleTest program of the tree.
#
# gtest.h, gmock.h and json.hpp cost about 4 s of compiler time per test file, and there are
# more than 130 test files. The header is compiled once, by a small program of its own
# (rdma-qos-test-pch), and every other GoogleTest program reuses it (REUSE_FROM). A compiler
# takes a precompiled header only when the flags that shape it match (optimization level, PIE,
# sanitizers, the macros gtest reads), so it is shared only with C++-only executables that link
# gtest and keep the tests' optimization level: the benchmarks' timed tools and programs with C
# sources compile as before. GCC's -Winvalid-pch (which CMake adds) turns any mismatch into a
# -Werror failure instead of a silent slowdown. RDMA_QOS_TEST_PCH=OFF turns it off.
include_guard(GLOBAL)
option(RDMA_QOS_TEST_PCH "Share one precompiled header between the GoogleTest programs" ON)

function(_rdma_qos_targets_under dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _rdma_qos_targets_under("${sub}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(_rdma_qos_pch_fits target out)
  set(${out} OFF PARENT_SCOPE)
  get_target_property(type ${target} TYPE)
  get_target_property(timed ${target} RDMA_QOS_TIMED_TOOL)
  get_target_property(libs ${target} LINK_LIBRARIES)
  get_target_property(sources ${target} SOURCES)
  if(NOT type STREQUAL "EXECUTABLE" OR timed OR NOT libs MATCHES "GTest::")
    return()
  endif()
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$")
      return()
    endif()
  endforeach()
  set(${out} ON PARENT_SCOPE)
endfunction()

# rdma_qos_share_test_pch(DIR): every fitting target under DIR reuses the one header.
function(rdma_qos_share_test_pch dir)
  if(NOT RDMA_QOS_TEST_PCH)
    return()
  endif()
  _rdma_qos_targets_under("${dir}" targets)
  set(empty "${CMAKE_CURRENT_BINARY_DIR}/rdma_qos_test_pch.cpp")
  file(CONFIGURE OUTPUT "${empty}" CONTENT "// The precompiled header's own program (no code).\n")
  add_executable(rdma-qos-test-pch "${empty}")
  target_link_libraries(rdma-qos-test-pch PRIVATE GTest::gmock GTest::gtest_main
                        nlohmann_json::nlohmann_json rdmaqos::warnings)
  target_precompile_headers(rdma-qos-test-pch PRIVATE
    <gmock/gmock.h> <gtest/gtest.h> <nlohmann/json.hpp>
    <algorithm> <chrono> <cstdint> <cstring> <functional> <map> <memory> <optional> <set>
    <string> <string_view> <thread> <utility> <vector>)
  foreach(target IN LISTS targets)
    _rdma_qos_pch_fits(${target} fits)
    if(fits)
      target_precompile_headers(${target} REUSE_FROM rdma-qos-test-pch)
      # The reusing program needs the header's include directories and macros.
      target_link_libraries(${target} PRIVATE nlohmann_json::nlohmann_json)
    endif()
  endforeach()
endfunction()
