# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
if(LINALGD_BUILD_SERVER OR LINALGD_BUILD_TOOLS)
  find_package(CLI11 CONFIG REQUIRED)  # header-only: the flags of every executable
endif()
if(LINALGD_BUILD_TOOLS)
  # nlohmann-json 3 (MIT, header-only): the --json output of linalgd-cli and the bench tools.
  find_package(nlohmann_json 3 REQUIRED)
endif()
if(LINALGD_BUILD_SERVER)
  find_package(spdlog CONFIG REQUIRED)
  # prometheus-cpp 1.0.1 (MIT): metric families and the /metrics HTTP endpoint.
  find_package(prometheus-cpp CONFIG REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
  find_library(LAPACKE_LIBRARY NAMES lapacke REQUIRED)
  # jemalloc 5 (BSD-2-Clause): the server's malloc (LINALGD_JEMALLOC).
  if(LINALGD_JEMALLOC)
    find_library(JEMALLOC_LIBRARY NAMES jemalloc REQUIRED)
  endif()
endif()
if(LINALGD_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
