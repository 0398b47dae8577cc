#!/bin/bash
# unload-key refuses while a running command uses the key, as zfs refuses
# unload-key of a busy dataset ("Key unload error: ... is busy"): a plain
# send (which decrypts) still running said "unloaded", keystatus turned
# unavailable, and the send went on writing decrypted data with the key it
# held.  Once the command ends (or is killed) the same unload-key works.
# The mount keeps its own rule (t1354): it checks the keyring on every read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 20000000 /dev/urandom >"$SRC/big"
ok mkroot enc "$PASS1" -o compression=off -o source="$SRC"
ok cairn snapshot enc@1
ok mkroot other "$PASS2" -o source="$SRC"

# start_send: a plain send of enc@1 into a FIFO read as fd 4; once its
# first bytes arrived it holds the key, and it blocks on the full pipe
P=$TESTDIR/pipe
start_send() {
	mkfifo "$P"
	"$CAIRN" send enc@1 >"$P" &
	SEND=$!
	exec 4<"$P"
	rm -f "$P"
	head -c 1000 <&4 >/dev/null || fail "no output from the send"
}

# while the send runs: refused, exit 1, the key stays loaded
start_send
fails_with 1 "enc: key is busy" cairn unload-key enc
[ "$(keystatus enc)" = available ] || fail "refused unload-key unloaded the key"
out=$(cairn unload-key -a 2>&1) && fail "unload-key -a with a busy key succeeded: $out"
echo "$out" | grep -q "1 / 2 keys unloaded" || fail "unload-key -a count with a busy key: $out"
[ "$(keystatus enc)" = available ] || fail "unload-key -a unloaded the busy key"
[ "$(keystatus other)" = unavailable ] || fail "unload-key -a left the idle key"
# the send finishes with the key, and then the same command works
cat <&4 >/dev/null
exec 4<&-
wait "$SEND" || fail "the send failed"
ok cairn unload-key enc
[ "$(keystatus enc)" = unavailable ] || fail "unload-key after the send"

# a killed command leaves no lock behind
printf '%s\n' "$PASS1" | ok cairn load-key enc
start_send
fails_with 1 "enc: key is busy" cairn unload-key enc
kill -9 "$SEND"
exec 4<&-
wait "$SEND" 2>/dev/null
ok cairn unload-key enc
[ "$(keystatus enc)" = unavailable ] || fail "unload-key after a killed send"
done_test
