# strix_header_check: every public header compiles on its own.
#
# One generated .cpp per include/strix/**/*.hpp holds nothing but `#include <that header>`, and
# the object library compiles them all with our warnings, so a header that leans on an include
# its includer happened to make first fails the build. The build is the check: there is no ctest
# entry. The glob re-runs at build time (CONFIGURE_DEPENDS), so a new header is covered without
# touching this file.
function(strix_header_check)
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${strix_SOURCE_DIR}/include
       ${strix_SOURCE_DIR}/include/strix/*.hpp)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/header_check)
  set(srcs)
  foreach(h ${headers})
    string(REGEX REPLACE "\\.hpp$" ".cpp" cpp ${h})
    # file(CONFIGURE) rewrites a file only when its content changes: a re-configure must not
    # touch these sources' timestamps, or every build after it would compile them again.
    file(CONFIGURE OUTPUT ${dir}/${cpp} CONTENT "#include <${h}>\n" @ONLY)
    list(APPEND srcs ${dir}/${cpp})
  endforeach()
  add_library(strix_header_check OBJECT ${srcs})
  # Every module, for its include directories and definitions exactly as a consumer linking it
  # sees them (a module's PRIVATE dependencies stay out, as they do for a consumer).
  get_property(modules GLOBAL PROPERTY STRIX_MODULES)
  target_link_libraries(strix_header_check PRIVATE ${modules})
  strix_warnings(strix_header_check)
endfunction()
