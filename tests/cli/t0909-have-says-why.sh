#!/bin/bash
# `cairn have` (sync's question to the far side: which of these chunks do
# you hold?) says why it fails.  Since 2cf0f22 it registers as a writer
# before touching, which can fail (here: the store's writers/ is not a
# directory; a full disk or a read-only store does the same); it exited 1
# without a word, and sync over ssh said only "the destination stopped
# answering which chunks it has: exited with status 1".
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
second_store
S=$TESTDIR/src
mkdir -p "$S"
head -c 300000 /dev/urandom >"$S/f"
ok ca create -o source="$S" p
ok ca snapshot p@1
ok ca sync p "$B:d"
echo more >>"$S/f"
ok ca snapshot p@2
rm -rf "$B/writers" && : >"$B/writers"
ask() { python3 -c 'import sys; sys.stdout.buffer.write((1).to_bytes(4, "little") + b"\0" * 32)'; }
ask | cb have >/dev/null 2>"$TESTDIR/err" && fail "have succeeded without registering"
grep -q "^cairn: have: .*writers: registering as a writer: Not a directory" "$TESTDIR/err" ||
	fail "BUG: have does not say why it failed: '$(cat "$TESTDIR/err")'"
# -n touches nothing and needs no registration
ask | cb have -n >/dev/null 2>"$TESTDIR/err" || fail "have -n: $(cat "$TESTDIR/err")"
cat >"$TESTDIR/ssh" <<'SH'
#!/bin/sh
shift
exec sh -c "$*"
SH
chmod +x "$TESTDIR/ssh"
CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$CAIRN ca sync p "localhost:$B:d" 2>"$TESTDIR/err" &&
	fail "sync succeeded into a store that cannot register"
# have and recv run side by side there, and both register: whichever
# fails first is reported, each naming the registry and the reason
grep -Eq "^cairn: sync: d: (sending|receiving) p@2: .*writers: registering as a writer: Not a directory" "$TESTDIR/err" ||
	fail "BUG: sync does not say why the far side failed: '$(cat "$TESTDIR/err")'"
[ "$(cb list -H -o name -t snapshot -r d | tr '\n' ' ')" = "d@1 " ] || fail "the destination changed"
done_test
