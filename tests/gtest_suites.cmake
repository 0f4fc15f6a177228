# SPDX-License-Identifier: Apache-2.0
# Run at build time (cmake -P) after a GoogleTest program links: lists its test suites
# (--gtest_list_tests) and writes OUTPUT, a CTest script with one test per suite, "SUITE.*", run as
# `EXECUTABLE --gtest_filter=SUITE.*`. tests/CMakeLists.txt uses it in the sanitizer build, where
# starting the program costs about 0.4 s (the dynamic loader relocating a 380 MB PIE and ASan
# registering its globals) against a few milliseconds for most tests: one process per suite instead
# of one per test saves minutes of the CI run. A failure names its suite; the test's own name is
# in the output ctest prints.
#
# -D EXECUTABLE=...  the test program
# -D OUTPUT=...      the CTest script to write
# -D GOLDEN_PREFIX=Golden      suites whose name begins with it get LABELS golden, the rest unit
# -D LOCKED_SUITES=A:B         suites that get RESOURCE_LOCK LOCK (the firmware lock suites)
# -D LOCK=...        the RESOURCE_LOCK name
# -D TIMEOUT=...     each suite's TIMEOUT in seconds
cmake_minimum_required(VERSION 3.25)
string(REPLACE ":" ";" LOCKED_SUITES "${LOCKED_SUITES}")

execute_process(COMMAND "${EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${status}): ${errors}")
endif()

# A suite line starts in column 0 and ends its name with '.' ("FormatTest." or
# "Golden/GoldenPlan.  # TypeParam = ..."); its tests follow, indented.
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( |$)")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set("tests_of_${suite}" 0)
  elseif(line MATCHES "^  [^ ]" AND NOT suite STREQUAL "")
    math(EXPR "tests_of_${suite}" "${tests_of_${suite}} + 1")
  endif()
endforeach()
list(REMOVE_DUPLICATES suites)
list(LENGTH suites count)
if(count EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests listed no test suite")
endif()

set(script "# Written by tests/gtest_suites.cmake from ${EXECUTABLE} --gtest_list_tests: ${count} suites.\n")
foreach(suite IN LISTS suites)
  set(name "${suite}.*")
  if(suite MATCHES "^${GOLDEN_PREFIX}")
    set(label golden)
  else()
    set(label unit)
  endif()
  # COST: ctest -j starts the suites with the most tests first (tests/CMakeLists.txt says why).
  set(properties "LABELS ${label} TIMEOUT ${TIMEOUT} COST ${tests_of_${suite}}")
  if("${suite}" IN_LIST LOCKED_SUITES)
    string(APPEND properties " RESOURCE_LOCK ${LOCK}")
  endif()
  string(APPEND script
         "add_test([==[${name}]==] [==[${EXECUTABLE}]==] [==[--gtest_filter=${name}]==])\n"
         "set_tests_properties([==[${name}]==] PROPERTIES ${properties})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
