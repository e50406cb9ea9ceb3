#!/usr/bin/env bash
# links.sh CPU_LIB BENCH_LIB LIB...: no object of the harness libraries LIB (the rooms
# without CPU: import, engine, verify, report, probe) needs a symbol that the CPU kernels' library
# defines: they reach a kernel only through the backend, which they get from the registry
# (lks_backends, the one library that links lks_cpu). The include views stop a direct call
# at compile time (no kernels/cpu/ header); this stops a hand-written prototype at link
# time. BENCH_LIB, which measures the CPU kernels directly, must show such symbols, so a
# reading of nm that found none anywhere would fail here too.
set -euo pipefail
cpu=$1 bench=$2
shift 2
defined=$(nm -g --defined-only "$cpu" | awk 'NF == 3 { print $3 }' | sort -u)
[[ -n $defined ]] || { echo "links: $cpu defines no symbol" >&2; exit 1; }
needs() { nm -u "$1" | awk '{ print $NF }' | sort -u | comm -12 - <(echo "$defined"); }
[[ -n $(needs "$bench") ]] || { echo "links: $bench calls no CPU kernel: nm is misread" >&2; exit 1; }
rc=0
for lib in "$@"; do
	bad=$(needs "$lib" | tr '\n' ' ')
	if [[ -n $bad ]]; then
		echo "links: $(basename "$lib") calls CPU kernels directly: $bad(use the backend, kernels/backend.h)" >&2
		rc=1
	fi
done
((rc)) || echo "links: $# harness libraries reach the CPU kernels only through the backend"
exit $rc
