# package.cmake - what `cmake --install` puts where, and the two ways a
# project finds it there: pkg-config (lib/pkgconfig/stepscope.pc) and
# find_package(stepscope) (lib/cmake/stepscope/).  Included by the root
# CMakeLists.txt once the library and CLI targets exist.

include(CMakePackageConfigHelpers)

# The CLI as an imported executable, for a project that runs its own
# programs under `stepscope run` ($<TARGET_FILE:stepscope::cli>).
set_target_properties(stepscope PROPERTIES EXPORT_NAME cli)
add_executable(stepscope::cli ALIAS stepscope)

install(TARGETS stepscope_shared stepscope_static stepscope EXPORT stepscope-targets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/stepscope.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ------------------------------------------------------------ CMake package
set(SPS_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/stepscope)
install(EXPORT stepscope-targets NAMESPACE stepscope:: FILE stepscope-targets.cmake
        DESTINATION ${SPS_CMAKE_PACKAGE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/stepscope-config.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/stepscope-config.cmake
                              INSTALL_DESTINATION ${SPS_CMAKE_PACKAGE_DIR})
# Which versions a find_package(stepscope X.Y) accepts.  Before 1.0 a minor
# release may change the API (semantic versioning's rule for 0.x), so 0.1.x
# satisfies a request for 0.1 but not for 0.2, nor 0.2.x one for 0.1; from
# 1.0 on, any release of the major version asked for does.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(SPS_VERSION_COMPATIBILITY SameMinorVersion)
else()
  set(SPS_VERSION_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/stepscope-config-version.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ${SPS_VERSION_COMPATIBILITY})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stepscope-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/stepscope-config-version.cmake
        DESTINATION ${SPS_CMAKE_PACKAGE_DIR})

# -------------------------------------------------------------- pkg-config
# stepscope.pc finds the prefix from its own place (${pcfiledir}), so an
# install tree moved elsewhere, or installed with `cmake --install --prefix`,
# still works.  A /usr install (a distribution's package) names its
# directories outright instead: pkg-config leaves out the system's own -I and
# -L only when they are spelt as such, and a sysroot is prepended to them.
# An absolute CMAKE_INSTALL_LIBDIR or INCLUDEDIR is named outright too.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}"
   OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(SPS_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(SPS_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(SPS_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  # lib/pkgconfig -> ../.. (lib/x86_64-linux-gnu/pkgconfig -> ../../..)
  file(RELATIVE_PATH SPS_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" SPS_PC_UP "${SPS_PC_UP}")
  set(SPS_PC_PREFIX "\${pcfiledir}/${SPS_PC_UP}")
  set(SPS_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(SPS_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# What a static link needs besides libstepscope.a (`pkg-config --static`):
# the linker option the static target carries (it keeps the STEPSCOPE_OUT
# exporter, which nothing calls by name), pthreads (part of libc since glibc
# 2.34, a library of its own before), libdl and libm.
set(SPS_PC_LIBS_PRIVATE "-Wl,--undefined=sps__standalone_out_linked -lpthread")
foreach(lib ${CMAKE_DL_LIBS} m)
  string(APPEND SPS_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/stepscope.pc.in ${CMAKE_CURRENT_BINARY_DIR}/stepscope.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stepscope.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
