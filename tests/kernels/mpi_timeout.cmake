# mpi_timeout.cmake: a job whose process hangs ends, and says why (kernels/mpi/comm_mpi.c's
# timeout), run by ctest as 'cmake -P' under mpirun -np NP (tests/kernels/CMakeLists.txt):
#   cmake -DMPIEXEC=mpirun -DNP=2 "-DFLAGS=--oversubscribe" -DPROG=mpi_comm -P mpi_timeout.cmake
# mpi_comm --hang P makes process P (the last) sleep 60 s before a group's all-reduce,
# under a job timeout of 2 s. The job must exit with status 3 within BOUND_S seconds, its
# stderr must name the all-reduce and the timeout, and none of its processes may be left.
# BOUND_S = 20: the timeout (2 s) plus MPI's start (under a second here, a few seconds on a
# loaded CI machine with 4 oversubscribed processes) and mpirun's teardown of the killed
# processes, with room to spare; still a third of the 60 s the hanging process sleeps, so
# a job that waited for it (no timeout) fails the bound.
set(BOUND_S 20)
math(EXPR bound_ms "${BOUND_S} * 1000")
math(EXPR hang "${NP} - 1")
string(RANDOM LENGTH 12 tag)  # marks this job's processes (mpi_comm ignores it)
separate_arguments(flags UNIX_COMMAND "${FLAGS}")

string(TIMESTAMP t0 "%s%f")  # microseconds
execute_process(COMMAND ${MPIEXEC} -n ${NP} ${flags} ${PROG} --hang ${hang} lks-${tag}
	RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out TIMEOUT 50)
string(TIMESTAMP t1 "%s%f")
math(EXPR ms "(${t1} - ${t0}) / 1000")
message(STATUS "mpirun -n ${NP} with process ${hang} hanging: exit ${rc} after ${ms} ms")

# mpirun has returned: none of the job's processes may still run (given a few seconds
# should a killed process take a moment to go)
foreach(i RANGE 10)
	execute_process(COMMAND ps -eo args OUTPUT_VARIABLE ps)
	if(NOT ps MATCHES "lks-${tag}")
		break()
	endif()
	execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.5)
endforeach()

set(fail "")
if(NOT rc STREQUAL "3")
	string(APPEND fail "exit status ${rc}, not 3; ")
endif()
if(ms GREATER_EQUAL bound_ms)
	string(APPEND fail "${ms} ms from start to exit, over ${BOUND_S} s; ")
endif()
if(NOT err MATCHES "lockstep: ranks? [0-9-]+ \\(process [0-9]+ on [^)]+\\): the all-reduce sum \\(its [a-z-]+\\) had no answer from the other processes in 2 s: a process died or hangs \\(or process 0 waited that long for the database, which another command was writing\\); the job ends \\(exit 3\\)")
	string(APPEND fail "stderr does not name the all-reduce and the timeout; ")
endif()
if(ps MATCHES "lks-${tag}")
	string(APPEND fail "processes of the job are left behind; ")
endif()
if(fail)
	message(FATAL_ERROR "${fail}\nstderr:\n${err}")
endif()
