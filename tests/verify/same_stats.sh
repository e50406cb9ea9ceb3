#!/usr/bin/env bash
# same_stats.sh LOCKSTEP: ci/same-stats compares the values of imported runs too (a metric
# log's, a tensor trace's, complete or not), not only the stat and step rows of trained runs:
# two databases whose imports differ in every value passed as "the same traces, bit for
# bit". Databases of the same imports are the same; of trained runs alone they need no
# lockstep to compare; and two that hold no value at all compared nothing, which is said
# (exit 2), not passed.
set -euo pipefail
bin=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "same_stats: $*" >&2; exit 1; }
same() {  # same A B [ENV...]: ci/same-stats A B, its exit code echoed, its output in out
	local a=$1 b=$2 rc=0
	shift 2
	env LOCKSTEP="$bin" "$@" "$src/ci/same-stats" "$a" "$b" >out 2>&1 || rc=$?
	echo "$rc"
}
imp() { "$bin" import --quiet "$@"; }
printf '{"step": 0, "loss": 2.5, "grad_norm": 1.0}\n{"step": 1, "loss": 2.25, "grad_norm": 0.5}\n' \
	>a.jsonl
printf '{"step": 0, "loss": 9.5, "grad_norm": 7.0}\n{"step": 1, "loss": 8.25, "grad_norm": 6.5}\n' \
	>b.jsonl
printf '{"step":0,"rank":0,"tensor":"x.out","l2":1.0,"amax":0.5}\n' >ta.jsonl
printf '{"step":0,"rank":0,"tensor":"x.out","l2":3.0,"amax":2.5}\n' >tb.jsonl
# A and C: the same imports; B: other metric values; D: other tensor values
for db in A B C D; do
	m=a.jsonl t=ta.jsonl
	[[ $db == B ]] && m=b.jsonl
	[[ $db == D ]] && t=tb.jsonl
	imp --format jsonl $m --case c --run r --db $db.db
	imp --format tensor-jsonl $t --case t --run r --db $db.db
done
rc=$(same A.db C.db)
((rc == 0)) || { cat out; fail "the same imports: exit $rc, not 0"; }
grep -q "the same traces, bit for bit" out ||
	{ cat out; fail "the same imports not said the same"; }
grep -q "^metric rows 2 2$" out && grep -q "^tensor rows 1 1$" out ||
	{ cat out; fail "the imported values were not counted"; }
rc=$(same A.db B.db)
((rc == 1)) || { cat out; fail "imports of other metric values: exit $rc, not 1"; }
grep -q '^> metric c r - {"step":0,"rank":0,.*"loss":9.5' out ||
	{ cat out; fail "the metric that differs is not shown"; }
rc=$(same A.db D.db)
((rc == 1)) || { cat out; fail "imports of other tensor values: exit $rc, not 1"; }
grep -q '^> tensor t r - .*"l2":3.0' out ||
	{ cat out; fail "the tensor that differs is not shown"; }
# a followed log killed before its end (stored incomplete) is compared as far as it holds
printf '{"step": 0, "loss": 2.5}\n{"step": 1, "loss": 2.25}\n' >f1.jsonl
printf '{"step": 0, "loss": 2.5}\n{"step": 1, "loss": 2.2500000000000004}\n' >f2.jsonl
for i in 1 2; do
	imp --format jsonl f1.jsonl --case c --run r --db F$i.db
	rc=0
	imp --follow --format jsonl f$i.jsonl --case c --run f --db F$i.db --reference 1 \
		--rtol 0.1 --end-step 9 --idle 0.2 >/dev/null 2>&1 || rc=$?
	((rc == 3)) || fail "the follow of f$i.jsonl: exit $rc, not 3 (stopped before --end-step)"
done
rc=$(same F1.db F2.db)
((rc == 1)) || { cat out; fail "incomplete imports one bit apart: exit $rc, not 1"; }
grep -q '^> metric c f - {"step":1,"rank":0,"loss":2.2500000000000004}$' out ||
	{ cat out; fail "the incomplete run's value that differs is not shown"; }
# trained runs alone: compared in SQL, without lockstep
cat >tiny.ini <<'EOF'
[case]
steps = 2
world_size = 2
[model]
vocab = 32
hidden = 16
ffn = 32
layers = 1
seq = 4
batch = 2
[run bf16]
recipe = bf16
EOF
for db in T1 T2; do "$bin" run tiny.ini --db $db.db --quiet >/dev/null; done
rc=$(same T1.db T2.db LOCKSTEP="$dir/no-lockstep")
((rc == 0)) || { cat out; fail "two trained runs alike: exit $rc, not 0"; }
grep -Eq "^stat rows [1-9][0-9]* [1-9][0-9]*$" out || { cat out; fail "no stat row compared"; }
# nothing to compare: runs that hold no value (their blocks gone) are not "the same"
cp A.db E.db
sqlite3 E.db "DELETE FROM import_blocks; DELETE FROM tensor_blocks"
rc=$(same E.db E.db)
((rc == 2)) || { cat out; fail "nothing compared: exit $rc, not 2"; }
grep -q "nothing to compare" out || { cat out; fail "nothing compared, and not said"; }
echo "same_stats: imported values compared (complete or not), trained runs without lockstep," \
	"nothing compared said"
