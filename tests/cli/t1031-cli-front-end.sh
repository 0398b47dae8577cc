#!/bin/bash
# The command-line front end: -h/--help versus verbs that take -h as an
# option, and the default store location.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo data >"$SRC/f"
ok cairn create -o source="$SRC" ta
ok cairn snapshot ta@1
ok cairn snapshot ta@2

# diff -h (raw names) and send -h (--holds) are options: with operands a
# usage error stays one (stderr, exit 2), not help on stdout with exit 0.
fails_with 2 "too many arguments" cairn diff -h ta@1 ta@2 ta@3
fails_with 2 "expected one snapshot" cairn send -h ta@1 ta@2
out=$(cairn diff -h ta@1 ta@2 2>&1) || fail "diff -h ta@1 ta@2: $out"
# Alone, -h is still help.
for v in diff send; do
	out=$(cairn $v -h 2>/dev/null) || fail "$v -h alone: not exit 0"
	echo "$out" | grep -q "^usage: cairn $v" || fail "$v -h alone: no usage on stdout"
done

# -s without its argument says so (it is not an "unknown option").
fails_with 2 "'-s' needs a STORE" cairn -s
# An empty -s is refused as such, naming the option, before any verb runs
# (it used to reach the verb: "cairn: init: : No such file or directory").
for v in init list; do
	fails_with 2 "^cairn: option '-s': the store path is empty" cairn -s '' $v
done

# A malformed or out-of-range CAIRN_<KEY> override fails every verb, as it
# does list and config; gc used to fall back to the built-in default and
# sweep with a 1445-minute atime cutoff whatever the store said.
for v in junk 99999999 ''; do
	fails_with 1 "CAIRN_GC_ATIME_CUTOFF" env CAIRN_GC_ATIME_CUTOFF=$v "$CAIRN" gc -n
	fails_with 1 "CAIRN_GC_ATIME_CUTOFF" env CAIRN_GC_ATIME_CUTOFF=$v "$CAIRN" snapshot ta@x
done
fails_with 1 "CAIRN_COMPRESSION" env CAIRN_COMPRESSION=20 "$CAIRN" create tb
cairn list ta@x >/dev/null 2>&1 && fail "a refused snapshot was taken"
cairn list tb >/dev/null 2>&1 && fail "a refused create made a dataset"
out=$(CAIRN_GC_ATIME_CUTOFF=2000 cairn gc -n 2>&1) || fail "valid override refused: $out"

# A user's default store: on a fresh account ~/.local/share (or the
# $XDG_DATA_HOME chain) does not exist yet, and init creates it (0700).
as_user() { env -i PATH="$PATH" HOME="$H" "$@"; }
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null; then
		as_user() { env -i PATH="$PATH" HOME="$H" setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	else
		as_user() { return 77; }
	fi
fi
H=$TESTDIR/home
mkdir -p "$H"
chmod 755 "$TESTDIR"
[ "$(id -u)" = 0 ] && chown nobody "$H"
as_user "$CAIRN" init >/dev/null
rc=$?
if [ $rc -ne 77 ]; then
	[ $rc -eq 0 ] || fail "init of the default store under a fresh \$HOME: exit $rc"
	[ -f "$H/.local/share/cairn/catalog.db" ] || fail "no store at ~/.local/share/cairn"
	[ "$(stat -c %a "$H/.local" 2>/dev/null)" = 700 ] || fail "~/.local not created 0700"
	as_user "$CAIRN" list >/dev/null 2>&1 || fail "list of the default store"
	# An explicit store is taken as given: no parents are created.
	fails_with 1 "No such file" as_user "$CAIRN" -s "$H/no/such" init
	[ -e "$H/no" ] && fail "init -s created the parents of an explicit store"
	# A relative $XDG_DATA_HOME is ignored, as the XDG Base Directory spec
	# asks: the store is ~/.local/share/cairn, not rel/cairn under the
	# working directory.
	H=$TESTDIR/home2
	mkdir -p "$H/cwd"
	[ "$(id -u)" = 0 ] && chown -R nobody "$H"
	out=$(cd "$H/cwd" && as_user env XDG_DATA_HOME=rel "$CAIRN" init 2>&1) ||
		fail "init with a relative XDG_DATA_HOME: $out"
	[ -e "$H/cwd/rel" ] && fail "a relative XDG_DATA_HOME was used (store under the working directory)"
	[ -f "$H/.local/share/cairn/catalog.db" ] || fail "relative XDG_DATA_HOME: no store at ~/.local/share/cairn"
	# An absolute one is used.
	out=$(as_user env XDG_DATA_HOME="$H/xdg" "$CAIRN" init 2>&1) ||
		fail "init with an absolute XDG_DATA_HOME: $out"
	[ -f "$H/xdg/cairn/catalog.db" ] || fail "absolute XDG_DATA_HOME: no store at \$XDG_DATA_HOME/cairn"
fi

# getopt's own messages read like every other error, "cairn: VERB: ...";
# they began with the bare verb ("send: option '--d' is ambiguous")
out=$(cairn send --d x 2>&1 >/dev/null)
[ $? = 2 ] || fail "send --d: not a usage error"
echo "$out" | head -n 1 | grep -q "^cairn: send: option '--d' is ambiguous" || fail "send --d: $out"
out=$(cairn list --bogus 2>&1 >/dev/null)
[ $? = 2 ] || fail "list --bogus: not a usage error"
echo "$out" | head -n 1 | grep -q "^cairn: list: unrecognized option '--bogus'" || fail "list --bogus: $out"

done_test
