# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Third-party dependencies, all from Debian packages (scripts/deps/build.list) and found through
# pkg-config or their CMake package files.
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)

pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
pkg_check_modules(RDMACM REQUIRED IMPORTED_TARGET librdmacm)
pkg_check_modules(IBUMAD REQUIRED IMPORTED_TARGET libibumad)
pkg_check_modules(IBNETDISC IMPORTED_TARGET libibnetdisc)
pkg_check_modules(LIBNL3 IMPORTED_TARGET libnl-3.0)
pkg_check_modules(LIBPCAP IMPORTED_TARGET libpcap)
# sd_notify for Type=notify units: used when found, unless turned off; required when ON.
set(RDMA_QOS_SYSTEMD AUTO CACHE STRING "Use libsystemd for readiness notification (AUTO, ON, OFF)")
set_property(CACHE RDMA_QOS_SYSTEMD PROPERTY STRINGS AUTO ON OFF)
if(RDMA_QOS_SYSTEMD STREQUAL "ON")
  pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
elseif(RDMA_QOS_SYSTEMD STREQUAL "AUTO")
  pkg_check_modules(LIBSYSTEMD IMPORTED_TARGET libsystemd)
endif()

find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)

if(RDMA_QOS_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(RDMA_QOS_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
