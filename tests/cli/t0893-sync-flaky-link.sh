#!/bin/bash
# sync over a link that is cut again and again converges, resuming each
# time where the last attempt stopped: the link (an ssh stand-in) passes
# only the first N bytes of each stream to `recv`, N growing by a fifth of
# the whole stream per attempt.  Asserted: the cuts happened (attempts
# failed with N bytes through), the partial state survived every failed
# attempt (no recv -A ran), every attempt after the first was a resumed
# stream carrying less than the whole, and the target ends equal to the
# source, restoring byte-identical.  Then: a resume token the source can
# no longer plan (its snapshot was destroyed there) is discarded by sync,
# which then converges in one run.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
new_store
A=$CAIRN_STORE B=$TESTDIR/b C=$TESTDIR/c
ok "$CAIRN" -s "$B" init >/dev/null
ok "$CAIRN" -s "$C" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca config chunk_size=65536
S=$TESTDIR/src
for d in tank tank/a tank/b; do
	mkdir -p "$S/$d"
	head -c 300000 /dev/urandom >"$S/$d/base"
done
ok ca create -o source="$S/tank" tank
ok ca create -o source="$S/tank/a" tank/a
ok ca create -o source="$S/tank/b" tank/b
for k in 1 2 3; do
	for d in tank tank/a tank/b; do head -c 400000 /dev/urandom >"$S/$d/f$k"; done
	ok ca snapshot -r tank@$k
done

# the link: recv -s gets the first $(cat $CUT) bytes of its stream (a copy
# of what went through is kept); every other command passes untouched
L=$TESTDIR/link
mkdir -p "$L"
echo 0 >"$L/n"
cat >"$TESTDIR/flakyssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*)
	i=\$(cat "$L/n"); echo \$((i + 1)) >"$L/n"
	echo "\$*" >"$L/cmd.\$i"
	head -c "\$(cat "$L/cut")" | tee "$L/in.\$i" | sh -c "\$*"
	;;
*"'recv' '-A'"*) echo "\$*" >>"$L/aborts"; exec sh -c "\$*" ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/flakyssh"
export CAIRN_SSH=$TESTDIR/flakyssh CAIRN_REMOTE=$CAIRN
# flags of the BEGIN record of a stream copy: 2 = resumed
flags() { python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); print(struct.unpack_from("<I",d,17)[0] if len(d)>=21 else -1)' "$1"; }

# the whole stream, uncut, into another store
echo 1000000000 >"$L/cut"
ok ca sync -R tank "localhost:$C:full"
whole=$(stat -c %s "$L/in.0")
[ "$whole" -gt 3000000 ] || fail "the whole stream is only $whole bytes"
echo 0 >"$L/n"

want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|bk|')
attempts=0 cuts=0
for k in 1 2 3 4 5 6 7 8; do
	echo $((whole * k / 5)) >"$L/cut"
	attempts=$((attempts + 1))
	if ca sync -R tank "localhost:$B:bk" 2>"$TESTDIR/err"; then
		break
	fi
	cuts=$((cuts + 1))
	i=$(($(cat "$L/n") - 1))
	[ "$(stat -c %s "$L/in.$i")" = "$((whole * k / 5))" ] ||
		fail "attempt $k: $(stat -c %s "$L/in.$i") bytes went through, not the $((whole * k / 5)) of the cut"
	grep -q "^cairn: sync: bk: receiving tank@.*stream truncated" "$TESTDIR/err" ||
		fail "attempt $k: the error does not say what was cut: $(cat "$TESTDIR/err")"
	grep -q "partial state is kept" "$TESTDIR/err" || fail "attempt $k: $(cat "$TESTDIR/err")"
	tokv=$(cb get -H -o value receive_resume_token bk) || fail "attempt $k: get receive_resume_token"
	[ -n "$tokv" ] && [ "$tokv" != - ] || fail "attempt $k: the cut left no partial state"
done
[ "$(cb list -H -p -t snapshot -r -o name,guid bk)" = "$want" ] || fail "no convergence after $attempts attempts"
[ "$cuts" -ge 2 ] || fail "only $cuts cut attempts: the link was not cut"
[ -e "$L/aborts" ] && fail "sync discarded partial state on a cut link: $(cat "$L/aborts")"
n=$(cat "$L/n")
[ "$n" = "$attempts" ] || fail "$n streams for $attempts attempts (one stream per attempt expected)"
total=0
for i in $(seq 0 $((n - 1))); do
	sz=$(stat -c %s "$L/in.$i")
	total=$((total + sz))
	f=$(flags "$L/in.$i")
	if [ "$i" = 0 ]; then
		[ $((f & 2)) = 0 ] || fail "the first attempt was a resumed stream"
	else
		[ $((f & 2)) = 2 ] || fail "attempt $((i + 1)) was not a resumed stream (flags $f)"
		[ "$sz" -lt "$whole" ] || fail "attempt $((i + 1)) carried $sz bytes, not less than the whole $whole"
	fi
done
echo "$attempts attempts ($cuts cut), $total bytes through for a $whole-byte stream"
# resumes went on from where the cuts were: far less than a restart each time
[ "$total" -lt $((whole * 2)) ] || fail "$total bytes went through for a $whole-byte stream"
[ "$(cb get -H -o value inconsistent bk)" = off ] || fail "partial state left after convergence"
for d in tank tank/a tank/b; do
	rm -rf "$TESTDIR/r"
	cb restore "${d/tank/bk}@3" "$TESTDIR/r" || fail "restore ${d/tank/bk}@3"
	same_tree "$S/$d" "$TESTDIR/r"
done

# ---- an unusable token: the source no longer has its snapshot ----
for d in tank tank/a tank/b; do head -c 400000 /dev/urandom >"$S/$d/f4"; done
ok ca snapshot -r tank@4
echo $((whole / 4)) >"$L/cut"
ca sync -R tank "localhost:$B:bk" 2>/dev/null && fail "the cut sync succeeded"
tokv=$(cb get -H -o value receive_resume_token bk) || fail "get receive_resume_token"
[ -n "$tokv" ] && [ "$tokv" != - ] || fail "the cut left no partial state"
ok ca destroy -r tank@4
for d in tank tank/a tank/b; do head -c 1000 /dev/urandom >>"$S/$d/f4"; done
ok ca snapshot -r tank@5
echo 1000000000 >"$L/cut"
out=$(ca sync -R tank "localhost:$B:bk" 2>&1) || fail "sync after the token's snapshot was destroyed: $out"
echo "$out" | grep -q "bk: discarding the partial receive (resume token names a snapshot" ||
	fail "sync does not say why it discarded the partial receive: $out"
[ -e "$L/aborts" ] || fail "no recv -A for an unusable token"
[ "$(cb list -H -p -t snapshot -r -o name,guid bk)" = "$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|bk|')" ] ||
	fail "no convergence after discarding an unusable token"
[ "$(cb get -H -o value inconsistent bk)" = off ] || fail "partial state left"
done_test
