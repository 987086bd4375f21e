# Runs reader_fuzz_driver twice with one seed and a fixed number of mutants (-DDRIVER, -DSEED,
# -DRUNS) and fails unless both runs fed the reader the same inputs, as their digests say.
foreach(attempt 1 2)
  execute_process(COMMAND "${DRIVER}" --runs ${RUNS} --seed ${SEED} --timeout 0
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "reader_fuzz_driver: run ${attempt} exited with ${rc}:\n${out}")
  endif()
  string(REGEX MATCH "inputs digest [0-9a-f]+" digest${attempt} "${out}")
  if(NOT digest${attempt})
    message(FATAL_ERROR "reader_fuzz_driver: run ${attempt} printed no digest:\n${out}")
  endif()
endforeach()
if(NOT digest1 STREQUAL digest2)
  message(FATAL_ERROR "reader_fuzz_driver: seed ${SEED} gave two input sequences: ${digest1} then ${digest2}")
endif()
message(STATUS "seed ${SEED}, ${RUNS} mutants: ${digest1} twice")
