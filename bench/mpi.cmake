# MPI all-reduce benchmark (bench_mpi_allreduce.cpp), only in builds with MPI:
# include(${CMAKE_CURRENT_SOURCE_DIR}/mpi.cmake) from bench/CMakeLists.txt.
# Run it under mpirun; see docs/scaling.md.
if(STRATA_MPI_ENABLED)
  add_executable(bench_mpi_allreduce ${CMAKE_CURRENT_LIST_DIR}/bench_mpi_allreduce.cpp)
  target_link_libraries(bench_mpi_allreduce PRIVATE strata::engine MPI::MPI_CXX)
  target_compile_options(bench_mpi_allreduce PRIVATE ${STRATA_WARNINGS} ${STRATA_ARCH_FLAGS})
endif()
