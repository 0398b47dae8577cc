#!/bin/bash
# sync -R when a dataset below the destination top holds the partial state
# of a stream of its own (a cut sync or send | recv -s of that child alone):
# the -R stream, which receives into that child too, was refused there on
# every run ("contains partially-complete state"), so sync -R never
# converged without a recv -A by hand.  Now sync -R first finishes such a
# child from its own token (or discards a token the source can no longer
# plan, saying so) and then sends the rest, in one run.  A child of the
# destination that is no source dataset's keeps its state untouched.
# Checked: the cuts left partial state, sync resumed it (not discarded
# it), the snapshots and guids match, and every snapshot restores with
# full fidelity.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
second_store
ok ca config chunk_size=65536
use_xattr_dir
S=$XDIR/src
rich_tree "$S"
mkdir -p "$S/kid" "$S/new"
head -c 3000000 /dev/urandom >"$S/kid/a"
ok ca create -o source="$S" tank
ok ca create tank/kid
ok ca snapshot -r tank@1
ok ca sync -R tank "$B:bk" >/dev/null

head -c 3000000 /dev/urandom >"$S/kid/b"
head -c 3000000 /dev/urandom >"$S/new/c"
ok ca create tank/new
ok ca snapshot -r tank@2

token() { cb get -H -o value receive_resume_token "$1"; }
# cut DS STREAMFILE: recv -s of the first half of the stream into DS
# leaves partial state there.
cut() {
	head -c $(($(stat -c %s "$2") / 2)) "$2" | cb recv -s "$1" >/dev/null 2>&1 &&
		fail "a cut stream into $1 was received"
	case $(token "$1") in 3-* | 2-*) ;; *) fail "the cut into $1 left no partial state" ;; esac
}
# an incremental of the child and a full stream of a new child, both cut
ca send -i @1 tank/kid@2 >"$TESTDIR/kid-i"
ca send tank/new@2 >"$TESTDIR/new-full"
cut bk/kid "$TESTDIR/kid-i"
cut bk/new "$TESTDIR/new-full"
# and a dataset there that is no source dataset's, with state of its own
one_file_src
ok ca create -o source="$SRC" other
ok ca snapshot other@x
ca send other@x >"$TESTDIR/other"
ok cb create bk/mine
cut bk/mine/o "$TESTDIR/other"
mine_tok=$(token bk/mine/o)

ca sync -v -R tank "$B:bk" >"$TESTDIR/out" 2>"$TESTDIR/err" || fail "sync -R: $(cat "$TESTDIR/err")"
grep -q "resumed the partial receive into bk/kid" "$TESTDIR/out" || fail "bk/kid not resumed: $(cat "$TESTDIR/out")"
grep -q "resumed the partial receive into bk/new" "$TESTDIR/out" || fail "bk/new not resumed: $(cat "$TESTDIR/out")"
[ "$(token bk/mine/o)" = "$mine_tok" ] || fail "the state of bk/mine/o (no source dataset's) changed"
for d in bk bk/kid bk/new; do
	[ "$(token $d)" = - ] || fail "$d still holds partial state"
done
a=$(ca list -H -o name,guid -t snapshot -r tank | sed 's/^tank//')
b=$(cb list -H -o name,guid -t snapshot -r bk | grep -v '^bk/mine' | sed 's/^bk//')
[ "$a" = "$b" ] || fail "snapshots differ: $(echo "$b" | tr '\n' ' ')"
ok ca sync -R tank "$B:bk" >/dev/null

# a child's token the source can no longer plan is discarded, and the
# child synced in the same run
head -c 2000000 /dev/urandom >"$S/kid/d"
ok ca snapshot -r tank@3
ca send -i @2 tank/kid@3 >"$TESTDIR/kid-i3"
cut bk/kid "$TESTDIR/kid-i3"
ok ca destroy tank/kid@3
head -c 2000000 /dev/urandom >"$S/kid/e"
ok ca snapshot -r tank@4
ca sync -R tank "$B:bk" >"$TESTDIR/out" 2>"$TESTDIR/err" || fail "sync -R after a dead token: $(cat "$TESTDIR/err")"
grep -q "bk/kid: discarding the partial receive" "$TESTDIR/err" || fail "discard not said: $(cat "$TESTDIR/err")"
a=$(ca list -H -o name,guid -t snapshot -r tank | sed 's/^tank//')
b=$(cb list -H -o name,guid -t snapshot -r bk | grep -v '^bk/mine' | sed 's/^bk//')
[ "$a" = "$b" ] || fail "snapshots differ after the dead token: $(echo "$b" | tr '\n' ' ')"

for s in $(ca list -H -o name -t snapshot -r tank); do
	r=$(echo "$s" | tr '/@' '__')
	ok ca restore "$s" "$XDIR/a$r"
	ok cb restore "bk${s#tank}" "$XDIR/b$r"
	same_tree "$XDIR/a$r" "$XDIR/b$r"
done
ok cb verify >/dev/null

# Another store's partial receive is not this sync's to finish or throw
# away: a refused sync -R changes nothing.  (1) bk/kid2 is a copy of
# another store's kid2 (snapshots, none of them the source's) with a cut
# incremental of its own, and the source has a new tank/kid2: the -R
# stream cannot go into bk/kid2 (refused, naming it), and its state stays.
C=$TESTDIR/c
"$CAIRN" -s "$C" init >/dev/null || fail "init $C"
cc() { "$CAIRN" -s "$C" "$@"; }
mkdir -p "$TESTDIR/o" "$S/kid2"
echo o >"$TESTDIR/o/f"
echo k >"$S/kid2/f"
ok cc create -o source="$TESTDIR/o" kid2
ok cc snapshot kid2@x
cc send kid2@x | ok cb recv bk/kid2
head -c 3000000 /dev/urandom >"$TESTDIR/o/g"
ok cc snapshot kid2@y
cc send -i @x kid2@y >"$TESTDIR/other-i"
cut bk/kid2 "$TESTDIR/other-i"
kid2_tok=$(token bk/kid2)
ok ca create tank/kid2
ok ca snapshot -r tank@5
fails_with 1 "bk/kid2" ca sync -R tank "$B:bk"
[ "$(token bk/kid2)" = "$kid2_tok" ] || fail "a refused sync -R changed the state of bk/kid2 (another store's): $(token bk/kid2)"
# (2) a destination top that is no copy of the source (refused) with a
# child of a source dataset's name holding another store's cut receive
cc send kid2@x | ok cb recv un
cc send kid2@y >"$TESTDIR/other-full"
cut un/kid "$TESTDIR/other-full"
un_tok=$(token un/kid)
fails_with 1 "un: has snapshots (eg. un@x) but none in common with tank" ca sync -R tank "$B:un"
[ "$(token un/kid)" = "$un_tok" ] || fail "a refused sync -R changed the state of un/kid: $(token un/kid)"
done_test
