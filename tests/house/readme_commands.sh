#!/usr/bin/env bash
# readme_commands.sh LOCKSTEP SOURCE_DIR: the top-level README is at most 150 lines, and every
# command it shows runs as written on a fresh clone.
#
# The README's convention, which this script holds it to:
#   ```sh        a block of commands: each line that is not blank or a comment is one command.
#                It must exit 0, or N where the line ends in '# exit N'.
#   ```sh setup  the set-up commands (ci/main, ci/test): they install packages and build
#                everything, so they are not run here (see below).
#   any other    shown text (```ini, output, ...), not run. A block tagged bash, shell,
#                console or 'sh <anything else>' is refused, so that no command goes untested.
#
# What it does: clones SOURCE_DIR at its HEAD into a temporary folder (git clone, then
# checkout of that commit: what a fresh clone holds, nothing untracked), links the clone's
# build/ to the build under test (the folder of LOCKSTEP), and runs each ```sh command there
# with bash, in README order, one shell each. The README's commands and length are read from
# SOURCE_DIR's work tree, so an edit is tested before it is committed. Every relative link of
# the README must name a file or folder of the clone.
#
# What it does not run, and why: the ```sh setup commands. ci/main and ci/test install
# packages and configure and build everything in build/, minutes on 2 cores, past this test's
# budget (under a minute), and ci/test runs the whole test suite, this test included. A fresh
# clone has no build/ until they ran, so the tour's commands reuse the build under test in
# its place, which is what they would find after the set-up. The set-up commands are checked
# to be executable scripts of the clone that bash can parse; ci/test is CI's own entry point
# (.ci/run runs it, checked here), so CI runs that one as written on every push, from a fresh
# checkout.
#
# Exit 0 all good, 1 a check failed, 77 (ctest: skipped) when SOURCE_DIR is not a git
# checkout or git is missing.
set -euo pipefail
bin=$1
src=$2
max_lines=150
readme=$src/README.md

fail() {
	echo "readme_commands: $*" >&2
	exit 1
}

[[ -f $readme ]] || fail "no README.md in '$src'"
lines=$(wc -l <"$readme")
((lines <= max_lines)) || fail "README.md has $lines lines, more than $max_lines"

if ! command -v git >/dev/null || ! git -C "$src" rev-parse --verify -q HEAD >/dev/null; then
	echo "readme_commands: '$src' is not a git checkout (or git is missing): skipped"
	exit 77
fi

# ---- the blocks: "kind<TAB>line number<TAB>text" per command ----
blocks=$(awk '
	BEGIN { kind = "" }
	/^```/ {
		if (inblock) { inblock = 0; kind = ""; next }
		inblock = 1
		info = substr($0, 4); sub(/[ \t]+$/, "", info)
		if (info == "sh") kind = "run"
		else if (info == "sh setup") kind = "setup"
		else if (info ~ /^(sh|bash|shell|console|zsh)([ \t]|$)/) kind = "bad"
		else kind = ""
		if (kind == "bad") { printf "bad\t%d\t%s\n", NR, info; kind = "" }
		next
	}
	inblock && kind != "" && $0 !~ /^[ \t]*(#|$)/ { printf "%s\t%d\t%s\n", kind, NR, $0 }
	END { if (inblock) printf "bad\t%d\tunclosed block\n", NR }
' "$readme")

bad=$(grep -P '^bad\t' <<<"$blocks" || true)
[[ -z $bad ]] || fail "README.md:$(cut -f2 <<<"$bad" | head -1): a block tagged '$(cut -f3 <<<"$bad" | head -1)': commands go in \`\`\`sh blocks (or \`\`\`sh setup)"
nrun=$(grep -cP '^run\t' <<<"$blocks" || true)
nsetup=$(grep -cP '^setup\t' <<<"$blocks" || true)
((nrun > 0)) || fail "README.md shows no \`\`\`sh command: the parser or the convention broke"
((nsetup > 0)) || fail "README.md shows no \`\`\`sh setup command"

# ---- a fresh clone of HEAD, build/ the build under test ----
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head=$(git -C "$src" rev-parse HEAD)
git clone -q --no-checkout "$src" "$tmp/clone"
git -C "$tmp/clone" -c advice.detachedHead=false checkout -q "$head"
clone=$tmp/clone
builddir=$(cd "$(dirname "$bin")" && pwd)
[[ ! -e $clone/build ]] || fail "the clone has a build/ of its own: build/ must stay untracked"
ln -s "$builddir" "$clone/build"
[[ -x $clone/build/$(basename "$bin") ]] || fail "'$bin' is not in the build folder '$builddir'"

# ---- every relative link names something of the clone ----
while IFS= read -r link; do
	target=${link%%#*}
	[[ -z $target ]] && continue
	[[ -e $clone/$target ]] || fail "README.md links to '$link', which a fresh clone lacks"
done < <(grep -oP '\]\(\K[^)]+(?=\))' "$readme" | grep -vP '^[a-z]+:' || true)

# ---- the set-up commands: scripts of the clone that bash parses; CI runs ci/test ----
while IFS=$'\t' read -r kind nr cmd; do
	[[ $kind == setup ]] || continue
	read -r prog _ <<<"$cmd"
	[[ -f $clone/$prog && -x $clone/$prog ]] || fail "README.md:$nr: '$prog' is not an executable file of a fresh clone"
	bash -n "$clone/$prog" || fail "README.md:$nr: bash cannot parse '$prog'"
done <<<"$blocks"
grep -qE '^[^#]*\bci/test\b' "$clone/.ci/run" || fail ".ci/run does not run ci/test, the README's test command"

# ---- the tour: each command as written, in the clone ----
n=0
while IFS=$'\t' read -r kind nr cmd; do
	[[ $kind == run ]] || continue
	want=0
	if [[ $cmd =~ \#[[:space:]]*exit[[:space:]]+([0-9]+)[[:space:]]*$ ]]; then
		want=${BASH_REMATCH[1]}
	fi
	n=$((n + 1))
	rc=0
	(cd "$clone" && timeout 120 bash -c "$cmd") >"$tmp/out" 2>&1 </dev/null || rc=$?
	if ((rc != want)); then
		echo "--- README.md:$nr: $cmd" >&2
		tail -n 40 "$tmp/out" >&2
		fail "README.md:$nr: exit $rc, not $want"
	fi
	echo "ok README.md:$nr (exit $rc): $cmd"
done <<<"$blocks"

echo "readme_commands: README.md has $lines lines (at most $max_lines); $n commands ran as written on a fresh clone of ${head:0:12}; $nsetup set-up commands checked, not run"
