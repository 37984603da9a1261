# Install rules: `cmake --install <build> --prefix <dir>` gives
#   <dir>/include/strix/...                       the public headers
#   <dir>/lib/libstrix_{core,mem,codec,net}.a     the engine's libraries
#   <dir>/lib/cmake/strix/strixConfig.cmake       find_package(strix) -> strix::core, strix::net, ...
#   <dir>/lib/pkgconfig/strix.pc                  pkg-config --cflags --libs strix
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(strix_modules GLOBAL PROPERTY STRIX_MODULES)
install(TARGETS ${strix_modules} EXPORT strixTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${strix_SOURCE_DIR}/include/strix DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(strix_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/strix)
install(EXPORT strixTargets NAMESPACE strix:: DESTINATION ${strix_cmake_dir})
configure_package_config_file(${strix_SOURCE_DIR}/cmake/strixConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/strixConfig.cmake
                              INSTALL_DESTINATION ${strix_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strixConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strixConfig.cmake ${PROJECT_BINARY_DIR}/strixConfigVersion.cmake
        DESTINATION ${strix_cmake_dir})

# pkg-config: static libraries, so --libs lists them in link order plus what they use.
set(strix_pc_cflags "-std=c++20")
set(strix_pc_libs "")
if(STRIX_SANITIZE)
  string(APPEND strix_pc_cflags " -DSTRIX_THREAD_CHECKS=1 -fsanitize=address,undefined")
  set(strix_pc_libs " -fsanitize=address,undefined")
endif()
# Relocatable: the prefix is found from the .pc file's own place, so --prefix at install time works.
file(RELATIVE_PATH strix_pc_to_prefix "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${strix_SOURCE_DIR}/cmake/strix.pc.in ${PROJECT_BINARY_DIR}/strix.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/strix.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
