# The version of a build: the project version and the git commit of the
# source tree, written at build time (so a new commit needs no reconfigure)
# to ${LINALGD_VERSION_DIR}/linalgd_version_info.h, which common/version.cc
# includes; the file is rewritten only when its content changes. Outside a
# git checkout the commit is "unknown", unless LINALGD_GIT_COMMIT names it
# (the Dockerfile passes its REVISION build argument).
set(LINALGD_GIT_COMMIT "" CACHE STRING "git commit to report when the source is not a git checkout")
set(LINALGD_VERSION_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_target(linalgd_version_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DOUTPUT=${LINALGD_VERSION_DIR}/linalgd_version_info.h
          -DVERSION=${PROJECT_VERSION} -DGIT_COMMIT=${LINALGD_GIT_COMMIT}
          -P ${CMAKE_CURRENT_LIST_DIR}/WriteVersion.cmake
  BYPRODUCTS ${LINALGD_VERSION_DIR}/linalgd_version_info.h
  COMMENT "linalgd version: git commit")
