# One helper for libraries and one for tests, so that each folder's CMakeLists.txt is a
# short declarative list of targets.

# orb_library(NAME SRCS ... DEPS ...): a static library whose headers are included as
# "component/file.h" from src/.
function(orb_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# orb_test(NAME SRCS ... DEPS ... LABEL unit|integration): a Catch2 test registered with
# CTest under its label.
function(orb_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE orb_test_main ${ARG_DEPS})
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABEL}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "ORB_BIN_DIR=${PROJECT_BINARY_DIR}/bin")
endfunction()
