#!/bin/bash
# recv stopped by SIGTERM, SIGINT or SIGHUP while it waits for more of the
# stream.  With -s it saves where it stopped (well before any periodic
# checkpoint: the stream has ~60 chunks, a checkpoint comes every 1,024),
# says "interrupted" and how to resume, and exits 1 without waiting for the
# stream to end; `send -t` then sends less than the whole stream and the
# snapshot restores faithfully.  Without -s the store is left as it was.
# A signal ignored by whoever started the receiver (nohup) stays ignored.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca config chunk_size=65536
use_xattr_dir
SRC=$XDIR/src
mkdir -p "$SRC/d"
head -c 4000000 /dev/urandom >"$SRC/big"
for i in $(seq 1 20); do echo "small $i" >"$SRC/d/f$i"; done
setfattr -n user.note -v kept "$SRC/d/f1"
ln "$SRC/d/f2" "$SRC/d/f2.link"
ok ca create -o source="$SRC" ds
ok ca snapshot ds@1
ca send ds@1 >"$TESTDIR/full" || fail "send"
FULL=$(stat -c %s "$TESTDIR/full")
token() { cb get -H -o value receive_resume_token "$1" 2>/dev/null; }

# stop SIG TARGET FLAGS: feeds 60% of the stream to `recv FLAGS TARGET`,
# holds the pipe open, and sends SIG once the receiver waits for more.
# The receiver must exit by itself while the pipe is still open.
stop() {
	local sig=$1 target=$2 flags=$3
	rm -f "$TESTDIR/fifo"
	mkfifo "$TESTDIR/fifo"
	# A script's background job starts with SIGINT ignored: reset it.
	# shellcheck disable=SC2086
	env --default-signal=INT "$CAIRN" -s "$B" recv $flags "$target" <"$TESTDIR/fifo" \
		2>"$TESTDIR/err" &
	local pid=$!
	exec 3>"$TESTDIR/fifo"
	head -c $((FULL * 6 / 10)) "$TESTDIR/full" >&3
	wait_reading $pid || fail "receiver $pid gone before the signal"
	kill -"$sig" $pid || fail "$sig: receiver gone before the signal"
	local gone=
	for _ in $(seq 1 200); do
		kill -0 $pid 2>/dev/null || { gone=1; break; }
		sleep 0.05
	done
	exec 3>&- # a receiver that ignored the signal sees the stream end
	wait $pid
	RC=$?
	[ -n "$gone" ] || fail "$sig: the receiver went on reading after the signal"
}

n=0
for sig in TERM INT HUP; do
	n=$((n + 1))
	stop $sig "dst$n" -s
	[ $RC = 1 ] || fail "$sig: exit $RC, expected 1 ($(cat "$TESTDIR/err"))"
	grep -q "cairn: recv: dst$n: interrupted" "$TESTDIR/err" || fail "$sig: stderr: $(cat "$TESTDIR/err")"
	grep -q "partial state kept; resume with: cairn send -t " "$TESTDIR/err" ||
		fail "$sig: no resume hint: $(cat "$TESTDIR/err")"
	t=$(token "dst$n")
	[ -n "$t" ] && [ "$t" != - ] || fail "$sig: no token after the signal"
	[ "$(cb get -H -o value inconsistent "dst$n")" = on ] || fail "$sig: not inconsistent while partial"
	cb list -H -o name "dst$n@1" >/dev/null 2>&1 && fail "$sig: a partial snapshot is visible"
	# what was received before the signal is not sent again
	rs=$(ca send -t "$t" | wc -c)
	[ "$rs" -lt $((FULL * 6 / 10)) ] || fail "$sig: resume stream is $rs of $FULL bytes"
	ca send -t "$t" | cb recv -s "dst$n" 2>"$TESTDIR/err" || fail "$sig: resume: $(cat "$TESTDIR/err")"
	[ "$(token "dst$n")" = - ] || fail "$sig: token after the resume"
	[ "$(cb list -H -p -o guid "dst$n@1")" = "$(ca list -H -p -o guid ds@1)" ] || fail "$sig: guid"
	cb restore "dst$n@1" "$XDIR/r$n" || fail "$sig: restore"
	same_tree "$SRC" "$XDIR/r$n"
	echo "$sig: stopped at 60% of $FULL bytes, resumed with $rs"
done

# without -s: nothing kept, the target does not exist
stop TERM plain ""
[ $RC = 1 ] || fail "plain: exit $RC"
grep -q "cairn: recv: plain: interrupted" "$TESTDIR/err" || fail "plain: stderr: $(cat "$TESTDIR/err")"
grep -q "resume with" "$TESTDIR/err" && fail "plain: a resume hint without -s"
cb list -H -o name plain >/dev/null 2>&1 && fail "recv without -s left the dataset it created"
# A signal ignored by whoever started the receiver (nohup) stays ignored:
# it receives the whole stream.  Sent while it waits for more, as above.
rm -f "$TESTDIR/fifo"
mkfifo "$TESTDIR/fifo"
env --ignore-signal=HUP "$CAIRN" -s "$B" recv -s ignored <"$TESTDIR/fifo" 2>"$TESTDIR/err" &
pid=$!
exec 3>"$TESTDIR/fifo"
head -c $((FULL * 6 / 10)) "$TESTDIR/full" >&3
wait_reading $pid || fail "receiver $pid gone before the signal"
kill -HUP $pid || fail "ignored HUP: receiver gone before the signal"
tail -c +$((FULL * 6 / 10 + 1)) "$TESTDIR/full" >&3 2>/dev/null
exec 3>&-
wait $pid || fail "an ignored SIGHUP stopped the receive: $(cat "$TESTDIR/err")"
[ "$(cb list -H -p -o guid ignored@1)" = "$(ca list -H -p -o guid ds@1)" ] || fail "ignored HUP: guid"
[ "$(token ignored)" = - ] || fail "ignored HUP: a token after a whole stream"

# sync whose receiver is stopped by SIGTERM halfway through: sync says the
# partial state is kept and to run sync again, and the next sync (which
# resumes by token) converges.  The link (an ssh stand-in) feeds the
# receiver 60% of the stream, waits until it asks for more, and sends it
# SIGTERM; every other command passes untouched.
L=$TESTDIR/link
mkdir -p "$L"
cat >"$TESTDIR/stopssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*)
	rm -f "$L/fifo"; mkfifo "$L/fifo"
	sh -c "exec \$*" <"$L/fifo" &
	rp=\$!
	exec 3>"$L/fifo"
	head -c $((FULL * 6 / 10)) >&3
	for _ in \$(seq 1 1200); do
		case "\$(cat /proc/\$rp/syscall 2>/dev/null)" in
		"0 0x0 "* | "7 "*) echo waiting >"$L/waited"; break ;;
		esac
		sleep 0.05
	done
	kill -TERM \$rp && echo sent >"$L/killed"
	# it must stop by itself while the pipe is still open
	for _ in \$(seq 1 200); do
		kill -0 \$rp 2>/dev/null || break
		sleep 0.05
	done
	kill -0 \$rp 2>/dev/null && echo stuck >"$L/stuck"
	exec 3>&-
	wait \$rp
	;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/stopssh"
export CAIRN_REMOTE=$CAIRN
CAIRN_SSH=$TESTDIR/stopssh ca sync ds "localhost:$B:synced" >/dev/null 2>"$TESTDIR/err"
rc=$?
[ -e "$L/waited" ] || fail "sync: the receiver never waited for input"
[ -e "$L/killed" ] || fail "sync: the receiver was never sent SIGTERM"
[ -e "$L/stuck" ] && fail "sync: the receiver went on reading after SIGTERM"
[ $rc = 1 ] || fail "sync: exit $rc after its receiver was stopped: $(cat "$TESTDIR/err")"
grep -q "synced: interrupted" "$TESTDIR/err" || fail "sync: stderr: $(cat "$TESTDIR/err")"
grep -q "partial state is kept: run sync again to resume" "$TESTDIR/err" ||
	fail "sync: no retry hint: $(cat "$TESTDIR/err")"
t=$(token synced)
[ -n "$t" ] && [ "$t" != - ] || fail "sync: no token after the stopped receive"
cat >"$TESTDIR/plainssh" <<'SH'
#!/bin/bash
shift
exec sh -c "$*"
SH
chmod +x "$TESTDIR/plainssh"
CAIRN_SSH=$TESTDIR/plainssh ca sync ds "localhost:$B:synced" 2>"$TESTDIR/err" ||
	fail "sync again: $(cat "$TESTDIR/err")"
[ "$(token synced)" = - ] || fail "sync again: a token is left"
[ "$(cb list -H -p -o guid synced@1)" = "$(ca list -H -p -o guid ds@1)" ] || fail "sync again: guid"
cb restore synced@1 "$XDIR/rs" || fail "restore synced@1"
same_tree "$SRC" "$XDIR/rs"
ok cb verify
done_test
