# Writes OUT (a header defining LKS_GIT_COMMIT) from 'git describe' of SRC, on every build,
# touching the file only when the commit changes, so a rebuild after a commit records the
# new commit without recompiling the rest.
execute_process(COMMAND git describe --always --dirty --abbrev=12
	WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE commit
	OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
	set(commit "unknown")
endif()
file(WRITE ${OUT}.tmp "#define LKS_GIT_COMMIT \"${commit}\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
file(REMOVE ${OUT}.tmp)
