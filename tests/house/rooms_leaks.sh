#!/usr/bin/env bash
# rooms_leaks.sh BUILD SRC WORK: the rooms' one-way rule (harness/README.md) where the include
# views alone cannot hold it. The views (build/rooms/<room>/) stop '#include "harness/<room>/x.h"'
# of a room not seen; they do not stop a relative include ("../verify/check.h" resolves beside
# the file, not through the view), nor a hand-written prototype of a higher room's function,
# which compiles against no header and links. So, for every source of every room, compiled
# here with the very flags its room's target uses (compile_commands.json):
#   includes      every file of the source tree it reads is in its room's view: no relative
#                 (or absolute) path past the view, and no other room's *_impl.h or .c, which
#                 the views leave out (CMakeLists.txt, lks_room_view);
#   symbols       no object of a room needs a symbol (nm: undefined) that only a room it does
#                 not see defines: a prototype declared by hand and called, or a function's or
#                 table's address taken. A callback handed down as a pointer crosses without
#                 a symbol, which is how a lower room calls up;
#   declarations  no file of a room declares a function that only a room it does not see
#                 defines, called or not (gcc -aux-info; skipped, and said, with a compiler
#                 without it).
# The rooms, what each sees and which sources are whose all come from the build (the views
# and the compile commands), so a room added to CMakeLists.txt is checked without a change here.
# Then it plants each kind of leak in a scratch copy of each room (WORK/plant/<room>/harness/:
# the room a folder of its own, links to the real rooms beside it) and compiles it with the
# room's real flags: a relative include of a header of a room it does not see (the lowest
# such room, as engine's "../verify/check.h"), a prototype of such a room's function declared
# and called, the same declared only, a kernel's header its view leaves out by a relative path
# ("../../kernels/cpu/backend_cpu.h" from engine), and the *_impl.h of a room it sees both
# through the view (must not compile) and by a relative path (must be found). The test fails
# unless the real tree is clean and every planted leak is caught, and it prints what caught
# each, so every run shows that the check still catches them.
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2") work=${3:?usage: rooms_leaks.sh BUILD SRC WORK}
rm -rf "$work"
mkdir -p "$work/scan" "$work/plant"
work=$(realpath "$work")
plant=$work/plant
jobs=$(nproc 2>/dev/null || echo 2)

# ---- the rooms' sources, with their target's flags ----
# compile_commands.json as written by CMake: one key per line; values JSON-escaped.
awk '
function unesc(s,   o, i, c) {
	o = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "\\") { i++; c = substr(s, i, 1); if (c == "n") c = "\n"; else if (c == "t") c = "\t" }
		o = o c
	}
	return o
}
function val(s) { sub(/^[ \t]*"[a-z]+": "/, "", s); sub(/",?[ \t]*$/, "", s); return unesc(s) }
/^[ \t]*"directory": "/ { dir = val($0) }
/^[ \t]*"command": "/ { cmd = val($0) }
/^[ \t]*"file": "/ { file = val($0) }
/^[ \t]*}/ { if (file != "") printf "%s\t%s\t%s\n", dir, file, cmd; dir = cmd = file = "" }
' "$build/compile_commands.json" > "$work/commands.tsv"

: > "$work/entries.tsv"   # id  room  source  object
declare -A room_args      # room -> one source's arguments (compiler and flags), for the plants
n=0
while IFS=$'\t' read -r dir file cmd; do
	rel=${file#"$src"/harness/}
	[[ $rel != "$file" && $rel == */*.c && ${rel#*/} != */* ]] || continue
	room=${rel%%/*}
	eval "args=($cmd)"
	# the room's own target sees its view; a test or a driver that compiles the file again
	# with other flags is not the room
	view=0 obj="" skip=0 keep=()
	for a in "${args[@]}"; do
		if ((skip)); then [[ $skip == 2 ]] || obj=$a; skip=0; continue; fi
		case $a in
		-I"$build/rooms/$room") view=1; keep+=("$a") ;;
		-o) skip=1 ;;
		-MF | -MT | -MQ) skip=2 ;;
		-c | "$file" | -MD | -MMD | -MP) ;;
		*) keep+=("$a") ;;
		esac
	done
	((view)) || continue
	[[ $obj == /* ]] || obj=$dir/$obj
	n=$((n + 1))
	printf '%s\0' "${keep[@]}" > "$work/scan/$n.args"
	printf '%s\t%s\t%s\t%s\n' "$n" "$room" "$file" "$obj" >> "$work/entries.tsv"
	[[ -n ${room_args[$room]:-} ]] || room_args[$room]=$work/scan/$n.args
done < "$work/commands.tsv"
((n > 0)) || { echo "rooms_leaks: no room's source in $build/compile_commands.json" >&2; exit 1; }
rooms=$(cut -f2 "$work/entries.tsv" | sort -u)

# ---- what each room sees: its view, as the build made it ----
: > "$work/sees.txt"      # room  seen-room      (itself included)
: > "$work/visible.txt"   # room  real path of a file its flags can reach through build/rooms/
for room in $rooms; do
	[[ -d $build/rooms/$room/harness ]] || { echo "rooms_leaks: room '$room' has no view $build/rooms/$room" >&2; exit 1; }
	for s in "$build/rooms/$room/harness"/*; do printf '%s %s\n' "$room" "${s##*/}"; done >> "$work/sees.txt"
	mapfile -d '' a < "${room_args[$room]}"
	for f in "${a[@]}"; do
		[[ $f == -I"$build/rooms/"* ]] || continue
		find -L "${f#-I}" -type f -print0 | xargs -0 -r realpath -- | sed "s|^|$room |"
	done >> "$work/visible.txt"
done
sees() { awk -v r="$1" '$1 == r { print $2 }' "$work/sees.txt"; }

# ---- compile: every source (and every plant) with its room's flags ----
aux=1
cc0=$(head -zn1 "${room_args[$(head -n1 <<< "$rooms")]}" | tr -d '\0')
"$cc0" -x c -fsyntax-only -aux-info /dev/null /dev/null 2> /dev/null || aux=0
scan_one() { # ID SOURCE [OBJECT]: dependencies (ID.d), declarations (ID.aux), an object if asked
	local id=$1 file=$2 obj=${3:-} a
	mapfile -d '' a < "$work/scan/$id.args"
	local out=(-fsyntax-only)
	[[ -z $obj ]] || out=(-c -o "$obj")
	((!aux)) || out+=(-aux-info "$work/scan/$id.aux")
	"${a[@]}" "${out[@]}" -MD -MF "$work/scan/$id.d" "$file" > "$work/scan/$id.err" 2>&1 || echo "$id" > "$work/scan/$id.failed"
}
export -f scan_one
export work aux

# ---- the plants ----
: > "$work/plants.tsv"   # id  room  source  object  kind  expected (what the finding must name)
plant_file() { # ROOM NAME TEXT KIND EXPECT [OBJECT]: WORK/plant/ROOM/harness/ROOM/NAME
	local room=$1 name=$2 text=$3 kind=$4 expect=$5 obj=${6:--}
	local id=p$(($(wc -l < "$work/plants.tsv") + 1)) dir=$plant/$room/harness r
	# the scratch copy: the room a folder of its own, beside links to the real rooms
	if [[ ! -d $dir ]]; then
		mkdir -p "$dir/$room"
		for r in "$src"/harness/*/; do
			r=${r%/}
			[[ ${r##*/} == "$room" ]] || ln -s "$r" "$dir/${r##*/}"
		done
		ln -s "$src/kernels" "$plant/$room/kernels"
	fi
	[[ $(realpath "$dir/$room") == "$plant/"* ]] || { echo "rooms_leaks: $dir/$room is not scratch" >&2; exit 1; }
	[[ $obj == - ]] || obj=$dir/$room/$obj
	printf '%s' "$text" > "$dir/$room/$name"
	cp "${room_args[$room]}" "$work/scan/$id.args"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$room" "$dir/$room/$name" "$obj" "$kind" "$expect" >> "$work/plants.tsv"
}
# the nm of every room's objects, to choose the plants' prototypes and to judge
cut -f4 "$work/entries.tsv" | xargs -d '\n' nm -A -g --format=posix > "$work/nm.txt" 2> "$work/nm.err" || {
	cat "$work/nm.err" >&2; echo "rooms_leaks: nm failed (is the build complete?)" >&2; exit 1; }
for room in $rooms; do
	seen=$(sees "$room")
	# the rooms it does not see, lowest first (fewest seen), and the first header of theirs
	# that compiles with this room's flags (most include their own room by its full path,
	# which this room's view does not hold)
	unseen=$(for r in $rooms; do
		grep -qx "$r" <<< "$seen" || echo "$(sees "$r" | wc -l) $r"
	done | sort -n | cut -d' ' -f2)
	up=$(head -n1 <<< "$unseen")
	if [[ -n $up ]]; then
		mapfile -d '' a < "${room_args[$room]}"
		found=""
		for r in $unseen; do
			for h in "$src/harness/$r"/*.h; do
				[[ -e $h && $h != *_impl.h ]] || continue
				if echo "#include \"$h\"" | "${a[@]}" -x c -E -o /dev/null - 2> /dev/null; then
					found=$r/${h##*/}; break 2
				fi
			done
		done
		[[ -z $found ]] || plant_file "$room" planted_include.c "#include \"../$found\"
int lks_planted_include;
" include "harness/$found"
		# a function of that room, defined in no room this one sees
		fn=$(awk -v src="$src" -v up="$up" -v seen="$seen" -v entries="$work/entries.tsv" '
			BEGIN { while ((getline l < entries) > 0) { split(l, f, "\t"); roomof[f[4]] = f[2] }
				n = split(seen, s, "\n"); for (i = 1; i <= n; i++) ok[s[i]] = 1 }
			{ o = $1; sub(/:$/, "", o); r = roomof[o] }
			$3 ~ /^[A-TV-Z]$/ { if (ok[r]) bad[$2] = 1; else if (r == up && $3 == "T") cand[$2] = 1 }
			END { for (c in cand) if (!bad[c]) print c }' "$work/nm.txt" | sort | head -n1)
		if [[ -n $fn ]]; then
			plant_file "$room" planted_call.c "int $fn(void); /* by hand: the room '$up' is not seen */
int lks_planted_call(void) { return $fn(); }
" symbol "$fn" planted_call.o
			((!aux)) || plant_file "$room" planted_declared.c "int $fn(void); /* declared, not called */
int lks_planted_declared;
" declaration "$fn"
		fi
	fi
	# a kernel's header its view does not hold (the CPU kernels, for the rooms that reach
	# them through the backend alone), that compiles with its flags
	mapfile -d '' a < "${room_args[$room]}"
	for h in "$src"/kernels/*/*.h; do
		grep -qxF "$room $h" "$work/visible.txt" && continue
		if echo "#include \"$h\"" | "${a[@]}" -x c -E -o /dev/null - 2> /dev/null; then
			h=${h#"$src"/}
			plant_file "$room" planted_kernel.c "#include \"../../$h\"
int lks_planted_kernel;
" include "$h"
			break
		fi
	done
	# a private header of a room this one sees
	for r in $seen; do
		[[ $r == "$room" ]] && continue
		h=$(cd "$src/harness/$r" && ls -- *_impl.h 2> /dev/null | head -n1 || true)
		[[ -n $h ]] || continue
		plant_file "$room" planted_impl_view.c "#include \"harness/$r/$h\"
" view "harness/$r/$h: No such file"
		plant_file "$room" planted_impl.c "#include \"../$r/$h\"
int lks_planted_impl;
" include "harness/$r/$h"
		break
	done
done

# compile the tree's sources and the plants, two at a time or more
{
	while IFS=$'\t' read -r id _ file obj; do printf '%s\0%s\0\0' "$id" "$file"; done < "$work/entries.tsv"
	while IFS=$'\t' read -r id _ file obj _; do printf '%s\0%s\0%s\0' "$id" "$file" "${obj#-}"; done < "$work/plants.tsv"
} | xargs -0 -n3 -P "$jobs" bash -c 'scan_one "$0" "$1" "$2"'

for f in "$work"/scan/*.failed; do
	[[ -e $f ]] || break
	id=$(cat "$f")
	[[ $id == p* ]] && continue
	echo "rooms_leaks: $(awk -F'\t' -v i="$id" '$1 == i { print $3 }' "$work/entries.tsv") does not compile with its room's flags:" >&2
	cat "$work/scan/$id.err" >&2
	exit 1
done

# ---- judge ----
# every path read or declared in, resolved (links followed), for the room it lies in
# (ID.d: "object: file file \" lines; ID.aux: "/* FILE:LINE:NC */ extern int f (int);" lines,
# C a declaration, F a definition)
dfiles=() afiles=()
for f in "$work"/scan/*.args; do
	f=${f%.args}
	[[ -e $f.failed ]] && continue
	dfiles+=("$f.d")
	[[ ! -e $f.aux ]] || afiles+=("$f.aux")
done
idof='FNR == 1 { id = FILENAME; sub(/.*\//, "", id); sub(/\.[a-z]+$/, "", id) }'
awk "$idof"' { gsub(/\\$/, ""); for (i = 1; i <= NF; i++) if ($i !~ /:$/) print id "\t" $i }' \
	"${dfiles[@]}" > "$work/deps.tsv"
: > "$work/decls.tsv"
((${#afiles[@]} == 0)) || awk "$idof"'
	match($0, /^\/\* .*:[0-9]+:[NO]C \*\/ /) {
		head = substr($0, 4, RLENGTH - 10); decl = substr($0, RLENGTH + 1)
		if (decl ~ /^static /) next
		line = head; sub(/.*:/, "", line); sub(/:[0-9]+$/, "", head)
		if (!match(decl, /[A-Za-z_][A-Za-z0-9_]* \(/)) next
		print id "\t" head "\t" line "\t" substr(decl, RSTART, RLENGTH - 2)
	}' "${afiles[@]}" | sort -u -t$'\t' -k2,4 > "$work/decls.tsv"
{ cut -f2 "$work/deps.tsv"; cut -f2 "$work/decls.tsv"; } | sort -u > "$work/paths.txt"
xargs -d '\n' -r realpath -m -- < "$work/paths.txt" | paste "$work/paths.txt" - > "$work/real.tsv"
awk -F'\t' '$4 != "-" { print $4 }' "$work/plants.tsv" | while read -r o; do
	if [[ -e $o ]]; then nm -A -g --format=posix "$o"; fi
done >> "$work/nm.txt"

# findings: KIND (include, symbol, declaration)  WHERE (tree, plant)  what was found
awk -F'\t' -v src="$src" -v build="$build" -v plant="$plant" -v tally="$work/tally.txt" '
function roomof_path(p,   m) {
	if (index(p, plant "/") == 1) m = substr(p, length(plant) + 2)   # plant/ROOM/harness/ROOM/x.c
	else if (index(p, src "/harness/") == 1) m = substr(p, length(src) + 10)
	else return ""
	return index(m, "/") ? substr(m, 1, index(m, "/") - 1) : ""
}
function short(p) {   # a path as the findings name it: the source tree'"'"'s or the plants'"'"'
	if (index(p, plant "/") == 1) return "plant:" substr(p, length(plant) + 2)
	if (index(p, src "/") == 1) return substr(p, length(src) + 2)
	return p
}
function where(p) { return index(p, plant "/") == 1 ? "plant" : "tree" }
function whoelse(room, sym,   r, s) {   # the rooms not seen by room that define sym, or ""
	s = ""
	for (r in defs) if ((r, sym) in def) { if ((room, r) in sees) return ""; s = s (s == "" ? "" : ",") r }
	return s
}
FILENAME ~ /entries.tsv$/ { roomof[$1] = $2; file[$1] = $3; objroom[$4] = $2; next }
FILENAME ~ /plants.tsv$/  { roomof[$1] = $2; file[$1] = $3; if ($4 != "-") objroom[$4] = $2; next }
FILENAME ~ /sees.txt$/    { split($0, w, " "); sees[w[1], w[2]] = 1; next }
FILENAME ~ /visible.txt$/ { i = index($0, " "); visible[substr($0, 1, i - 1), substr($0, i + 1)] = 1; next }
FILENAME ~ /real.tsv$/    { real[$1] = $2; next }
FILENAME ~ /nm.txt$/ {
	split($0, w, " "); o = w[1]; sub(/:$/, "", o); r = objroom[o]
	if (r == "") next
	if (w[3] ~ /^[A-TV-Z]$/) { def[r, w[2]] = 1; defs[r] = 1 }
	else if (w[3] ~ /^[Uwv]$/) und[++nund] = r "\t" o "\t" w[2]
	next
}
FILENAME ~ /deps.tsv$/ {
	p = real[$2]
	if (index(p, src "/") != 1 || index(p, build "/") == 1) next
	if (where(file[$1]) == "tree") ndeps++
	if (!((roomof[$1], p) in visible))
		print "include\t" where(file[$1]) "\t" short(file[$1]) " (room " roomof[$1] ") reads " short(p) ", which its view does not hold: a relative path past the view, or another room'"'"'s private header"
	next
}
FILENAME ~ /decls.tsv$/ { decl[++nd] = $0; next }
END {
	for (i = 1; i <= nund; i++) {
		split(und[i], u, "\t")
		if ((u[1], u[3]) in def) continue
		who = whoelse(u[1], u[3])
		if (who != "") { print "symbol\t" where(u[2]) "\t" short(u[2]) " (room " u[1] ") needs " u[3] ", defined only in " who ", which " u[1] " does not see"; continue }
		if (where(u[2]) == "plant") continue
		for (r in defs) if ((r, u[3]) in def) { down++; break }   # defined in a room it sees
	}
	for (i = 1; i <= nd; i++) {
		split(decl[i], d, "\t")
		p = real[d[2]]; r = roomof_path(p)
		if (r == "" || (p, d[3], d[4]) in once) continue   # a header read through many views
		once[p, d[3], d[4]] = 1
		if (where(p) == "tree") ndecl++
		if ((r, d[4]) in def) continue
		who = whoelse(r, d[4])
		if (who != "") print "declaration\t" where(p) "\t" short(p) ":" d[3] " (room " r ") declares " d[4] ", defined only in " who ", which " r " does not see"
	}
	printf "%d %d %d\n", ndeps, down, ndecl > tally
}' "$work/entries.tsv" "$work/plants.tsv" "$work/sees.txt" "$work/visible.txt" "$work/real.tsv" \
	"$work/nm.txt" "$work/deps.tsv" "$work/decls.tsv" > "$work/findings.tsv"

# ---- verdict ----
rc=0
# the real tree: no finding outside the plants
real_findings=$(awk -F'\t' '$2 == "tree" { print $3 }' "$work/findings.tsv")
if [[ -n $real_findings ]]; then sed 's/^/rooms_leaks: /' <<< "$real_findings" >&2; rc=1; fi
read -r ndeps down ndecl < "$work/tally.txt"
# a reading that saw nothing cross would pass anything: some symbols must cross downward
if ((down == 0)); then echo "rooms_leaks: no symbol crosses from a room to one below: nm is misread" >&2; rc=1; fi
# the plants: each caught, and shown with what caught it
caught=0 planted=0
while IFS=$'\t' read -r id room file obj kind expect; do
	planted=$((planted + 1))
	case $kind in
	view) how=$(grep -F "$expect" "$work/scan/$id.err" | head -n1 || true)
	      [[ -e $work/scan/$id.failed ]] || how="" ;;
	include) how=$(grep "^include"$'\t' "$work/findings.tsv" | grep -F "plant:${file#$plant/} " | grep -F "reads $expect," | cut -f3 | head -n1 || true) ;;
	symbol) how=$(grep "^symbol"$'\t' "$work/findings.tsv" | grep -F "plant:${obj#$plant/} " | grep -F "needs $expect," | cut -f3 | head -n1 || true) ;;
	declaration) how=$(grep "^declaration"$'\t' "$work/findings.tsv" | grep -F "plant:${file#$plant/}:" | grep -F "declares $expect," | cut -f3 | head -n1 || true) ;;
	esac
	if [[ $kind != view && -e $work/scan/$id.failed ]]; then
		how=""
		echo "rooms_leaks: the plant ${file#$plant/} does not compile:" >&2
		cat "$work/scan/$id.err" >&2
	fi
	if [[ -n $how ]]; then
		caught=$((caught + 1))
		printf 'planted in %s: %s\n    caught: %s\n' "$room" "$(grep -v '^int lks_planted' "$file" | head -n1)" "${how#$work/}"
	else
		echo "rooms_leaks: planted in $room: $kind of $expect (${file#$plant/}) was not caught" >&2
		rc=1
	fi
done < "$work/plants.tsv"
for k in include symbol $( ((!aux)) || echo declaration) view; do
	cut -f5 "$work/plants.tsv" | grep -qx "$k" || { echo "rooms_leaks: no $k leak could be planted: the rooms are misread" >&2; rc=1; }
done
((aux)) || echo "rooms_leaks: $cc0 has no -aux-info: declarations not checked (their calls are)"
nrooms=$(wc -w <<< "$rooms")
if ((rc == 0)); then
	echo "rooms_leaks: $n sources of $nrooms rooms: $ndeps reads of the tree within their views, $down symbols crossing downward and none up, $ndecl declarations; $caught of $planted planted leaks caught"
fi
exit $rc
