#!/bin/bash
# release -r as zfs: of the operand's snapshots (it and its descendants'),
# those without the tag are skipped; only when none has the tag is it
# refused, and then nothing changes.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src/a/b"
echo x >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" pool
ok cairn create pool/a
ok cairn create pool/a/b
ok cairn snapshot -r pool@s
ok cairn hold keep pool@s
ok cairn hold keep pool/a/b@s
ok cairn hold other pool/a@s

holds() { cairn holds -H -r pool@s | cut -f1,2 | tr '\t\n' ' '; }
# pool/a@s lacks 'keep': skipped, the others released.
ok cairn release -r keep pool@s
[ "$(holds)" = "pool/a@s other " ] || fail "release -r: $(holds)"
# None has the tag: refused, naming it, nothing changed.
fails_with 1 "no hold with tag 'keep'" cairn release -r keep pool@s
[ "$(holds)" = "pool/a@s other " ] || fail "refused release -r changed: $(holds)"
# Only a descendant has it: released there.
ok cairn release -r other pool@s
[ -z "$(holds)" ] || fail "release -r of a descendant's tag: $(holds)"
# Without -r a missing tag is still an error.
ok cairn hold keep pool/a@s
fails_with 1 "no hold with tag 'keep'" cairn release keep pool@s
[ "$(holds)" = "pool/a@s keep " ] || fail "release without -r: $(holds)"
done_test
