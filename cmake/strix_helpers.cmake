# Helpers shared by every CMakeLists.txt in the tree. Paths are taken from strix_SOURCE_DIR so
# the tree also builds as a subdirectory of another project.

# Warnings (and -Werror) apply to our own targets only, never to third-party code.
function(strix_warnings target)
  # -Wno-missing-field-initializers: designated initializers that leave defaulted members out
  # ({.port = 7000}) are the documented way to fill our config structs.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wconversion -Werror -Wno-missing-field-initializers)
  # clang's -Wconversion also covers signedness (int to size_t), which gcc's leaves out in C++; the
  # code is written against gcc's set, and clang builds (the sanitized one) keep to it.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wno-sign-conversion)
  endif()
endfunction()

# -O1 -g1 (line tables: the sanitizers' stacks still name file and line) instead of the build
# type's -O2 -g: gcc 12 then compiles a test about twice as fast (tests/chat/throttle_test.cpp:
# 33 s to 17 s on an idle core), and tests are most of CI's sanitized build.
if(STRIX_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()

# strix_module(<name> [DEPS <targets>...] [PRIVATE_DEPS <targets>...])
# Builds src/<name>/*.cpp into strix_<name> (alias and exported name strix::<name>), with
# include/ public.
function(strix_module name)
  cmake_parse_arguments(M "" "" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${strix_SOURCE_DIR}/src/${name}/*.cpp)
  add_library(strix_${name} STATIC ${srcs})
  target_include_directories(strix_${name}
    PUBLIC $<BUILD_INTERFACE:${strix_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${strix_SOURCE_DIR}/src)
  target_link_libraries(strix_${name} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  target_compile_features(strix_${name} PUBLIC cxx_std_20)
  # Owner checks (a shard-owned object touched from another thread aborts) in debug and
  # sanitizer builds; see STRIX_ASSERT_OWNER in strix/core/shard.hpp.
  if(STRIX_SANITIZE)
    target_compile_definitions(strix_${name} PUBLIC STRIX_THREAD_CHECKS=1)
    # Instrumented libraries need the sanitizer runtimes in whatever links them.
    target_link_options(strix_${name} INTERFACE -fsanitize=address,undefined)
  else()
    target_compile_definitions(strix_${name} PUBLIC $<$<CONFIG:Debug>:STRIX_THREAD_CHECKS=1>)
  endif()
  # Not position-independent by default: -fPIC lets every global function be interposed, so gcc
  # stopped inlining within a file (buffer_chain::pop_front, session::flush_now: +10% instructions
  # per echoed message at depth 1). A project linking strix into a shared library sets
  # CMAKE_POSITION_INDEPENDENT_CODE, and gets -fno-semantic-interposition with it.
  set_target_properties(strix_${name} PROPERTIES EXPORT_NAME ${name})
  # Sanitizer and fuzz builds measure nothing: their modules are position-independent, so strix's
  # libzmq.so.5 (src/zmq) links them as they are instead of compiling the engine a second time.
  if(STRIX_SANITIZE OR STRIX_PIC_MODULES)
    set_target_properties(strix_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
  if(CMAKE_POSITION_INDEPENDENT_CODE)
    target_compile_options(strix_${name} PRIVATE -fno-semantic-interposition)
  endif()
  # strix calls sized ::operator delete (block_arena.cpp); clang before 19 declares it only with
  # this flag, gcc always.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(strix_${name} PRIVATE -fsized-deallocation)
  endif()
  strix_warnings(strix_${name})
  add_library(strix::${name} ALIAS strix_${name})
  set_property(GLOBAL APPEND PROPERTY STRIX_MODULES strix_${name})
endfunction()

# The compile options every test's own code gets (strix_add_test), and the precompiled header too:
# a test reusing the header must be compiled exactly as it was.
function(strix_test_options target)
  # Tests that read the project's files (docs/protocol.md) find them from here, not from __FILE__,
  # which a compiler cache may have made relative to the build directory; black-box tests start
  # the built programs (servers, load tools) from STRIX_BIN_DIR.
  target_compile_definitions(${target} PRIVATE STRIX_BIN_DIR="${PROJECT_BINARY_DIR}/bin"
                                               STRIX_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  strix_warnings(${target})
  # A test's own code is built at -O1 in Release and -O0 in sanitized builds: what it exercises (the
  # libraries, the servers it starts) keeps -O3 (or the sanitizers' -O1), and its heavy templates
  # (GoogleTest, JSON) compile in two thirds of the time in Release and about half under ASan
  # (tests/chat/throttle_test.cpp: 23 s at -O1, 12.5 s at -O0).
  if(STRIX_SANITIZE)
    target_compile_options(${target} PRIVATE -O0)
  else()
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)
  endif()
  # GCC 12 reports "literal" + std::string chains as overlapping memcpy (-Wrestrict, GCC bug
  # 105651, a false positive in libstdc++); tests build strings that way all the time.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
endfunction()

# One precompiled header for every test (target strix_test_pch, made once): GoogleTest and the
# standard library, which are most of what a test's compiler parses (about 4 of the 20 s of
# tests/chat/api_actions_test.cpp), parsed once instead of in each of 121 files. Only headers
# from outside the project: a change to strix's own headers rebuilds the tests that include
# them, not the header.
# On by default with clang (the sanitized build) only. With gcc 12 what a precompiled header
# brings in loses its system-header mark, so gcc's false positives from inside libstdc++ stop the
# build, and which ones depends on the length of the build directory's path: in a clone at
# /work/ci-run/main, -Warray-bounds and -Wstringop-overflow on std::string's memcpy in
# examples/tests/echo_test.cpp, gone without the header. STRIX_PCH=ON asks for it with gcc too.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(strix_pch_default ON)
else()
  set(strix_pch_default OFF)
endif()
option(STRIX_PCH "Precompile the outside headers the tests and the chat server read" ${strix_pch_default})
function(strix_test_pch)
  if(NOT STRIX_PCH OR TARGET strix_test_pch)
    return()
  endif()
  set(src ${PROJECT_BINARY_DIR}/strix_test_pch.cpp)
  if(NOT EXISTS ${src})
    file(WRITE ${src} "// strix_test_pch: the object that carries the tests' precompiled header.\n")
  endif()
  add_library(strix_test_pch OBJECT ${src})
  target_link_libraries(strix_test_pch PRIVATE GTest::gtest)
  strix_test_options(strix_test_pch)
  target_precompile_headers(strix_test_pch PRIVATE ${STRIX_TEST_PCH_HEADERS})
endfunction()
set(STRIX_TEST_PCH_HEADERS
    <gtest/gtest.h>
    <algorithm> <array> <atomic> <chrono> <condition_variable> <cstdint> <cstdio> <cstdlib>
    <cstring> <deque> <filesystem> <fstream> <functional> <future> <map> <memory> <mutex>
    <optional> <random> <set> <span> <sstream> <stdexcept> <string> <string_view> <thread>
    <unordered_map> <utility> <vector>)

# strix_add_test(<name> SOURCES <files>... LABEL <label> [TIMEOUT <s>] [BOTH_BACKENDS] [LIBS <targets>...])
# One GoogleTest executable; each TEST() becomes its own ctest entry with the label and timeout.
# BOTH_BACKENDS runs it on io_uring too (as net, chat and link tests always are).
function(strix_add_test name)
  cmake_parse_arguments(T "BOTH_BACKENDS" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_include_directories(${name} PRIVATE ${strix_SOURCE_DIR}/tests)
  strix_test_options(${name})
  if(TARGET strix_test_pch)  # made by the top-level CMakeLists.txt when STRIX_PCH is on
    target_precompile_headers(${name} REUSE_FROM strix_test_pch)
  endif()
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  gtest_discover_tests(${name}
    TEST_PREFIX "${T_LABEL}."
    PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT} ENVIRONMENT "STRIX_IO=epoll"
    DISCOVERY_TIMEOUT 60)
  # Network and chat tests, and engine tests (their shards wait in the backend), run once more on
  # the io_uring backend (STRIX_IO reaches the engines the tests build and the servers they start).
  # Where io_uring is refused, the engine falls back to epoll and says so in the log; the tests
  # then run on epoll twice.
  if(T_BOTH_BACKENDS OR T_LABEL STREQUAL "net" OR T_LABEL STREQUAL "chat" OR T_LABEL STREQUAL "link")
    gtest_discover_tests(${name}
      TEST_PREFIX "${T_LABEL}.uring."
      PROPERTIES LABELS "${T_LABEL};uring" TIMEOUT ${T_TIMEOUT} ENVIRONMENT "STRIX_IO=uring"
      DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# strix_test_dir(<dir> LABEL <label> [TIMEOUT <s>] [BOTH_BACKENDS] LIBS <targets>...)
# Every <dir>/*_test.cpp becomes its own test executable named after the file.
function(strix_test_dir dir)
  cmake_parse_arguments(D "BOTH_BACKENDS" "LABEL;TIMEOUT" "LIBS" ${ARGN})
  set(both "")
  if(D_BOTH_BACKENDS)
    set(both BOTH_BACKENDS)
  endif()
  file(GLOB tests CONFIGURE_DEPENDS ${dir}/*_test.cpp)
  foreach(t ${tests})
    get_filename_component(stem ${t} NAME_WE)
    strix_add_test(${D_LABEL}_${stem} SOURCES ${t} LABEL ${D_LABEL} TIMEOUT ${D_TIMEOUT} ${both} LIBS ${D_LIBS})
  endforeach()
endfunction()
