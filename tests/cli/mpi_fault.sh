#!/usr/bin/env bash
# mpi_fault.sh LOCKSTEP MPIEXEC [FLAG...]: a rank process that dies or hangs ends the whole
# job within a stated time, and the database keeps every step stored before it, with the run
# left 'incomplete' and the file intact (PRAGMA integrity_check). Three faults, each in a
# run of world size 4 on 2 processes (2 x 2 threads) that would train for hours:
#   kill -9 of process 1         OpenMPI's mpirun sees the death at once, ends the job and
#                                exits 128 + 9 by its own rule (the first process to fail
#                                names the status); lockstep cannot change that, and says so
#   SIGSTOP of process 1         (a hang) the other process's next all-reduce waits --timeout
#                                seconds, then lockstep ends the job: exit 3, naming the wait
#   kill -9 of process 0         the one that owns the database: mpirun ends the job
# and checks that no lockstep process is left behind.
set -euo pipefail
bin=$1
shift
dir=$(mktemp -d)
trap 'pkill -KILL -f -- "$dir/long.ini" 2>/dev/null || true; rm -rf "$dir"' EXIT
fail() { echo "mpi_fault: $*" >&2; exit 1; }
timeout=5
# How long a job may take to end after the fault: the timeout, plus the slack of a loaded
# 2-core machine for the last step and MPI_Abort to reach every process (measured: under 2 s)
bound=$((timeout + 15))

cat >"$dir/long.ini" <<'INI'
[case]
description = a long run to strike mid-way
steps = 1000000
world_size = 4
[model]
vocab = 64
hidden = 32
ffn = 64
layers = 1
seq = 8
batch = 1
[run bf16]
recipe = bf16
INI

# The PID of the lockstep process that MPI numbers $1, once its job has stored some steps.
striking_point() {
	local db=$1 want=$2 t=0 pid
	until [[ -f $db ]] && (($(sqlite3 "$db" 'SELECT count(*) FROM steps' 2>/dev/null || echo 0) >= 40)); do
		sleep 0.2
		((++t < 300)) || fail "no steps stored after 60 s"
	done
	for pid in $(pgrep -f -- "$dir/long.ini"); do
		if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$want"; then
			echo "$pid"
			return
		fi
	done
	fail "no process of rank $want"
}

strike() {
	local name=$1 signal=$2 who=$3 db="$dir/$1.db" pid rc t0 t1
	set +e
	"${mpiexec[@]}" -np 2 "$bin" run "$dir/long.ini" --db "$db" --quiet --timeout "$timeout" \
		>"$dir/$name.out" 2>&1 &
	local job=$!
	set -e
	pid=$(striking_point "$db" "$who")
	t0=$(date +%s%N)
	kill "-$signal" "$pid"
	set +e
	timeout -s KILL "$((bound + 30))" tail -s 0.05 --pid="$job" -f /dev/null
	wait "$job"
	rc=$?
	set -e
	t1=$(date +%s%N)
	kill -CONT "$pid" 2>/dev/null || true
	ms=$(((t1 - t0) / 1000000))
	echo "mpi_fault: $name: exit $rc, $ms ms after the fault"
	((ms < bound * 1000)) || fail "$name: the job took $ms ms to end (bound $bound s)"
	[[ $(sqlite3 "$db" 'PRAGMA integrity_check') == ok ]] || fail "$name: integrity_check fails"
	[[ $(sqlite3 "$db" 'SELECT status FROM runs') == incomplete ]] \
		|| fail "$name: the run is $(sqlite3 "$db" 'SELECT status FROM runs'), not incomplete"
	# every stored step whole: 4 ranks' rows each, steps 0, 1, ... without a gap
	[[ $(sqlite3 "$db" 'SELECT count(*) = 4 * count(DISTINCT step) AND max(step) + 1 = count(DISTINCT step)
		FROM steps') == 1 ]] || fail "$name: the stored steps are not whole"
	sleep 1
	! pgrep -f -- "$dir/long.ini" >/dev/null || fail "$name: lockstep processes are left behind"
	last_rc=$rc
}

mpiexec=("$@")
strike kill1 KILL 1
((last_rc == 137 || last_rc == 3)) || fail "kill1: exit $last_rc, not 137 (mpirun's) or 3"
strike stop1 STOP 1
((last_rc == 3)) || fail "stop1: exit $last_rc, not 3"
grep -q "no answer" "$dir/stop1.out" || { cat "$dir/stop1.out"; fail "stop1: the wait is not named"; }
strike kill0 KILL 0
((last_rc != 0)) || fail "kill0: exit 0"
