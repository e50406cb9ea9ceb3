# mpi_devices.cmake: each MPI process of a run on its own GPU, and two processes on one GPU
# refused (tests/engine/mpi_devices.c, with stand-in GPUs), run by ctest as 'cmake -P':
#   cmake -DMPIEXEC=mpirun "-DFLAGS=--oversubscribe" -DPROG=mpi_devices -P mpi_devices.cmake
# Two GPUs: exit 0, process 0 on GPU-standin-0 and process 1 on GPU-standin-1. One GPU: the
# job ends with exit 3 and stderr says the ranks would share it, naming it.
separate_arguments(flags UNIX_COMMAND "${FLAGS}")

execute_process(COMMAND ${MPIEXEC} -n 2 ${flags} ${PROG} 2
	RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out TIMEOUT 100)
set(fail "")
if(NOT rc STREQUAL "0")
	string(APPEND fail "two GPUs: exit ${rc}, not 0; ")
endif()
if(NOT out MATCHES "process 0 \\(local rank 0\\): rank 0 on GPU-standin-0"
   OR NOT out MATCHES "process 1 \\(local rank 1\\): rank 1 on GPU-standin-1")
	string(APPEND fail "two GPUs: a process not on the GPU of its local rank; ")
endif()

execute_process(COMMAND ${MPIEXEC} -n 2 ${flags} ${PROG} 1
	RESULT_VARIABLE rc1 ERROR_VARIABLE err1 OUTPUT_VARIABLE out1 TIMEOUT 100)
if(NOT rc1 STREQUAL "3")
	string(APPEND fail "one GPU: exit ${rc1}, not 3; ")
endif()
if(NOT err1 MATCHES "ranks 0 and 1, of two processes on host '[^']+', would share GPU 0 \\(GPU-standin-0\\): one GPU per process")
	string(APPEND fail "one GPU: stderr does not refuse the shared GPU by name; ")
endif()
if(fail)
	message(FATAL_ERROR "${fail}\ntwo GPUs:\n${out}\n${err}\none GPU:\n${out1}\n${err1}")
endif()
