#!/bin/bash
# tier: stress
# kill -9 during change-key never loses the key: change-key rewraps in one
# catalog transaction, so after every kill the key loads (load-key -n) from
# whatever keylocation the catalog now names, and every snapshot restores.
# Asserts that kills really landed while change-key ran.  CAIRN_LONG=1
# runs more rounds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC" && head -c 200000 /dev/urandom >"$SRC/f" && echo x >"$SRC/g"
printf '%s\n' "passphrase number 0" >"$TESTDIR/k0"
ok cairn create -o encryption=on -o keyformat=passphrase -o keylocation="file://$TESTDIR/k0" \
	-o source="$SRC" tank
ok cairn snapshot tank@one

# calibrate the kill delays on one uninterrupted run (its time decides
# only where the kills land; nothing is asserted about it)
printf '%s
' "passphrase number c" >"$TESTDIR/kc"
t0=$(date +%s%N)
CAIRN_TEST_SCRYPT_LOGN=14 "$CAIRN" change-key -o keylocation="file://$TESTDIR/kc" tank || fail "change-key"
span=$((($(date +%s%N) - t0) / 1000000 + 1))
rounds=16
[ "${CAIRN_LONG:-}" = 1 ] && rounds=150
killed=0 finished=0
for i in $(seq 1 $rounds); do
	printf '%s\n' "passphrase number $i" >"$TESTDIR/k$i"
	# a costlier scrypt for the new wrapping widens the window to hit
	CAIRN_TEST_SCRYPT_LOGN=14 "$CAIRN" change-key -o keylocation="file://$TESTDIR/k$i" tank \
		>/dev/null 2>&1 &
	pid=$!
	ms=$((RANDOM % (span * 5 / 4)))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	rc=$?
	if [ $rc = 137 ]; then
		killed=$((killed + 1))
	elif [ $rc = 0 ]; then
		finished=$((finished + 1))
	else
		fail "round $i: change-key exit $rc"
	fi
	loc=$(cairn get -H -o value keylocation tank)
	cairn load-key -n tank >/dev/null 2>&1 || fail "round $i: key lost (keylocation $loc, change-key exit $rc)"
done
echo "change-key: $killed killed, $finished finished of $rounds"
[ $killed -ge 2 ] || fail "kill -9 landed during change-key only $killed times"
# and an uninterrupted change-key still works after all that
printf '%s
' "the final passphrase" >"$TESTDIR/kfinal"
ok cairn change-key -o keylocation="file://$TESTDIR/kfinal" tank
ok cairn load-key -n -L "file://$TESTDIR/kfinal" tank
ok cairn unload-key tank
ok cairn snapshot tank@two   # key file of the current keylocation
ok cairn restore tank@one "$TESTDIR/r1"
cmp "$SRC/f" "$TESTDIR/r1/f" || fail "snapshot one unreadable"
ok cairn restore tank@two "$TESTDIR/r2"
cmp "$SRC/f" "$TESTDIR/r2/f" || fail "snapshot two unreadable"
done_test
