#!/bin/bash
# send | recv round trips between two stores: full, -i, -I, from a bookmark,
# -R with renames and destroys, -d/-e, -o/-x, a volume, rollback with -F;
# the temporary holds of send (during, after, after SIGTERM, SIGPIPE and
# kill -9); send refusing a terminal; -n -v/-P estimates.
# Every round trip must give the same snapshot names, guids and creation
# times on both sides (and, for -R, the same dataset properties), and
# restores of both sides must be identical to the source at that time.
. "$(dirname "$0")/lib.sh"
# a private copy of the binary: a concurrent rebuild must not hit this long test
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
B=$TESTDIR/b # the receiving store
ok cairn -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }

# snaps STORE DS: the snapshots (and bookmarks) under DS with guid and
# creation, DS itself replaced by "X" so two stores compare.
snaps() {
	"$CAIRN" -s "$1" list -r -t snapshot -H -p -o name,guid,creation "$2" | sed "s|^$2\([@/]\)|X\1|"
}
same_snaps() { # STORE_A DS_A STORE_B DS_B WHAT
	local a b
	a=$(snaps "$1" "$2") b=$(snaps "$3" "$4")
	[ -n "$a" ] || fail "$5: no snapshots under $2"
	[ "$a" = "$b" ] || {
		fail "$5: listings differ"
		diff <(echo "$a") <(echo "$b") | head -10 >&2
	}
}
# restore_both SNAP_A SNAP_B REFDIR: restore on both sides, compare each with REFDIR.
n_restore=0
restore_both() {
	n_restore=$((n_restore + 1))
	local ra=$TESTDIR/ra$n_restore rb=$TESTDIR/rb$n_restore
	ca restore "$1" "$ra" || fail "restore $1 (sender)"
	cb restore "$2" "$rb" || fail "restore $2 (receiver)"
	same_tree "$3" "$ra"
	same_tree "$3" "$rb"
	rm -rf "$ra" "$rb"
}
# keep REFNAME: a copy of $SRC as it is now.
keep() { rm -rf "$TESTDIR/ref-$1"; cp -a "$SRC" "$TESTDIR/ref-$1"; }

SRC=$TESTDIR/src
mkdir -p "$SRC/dir/sub"
for i in $(seq 1 40); do echo "file $i $RANDOM" >"$SRC/dir/f$i"; done
head -c 6000000 /dev/urandom >"$SRC/big.bin" # ~6 chunks of its own
ln -s dir/f1 "$SRC/link"
ln "$SRC/dir/f2" "$SRC/dir/sub/hard"
echo deep >"$SRC/dir/sub/deep"
touch -d '2003-04-05 06:07:08.123456789' "$SRC/dir/f3"

# ---- full ----
ok ca create -o source="$SRC" tank
ok ca snapshot tank@1
keep 1
full=$(ca send tank@1 | wc -c)
ca send tank@1 | cb recv dst || fail "recv full"
same_snaps "$CAIRN_STORE" tank "$B" dst "full"
restore_both tank@1 dst@1 "$TESTDIR/ref-1"

# ---- -i: only changed chunks travel ----
echo changed >>"$SRC/dir/f7"
echo new >"$SRC/dir/new"
ok ca snapshot tank@2
keep 2
inc=$(ca send -i @1 tank@2 | wc -c)
[ $((inc * 10)) -lt "$full" ] || fail "incremental stream $inc bytes is not much smaller than full $full"
ca send -i tank@1 tank@2 | cb recv dst || fail "recv -i"
same_snaps "$CAIRN_STORE" tank "$B" dst "-i"
restore_both tank@2 dst@2 "$TESTDIR/ref-2"
# the same stream twice is a no-op that says so (a retry converges); the
# receiver refuses an incremental whose source it does not have
ca send -i @1 tank@2 >"$TESTDIR/inc12"
before=$(snaps "$B" dst)
out=$(cb recv -v dst <"$TESTDIR/inc12" 2>&1) || fail "the same stream again: $out"
echo "$out" | grep -q "^skipped (already present) dst@2$" || fail "recv -v does not say dst@2 was skipped: $out"
[ "$(snaps "$B" dst)" = "$before" ] || fail "the same stream again changed the target"
fails_with 1 "source.*not on the target\|does not exist\|not exist" cb recv other <"$TESTDIR/inc12"
cb list -H -o name | grep -qx other && fail "a failed receive left dataset 'other'"

# ---- estimates: -n -v / -n -P (zfs send -P format) ----
est=$(ca send -n -P -i @1 tank@2)
echo "$est" | grep -q "^incremental	1	tank@2	[0-9]*$" || fail "send -nP incremental line: $est"
size=$(echo "$est" | sed -n 's/^size	\([0-9]*\)$/\1/p')
[ -n "$size" ] || fail "send -nP has no size line: $est"
[ -n "$size" ] && { [ "$size" -le $((inc + 4096)) ] && [ $((size + inc / 20 + 4096)) -ge "$inc" ]; } ||
	fail "estimate $size far from the real size $inc"
est=$(ca send -n -P tank@1)
echo "$est" | grep -q "^full	tank@1	[0-9]*$" || fail "send -nP full line: $est"
est=$(ca send -n -v tank@1)
echo "$est" | grep -q "full send of tank@1 estimated size is" || fail "send -nv: $est"
echo "$est" | grep -q "total estimated size is" || fail "send -nv total: $est"
[ -z "$(ca send -n tank@1)" ] || fail "send -n without -v printed something"

# ---- -I: every intermediate snapshot ----
echo three >"$SRC/dir/f3b"
ok ca snapshot tank@3
keep 3
echo four >>"$SRC/dir/f4"
ok ca snapshot tank@4
keep 4
ca send -I @2 tank@4 | cb recv dst || fail "recv -I"
same_snaps "$CAIRN_STORE" tank "$B" dst "-I"
restore_both tank@3 dst@3 "$TESTDIR/ref-3"
restore_both tank@4 dst@4 "$TESTDIR/ref-4"

# ---- from a bookmark, after its snapshot was destroyed ----
ok ca bookmark tank@4 tank#b4
echo five >>"$SRC/dir/f5"
ok ca snapshot tank@5
keep 5
ok ca destroy tank@4
ca send -i tank#b4 tank@5 >"$TESTDIR/bm" || fail "send from a bookmark"
[ "$(stat -c %s "$TESTDIR/bm")" -lt $((full / 10)) ] || fail "bookmark incremental is not small"
cb recv dst <"$TESTDIR/bm" || fail "recv from a bookmark"
[ "$(ca list -H -p -o guid tank@5)" = "$(cb list -H -p -o guid dst@5)" ] || fail "bookmark: guid"
[ "$(ca list -H -p -o guid tank#b4)" = "$(cb list -H -p -o guid dst@4)" ] || fail "bookmark guid != snapshot guid"
restore_both tank@5 dst@5 "$TESTDIR/ref-5"
ca send -i '#b4' tank@5 >"$TESTDIR/bm.stream" || fail "send -i '#bm' short form"
[ -s "$TESTDIR/bm.stream" ] || fail "send -i '#bm' short form wrote nothing"
fails_with 1 "bookmark" ca send -I tank#b4 tank@5
ok cb destroy dst@4 # the sender has it only as a bookmark now

# ---- rollback with -F: the receiver has a newer snapshot of its own ----
echo six >>"$SRC/dir/f6"
head -c 3000000 /dev/urandom >"$SRC/big6.bin" # @5 -> @6 is big enough to block a pipe
ok ca snapshot tank@6
keep 6
ok cb set source="$SRC" dst
ok cb snapshot dst@local
before=$(snaps "$B" dst)
fails_with 1 "newer than\|-F" cb recv dst < <(ca send -i @5 tank@6)
[ "$(snaps "$B" dst)" = "$before" ] || fail "a refused receive changed the receiver"
ca send -i @5 tank@6 | cb recv -F dst || fail "recv -F"
cb list -H -o name dst@local >/dev/null 2>&1 && fail "-F did not roll back dst@local"
same_snaps "$CAIRN_STORE" tank "$B" dst "-F rollback"
restore_both tank@6 dst@6 "$TESTDIR/ref-6"

# ---- holds: during a send, after it, after SIGTERM, SIGPIPE and kill -9 ----
FIFO=$TESTDIR/fifo
mkfifo "$FIFO"
# slow_send ARGS...: starts `cairn send ARGS` into a reader that reads only
# once $TESTDIR/go exists; sets SEND_PID (the cairn process itself).
slow_send() {
	rm -f "$TESTDIR/go"
	(exec 3<"$FIFO"; while [ ! -e "$TESTDIR/go" ]; do sleep 0.05; done; cat <&3 >/dev/null) &
	READER_PID=$!
	"$CAIRN" send "$@" >"$FIFO" 2>"$TESTDIR/send.err" &
	SEND_PID=$!
	wait_held
}
hold_rows() { sqlite3 "$CAIRN_STORE/catalog.db" "SELECT COUNT(*) FROM hold" 2>/dev/null || echo "?"; }
# wait_held: until the running send has taken its holds (at most 5 s)
wait_held() {
	local i
	for i in $(seq 1 50); do
		[ "$(hold_rows)" != 0 ] && [ "$(hold_rows)" != "?" ] && return
		sleep 0.1
	done
	fail "the send never took its holds"
}
# wait_writing PID: until PID sleeps in write(2) (a full pipe)
wait_writing() {
	local i s
	for i in $(seq 1 600); do
		s=$(cat "/proc/$1/syscall" 2>/dev/null) || return 0
		case "$s" in "1 "*) return 0 ;; esac
		sleep 0.05
	done
	fail "send $1 never blocked in write"
}
command -v sqlite3 >/dev/null || fail "sqlite3 missing (scripts/deps.sh installs it)"

slow_send -R tank@3 # tank@1..3, big enough to block on the pipe
h=$(ca holds -H tank@1 tank@2 tank@3)
for s in 1 2 3; do
	echo "$h" | grep -q "^tank@$s	\.send-$SEND_PID-.*temporary, pid $SEND_PID" ||
		fail "no temporary hold on tank@$s during send (holds: $h)"
done
fails_with 1 "held\|hold" ca destroy tank@2
: >"$TESTDIR/go"
wait $SEND_PID || fail "slow send failed: $(cat "$TESTDIR/send.err")"
wait $READER_PID
[ -z "$(ca holds -H tank@1 tank@2 tank@3)" ] || fail "holds left after send"
[ "$(ca list -H -p -o userrefs tank@2)" = 0 ] || fail "userrefs after send"

# SIGTERM / SIGINT while send is blocked writing to a consumer that does
# not read: send must stop promptly, release its holds itself (before any
# other command could reap them) and exit non-zero.
for sig in TERM INT; do
	(exec 3<"$FIFO"; sleep 30) &
	READER_PID=$!
	"$CAIRN" send tank@6 >"$FIFO" 2>"$TESTDIR/send.err" &
	SEND_PID=$!
	wait_held
	wait_writing $SEND_PID
	kill -$sig $SEND_PID
	# (a hang guard, not a timing assertion: the pipe is never read)
	for _ in $(seq 1 600); do kill -0 $SEND_PID 2>/dev/null || break; sleep 0.1; done
	if kill -0 $SEND_PID 2>/dev/null; then
		fail "BUG: send blocked on a full pipe ignores SIG$sig"
		kill -9 $SEND_PID
	fi
	kill $READER_PID 2>/dev/null; wait $READER_PID 2>/dev/null
	wait $SEND_PID && fail "send exited 0 after SIG$sig"
	grep -q "interrupted\|Broken pipe" "$TESTDIR/send.err" || fail "SIG$sig: message: $(cat "$TESTDIR/send.err")"
	[ "$(hold_rows)" = 0 ] || fail "SIG$sig: send left $(hold_rows) holds in the catalog"
done
# SIGTERM while the consumer reads slowly: stops at the next chunk
slow_send tank@6
kill -TERM $SEND_PID
: >"$TESTDIR/go"
wait $SEND_PID && fail "send survived SIGTERM with exit 0"
wait $READER_PID 2>/dev/null
grep -q "interrupted" "$TESTDIR/send.err" || fail "SIGTERM: no 'interrupted' message: $(cat "$TESTDIR/send.err")"
[ "$(hold_rows)" = 0 ] || fail "SIGTERM: send left $(hold_rows) holds in the catalog"

# SIGPIPE: the consumer goes away
ca send tank@6 | head -c 1000 >/dev/null
[ "$(hold_rows)" = 0 ] || fail "SIGPIPE: send left $(hold_rows) holds"

# kill -9: the holds stay in the catalog until the next cairn command reaps them
slow_send -i @5 tank@6
kill -9 $SEND_PID
wait $SEND_PID 2>/dev/null
kill $READER_PID 2>/dev/null; wait $READER_PID 2>/dev/null
[ "$(hold_rows)" = 2 ] || fail "$(hold_rows) hold rows after kill -9 (expected 2: the killed send's, until reaped)"
[ -z "$(ca holds -H tank@5 tank@6)" ] || fail "holds of a killed send are still listed"
ok ca list >/dev/null
command -v sqlite3 >/dev/null && { [ "$(hold_rows)" = 0 ] || fail "kill -9: holds not reaped"; }
ok ca destroy tank@5 # no longer held
ca send -i '#b4' tank@6 >/dev/null || fail "send after reaping"

# ---- send refuses a terminal ----
if command -v script >/dev/null; then
	out=$(script -qec "$CAIRN send tank@6" /dev/null 2>&1)
	rc=$?
	[ $rc = 1 ] || fail "send to a terminal: exit $rc"
	echo "$out" | grep -q "terminal" || fail "send to a terminal: $out"
	echo "$out" | grep -q "CAIRNSND" && fail "send wrote a stream to a terminal"
else
	echo "note: script(1) missing, terminal refusal not checked"
fi

# ---- -R: a subtree with properties, then renames and destroys ----
mkdir -p "$SRC/c1" "$SRC/c2/g"
echo c1 >"$SRC/c1/f"; echo c2 >"$SRC/c2/f"; echo g >"$SRC/c2/g/f"
ok ca create -o source="$SRC" -o user:team=blue pool
ok ca create pool/c1
ok ca create -o compression=zstd-5 -o user:team=red pool/c2
ok ca create pool/c2/g
for s in a b c; do ok ca snapshot -r pool@$s; done
ok cb create bk
ca send -R pool@c | cb recv bk/pool || fail "recv -R"
same_snaps "$CAIRN_STORE" pool "$B" bk/pool "-R full"
props() { # STORE DS: local and inherited properties of DS's subtree, DS as X
	"$CAIRN" -s "$1" get -r -t filesystem -H -o name,property,value,source \
		compression,user:team "$2" | sed "s|$2\([/	]\)|X\1|g; s|from $2\$|from X|"
}
# The sender's local values arrive as received values (zfs; t1630).
[ "$(props "$CAIRN_STORE" pool | sed 's/\tlocal$/\treceived/')" = "$(props "$B" bk/pool)" ] || {
	fail "-R: dataset properties differ"
	diff <(props "$CAIRN_STORE" pool) <(props "$B" bk/pool) >&2
}
restore_both pool/c2/g@b bk/pool/c2/g@b "$SRC/c2/g"
# source is local to each store: never received
[ "$(cb get -H -o value,source source bk/pool | tr '\t' ' ')" = "none default" ] ||
	fail "-R: the sender's source property was received: $(cb get -H -o value,source source bk/pool)"

# renames and destroys on the sender, then incremental -R -F
ok ca rename -r pool@a pool@a2
ok ca destroy -r pool@b
ok ca snapshot -r pool@d
ca send -R -i @c pool@d >"$TESTDIR/rinc" || fail "send -R -i"
cb recv -F bk/pool <"$TESTDIR/rinc" || fail "recv -R -i -F"
same_snaps "$CAIRN_STORE" pool "$B" bk/pool "-R incremental with renames and destroys"

# a dataset destroyed on the sender goes with -F; a renamed one is renamed
ok ca destroy -r pool/c1
ok ca snapshot -r pool@e
ca send -R -i @d pool@e | cb recv -F bk/pool 2>"$TESTDIR/err" || fail "recv -R -F after a dataset destroy: $(cat "$TESTDIR/err")"
cb list -H -o name bk/pool/c1 >/dev/null 2>&1 &&
	fail "BUG: -R -F kept bk/pool/c1, which the sender destroyed (recv does not carry dataset destroys)"
mkdir -p "$SRC/c3" && cp -a "$SRC/c2/." "$SRC/c3/"
ok ca rename pool/c2 pool/c3
ok ca snapshot -r pool@f
ca send -R -i @e pool@f | cb recv -F bk/pool 2>"$TESTDIR/err" ||
	fail "BUG: recv -R -F after a dataset rename failed: $(cat "$TESTDIR/err")"
cb list -H -o name bk/pool/c3@f >/dev/null 2>&1 || fail "BUG: -R -F did not carry the rename pool/c2 -> pool/c3"
same_snaps "$CAIRN_STORE" pool "$B" bk/pool "-R incremental after dataset destroy and rename"

# more than 64 snapshots destroyed on the sender
mkdir -p "$SRC/many"
ok ca create -o source="$SRC/many" many
for i in $(seq 1 70); do ca snapshot many@s$i || fail "snapshot many@s$i"; done
ca send -R many@s70 | cb recv many || fail "recv many"
ok ca destroy 'many@s1%s69'
ok ca snapshot many@t
ca send -R -i @s70 many@t | cb recv -F many || fail "recv -R -F many"
left=$(cb list -H -o name -t snapshot -r many | tr '\n' ' ')
[ "$left" = "many@s70 many@t " ] || fail "BUG: -R -F left snapshots the sender destroyed: $left"

# ---- -d / -e naming ----
ok cb create nd
ca send pool/c3/g@f | cb recv -d nd 2>"$TESTDIR/err" ||
	fail "BUG: recv -d did not create the intermediate dataset nd/c3: $(cat "$TESTDIR/err")"
cb list -H -o name nd/c3/g@f >/dev/null 2>&1 || fail "recv -d: nd/c3/g@f missing"
ok cb create nd2
ca send pool/c3@f | cb recv -d nd2 || fail "recv -d (one level)"
cb list -H -o name nd2/c3@f >/dev/null 2>&1 || fail "recv -d: nd2/c3@f missing"
ok cb create ne
ca send pool/c3/g@f | cb recv -e ne || fail "recv -e"
cb list -H -o name ne/g@f >/dev/null 2>&1 || fail "recv -e: ne/g@f missing"
ca send -R pool@f | cb recv -e ne || fail "recv -R -e"
same_snaps "$CAIRN_STORE" pool "$B" ne/pool "-R -e"
fails_with 2 "exclude\|usage" cb recv -d -e ne

# ---- -o / -x ----
ca send -R pool@f | cb recv -o user:team=green -x compression ox || fail "recv -o -x"
same_snaps "$CAIRN_STORE" pool "$B" ox "-R -o -x"
# -o is set on the top dataset only; below it the stream's own values give
# way and the children inherit (zfs)
for ds in ox ox/c3 ox/c3/g; do
	[ "$(cb get -H -o value user:team $ds)" = green ] || fail "-o: user:team of $ds"
	[ $ds = ox ] || [ "$(cb get -H -o source user:team $ds)" = "inherited from ox" ] ||
		fail "-o: user:team of $ds is $(cb get -H -o source user:team $ds), not inherited"
	[ "$(cb get -H -o value compression $ds)" = zstd-2 ] || fail "-x compression: $ds has $(cb get -H -o value compression $ds)"
done
[ "$(cb get -H -o source user:team ox)" = local ] || fail "-o: not local on the top dataset"
[ "$(cb get -H -o value source ox)" = none ] || fail "-R: source property received"

# ---- a volume ----
IMG=$TESTDIR/vol.img
truncate -s 8M "$IMG"
head -c 6000000 /dev/urandom | dd of="$IMG" conv=notrunc status=none
ok ca create -V -o source="$IMG" vol
ok ca snapshot vol@1
cp "$IMG" "$TESTDIR/vol1.img"
echo x | dd of="$IMG" bs=1 seek=5000000 conv=notrunc status=none
ok ca snapshot vol@2
vfull=$(ca send vol@1 | wc -c)
vinc=$(ca send -i @1 vol@2 | wc -c)
[ $((vinc * 3)) -lt "$vfull" ] || fail "volume incremental $vinc not much smaller than $vfull"
ca send vol@1 | cb recv v || fail "recv volume"
ca send -i @1 vol@2 | cb recv v || fail "recv volume -i"
[ "$(cb list -H -o type v)" = volume ] || fail "received volume is a $(cb list -H -o type v)"
same_snaps "$CAIRN_STORE" vol "$B" v "volume"
cb restore v@1 "$TESTDIR/v1.img" && cmp -s "$TESTDIR/vol1.img" "$TESTDIR/v1.img" || fail "volume @1 differs"
cb restore v@2 "$TESTDIR/v2.img" && cmp -s "$IMG" "$TESTDIR/v2.img" || fail "volume @2 differs"
fails_with 1 "exists as a filesystem" cb recv dst < <(ca send vol@1)

done_test
