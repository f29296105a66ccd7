# Installs the build into a fresh temporary prefix, checks the files a user
# gets, and runs the installed strata-run on the installed tiny example.
# Usage: cmake -DBUILD_DIR=... -DPREFIX=... -P InstallTest.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}\n${err}")
endif()

foreach(f bin/strata bin/strata-run share/applications/strata.desktop share/icons/hicolor/256x256/apps/strata.png
          share/strata/examples/tiny-synthetic.strata share/strata/examples/fashion-mlp.strata)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "missing after install: ${f}")
  endif()
endforeach()

# The desktop entry must start the installed binary with the installed icon.
file(READ "${PREFIX}/share/applications/strata.desktop" desktop)
foreach(key "Exec=strata" "Icon=strata" "Type=Application")
  string(FIND "${desktop}" "${key}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "strata.desktop lacks ${key}")
  endif()
endforeach()

# A copy, so the run folder lands in the temporary prefix, not in share/.
file(COPY "${PREFIX}/share/strata/examples/tiny-synthetic.strata" DESTINATION "${PREFIX}/work")
execute_process(COMMAND "${PREFIX}/bin/strata-run" "${PREFIX}/work/tiny-synthetic.strata" --events jsonl --epochs 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed strata-run failed (${rc}):\n${err}")
endif()
string(FIND "${out}" "\"type\":\"finished\"" fin)
if(fin EQUAL -1)
  string(FIND "${out}" "\"finished\"" fin)
endif()
if(fin EQUAL -1 OR NOT out MATCHES "\"status\": ?\"completed\"")
  message(FATAL_ERROR "installed strata-run did not report a completed run:\n${out}")
endif()
file(GLOB runs "${PREFIX}/work/tiny-synthetic.runs/*/events.jsonl")
if(NOT runs)
  message(FATAL_ERROR "installed strata-run wrote no run folder")
endif()
# The dashboard binary starts and answers --version without a display server.
execute_process(COMMAND "${PREFIX}/bin/strata" --version RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "Strata")
  message(FATAL_ERROR "installed strata --version failed (${rc}): ${out} ${err}")
endif()
message(STATUS "install test passed: ${PREFIX}")
file(REMOVE_RECURSE "${PREFIX}")
