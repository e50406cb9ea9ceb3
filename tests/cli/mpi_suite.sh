#!/usr/bin/env bash
# mpi_suite.sh LOCKSTEP MPIEXEC [FLAG...]: the nightly suite (cases/ cases/faults/) as MPI
# processes stores the traces of the threads-only run, bit for bit. It runs the suite as
# threads of one process and under 'MPIEXEC FLAG... -np N' for N = 2 and 4, all at once,
# each into its own database, and compares every step and stat row, hashes included, in SQL
# (ci/same-stats), then the events (NaN/Inf before an all-reduce) and the verdicts of every
# check. The suite's world sizes are 1 to 4, so -np 2 runs a world of 4 as 2 processes x 2
# threads, a world of 3 as 2 + 1, and -np 4 leaves processes without a rank in the runs
# of 1 to 3. It also checks that each run records the job in its fingerprint (launcher,
# processes, hosts, and the MPI library, which one process does not start), that the exit
# codes agree, that -np 1 (every rank a thread of one process, MPI not started: the
# threads-only path) passes one case and records the job, and that a bad case is said once
# (by process 0). LKS_MPI_SUITE_NP (default "2 4") chooses the process counts of the whole
# suite: the sanitized build (ci/sanitize) runs 3 only, for CI's time (a world of 4 is then
# 2 + 1 + 1 and one of 2 leaves a process without a rank). With LKS_MPI_SUITE_BITS=0 (the
# sanitized build) the threads-only run and the comparisons with it are left out: the suite
# as processes must pass (exit 0) and record the job; the bits are the plain build's to
# show, and the suite as threads runs sanitized in test_fault.
# LKS_MPI_SUITE_CASES (default "cases/ cases/faults/") chooses the cases: the sanitized build
# runs those whose ranks talk in their own ways (all-reduce at 1, 2 and 4 ranks, FP8 scales,
# FSDP's gathers and scatters, tensor-parallel groups, a resume, and the planted faults of
# collectives); the plain build all.
set -euo pipefail
bin=$1
shift
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$src"
fail() { echo "mpi_suite: $*" >&2; exit 1; }

bits=${LKS_MPI_SUITE_BITS:-1}
cases=${LKS_MPI_SUITE_CASES:-cases/ cases/faults/}
nps=${LKS_MPI_SUITE_NP:-2 4}
# Every run at once, each into its own database (a run alone leaves a core idle part of the
# time: on 2 cores the test takes 79 s, against 88 to 93 s one run after another); then the
# comparisons.
set +e
if ((bits)); then
	("$bin" run $cases --db "$dir/threads.db" --quiet >"$dir/threads.out" 2>&1
	 echo $? >"$dir/threads.rc") &
fi
for np in $nps; do
	("$@" -np "$np" "$bin" run $cases --db "$dir/np$np.db" --quiet >"$dir/np$np.out" 2>&1
	 echo $? >"$dir/np$np.rc") &
done
wait
set -e
want=0
if ((bits)); then
	want=$(cat "$dir/threads.rc")
	((want == 0)) || { cat "$dir/threads.out"; fail "the suite as threads exits $want"; }
fi
# every run of database $1, made under -np $2, records the job in its fingerprint
job_recorded() {
	local bad
	bad=$(sqlite3 "$1" "SELECT count(*) FROM runs WHERE
		json_extract(fingerprint, '\$.processes') IS NOT '$2'
		OR json_extract(fingerprint, '\$.launcher') IS NULL
		OR json_extract(fingerprint, '\$.launcher') = 'none'
		OR (json_extract(fingerprint, '\$.mpi_library') IS NULL) != ($2 == 1)
		OR json_extract(fingerprint, '\$.hosts') NOT LIKE '% x$2'")
	((bad == 0)) || fail "-np $2: $bad runs lack the job in their fingerprint"
}
# the verdicts and the events, as text, in a stable order
facts() {
	sqlite3 "$1" "SELECT case_name, check_name, verdict, step, rank, tensor, field,
			hex(value_a), hex(value_b), message FROM checks ORDER BY 1, 2;
		SELECT r.case_name, r.run_name, e.step, e.rank, e.tensor, e.kind, e.message
		FROM events e JOIN runs r USING (run_id) ORDER BY 1, 2, 3, 4, 5;
		SELECT case_name, run_name, status, world_size FROM runs ORDER BY 1, 2;"
}
if ((bits)); then
	facts "$dir/threads.db" >"$dir/threads.facts"
	[[ -s $dir/threads.facts ]] || fail "no verdicts in the threads-only database"
fi
for np in $nps; do
	db="$dir/np$np.db"
	rc=$(cat "$dir/np$np.rc")
	((rc == want)) || { tail -n 30 "$dir/np$np.out"; fail "-np $np exits $rc, threads $want"; }
	if ((bits)); then
		ci/same-stats "$dir/threads.db" "$db" || fail "-np $np: the traces differ from the threads'"
		facts "$db" >"$dir/np$np.facts"
		diff "$dir/threads.facts" "$dir/np$np.facts" || fail "-np $np: verdicts or events differ"
	fi
	job_recorded "$db" "$np"
	rows=$(sqlite3 "$db" 'SELECT count(*) FROM stats')
	((rows > 0)) || fail "-np $np: no stat rows stored"
	if ((bits)); then
		echo "mpi_suite: -np $np: the same traces, events and verdicts as threads ($rows stat rows)"
	else
		echo "mpi_suite: -np $np: the suite passes and records the job ($rows stat rows)"
	fi
done
# -np 1: one process hosts every rank as threads, MPI not started (the threads-only run's
# path, whose bits the suite as threads shows): it passes and records the job, on one case
# of 2 ranks (the whole suite under -np 1 took CI's time for nothing more)
"$@" -np 1 "$bin" run cases/resume.ini --db "$dir/np1.db" --quiet >"$dir/np1.out" 2>&1 \
	|| { cat "$dir/np1.out"; fail "-np 1 exits $?"; }
job_recorded "$dir/np1.db" 1
echo "mpi_suite: -np 1: cases/resume.ini passes and records the job"
# A bad case: every process refuses it (exit 2), and process 0 alone says so (each process
# printed it).
printf '[case]\nsteps = 0\n' >"$dir/bad.ini"
set +e
"$@" -np 2 "$bin" run "$dir/bad.ini" --db "$dir/bad.db" >"$dir/bad.out" 2>&1
rc=$?
set -e
((rc == 2)) || { cat "$dir/bad.out"; fail "a bad case under -np 2 exits $rc, not 2"; }
said=$(grep -c 'bad.ini' "$dir/bad.out" || true)
((said == 1)) || { cat "$dir/bad.out"; fail "a bad case under -np 2 is said $said times, not once"; }
echo "mpi_suite: a bad case under -np 2: exit 2, said once"
