# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Test registration helpers. Every ctest name starts with its component ("policy.",
# "testbed." ...) and carries exactly one label from the project's set:
#   unit   - no external process          opensm - ibsim + OpenSM fabric
#   vm     - the soft-RoCE kernel test bed fuzz   - libFuzzer targets, short runs
#   slurm  - a one-node Slurm cluster     bench  - benchmarks (never in CI)
#   soak   - long runs (never in CI)
include_guard(GLOBAL)
include(CTest)
include(GoogleTest)

set(RDMA_QOS_TEST_LABELS unit opensm vm slurm fuzz bench soak)
set(RDMA_QOS_FUZZ_SECONDS 10 CACHE STRING "Seconds each fuzz target runs under ctest")

function(_rdma_qos_check_label label)
  if(NOT label IN_LIST RDMA_QOS_TEST_LABELS)
    message(FATAL_ERROR "unknown test label '${label}' (one of: ${RDMA_QOS_TEST_LABELS})")
  endif()
endfunction()

# rdma_qos_add_gtest(TARGET COMPONENT LABEL SOURCES ... [LIBS ...] [TIMEOUT s])
# Builds a GoogleTest binary and registers each of its tests as COMPONENT.Suite.Name.
function(rdma_qos_add_gtest target)
  cmake_parse_arguments(ARG "" "COMPONENT;LABEL;TIMEOUT" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  _rdma_qos_check_label(${ARG_LABEL})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main
                        rdmaqos::warnings)
  if(TARGET rdmaqos::result_matchers)
    target_link_libraries(${target} PRIVATE rdmaqos::result_matchers)
  endif()
  if(ARG_LABEL STREQUAL "unit")
    set_property(GLOBAL APPEND PROPERTY RDMA_QOS_UNIT_TARGETS ${target})
  endif()
  if(ARG_LABEL STREQUAL "unit" AND CMAKE_BUILD_TYPE STREQUAL "Sanitize")
    # The Sanitize build runs a unit program's tests in one process (one ctest test per
    # program, <component>.<program>): a sanitized process costs a tenth of a second to start
    # and most unit tests take less, over a thousand of them. The release build lists each
    # test on its own; a failure here is named in the program's output.
    add_test(NAME ${ARG_COMPONENT}.${target} COMMAND ${target})
    set_tests_properties(${ARG_COMPONENT}.${target} PROPERTIES LABELS ${ARG_LABEL}
                         TIMEOUT 600 ${ARG_PROPERTIES})
    return()
  endif()
  gtest_discover_tests(${target}
    TEST_PREFIX "${ARG_COMPONENT}."
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} ${ARG_PROPERTIES})
endfunction()

# rdma_qos_add_script_test(NAME COMPONENT.name LABEL l COMMAND ...)
function(rdma_qos_add_script_test)
  cmake_parse_arguments(ARG "" "NAME;LABEL;TIMEOUT" "COMMAND;PROPERTIES" ${ARGN})
  _rdma_qos_check_label(${ARG_LABEL})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_COMMAND})
  if(ARG_LABEL STREQUAL "unit")
    # The programs a unit script test runs are what the unit-tests target must build.
    string(REGEX MATCHALL "\\$<TARGET_FILE:[^>]+>" files "${ARG_COMMAND}")
    foreach(file IN LISTS files)
      string(REGEX REPLACE "^\\$<TARGET_FILE:([^>]+)>$" "\\1" name "${file}")
      set_property(GLOBAL APPEND PROPERTY RDMA_QOS_UNIT_TARGETS ${name})
    endforeach()
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
                       ${ARG_PROPERTIES})
endfunction()

# rdma_qos_add_fuzzer(TARGET COMPONENT SOURCES ... [LIBS ...]
#                     [COVERED SOURCES_OF_A_LIBRARY ... FROM LIBRARY ...] [CORPUS dir])
# libFuzzer needs clang: under another compiler the target is skipped, not failed.
# COVERED names the library sources the fuzzer exercises and FROM the libraries that hold them.
# The fuzzer steers by the coverage instrumentation of the code it runs: in a Sanitize build
# every library already carries it (-fsanitize=fuzzer-no-link), so the target links the FROM
# libraries; in any other clang build it compiles the COVERED sources in itself. (Compiling them
# in every build cost the sanitizer build about 40 files a second time.)
function(rdma_qos_add_fuzzer target)
  cmake_parse_arguments(ARG "" "COMPONENT;CORPUS" "SOURCES;LIBS;COVERED;FROM" ${ARGN})
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    return()
  endif()
  if(ARG_COVERED AND NOT ARG_FROM)
    message(FATAL_ERROR "rdma_qos_add_fuzzer(${target}): COVERED sources need FROM libraries")
  endif()
  if(CMAKE_BUILD_TYPE STREQUAL "Sanitize")
    add_executable(${target} ${ARG_SOURCES})
    target_link_libraries(${target} PRIVATE ${ARG_FROM})
  else()
    add_executable(${target} ${ARG_SOURCES} ${ARG_COVERED})
  endif()
  set_property(GLOBAL APPEND PROPERTY RDMA_QOS_UNIT_TARGETS ${target})
  target_compile_options(${target} PRIVATE -fsanitize=fuzzer)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} rdmaqos::warnings)
  set(corpus_args)
  if(ARG_CORPUS)
    # libFuzzer writes new inputs into the first directory: give it a scratch copy.
    set(work "${CMAKE_CURRENT_BINARY_DIR}/${target}.corpus")
    set(corpus_args "${work}" "${ARG_CORPUS}")
  endif()
  add_test(NAME ${ARG_COMPONENT}.fuzz.${target}
           COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                   sh -c "mkdir -p \"$0\" && exec \"$@\"" "${CMAKE_CURRENT_BINARY_DIR}/${target}.corpus"
                   $<TARGET_FILE:${target}> -max_total_time=${RDMA_QOS_FUZZ_SECONDS}
                   -print_final_stats=1 ${corpus_args})
  set_tests_properties(${ARG_COMPONENT}.fuzz.${target} PROPERTIES LABELS fuzz
                       TIMEOUT 120)
endfunction()

# unit-tests: builds exactly what the unit and fuzz tests run, so the sanitizer build (which runs
# only those) compiles no more than it needs. Call once, after every test is registered.
function(rdma_qos_add_unit_tests_target)
  get_property(targets GLOBAL PROPERTY RDMA_QOS_UNIT_TARGETS)
  list(REMOVE_DUPLICATES targets)
  add_custom_target(unit-tests)
  if(targets)
    add_dependencies(unit-tests ${targets})
  endif()
endfunction()
