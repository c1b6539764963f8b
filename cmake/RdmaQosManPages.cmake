# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Man pages: every component keeps its pages as markdown (`<component>/man/NAME.SECTION.md`,
# rdma-core style, with a pandoc title block). They are rendered with pandoc into
# ${CMAKE_BINARY_DIR}/man and installed under ${CMAKE_INSTALL_MANDIR}/manSECTION, and each page
# gets a unit test that renders it through man(1) with groff warnings on, so a broken page
# fails CI rather than a user's `man`.
find_program(RDMA_QOS_PANDOC pandoc)

function(rdma_qos_add_man_pages)
  if(NOT RDMA_QOS_PANDOC)
    message(STATUS "pandoc not found: man pages are not rendered (scripts/install-deps.sh installs it)")
    return()
  endif()
  set(outputs)
  foreach(component IN LISTS ARGN)
    file(GLOB pages CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/${component}/man/*.md")
    foreach(md IN LISTS pages)
      get_filename_component(page "${md}" NAME)
      string(REGEX REPLACE "\\.md$" "" page "${page}")
      if(NOT page MATCHES "\\.([1-9])$")
        message(FATAL_ERROR "${md}: a man page is named NAME.SECTION.md")
      endif()
      set(section "${CMAKE_MATCH_1}")
      set(out "${CMAKE_BINARY_DIR}/man/${page}")
      add_custom_command(
        OUTPUT "${out}"
        COMMAND "${RDMA_QOS_PANDOC}" -s -t man "${md}" -o "${out}"
        DEPENDS "${md}"
        COMMENT "Rendering man page ${page}"
        VERBATIM)
      list(APPEND outputs "${out}")
      install(FILES "${out}" DESTINATION "${CMAKE_INSTALL_MANDIR}/man${section}")
      if(RDMA_QOS_BUILD_TESTS)
        add_test(NAME ${component}.man.${page}
                 COMMAND "${CMAKE_SOURCE_DIR}/scripts/check-man-page.sh" "${out}")
        set_tests_properties(${component}.man.${page} PROPERTIES LABELS unit)
      endif()
    endforeach()
  endforeach()
  add_custom_target(man-pages ALL DEPENDS ${outputs})
  # The page tests are unit tests: the sanitizer build, which builds only what unit tests
  # run, renders the pages too.
  set_property(GLOBAL APPEND PROPERTY RDMA_QOS_UNIT_TARGETS man-pages)
endfunction()
