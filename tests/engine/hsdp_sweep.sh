#!/usr/bin/env bash
# tests/engine/hsdp_sweep.sh [SEED...]: the measurement behind cases/fsdp.ini's HSDP bounds.
# Trains its runs hsdp_rowwise and dp_rowwise at each seed (default 1 to 24 and 1234), runs
# the case's hsdp_*_tracks_dp checks, and prints per seed the worst relative gaps of HSDP
# against DP: loss and grad norm (every step and rank), the weights' l2 after each update,
# and how many FP8 scales differ, weights' (*.w) and all, with the first step one does.
# Run from the repository root after the build (LOCKSTEP: the binary, default
# build/lockstep); about 1.5 s a seed on two cores. Exit 1 if a check failed at a seed.
set -euo pipefail
bin=${LOCKSTEP:-build/lockstep}
seeds=("$@")
[[ ${#seeds[@]} -gt 0 ]] || seeds=($(seq 1 24) 1234)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
# a's statistic against b's of the same tensor, step and rank
pairs="FROM stats a JOIN tensors ta ON ta.run_id = a.run_id AND ta.seq = a.seq
  JOIN tensors tb ON tb.run_id = (SELECT run_id FROM runs WHERE run_name = 'dp_rowwise')
    AND tb.name = ta.name AND tb.phase = ta.phase
  JOIN stats b ON b.run_id = tb.run_id AND b.seq = tb.seq AND b.step = a.step
    AND b.rank = a.rank
  WHERE a.run_id = (SELECT run_id FROM runs WHERE run_name = 'hsdp_rowwise')"
steps="FROM steps a JOIN steps b ON b.step = a.step AND b.rank = a.rank
  WHERE a.run_id = (SELECT run_id FROM runs WHERE run_name = 'hsdp_rowwise')
    AND b.run_id = (SELECT run_id FROM runs WHERE run_name = 'dp_rowwise')"
echo "seed|loss|grad_norm|weights l2|scales .w differ|scales differ|from step|checks"
for seed in "${seeds[@]}"; do
	db=$tmp/s$seed.db
	checks=pass
	"$bin" run cases/fsdp.ini --run hsdp_rowwise --run dp_rowwise --check hsdp_loss_tracks_dp \
		--check hsdp_grad_norm_tracks_dp --check hsdp_weights_track_dp \
		--check hsdp_scales_track_dp --set case.seed="$seed" --db "$db" --quiet \
		>"$tmp/out" 2>&1 || { checks=FAIL; bad=1; }
	sqlite3 "$db" "SELECT $seed,
	  (SELECT printf('%.3g', max(abs(a.loss - b.loss) / abs(b.loss))) $steps),
	  (SELECT printf('%.3g', max(abs(a.grad_norm - b.grad_norm) / abs(b.grad_norm))) $steps),
	  (SELECT printf('%.3g', max(abs(a.l2 - b.l2) / abs(b.l2))) $pairs
	     AND ta.name LIKE '%.weight' AND ta.phase = 'update'),
	  (SELECT count(*) $pairs AND a.scale != b.scale AND ta.name LIKE '%.w'),
	  (SELECT count(*) $pairs AND a.scale != b.scale),
	  (SELECT coalesce(min(a.step), '-') $pairs AND a.scale != b.scale), '$checks'"
	[[ $checks = pass ]] || grep FAIL "$tmp/out" || true
done
exit $bad
