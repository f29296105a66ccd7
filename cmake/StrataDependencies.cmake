# The required libraries. Eigen and nlohmann/json are header-only: where their
# CMake packages are missing (a GPU server with the headers copied over, see
# scripts/gpu-check.sh) the headers alone are enough, found under
# STRATA_DEPS_DIR or the usual places. zlib likewise falls back to the
# runtime library when its development files are absent.
set(STRATA_DEPS_DIR "" CACHE PATH "Folder holding eigen3/, nlohmann/ and zlib headers when no CMake packages exist")

find_package(Eigen3 3.4 QUIET NO_MODULE)
if(NOT TARGET Eigen3::Eigen)
  find_path(STRATA_EIGEN_INCLUDE_DIR Eigen/Core HINTS ${STRATA_DEPS_DIR}/eigen3 ${STRATA_DEPS_DIR} /usr/include/eigen3
            /usr/local/include/eigen3)
  if(NOT STRATA_EIGEN_INCLUDE_DIR)
    message(FATAL_ERROR "Eigen 3.4 not found (apt install libeigen3-dev, or set STRATA_DEPS_DIR)")
  endif()
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${STRATA_EIGEN_INCLUDE_DIR})
endif()

find_package(nlohmann_json 3.10 QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  find_path(STRATA_JSON_INCLUDE_DIR nlohmann/json.hpp HINTS ${STRATA_DEPS_DIR} /usr/include /usr/local/include)
  if(NOT STRATA_JSON_INCLUDE_DIR)
    message(FATAL_ERROR "nlohmann/json not found (apt install nlohmann-json3-dev, or set STRATA_DEPS_DIR)")
  endif()
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${STRATA_JSON_INCLUDE_DIR})
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
