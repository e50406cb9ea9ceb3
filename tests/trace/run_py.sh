#!/usr/bin/env bash
# run_py.sh MODULE SCRIPT ARGS...: runs a Python test script with the first interpreter that
# imports MODULE (numpy, torch): $LKS_PYTHON where set, then python3 on PATH, then Debian's
# /usr/bin/python3 (ci/setup installs python3-numpy there; a pyenv or a virtualenv first on
# PATH may lack it). Exit 77 (ctest: skipped) when none does.
set -u
module=$1
shift
for py in ${LKS_PYTHON:-} python3 /usr/bin/python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -c "import $module" >/dev/null 2>&1; then
		exec "$py" "$@"
	fi
done
echo "run_py: no Python here imports $module: skipped"
exit 77
