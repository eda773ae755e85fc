# `cmake --install`: the server and linalgd-cli (when built), the client's
# headers and its libraries, a CMake package (find_package(linalgd CONFIG):
# target linalgd::client) and a pkg-config file (linalgd.pc).
#
# The client library is static, and its two internal static libraries (the
# generated protobuf/gRPC code, linalgd::proto, and CRC32C/dtype code shared
# with the server, linalgd::shared) are installed beside it and exported as its
# link dependencies. It is not a shared library because the bench tools and
# the tests link the client and the server into one process: a shared client
# carrying its own copy of the generated protobuf code would register the
# linalgd.v1 descriptors a second time, which protobuf refuses at start-up.
include(CMakePackageConfigHelpers)
set(LINALGD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/linalgd)
install(TARGETS linalgd_client linalgd_proto linalgd_shared EXPORT linalgdTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT linalgdTargets NAMESPACE linalgd:: DESTINATION ${LINALGD_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/linalgdConfig.cmake.in
  ${CMAKE_BINARY_DIR}/linalgdConfig.cmake INSTALL_DESTINATION ${LINALGD_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/linalgdConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/linalgdConfig.cmake ${CMAKE_BINARY_DIR}/linalgdConfigVersion.cmake
  DESTINATION ${LINALGD_CMAKE_DIR})
configure_file(${CMAKE_CURRENT_LIST_DIR}/linalgd.pc.in ${CMAKE_BINARY_DIR}/linalgd.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/linalgd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
