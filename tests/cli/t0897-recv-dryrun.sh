#!/bin/bash
# recv -n (--dryrun), as zfs receive -n: the whole stream is read and
# verified and every check against the target is made, then nothing is
# kept.  Each dry run must leave the receiving store exactly as it was (the
# full catalog dump, the chunk and writer directories, the scratch
# directory under TMPDIR); a refusal must be the one the real receive
# gives (same exit code, same message); a dry run that succeeds must be
# followed by a real receive that succeeds.
. "$(dirname "$0")/lib.sh"
new_store
B=$TESTDIR/b
ok cairn -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
export TMPDIR=$TESTDIR/tmp
mkdir -p "$TMPDIR"

# state: everything a receive could change in store B.
state() {
	sqlite3 -readonly "$B/catalog.db" .dump || echo "catalog unreadable"
	(cd "$B" && find . -path ./catalog.db\* -prune -o -printf '%p %s %y\n' | LC_ALL=C sort)
	cb list -H -p -r -t all -o name,guid,createtxg,referenced,used,written 2>&1
}

# dry_ok WHAT STREAM "RECV OPTIONS" LINE...: recv -n -v succeeds, prints
# each LINE on stdout, and changes nothing.
dry_ok() {
	local what=$1 stream=$2 opts=$3 before after out line
	shift 3
	before=$(state)
	# shellcheck disable=SC2086
	out=$(cb recv -n -v $opts <"$stream") || fail "$what: dry run refused"
	after=$(state)
	[ "$before" = "$after" ] || {
		fail "$what: the dry run changed the store"
		diff <(echo "$before") <(echo "$after") | head -8 >&2
	}
	for line in "$@"; do
		grep -qxF -- "$line" <<<"$out" || fail "$what: no line '$line' in: $out"
	done
}

# dry_refused WHAT STREAM "RECV OPTIONS" PATTERN: recv -n exits non-zero
# with PATTERN and changes nothing; the real receive gives the same exit
# code and message.
dry_refused() {
	local what=$1 stream=$2 opts=$3 pat=$4 before after err rc err2 rc2
	before=$(state)
	# shellcheck disable=SC2086
	err=$(cb recv -n $opts <"$stream" 2>&1 >/dev/null)
	rc=$?
	after=$(state)
	[ $rc -ne 0 ] || fail "$what: dry run succeeded"
	grep -q -- "$pat" <<<"$err" || fail "$what: expected '$pat', got: $err"
	[ "$before" = "$after" ] || {
		fail "$what: the refused dry run changed the store"
		diff <(echo "$before") <(echo "$after") | head -8 >&2
	}
	# shellcheck disable=SC2086
	err2=$(cb recv $opts <"$stream" 2>&1 >/dev/null)
	rc2=$?
	# the first line is the error (a real -s receive may add a resume hint)
	[ $rc2 = $rc ] && [ "$(head -1 <<<"$err2")" = "$(head -1 <<<"$err")" ] ||
		fail "$what: real receive differs: exit $rc2 ($err2), dry run exit $rc ($err)"
}

SRC=$TESTDIR/src
mkdir -p "$SRC/sub" "$SRC/c"
for i in $(seq 1 20); do echo "file $i $RANDOM" >"$SRC/sub/f$i"; done
head -c 1000000 /dev/urandom >"$SRC/big.bin"
echo child >"$SRC/c/x"
ok ca create -o source="$SRC" tank
ok ca create -o source="$SRC/c" tank/c
for n in 1 2 3 4; do
	echo "round $n" >>"$SRC/sub/f$n"
	echo "child $n" >>"$SRC/c/x"
	ok ca snapshot -r "tank@$n"
	[ $n = 4 ] && cp -a "$SRC" "$TESTDIR/ref4"
done
S=$TESTDIR/streams
mkdir -p "$S"
ca send tank@1 >"$S/full1" || fail "send full1"
ca send tank@2 >"$S/full2" || fail "send full2"
ca send -i tank@1 tank@2 >"$S/inc12" || fail "send inc12"
ca send -i tank@3 tank@4 >"$S/inc34" || fail "send inc34"
ca send -I tank@1 tank@4 >"$S/I14" || fail "send I14"
ca send -R tank@3 >"$S/R3" || fail "send R3"
ca send -R -I tank@3 tank@4 >"$S/RI34" || fail "send RI34"

# ---- full and -R into datasets that do not exist ----
dry_ok "full" "$S/full1" dst "would receive full stream of tank@1 into dst@1"
cb list dst >/dev/null 2>&1 && fail "full: the dry run created dst"
dry_ok "-R" "$S/R3" rdst "would receive full stream of tank@1 into rdst@1" \
	"would receive full stream of tank/c@1 into rdst/c@1" \
	"would receive incremental stream of tank@3 into rdst@3" \
	"would receive incremental stream of tank/c@3 into rdst/c@3"
# --dryrun is the long form
before=$(state)
cb recv --dryrun dst <"$S/full1" || fail "--dryrun refused"
[ "$before" = "$(state)" ] || fail "--dryrun changed the store"

# ---- damaged streams: refused as the real receive refuses them ----
size=$(stat -c %s "$S/R3")
head -c $((size / 2)) "$S/R3" >"$S/R3.cut"
before=$(state)
err=$(cb recv -n -s rdst <"$S/R3.cut" 2>&1 >/dev/null) && fail "truncated: dry run succeeded"
grep -q "truncated" <<<"$err" || fail "truncated: expected 'truncated', got: $err"
[ "$before" = "$(state)" ] || fail "truncated: the dry run changed the store (or left resume state)"
# a byte flipped inside a chunk, and bytes after END
cp "$S/full1" "$S/full1.bad"
flip_byte "$S/full1.bad"
cmp -s "$S/full1" "$S/full1.bad" && fail "the stream was not changed"
before=$(state)
err=$(cb recv -n dst <"$S/full1.bad" 2>&1 >/dev/null) && fail "hostile: dry run succeeded"
grep -q "stream is invalid" <<<"$err" || fail "hostile: expected 'stream is invalid', got: $err"
[ "$before" = "$(state)" ] || fail "hostile: the dry run changed the store"
err2=$(cb recv dst <"$S/full1.bad" 2>&1 >/dev/null) && fail "hostile: real receive succeeded"
[ "$err2" = "$err" ] || fail "hostile: real receive says '$err2', dry run '$err'"
cb destroy -r dst >/dev/null 2>&1
cat "$S/full1" "$S/full1" >"$S/twice"
dry_refused "bytes after END" "$S/twice" dst "bytes follow the end of the stream"

# ---- incremental checks against an existing target ----
ok cb recv dst <"$S/full1"
dry_ok "incremental" "$S/inc12" dst "would receive incremental stream of tank@2 into dst@2"
dry_ok "-I" "$S/I14" dst "would receive incremental stream of tank@2 into dst@2" \
	"would receive incremental stream of tank@4 into dst@4"
dry_ok "same snapshot again" "$S/full1" dst
dry_refused "full onto snapshots" "$S/full2" dst "destination has snapshots (eg. dst@1)"
dry_refused "missing source" "$S/inc34" dst "incremental source .* is not on the target"
dry_refused "bad name" "$S/full1" 'dst/x%y' "invalid character"
ok cb snapshot dst@local
dry_refused "needs -F" "$S/inc12" dst "use -F to roll back"
dry_ok "-F" "$S/inc12" "-F dst" "would receive incremental stream of tank@2 into dst@2"
cb list dst@local >/dev/null || fail "-F: the dry run rolled back dst@local"
ok cb destroy dst@local

# ---- resume state (-s) ----
cb recv -s part <"$S/R3.cut" 2>/dev/null && fail "cut receive succeeded"
tok=$(cb get -H -o value receive_resume_token part)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no resume token after the cut ($tok)"
dry_refused "partial state of another stream" "$S/full1" "-s part" "contains partially-complete state"
ca send -t "$tok" >"$S/resume" || fail "send -t"
dry_ok "resumed" "$S/resume" "-s part" "would receive incremental stream of tank/c@3 into part/c@3"
[ "$(cb get -H -o value receive_resume_token part)" = "$tok" ] || fail "resume: the dry run changed the token"
ok cb recv -s part <"$S/resume"
[ "$(cb get -H -o value receive_resume_token part)" = - ] || fail "resume: token left after the real receive"

# ---- -A takes no -n (zfs: invalid option) ----
fails_with 2 "invalid option" cb recv -A -n part

# ---- a dry run, then the real receive succeeds ----
dry_ok "-I before the real one" "$S/I14" dst "would receive incremental stream of tank@4 into dst@4"
ok cb recv dst <"$S/I14"
dry_ok "-R before the real one" "$S/R3" rdst "would receive full stream of tank@1 into rdst@1"
ok cb recv rdst <"$S/R3"
dry_ok "-R -I before the real one" "$S/RI34" rdst \
	"would receive incremental stream of tank/c@4 into rdst/c@4"
ok cb recv rdst <"$S/RI34"
a=$(ca list -H -p -r -t snapshot -o name,guid tank | sed 's|^tank|X|')
b=$(cb list -H -p -r -t snapshot -o name,guid rdst | sed 's|^rdst|X|')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "-R: snapshots differ after the real receive"
cb restore dst@4 "$TESTDIR/r4" || fail "restore dst@4"
same_tree "$TESTDIR/ref4" "$TESTDIR/r4"

[ -z "$(ls -A "$TMPDIR")" ] || fail "dry runs left files in TMPDIR: $(ls -A "$TMPDIR")"
done_test
