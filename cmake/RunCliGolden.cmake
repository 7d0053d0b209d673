# Runs one golden CLI case. CASE is a .cmd file: its single line holds the arguments to kiln
# (paths relative to the source tree). The expected output is CASE with .expected instead of .cmd:
# the combined stdout and stderr, then a line "exit: N". On mismatch the actual output is printed
# so it can be reviewed and, if right, pasted into the .expected file.
file(READ ${CASE} args_line)
string(STRIP "${args_line}" args_line)
separate_arguments(args UNIX_COMMAND "${args_line}")
execute_process(COMMAND ${KILN} ${args} WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code)
set(actual "${out}${err}exit: ${code}\n")
string(REGEX REPLACE "\\.cmd$" ".expected" expected_file ${CASE})
if(NOT EXISTS ${expected_file})
  message(FATAL_ERROR "missing ${expected_file}; actual output:\n${actual}")
endif()
file(READ ${expected_file} expected)
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "output differs from ${expected_file}\n--- actual ---\n${actual}--- expected ---\n${expected}")
endif()
