#!/bin/bash
# A stream whose data is encrypted otherwise than the target it goes into
# - a plain (not raw) incremental onto a raw-received encrypted copy, or
# a raw one onto a plain copy - is refused when its first
# snapshot record names the target, before any chunk is stored, saying
# why (not as chunks "neither sent nor present" once all had come), and
# with -s it leaves no partial state: chunk ids are keyed per encryption
# root, so no resume of it could ever complete (sync then resumed such a
# state in every run and failed every time).  A cut one likewise.  sync
# (raw) then converges, with full fidelity once the key is loaded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
second_store
ok ca config chunk_size=65536
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
mkdir -p "$SRC/kid" && head -c 300000 /dev/urandom >"$SRC/kid/kf"
ok mkroot tank "$PASS1" -o source="$SRC"
ok ca create tank/kid
ok ca snapshot -r tank@1
cp -a "$SRC" "$XDIR/copy1"
head -c 2000000 /dev/urandom >"$SRC/new.bin"
echo changed >>"$SRC/kid/kf"
ok ca snapshot -r tank@2
cp -a "$SRC" "$XDIR/copy2"

nchunks() { find "$B/.chunks" -type f | wc -l; }
token() { cb get -H -o value receive_resume_token "$1"; }
# refused STREAMFILE TARGET PATTERN [recv args]: recv -s of the stream is
# refused with PATTERN, stores no chunk, and leaves no partial state and
# no new snapshot.
refused() {
	local f=$1 t=$2 pat=$3 before snaps
	shift 3
	before=$(nchunks)
	snaps=$(snaps "$t")
	fails_with 1 "$pat" cb recv -s "$@" "$t" <"$f"
	[ "$(token "$t")" = - ] || fail "$f into $t left partial state: $(token "$t")"
	[ "$(nchunks)" = "$before" ] || fail "$f into $t stored chunks before the refusal"
	[ "$(snaps "$t")" = "$snaps" ] || fail "$f into $t changed the snapshots: $(snaps "$t")"
}

ok ca send -w -R tank@1 >"$TESTDIR/raw1"
ok cb recv bk <"$TESTDIR/raw1"
ok ca send -i @1 tank@2 >"$TESTDIR/plain-i"
half=$(($(stat -c %s "$TESTDIR/plain-i") / 2))
head -c "$half" "$TESTDIR/plain-i" >"$TESTDIR/plain-i-cut"
why="bk: cannot receive unencrypted data below encryption root bk"
refused "$TESTDIR/plain-i" bk "$why"
refused "$TESTDIR/plain-i-cut" bk "$why"
refused "$TESTDIR/plain-i" bk "$why" -F
printf '%s\n' "$PASS1" | ok cb load-key bk
refused "$TESTDIR/plain-i" bk "$why"
ok cb unload-key bk

# the converse: a raw incremental onto a plain copy
ok ca send tank@1 >"$TESTDIR/plain1"
ok cb recv plaincopy <"$TESTDIR/plain1"
ok ca send -w -i @1 tank@2 >"$TESTDIR/raw-i"
refused "$TESTDIR/raw-i" plaincopy "plaincopy: exists unencrypted; an encrypted (raw) stream"

# sync (raw) converges in one run; full fidelity with the key
ca sync -R tank "$B:bk" >/dev/null 2>"$TESTDIR/err" || fail "sync: $(cat "$TESTDIR/err")"
[ "$(snaps bk)" = "bk@1 bk@2 bk/kid@1 bk/kid@2 " ] || fail "after sync: $(snaps bk)"
printf '%s\n' "$PASS1" | ok cb load-key bk
for s in 1 2; do
	ok cb restore "bk@$s" "$XDIR/r$s"
	ok cb restore "bk/kid@$s" "$XDIR/k$s"
	same_tree "$XDIR/copy$s" "$XDIR/r$s"
	same_tree "$XDIR/copy$s/kid" "$XDIR/k$s"
done
ok cb verify >/dev/null
cb unload-key -a >/dev/null

# A -R stream whose renames swap an encrypted and a plain dataset's names:
# before its first commit a name is still the other dataset, so the check
# waits for the renames (a raw -R stream onto its own raw copy is received
# by a dry run, cut and resumed, and by sync, each name as on the source).
M=$XDIR/mix
mkdir -p "$M/enc" "$M/pl"
head -c 300000 /dev/urandom >"$M/enc/a"
head -c 300000 /dev/urandom >"$M/pl/a"
ok ca create -o source="$M" mix
ok mkroot mix/enc "$PASS1" -o source="$M/enc"
ok ca create -o source="$M/pl" mix/pl
ok ca snapshot -r mix@1
ca send -w -R mix@1 | ok cb recv mx
ok ca rename mix/enc mix/tmp
ok ca rename mix/pl mix/enc
ok ca rename mix/tmp mix/pl
head -c 2000000 /dev/urandom >"$M/enc/b"
head -c 2000000 /dev/urandom >"$M/pl/b"
ok ca snapshot -r mix@2
ca send -w -R -I @1 mix@2 >"$TESTDIR/swap"
ok cb recv -n mx <"$TESTDIR/swap"
head -c $(($(stat -c %s "$TESTDIR/swap") * 2 / 3)) "$TESTDIR/swap" | cb recv -s mx 2>/dev/null &&
	fail "a cut -R stream was received"
tok=$(token mx)
case $tok in 3-*) ;; *) fail "the cut -R stream left no partial state: $tok" ;; esac
ca send -t "$tok" | ok cb recv -s mx
a=$(ca list -H -o name,guid,encryption -r mix | sed 's/^mix//')
b=$(cb list -H -o name,guid,encryption -r mx | sed 's/^mx//')
[ "$a" = "$b" ] || fail "the swapped names differ: $(echo "$b" | tr '\n' ' ')"
ok ca snapshot -r mix@3
ca sync -R mix "$B:mx" >/dev/null 2>"$TESTDIR/err" || fail "sync of the swap: $(cat "$TESTDIR/err")"
[ "$(snaps mx/enc)" = "mx/enc@1 mx/enc@2 mx/enc@3 " ] || fail "after sync: $(snaps mx/enc)"
done_test
