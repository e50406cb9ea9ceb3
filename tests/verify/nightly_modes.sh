#!/usr/bin/env bash
# nightly_modes.sh LOCKSTEP: ci/nightly as a runner without a GPU runs it, two nights into
# one history: each night exits 0 with its verdicts, report and log; production mode is
# said to be skipped; the second night finds every run unchanged against the first. Then
# both modes forced (LKS_NIGHTLY_MODES) on the cpu backend: production mode is refused
# (exit 2, it needs cuda), reference mode's report is still written, and the night exits
# with the worse code, 2. A 'lockstep run' killed by SIGKILL: its suite found in history.db
# and reported, exit 3. The node's screen: said to be skipped on the cpu; on stand-ins
# (LKS_NIGHTLY_SCREEN=standins) kept and shown in the night's report. The nights run a short suite of their own (LKS_NIGHTLY_CASES): what
# is tested is the night, not the cases, which the other tests run.
set -euo pipefail
bin=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/cases"
cat >"$dir/cases/short.ini" <<'EOF'
[case]
steps = 3
seed = 11
world_size = 2
[model]
vocab = 32
hidden = 16
ffn = 32
layers = 1
seq = 4
batch = 2
[run fp8]
recipe = fp8_rowwise
[run fp8_ac]
recipe = fp8_rowwise
checkpoint = blocks
[check ranks]
kind = ranks_agree
a = fp8
[check ac_neutral]
kind = bitwise
a = fp8_ac
b = fp8
EOF
fail() { echo "nightly_modes: $*" >&2; exit 1; }
night() {  # night DATE [ENV...]: ci/nightly into $dir, its exit code echoed
	local date=$1 rc=0
	shift
	env LKS_NIGHTLY_PREBUILT=1 LKS_NIGHTLY_BIN="$bin" LKS_NIGHTLY_DIR="$dir" \
		LKS_NIGHTLY_CASES="$dir/cases/" \
		LKS_NIGHTLY_DATE="$date" "$@" "$src/ci/nightly" >"$dir/out-$date" 2>&1 || rc=$?
	echo "$rc"
}
cd "$src"
for d in 2026-01-01 2026-01-02; do
	rc=$(night $d)
	grep -q "node screen: skipped: it screens GPUs" "$dir/nightly-$d.txt" ||
		fail "night $d does not say the screen was skipped"
	((rc == 0)) || { tail -n 30 "$dir/out-$d"; fail "night $d exits $rc"; }
	[[ -s $dir/junit-$d.xml && -s $dir/report-$d/index.html && -s $dir/nightly-$d.txt ]] ||
		fail "night $d: junit, report or log missing"
	[[ ! -e $dir/report-$d-cublaslt ]] || fail "night $d: a production report without a GPU"
	grep -q "production mode (--gemm cublaslt) skipped: it needs the cuda backend" \
		"$dir/nightly-$d.txt" || fail "night $d does not say production mode was skipped"
done
grep -Eq '^night over night: [1-9][0-9]* unchanged, 0 changed .*, 0 new, 0 gone$' \
	"$dir/nightly-2026-01-02.txt" ||
	fail "the second night: $(grep 'night over night' "$dir/nightly-2026-01-02.txt")"
# the screen wired in, on stand-ins: kept in history.db, shown in the night's report
rc=$(night 2026-01-05 LKS_NIGHTLY_SCREEN=standins)
((rc == 0)) || { tail -n 30 "$dir/out-2026-01-05"; fail "a night with the screen exits $rc"; }
[[ -s $dir/screen-2026-01-05.json && -s $dir/junit-2026-01-05-screen.xml ]] ||
	fail "the screen's JSON or JUnit missing"
grep -q "CPU-standin-1" "$dir/report-2026-01-05/index.html" ||
	fail "the night's report does not show the screen"
rc=$(night 2026-01-06 LKS_NIGHTLY_SCREEN=sometimes)
((rc == 2)) || fail "an unknown screen setting: exit $rc, not 2"
rc=$(night 2026-01-03 LKS_NIGHTLY_MODES="reference cublaslt")
((rc == 2)) || { tail -n 30 "$dir/out-2026-01-03"; fail "both modes on cpu: exit $rc, not 2"; }
[[ -s $dir/report-2026-01-03/index.html ]] || fail "reference mode's report missing beside a refused mode"
grep -q "asks for gemm = cublaslt" "$dir/nightly-2026-01-03.txt" ||
	fail "production mode's refusal is not in the log"
rc=$(night 2026-01-04 LKS_NIGHTLY_MODES="fast")
((rc == 2)) || fail "an unknown mode: exit $rc, not 2"
# 'lockstep run' killed by SIGKILL (the OOM killer, say) once its suite holds a step: it
# never says its suite, which is in history.db all the same, its run incomplete. The night
# says so and writes its report, and exits 3 (infrastructure), not 137 ("stored no suite").
mkdir "$dir/long"
sed 's/^steps = 3$/steps = 1000000/' "$dir/cases/short.ini" >"$dir/long/long.ini"
cat >"$dir/killer" <<'EOF'
#!/usr/bin/env bash
# stands in for lockstep ($LKS_REAL_BIN): its 'run' is killed by SIGKILL once the suite it
# began (one above the highest of --db) holds a step row
[[ $1 == run && $* != *--help* ]] || exec "$LKS_REAL_BIN" "$@"
args=("$@")
for ((i = 0; i + 1 < $#; i++)); do [[ ${args[i]} == --db ]] && db=${args[i + 1]}; done
q() { sqlite3 -readonly "$db" "$1" 2>/dev/null || echo 0; }
before=$(q 'SELECT IFNULL(max(suite_id), 0) FROM suites')
"$LKS_REAL_BIN" "$@" &
pid=$!
for ((t = 0; t < 600; t++)); do
	(($(q "SELECT count(*) FROM steps JOIN runs USING (run_id) WHERE suite_id > $before"))) &&
		break
	sleep 0.1
done
kill -9 $pid
wait $pid
EOF
chmod +x "$dir/killer"
rc=$(night 2026-01-07 LKS_NIGHTLY_BIN="$dir/killer" LKS_REAL_BIN="$bin" \
	LKS_NIGHTLY_CASES="$dir/long/")
log=$dir/nightly-2026-01-07.txt
((rc == 3)) || { tail -n 30 "$dir/out-2026-01-07"; fail "a killed run: exit $rc, not 3"; }
grep -q "'lockstep run' was killed by signal 9 (SIGKILL): counted as exit 3" "$log" ||
	fail "the kill is not said: $(tail -n 5 "$log")"
! grep -q "stored no suite" "$log" || fail "a killed run's suite said not stored"
killed=$(sqlite3 "$dir/history.db" "SELECT suite_id FROM runs WHERE status = 'incomplete'")
[[ -n $killed ]] || fail "no incomplete run in history.db: the run was not killed mid-way"
grep -q "ended before saying its suite: suite $killed is in" "$log" ||
	fail "the killed suite ($killed) is not named: $(tail -n 5 "$log")"
[[ -s $dir/report-2026-01-07/index.html ]] || fail "no report of the killed suite"
grep -q "no $dir/junit-2026-01-07.xml (the run ended first)" "$log" ||
	fail "a JUnit file the killed run never wrote is named: $(tail -n 5 "$log")"
echo "nightly_modes: two nights on cpu, production skipped and said; forced, refused with" \
	"exit 2; a killed run's suite reported, exit 3"
