#!/bin/bash
# Every sync failure is one line `cairn: sync: OBJECT: REASON` naming the
# dataset or snapshot and the real cause, from whichever side failed:
#  - the receiver refuses (the target has a newer snapshot of its own);
#  - the sender fails (a chunk of the source is missing from its store);
#  - the destination store does not exist;
#  - the link fails before anything is sent (ssh cannot connect);
#  - the destination dies in the middle of the stream (killed);
#  - the receiver's refusal spans two lines (destination has snapshots):
#    one sync line carries both, in order.
# Nothing on the target changes.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
A=$CAIRN_STORE B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
S=$TESTDIR/src
mkdir -p "$S/tank/a"
head -c 100000 /dev/urandom >"$S/tank/f"
head -c 100000 /dev/urandom >"$S/tank/a/f"
ok ca create -o source="$S/tank" tank
ok ca create -o source="$S/tank/a" tank/a
ok ca snapshot -r tank@1
ok ca sync -R tank "$B:bk"
# err_line OUT: the single "cairn: sync:" line of OUT
sync_lines() { echo "$1" | grep -c "^cairn: sync: "; }

# ---- the receiver refuses ----
ok cb snapshot bk/a@mine
head -c 1000 /dev/urandom >>"$S/tank/a/f"
ok ca snapshot -r tank@2
L0=$(cb list -H -p -t all -o name,guid)
out=$(ca sync -R tank "$B:bk" 2>&1) && fail "sync onto a target with a newer snapshot succeeded"
echo "$out" | grep -q "^cairn: sync: bk: receiving tank@2: bk/a: has 1 snapshot(s) newer than the stream's source" ||
	fail "the receiver's refusal is not reported with the snapshot and its reason: $out"
[ "$(sync_lines "$out")" = 1 ] || fail "not one sync error line: $out"
echo "$out" | grep -q "sync again" && fail "a refusal that retrying cannot fix says to run sync again: $out"
[ "$(cb list -H -p -t all -o name,guid)" = "$L0" ] || fail "a refused sync changed the target"
ok cb destroy bk/a@mine
ok ca sync -R tank "$B:bk"

# ---- the sender fails: a chunk of tank@3 is missing from the source store ----
touch "$TESTDIR/mark"
sleep 1
head -c 300000 /dev/urandom >"$S/tank/new"
ok ca snapshot -r tank@3
chunk=$(find "$A/.chunks" -type f -newer "$TESTDIR/mark" | head -1)
[ -n "$chunk" ] || fail "no chunk written by snapshot tank@3?"
mv "$chunk" "$TESTDIR/saved-chunk"
L0=$(cb list -H -p -t all -o name,guid)
out=$(ca sync -R tank "$B:bk" 2>&1) && fail "sync with a chunk missing at the source succeeded"
echo "$out" | grep -q "^cairn: sync: tank@3: .*missing" ||
	fail "the sender's failure is not reported with the snapshot and its reason: $out"
[ "$(sync_lines "$out")" = 1 ] || fail "not one sync error line: $out"
echo "$out" | grep -q "^cairn: recv:" && fail "the receiver's consequential error is shown as the cause: $out"
[ "$(cb list -H -p -t all -o name,guid)" = "$L0" ] || fail "a failed sync changed the target's snapshots"
mv "$TESTDIR/saved-chunk" "$chunk"
ok ca sync -R tank "$B:bk"
[ "$(cb list -H -p -t snapshot -r -o name,guid bk)" = "$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|bk|')" ] ||
	fail "sync did not converge after the chunk came back"

# ---- the destination store does not exist ----
out=$(ca sync -R tank "$TESTDIR/nostore:bk" 2>&1) && fail "sync into a missing store succeeded"
echo "$out" | grep -q "^cairn: sync: bk: cannot list the destination: .*no cairn store here" ||
	fail "a missing destination store is not reported as such: $out"
[ "$(sync_lines "$out")" = 1 ] || fail "not one sync error line: $out"

# ---- the link fails before anything is sent ----
printf '#!/bin/sh\necho "ssh: connect to host $1 port 22: Connection refused" >&2\nexit 255\n' >"$TESTDIR/deadssh"
chmod +x "$TESTDIR/deadssh"
out=$(CAIRN_SSH=$TESTDIR/deadssh ca sync -R tank "far:$B:bk" 2>&1) && fail "sync over a dead link succeeded"
echo "$out" | grep -q "^cairn: sync: bk: cannot list the destination: ssh: connect to host far port 22: Connection refused" ||
	fail "a dead link is not reported with ssh's reason: $out"

# ---- the destination dies in the middle of the stream ----
head -c 2000000 /dev/urandom >"$S/tank/a/big"
ok ca snapshot -r tank@4
# the ssh stand-in: recv gets 300000 bytes, then (the pipe held open) it
# is killed with SIGKILL; the holder goes too, so the sender sees EPIPE
K=$TESTDIR/k
cat >"$TESTDIR/killssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*)
	{ head -c 300000; echo \$BASHPID >"$K.hold"; exec sleep 120; } |
		sh -c "echo \\\$\\\$ >'$K.recv'; exec \$*" &
	while [ ! -e "$K.hold" ]; do sleep 0.05; done
	sleep 0.5
	kill -9 "\$(cat "$K.recv")" && echo killed >"$TESTDIR/killed"
	kill "\$(cat "$K.hold")"
	wait \$! 2>/dev/null
	exit \$? ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/killssh"
out=$(CAIRN_SSH=$TESTDIR/killssh CAIRN_REMOTE=$CAIRN ca sync -R tank "far:$B:bk" 2>&1) && fail "sync with a killed receiver succeeded"
[ -e "$TESTDIR/killed" ] || fail "the receiver was not killed"
echo "$out" | grep -q "^cairn: sync: bk: receiving tank@4: ended by signal 9" ||
	fail "a killed receiver is not reported as such: $out"
[ "$(sync_lines "$out")" = 1 ] || fail "not one sync error line: $out"
echo "$out" | grep -q "run sync again" || fail "a killed receiver: no hint to run sync again: $out"
ok ca sync -R tank "$B:bk"
[ "$(cb list -H -p -t snapshot -r -o name,guid bk)" = "$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|bk|')" ] ||
	fail "sync did not converge after the receiver was killed"

# ---- partial state on the target, and a refusal: no "run sync again" ----
# A cut receive leaves a token; then the target gets a snapshot of its own,
# none of the source's.  sync refuses it before it resumes anything (a
# refused sync changes nothing: the token stays, t1750), on every retry
# alike: sync must not suggest one.  (It used to resume the token first,
# and the receiver refused the full stream onto bk2@mine on two lines,
# which sync joined into one.)
ca send tank@4 >"$TESTDIR/full4" || fail "send tank@4"
head -c $(($(stat -c %s "$TESTDIR/full4") / 2)) "$TESTDIR/full4" | cb recv -s bk2 2>/dev/null &&
	fail "a cut receive succeeded"
tok=$(cb get -H -o value receive_resume_token bk2)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no resume token after the cut ($tok)"
ok cb snapshot bk2@mine
for try in 1 2; do
	out=$(ca sync tank "$B:bk2" 2>&1) && fail "try $try: resuming onto a dataset with snapshots succeeded"
	echo "$out" | grep -q "^cairn: sync: bk2: has snapshots (eg. bk2@mine) but none in common with tank; refusing" ||
		fail "try $try: the refusal is not reported: $out"
	echo "$out" | grep -q "sync again" && fail "try $try: a refusal says to run sync again: $out"
	[ "$(echo "$out" | wc -l)" = 1 ] || fail "try $try: more than one line: $out"
	[ "$(cb get -H -o value receive_resume_token bk2)" = "$tok" ] || fail "try $try: the refusal changed the token"
done
ok cb destroy bk2@mine
ok ca sync tank "$B:bk2"
[ "$(cb list -H -p -o guid bk2@4)" = "$(ca list -H -p -o guid tank@4)" ] ||
	fail "sync did not finish the partial receive once the refusal was gone"

# ---- the receiver's refusal on two lines: one sync line, in order ----
# bk3 has no snapshots of its own, so sync -R sends the tree whole; bk3/a
# is a copy of tank/a, but bk3/c has a snapshot of its own, and the
# receiver refuses the full stream onto it on two lines (zfs's words).
mkdir -p "$S/tank/c"
ok ca create -o source="$S/tank/c" tank/c
ok ca snapshot -r tank@5
ok cb create bk3
ca send tank/a@1 | ok cb recv bk3/a
ok cb create -o source="$S/tank/c" bk3/c
ok cb snapshot bk3/c@mine
L3=$(cb list -H -p -t all -r -o name,guid bk3/c)
out=$(ca sync -R tank "$B:bk3" 2>&1) && fail "sync -R onto bk3/c@mine succeeded"
[ "$(sync_lines "$out")" = 1 ] || fail "two-line refusal: not one sync line: $out"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "two-line refusal: more than one line: $out"
# nothing comes before it (the second line was printed first)
echo "$out" | grep -q "^cairn: sync: bk3: .*destination has snapshots (eg. bk3/c@mine); must destroy them to overwrite it$" ||
	fail "recv's two-line refusal is not one line, in order: $out"
# (the groups before tank/c's first one were committed: a sync's progress)
[ "$(cb list -H -p -t all -r -o name,guid bk3/c)" = "$L3" ] || fail "the refused sync changed bk3/c"
done_test
