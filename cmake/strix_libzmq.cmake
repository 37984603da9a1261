# libzmq::libzmq: the real libzmq, for the link interop tests and bench-link's baseline only;
# strix itself never links it.
#
# Found with find_path / find_library rather than pkg_check_modules: libzmq's pkg-config cflags
# carry "-isystem /usr/include/mit-krb5" (from its private requirements), and CMake 3.25's
# FindPkgConfig moves that into the include directories on a build directory's first configure
# but leaves it among the compile options on every later one (the cache keeps the unmoved
# value). The second configure of a fresh build directory (make test, then make run) changed
# the link tests' command lines and ninja compiled them all again. zmq.h needs none of those
# directories.
include_guard(GLOBAL)

find_path(STRIX_ZMQ_INCLUDE_DIR zmq.h)
find_library(STRIX_ZMQ_LIBRARY zmq)
if(NOT STRIX_ZMQ_INCLUDE_DIR OR NOT STRIX_ZMQ_LIBRARY)
  message(FATAL_ERROR "strix: libzmq not found (zmq.h, libzmq.so); the link tests and the bench-link "
                      "baseline need it: install libzmq3-dev (scripts/install-deps.sh does).")
endif()
add_library(libzmq::libzmq UNKNOWN IMPORTED GLOBAL)
set_target_properties(libzmq::libzmq PROPERTIES
  IMPORTED_LOCATION ${STRIX_ZMQ_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${STRIX_ZMQ_INCLUDE_DIR})
