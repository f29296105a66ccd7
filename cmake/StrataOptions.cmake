# Detects the optional parts and sets STRATA_<PART>_ENABLED plus a reason string
# that the top-level file prints, so a user sees why something was left out.

function(strata_resolve part found reason)
  set(mode "${STRATA_WITH_${part}}")
  if(mode STREQUAL "OFF")
    set(STRATA_${part}_ENABLED OFF PARENT_SCOPE)
    set(STRATA_${part}_REASON "disabled by STRATA_WITH_${part}=OFF" PARENT_SCOPE)
  elseif(found)
    set(STRATA_${part}_ENABLED ON PARENT_SCOPE)
    set(STRATA_${part}_REASON "found" PARENT_SCOPE)
  elseif(mode STREQUAL "ON")
    message(FATAL_ERROR "STRATA_WITH_${part}=ON but ${reason}")
  else()
    set(STRATA_${part}_ENABLED OFF PARENT_SCOPE)
    set(STRATA_${part}_REASON "${reason}" PARENT_SCOPE)
  endif()
endfunction()

# -Wshadow=local is GCC's spelling; clang (the fuzz preset) has -Wshadow-uncaptured-local.
set(STRATA_WARNINGS -Wall -Wextra -Wpedantic -Wno-unused-parameter
    $<IF:$<CXX_COMPILER_ID:GNU>,-Wshadow=local,-Wshadow-uncaptured-local>)
# Unity builds (the sanitizer and fuzz presets) include each source file into
# one, and GCC then warns of lambdas capturing a source's anonymous-namespace
# types as if a header declared them (-Wsubobject-linkage, on by default).
if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
endif()

# Sanitizer builds (the asan and tsan presets; scripts/sanitizers.sh runs
# them): every target of the project is instrumented, third-party libraries
# are not (their reports are suppressed by tests/sanitizers/*.supp).
set(STRATA_SANITIZE "" CACHE STRING "Instrument the build: address (ASan + UBSan), thread (TSan), or empty")
if(STRATA_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(STRATA_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT STRATA_SANITIZE STREQUAL "")
  message(FATAL_ERROR "STRATA_SANITIZE must be address, thread or empty, not '${STRATA_SANITIZE}'")
endif()
# libFuzzer (clang; the fuzz preset): the engine gets coverage
# instrumentation, tools/fuzz's targets link the fuzzer's main.
option(STRATA_FUZZ "Build tools/fuzz's targets with libFuzzer (clang)" OFF)
if(STRATA_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
if(STRATA_NATIVE)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native STRATA_HAS_MARCH_NATIVE)
  if(STRATA_HAS_MARCH_NATIVE)
    set(STRATA_ARCH_FLAGS -march=native)
  endif()
endif()

# Qt: the dashboard needs Widgets + PrintSupport + QCustomPlot; the tests need Qt Test.
find_package(Qt6 QUIET COMPONENTS Core Widgets PrintSupport Test)
set(STRATA_QTTEST_FOUND ${Qt6Test_FOUND})
set(_ui_found OFF)
set(_ui_reason "Qt 6 Widgets/PrintSupport not found (apt install qt6-base-dev)")
if(Qt6Widgets_FOUND AND Qt6PrintSupport_FOUND)
  find_package(QCustomPlotQt6 QUIET)
  if(QCustomPlotQt6_FOUND)
    set(_ui_found ON)
  else()
    set(_ui_reason "QCustomPlot for Qt 6 not found (apt install libqcustomplot-dev)")
  endif()
endif()
strata_resolve(UI ${_ui_found} "${_ui_reason}")

# oneDNN (libdnnl-dev) for the CPU backend's convolutions: the library
# PyTorch itself convolves with on the CPU. Without it the CPU backend
# convolves as im2col + gemm.
set(STRATA_WITH_DNNL AUTO CACHE STRING "Convolve on the CPU with oneDNN (ON, OFF, AUTO)")
# (Found by header and library: Debian's dnnl CMake package also demands
# the OpenCL headers of its GPU runtime, which the CPU path does not use.)
find_path(STRATA_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(STRATA_DNNL_LIBRARY dnnl)
set(_dnnl_found OFF)
if(STRATA_DNNL_INCLUDE_DIR AND STRATA_DNNL_LIBRARY)
  set(_dnnl_found ON)
endif()
strata_resolve(DNNL ${_dnnl_found} "oneDNN not found (apt install libdnnl-dev)")

find_package(MPI QUIET COMPONENTS CXX)
strata_resolve(MPI "${MPI_CXX_FOUND}" "MPI not found (apt install libopenmpi-dev openmpi-bin)")

# The CUDA backend (engine/backend/cuda): built when nvcc is on the path or
# under /usr/local/cuda and the toolkit has cuBLASLt. GPUs are found at run
# time; a build with CUDA runs on machines without a GPU (gpu:N then says why).
include(CheckLanguage)
if(NOT STRATA_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
endif()
set(_cuda_found OFF)
# CUDA 12 or newer: nvcc's -std=c++20 (the CUDA sources share the engine's
# C++20 headers) and CUDA 12's graph API. An older nvcc (Debian 12's own
# nvidia-cuda-toolkit is 11.8) would pass check_language and fail the build's
# first CUDA source: the build goes on without the backend instead, saying why.
set(_cuda_too_old OFF)
if(CMAKE_CUDA_COMPILER)
  execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --version OUTPUT_VARIABLE _nvcc_says ERROR_QUIET)
  if(_nvcc_says MATCHES "release ([0-9]+)\\.([0-9]+)" AND CMAKE_MATCH_1 LESS 12)
    set(_cuda_too_old ON)
    set(_cuda_reason "nvcc ${CMAKE_MATCH_1}.${CMAKE_MATCH_2} found (${CMAKE_CUDA_COMPILER}); the CUDA backend needs CUDA 12 or newer (NVIDIA's cuda-toolkit packages)")
  endif()
endif()
if(CMAKE_CUDA_COMPILER AND NOT _cuda_too_old)
  # Ampere and Hopper machine code, plus Hopper PTX that newer GPUs JIT-compile.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc's C++20 flag; the CUDA sources share the
  # engine's C++20 headers, so tell it.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION -std=c++20)
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION -std=c++20)
  set(CMAKE_CUDA_STANDARD 20)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt)
    set(_cuda_found ON)
  else()
    set(_cuda_reason "nvcc found (${CMAKE_CUDA_COMPILER}) but not the CUDA toolkit's cuBLASLt")
  endif()
elseif(NOT _cuda_too_old)
  set(_cuda_reason "no CUDA compiler found (nvcc on the path or /usr/local/cuda)")
endif()
strata_resolve(CUDA ${_cuda_found} "${_cuda_reason}")

# NCCL and cuDNN for the CUDA backend: headers at configure time (the CUDA
# toolkit's folder, or NCCL_ROOT / CUDNN_ROOT, e.g. the nvidia-nccl-cu* and
# nvidia-cudnn-cu* wheels' folders); the libraries are opened at run time.
set(STRATA_NCCL_ENABLED OFF)
set(STRATA_CUDNN_ENABLED OFF)
# The library folders beside a header folder (<root>/include -> <root>/lib,
# <root>/lib64) and the toolkit's, ':'-separated, for DynamicLibrary's fallback.
function(strata_library_dirs out include_dir)
  get_filename_component(_root "${include_dir}" DIRECTORY)
  set(${out} "${_root}/lib:${_root}/lib64:${CUDAToolkit_LIBRARY_DIR}" PARENT_SCOPE)
endfunction()
if(STRATA_CUDA_ENABLED)
  find_path(STRATA_NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT}/include $ENV{NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
  find_path(STRATA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDNN_ROOT}/include $ENV{CUDNN_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
  if(STRATA_NCCL_INCLUDE_DIR)
    set(STRATA_NCCL_ENABLED ON)
  endif()
  if(STRATA_CUDNN_INCLUDE_DIR)
    set(STRATA_CUDNN_ENABLED ON)
  endif()
endif()
