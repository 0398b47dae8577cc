#!/bin/bash
# tier: stress
# kill -9 loop over recv and sync.  A `send -R -I` stream of 3 datasets x 5
# recursive snapshots is fed to `recv -s` up to a random byte and, once
# the receiver has consumed it and waits for more (it sleeps in read(0), or in poll before it),
# the receiver is killed with SIGKILL.  In the sync rounds the stream goes
# through an ssh stand-in that holds it open after N bytes; the receiver
# and then sync itself are killed.  After every kill the target holds
# whole groups only (every dataset or none); every few rounds a retry
# (sync -R, which resumes by token, or the same stream) must converge to
# the source's `list -H -p -t snapshot -r -o name,guid`, every snapshot
# restoring byte-identical; then the target starts over.
# make check: 20 rounds (~30 kills); CAIRN_LONG=1: 80 rounds (>100 kills).
# The test asserts that the kills happened.  SEED=n reproduces a run.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
echo "seed $SEED"
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca config chunk_size=65536

DS="tank tank/a tank/b"
SRC=$TESTDIR/src
REF=$TESTDIR/ref
for d in $DS; do mkdir -p "$SRC/$d"; head -c 100000 /dev/urandom >"$SRC/$d/base"; done
ok ca create -o source="$SRC/tank" tank
ok ca create -o source="$SRC/tank/a" tank/a
ok ca create -o source="$SRC/tank/b" tank/b
for k in 1 2 3 4 5; do
	for d in $DS; do head -c $((70000 + RANDOM)) /dev/urandom >"$SRC/$d/f$k"; done
	ok ca snapshot -r tank@$k
	for d in $DS; do mkdir -p "$REF/$k/$d" && cp -a "$SRC/$d/." "$REF/$k/$d/"; done
done
ca send -R tank@1 | cb recv bk || fail "initial recv -R"
S=$TESTDIR/stream
ca send -R -I @1 tank@5 >"$S" || fail "send -R -I"
len=$(stat -c %s "$S")
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|bk|')
mkdir -p "$TESTDIR/save"
cp -a "$B"/catalog.db* "$TESTDIR/save/"
reset_target() { rm -f "$B"/catalog.db*; cp -a "$TESTDIR/save"/catalog.db* "$B/"; }

# wait_file F: until F exists (at most 60 s); 1 if it never did
wait_file() {
	local i
	for i in $(seq 1 1200); do [ -e "$1" ] && return 0; sleep 0.05; done
	return 1
}
whole_groups() {
	local got k n
	got=$(cb list -H -p -t snapshot -r -o name bk)
	for k in 2 3 4 5; do
		n=$(echo "$got" | grep -c "@$k$")
		[ "$n" = 0 ] || [ "$n" = 3 ] || fail "$1: group @$k has $n of 3 snapshots"
	done
}
converge() {
	ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "$1: sync -R after the kills: $(cat "$TESTDIR/err")"
	local now
	now=$(cb list -H -p -t snapshot -r -o name,guid bk)
	[ "$now" = "$want" ] || {
		fail "$1: no convergence"
		diff <(echo "$want") <(echo "$now") | head -5 >&2
	}
}

# the ssh stand-in: a `recv` gets the first $CUT_N bytes, then a pipe held
# open; it leaves the receiver's pid in $CUT_DONE.recv and, once the bytes
# are through, the holder's pid in $CUT_DONE.hold
CUTSSH=$TESTDIR/cutssh
cat >"$CUTSSH" <<'SH'
#!/bin/bash
shift
case "$*" in
*"'recv'"*)
	{ head -c "$CUT_N"; echo $BASHPID >"$CUT_DONE.hold"; exec sleep 120; } |
		sh -c "echo \$\$ >'$CUT_DONE.recv'; exec $*" ;;
*) exec sh -c "$*" ;;
esac
SH
chmod +x "$CUTSSH"

rounds=20
[ -n "${CAIRN_LONG:-}" ] && rounds=80
kills_recv=0 kills_sync=0
for i in $(seq 1 "$rounds"); do
	n=$(($(((RANDOM * 32768 + RANDOM) % (len - 1))) + 1))
	if [ $((i % 2)) = 1 ]; then
		# recv -s fed n bytes of the stream
		rm -f "$TESTDIR/fifo" "$TESTDIR/wdone"
		mkfifo "$TESTDIR/fifo"
		"$CAIRN" -s "$B" recv -s bk <"$TESTDIR/fifo" >/dev/null 2>&1 &
		rp=$!
		(head -c "$n" "$S"; : >"$TESTDIR/wdone"; exec sleep 120) >"$TESTDIR/fifo" &
		wp=$!
		wait_file "$TESTDIR/wdone" || fail "round $i: the writer never finished"
		wait_reading "$rp" || true # a receiver already gone is judged below
		if kill -9 "$rp" 2>/dev/null; then kills_recv=$((kills_recv + 1)); fi
		wait "$rp" 2>/dev/null
		kill "$wp" 2>/dev/null
		wait "$wp" 2>/dev/null
	else
		# sync -R through the stand-in; the receiver, then sync, killed
		C=$TESTDIR/cdone
		rm -f "$C".*
		CUT_N=$n CUT_DONE=$C CAIRN_SSH=$CUTSSH CAIRN_REMOTE=$CAIRN \
			"$CAIRN" sync -R tank "localhost:$B:bk" >/dev/null 2>&1 &
		sp=$!
		if wait_file "$C.hold"; then
			rp=$(cat "$C.recv")
			wait_reading "$rp" || true # a receiver already gone is judged below
			if kill -9 "$rp" 2>/dev/null; then kills_recv=$((kills_recv + 1)); fi
		fi
		if kill -9 "$sp" 2>/dev/null; then kills_sync=$((kills_sync + 1)); fi
		wait "$sp" 2>/dev/null
		[ -e "$C.hold" ] && kill "$(cat "$C.hold")" 2>/dev/null
	fi
	whole_groups "round $i (cut at $n)"
	if [ $((i % 5)) = 0 ]; then
		converge "round $i"
		for d in $DS; do
			rm -rf "$TESTDIR/r"
			cb restore "${d/tank/bk}@5" "$TESTDIR/r" || fail "round $i: restore ${d/tank/bk}@5"
			same_tree "$REF/5/$d" "$TESTDIR/r"
		done
		reset_target
	fi
done
echo "$rounds rounds: $kills_recv receivers and $kills_sync syncs killed with SIGKILL"
[ $((kills_recv + kills_sync)) -ge $((rounds * 5 / 4)) ] ||
	fail "only $kills_recv + $kills_sync kills in $rounds rounds"
[ "$kills_sync" -ge $((rounds / 2 - 1)) ] || fail "sync was killed only $kills_sync times"
converge "end"
done_test
