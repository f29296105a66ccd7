# The required libraries. Eigen and nlohmann/json are header-only: where their
# CMake packages are missing (a GPU server with the headers copied over, see
# scripts/gpu-check.sh) the headers alone are enough, found under
# STRATA_DEPS_DIR or the usual places. zlib likewise falls back to the
# runtime library when its development files are absent.
set(STRATA_DEPS_DIR "" CACHE PATH "Folder holding eigen3/, nlohmann/ and zlib headers when no CMake packages exist")

# A header-only library's target made from its headers alone: TARGET with
# HEADER found under one of the HINTS, or a fatal error with INSTALL's advice.
function(strata_headers_target target header install)
  find_path(_dir ${header} HINTS ${ARGN} NO_CACHE)
  if(NOT _dir)
    message(FATAL_ERROR "${target}: ${header} not found (${install}, or set STRATA_DEPS_DIR)")
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_dir})
endfunction()

find_package(Eigen3 3.4 QUIET NO_MODULE)
if(NOT TARGET Eigen3::Eigen)
  strata_headers_target(Eigen3::Eigen Eigen/Core "apt install libeigen3-dev" ${STRATA_DEPS_DIR}/eigen3 ${STRATA_DEPS_DIR}
                        /usr/include/eigen3 /usr/local/include/eigen3)
endif()

find_package(nlohmann_json 3.10 QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  strata_headers_target(nlohmann_json::nlohmann_json nlohmann/json.hpp "apt install nlohmann-json3-dev"
                        ${STRATA_DEPS_DIR} /usr/include /usr/local/include)
endif()

find_package(ZLIB QUIET)
if(NOT TARGET ZLIB::ZLIB)
  find_path(STRATA_ZLIB_INCLUDE_DIR zlib.h HINTS ${STRATA_DEPS_DIR}/zlib ${STRATA_DEPS_DIR})
  find_library(STRATA_ZLIB_LIBRARY NAMES z libz.so.1)
  if(NOT STRATA_ZLIB_INCLUDE_DIR OR NOT STRATA_ZLIB_LIBRARY)
    message(FATAL_ERROR "zlib not found (apt install zlib1g-dev, or set STRATA_DEPS_DIR)")
  endif()
  add_library(ZLIB::ZLIB UNKNOWN IMPORTED)
  set_target_properties(ZLIB::ZLIB PROPERTIES IMPORTED_LOCATION ${STRATA_ZLIB_LIBRARY}
                                              INTERFACE_INCLUDE_DIRECTORIES ${STRATA_ZLIB_INCLUDE_DIR})
endif()

find_package(Threads REQUIRED)
