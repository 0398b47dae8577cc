#!/bin/bash
# Resumable receive: the receiver is interrupted at random offsets (EOF
# after N bytes, or kill -9 after N bytes) and resumed with send -t until
# the snapshot is complete; it must then restore byte-identically.  While
# partial: inconsistent=on, a receive_resume_token, no snapshot visible.
# Completed chunks are not sent again.  recv -A discards partial state and
# the dataset the partial receive created.  kill -9 hits the receiver only
# once it has consumed every byte written to it (it sleeps in read(0), or in poll before it).
# SEED=n reproduces a run.
. "$(dirname "$0")/lib.sh"
# a private copy of the binary: a concurrent rebuild must not hit this test
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
echo "seed $SEED"
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca config chunk_size=65536 # ~100 chunks: fine-grained resume points

SRC=$TESTDIR/src
mkdir -p "$SRC/d"
head -c 6000000 /dev/urandom >"$SRC/big"
for i in $(seq 1 30); do echo "small $i" >"$SRC/d/f$i"; done
ok ca create -o source="$SRC" ds
ok ca snapshot ds@1
cp -a "$SRC" "$TESTDIR/ref1"
ca send ds@1 >"$TESTDIR/full"
FULL=$(stat -c %s "$TESTDIR/full")

token() { cb get -H -o value receive_resume_token "$1" 2>/dev/null; }
KILLS=0
rnd() { echo $(((RANDOM * 32768 + RANDOM) % $1)); } # 0..$1-1

# interrupt MODE N TARGET CMD...: feeds the first N bytes of CMD's output
# to `recv -s TARGET`; MODE eof closes the pipe, MODE kill leaves it open
# and kill -9s the receiver.
interrupt() {
	local mode=$1 n=$2 target=$3
	shift 3
	if [ "$mode" = eof ]; then
		"$@" 2>/dev/null | head -c "$n" | cb recv -s "$target" >/dev/null 2>"$TESTDIR/err"
		local rc=$?
		[ $rc = 1 ] || fail "interrupted recv at $n exits $rc: $(cat "$TESTDIR/err")"
		grep -q "truncated\|invalid\|not a cairn send stream\|Broken pipe" "$TESTDIR/err" ||
			fail "interrupted recv at $n: $(cat "$TESTDIR/err")"
	else
		# The receiver is the cairn process itself (not a shell function's
		# subshell), so kill -9 hits it.  It is killed once the writer has
		# put all N bytes into the fifo and the receiver sleeps in read(0):
		# everything sent has been consumed.
		rm -f "$TESTDIR/fifo" "$TESTDIR/wdone"
		mkfifo "$TESTDIR/fifo"
		"$CAIRN" -s "$B" recv -s "$target" <"$TESTDIR/fifo" >/dev/null 2>&1 &
		local rp=$!
		( "$@" 2>/dev/null | head -c "$n"; : >"$TESTDIR/wdone"; exec sleep 60 ) >"$TESTDIR/fifo" &
		local fp=$!
		local i=0
		while [ ! -e "$TESTDIR/wdone" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
		[ -e "$TESTDIR/wdone" ] || fail "writer of $n bytes never finished"
		wait_reading "$rp" || true # a receiver already gone is judged below
		if kill -9 "$rp" 2>/dev/null; then
			KILLS=$((KILLS + 1))
		else
			fail "receiver gone before the kill at $n (it should wait for more input)"
		fi
		wait "$rp" 2>/dev/null
		kill "$fp" 2>/dev/null
		wait "$fp" 2>/dev/null
	fi
}

# partial_ok TARGET SNAP N SIZE: the visible state of a receive of
# TARGET@SNAP cut after N of SIZE bytes.  Returns 1 when the cut came
# after the last group's end (inside the 45-byte END record): the group
# was whole and verified, so it committed, and the loop is done.
partial_ok() {
	local t
	t=$(token "$1")
	if [ -n "$t" ] && [ "$t" != - ]; then
		[ "$(cb get -H -o value inconsistent "$1")" = on ] || fail "$1: token but inconsistent=$(cb get -H -o value inconsistent "$1")"
	fi
	cb list -H -o name "$1@$2" >/dev/null 2>&1 || return 0
	[ "$3" -gt $(($4 - 45)) ] || fail "$1@$2: a partial snapshot is visible (cut at $3 of $4)"
	[ "$t" = - ] || fail "$1@$2 committed, but a token is left: $t"
	return 1
}

# resume_loop TARGET SNAP FROM_ARGS...: interrupt and resume until done
resume_loop() {
	local target=$1 snap=$2
	shift 2
	local rounds=0 sent=0 done_= log=
	while [ -z "$done_" ] && [ $rounds -lt 40 ]; do
		rounds=$((rounds + 1))
		local t cmd
		t=$(token "$target")
		if [ -n "$t" ] && [ "$t" != - ]; then
			cmd=(ca send -t "$t")
		else
			cmd=(ca send "$@" "$snap")
		fi
		local size
		size=$("${cmd[@]}" | wc -c)
		if [ -n "$t" ] && [ "$t" != - ]; then
			[ "$size" -le "$PREV_SIZE" ] || fail "round $rounds: resumed stream ($size bytes) not smaller than the previous ($PREV_SIZE)"
		fi
		PREV_SIZE=$size
		# the last rounds run to completion so the loop ends
		if [ $rounds -ge 10 ] || { [ $rounds -gt 3 ] && [ $((RANDOM % 4)) = 0 ]; }; then
			"${cmd[@]}" | cb recv -s "$target" 2>"$TESTDIR/err" || fail "round $rounds: complete receive failed: $(cat "$TESTDIR/err")"
			sent=$((sent + size))
			done_=1
		else
			local n mode=eof
			n=$(($(rnd $((size - 1))) + 1))
			[ $((RANDOM % 3)) = 0 ] && mode=kill
			interrupt $mode $n "$target" "${cmd[@]}"
			sent=$((sent + n))
			log="$log $mode@$n/$size"
			partial_ok "$target" "${snap#*@}" "$n" "$size" || done_=1
		fi
	done
	echo "$target: $rounds rounds, $sent stream bytes in all; interruptions:$log"
}

# ---- a full stream, interrupted and resumed ----
PREV_SIZE=$FULL
resume_loop dst ds@1
[ "$(cb list -H -p -o guid dst@1)" = "$(ca list -H -p -o guid ds@1)" ] || fail "guid after resume"
[ "$(cb list -H -p -o creation dst@1)" = "$(ca list -H -p -o creation ds@1)" ] || fail "creation after resume"
[ "$(cb get -H -o value inconsistent dst)" = off ] || fail "inconsistent after completion"
[ "$(token dst)" = - ] || fail "token after completion: $(token dst)"
cb restore dst@1 "$TESTDIR/r1" || fail "restore dst@1"
same_tree "$TESTDIR/ref1" "$TESTDIR/r1"
cmp -s "$SRC/big" "$TESTDIR/r1/big" || fail "big differs"

# a resumed stream does not resend what was received: after a cut at 60%,
# the resume stream is at most ~45% of the full one
head -c $((FULL * 6 / 10)) "$TESTDIR/full" | cb recv -s half >/dev/null 2>&1
t=$(token half)
[ -n "$t" ] && [ "$t" != - ] || fail "no token after a cut at 60%"
rs=$(ca send -t "$t" | wc -c)
[ "$rs" -lt $((FULL * 45 / 100)) ] || fail "resume stream after 60% is $rs of $FULL bytes"
out=$(ca send -t "$t" | cb recv -v -s half 2>&1) || fail "resume half: $out"
cb restore half@1 "$TESTDIR/rh" && cmp -s "$SRC/big" "$TESTDIR/rh/big" || fail "half@1 differs"

# ---- an incremental stream, interrupted and resumed ----
KILLS_FULL=$KILLS
head -c 3000000 /dev/urandom >"$SRC/big2"
echo changed >>"$SRC/d/f3"
ok ca snapshot ds@2
cp -a "$SRC" "$TESTDIR/ref2"
PREV_SIZE=$(ca send -i @1 ds@2 | wc -c)
resume_loop dst ds@2 -i @1
[ "$(cb list -H -p -o guid dst@2)" = "$(ca list -H -p -o guid ds@2)" ] || fail "guid of @2"
cb restore dst@2 "$TESTDIR/r2" || fail "restore dst@2"
same_tree "$TESTDIR/ref2" "$TESTDIR/r2"
cb restore dst@1 "$TESTDIR/r1b" || fail "restore dst@1 after the incremental"
same_tree "$TESTDIR/ref1" "$TESTDIR/r1b"
[ "$(token dst)" = - ] || fail "token after the incremental completed"

# ---- recv -A discards partial state ----
head -c $((FULL / 2)) "$TESTDIR/full" | cb recv -s gone >/dev/null 2>&1
t=$(token gone)
[ -n "$t" ] && [ "$t" != - ] || fail "no partial state to abort"
ok cb recv -A gone
# the dataset the partial receive created goes with it (no empty dataset left)
cb list -H -o name gone >/dev/null 2>&1 && fail "recv -A left the dataset the partial receive created"
fails_with 1 "no partial receive\|does not" cb recv -s gone < <(ca send -t "$t")
cb list -H -o name gone >/dev/null 2>&1 && fail "BUG: a refused resume stream created gone (token $(token gone))"
# on a dataset that existed before, recv -A keeps the dataset
ok cb create pre
head -c $((FULL / 2)) "$TESTDIR/full" | cb recv -s pre >/dev/null 2>&1
[ "$(cb get -H -o value inconsistent pre)" = on ] || fail "no partial state on pre"
ok cb recv -A pre
[ "$(token pre)" = - ] || fail "token after recv -A: $(token pre)"
[ "$(cb get -H -o value inconsistent pre)" = off ] || fail "inconsistent after recv -A"
cb recv -A gone >/dev/null 2>&1
fails_with 1 "no partial receive" cb recv -A gone
fails_with 1 "no partial receive\|not exist" cb recv -A nosuch
ca send ds@1 | cb recv gone || fail "a full receive after recv -A"
cb restore gone@1 "$TESTDIR/rg" && cmp -s "$SRC/big" "$TESTDIR/rg/big" || fail "gone@1 differs"

# an interrupted receive without -s keeps nothing
head -c $((FULL / 2)) "$TESTDIR/full" | cb recv plain >/dev/null 2>&1
[ "$(token plain)" = - ] || [ -z "$(token plain)" ] || fail "recv without -s kept a token"
cb list -H -o name plain >/dev/null 2>&1 && fail "recv without -s left the dataset it created"

# the partial state of a resumable receive survives other commands on the store
head -c $((FULL / 3)) "$TESTDIR/full" | cb recv -s keep >/dev/null 2>&1
t=$(token keep)
ok cb list -t all >/dev/null
ca send ds@1 | cb recv other || fail "another receive"
[ "$(token keep)" = "$t" ] || fail "another receive changed keep's token"
ca send -t "$t" | cb recv -s keep || fail "resume keep"

# a kill -9 in the middle of a receive certainly happens once here: the
# receiver keeps nothing half-done and the same stream then completes
k0=$KILLS
interrupt kill $((FULL / 2)) killed ca send ds@1
[ "$KILLS" -gt "$k0" ] || fail "the receiver was not killed"
partial_ok killed 1 $((FULL / 2)) "$FULL" || fail "killed@1 committed from half a stream"
t=$(token killed)
if [ -n "$t" ] && [ "$t" != - ]; then
	ca send -t "$t" | cb recv -s killed || fail "resume after kill -9"
else
	ca send ds@1 | cb recv -s killed || fail "receive again after kill -9"
fi
cb restore killed@1 "$TESTDIR/rk" || fail "restore killed@1"
cmp -s "$SRC/big" "$TESTDIR/rk/big" || fail "killed@1 differs"
echo "kill -9 of recv: $KILLS in all"
done_test
