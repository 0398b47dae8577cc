#!/bin/bash
# The remote command line of sync over ssh, run the way ssh runs it (its
# words joined into one line for the far side's shell):
#  - a store path with spaces, ';', '$(...)' and single quotes reaches
#    the far side whole: the sync works and nothing else runs;
#  - so does one with thousands of single quotes, its quoted form longer
#    than 8 KiB (it was cut there, and the far shell saw a broken line);
#  - a destination (or source) dataset name beginning with '-' is refused
#    before anything runs, not read as an option by the far side's cairn;
#  - an ssh that cannot be run is named in the error;
#  - an IPv6 host in brackets, [ADDR] or USER@[ADDR], reaches ssh without
#    them (ssh does not strip brackets: "Could not resolve hostname
#    [::1]"), and malformed brackets are refused, naming the endpoint and
#    what is wrong, before ssh runs.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
A=$CAIRN_STORE
ca() { "$CAIRN" "$@"; }
S=$TESTDIR/src
mkdir -p "$S/tank"
head -c 100000 /dev/urandom >"$S/tank/f"
ok ca create -o source="$S/tank" tank
ok ca snapshot tank@1

cat >"$TESTDIR/ssh" <<SH
#!/bin/bash
echo "\$1" >>"$TESTDIR/ssh.log"
shift
exec sh -c "\$*"
SH
chmod +x "$TESTDIR/ssh"
export CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$CAIRN

# ---- a store path that needs quoting ----
Q=$(printf "'%.0s" $(seq 1 250))
B="$TESTDIR/my store; \$(touch PWNED) \`touch PWNED2\` \"x\""
B="$B/$Q"
mkdir -p "$(dirname "$B")"
"$CAIRN" -s "$B" init >/dev/null 2>&1 || fail "init of the long store path failed"
out=$(cd "$TESTDIR" && ca sync tank "localhost:$B:bk" 2>&1) || fail "sync failed: ${out:0:300}"
[ "$("$CAIRN" -s "$B" list -H -p -o guid bk@1)" = "$(ca list -H -p -o guid tank@1)" ] ||
	fail "sync into a store whose path needs long quoting did not arrive"
[ -e "$TESTDIR/PWNED" ] || [ -e "$TESTDIR/PWNED2" ] && fail "the store path ran a command on the far side"

# ---- a store path whose quoted form is long: the far side gets it whole
# (no store is there: the far cairn runs and says so, not its shell) ----
Q2=$(printf "'%.0s" $(seq 1 2100))
out=$(ca sync tank "localhost:/nonexistent/$Q2:bk" 2>&1) && fail "sync to a missing store succeeded"
echo "$out" | grep -q "^cairn: sync: bk: cannot list the destination: /nonexistent/'''" && ! echo "$out" | grep -qi "syntax error\\|unterminated" ||
	fail "the long store path did not reach the far side whole: ${out:0:300}"

# ---- dataset names that would read as options ----
: >"$TESTDIR/ssh.log"
L0=$("$CAIRN" -s "$B" list -H -p -t all -o name,guid)
for d in -r -v -A; do
	fails_with 1 "bad dataset name" ca sync tank "localhost:$B:$d"
	fails_with 1 "bad dataset name" ca sync tank "$B:$d"
done
fails_with 1 "bad dataset name" ca sync -- -r "localhost:$B:bk"
[ -s "$TESTDIR/ssh.log" ] && fail "ssh ran for a refused dataset name: $(cat "$TESTDIR/ssh.log")"
[ "$("$CAIRN" -s "$B" list -H -p -t all -o name,guid)" = "$L0" ] || fail "a refused sync changed the target"

# ---- an ssh that cannot run is named ----
CAIRN_SSH=$TESTDIR/no-such-ssh fails_with 1 "cannot run '$TESTDIR/no-such-ssh'" \
	ca sync tank "localhost:$B:bk"
# ---- IPv6 hosts in brackets ----
B6=$TESTDIR/b6
ok "$CAIRN" -s "$B6" init >/dev/null
for host in "[::1]" "bob@[::1]" "[fe80::1%eth0]" "::1"; do
	: >"$TESTDIR/ssh.log"
	out=$(ca sync tank "$host:$B6:v6" 2>&1) || fail "sync to $host: $out"
	want=${host//[\[\]]/}
	[ "$(sort -u "$TESTDIR/ssh.log")" = "$want" ] ||
		fail "BUG: sync to $host ran ssh for host '$(sort -u "$TESTDIR/ssh.log" | tr '\n' ' ')', not '$want'"
done
[ "$("$CAIRN" -s "$B6" list -H -p -o guid v6@1)" = "$(ca list -H -p -o guid tank@1)" ] ||
	fail "sync over a bracketed IPv6 host did not arrive"
L0=$("$CAIRN" -s "$B6" list -H -p -t all -o name,guid)
: >"$TESTDIR/ssh.log"
# bad6 ENDPOINT WHY: sync to ENDPOINT is a usage error (exit 2) whose first
# line names it and says WHY (compared as text, brackets and all)
bad6() {
	local err rc
	err=$(ca sync tank "$1" 2>&1 >/dev/null)
	rc=$?
	[ $rc = 2 ] || fail "sync to $1: exit $rc, not 2 ($err)"
	[[ ${err%%$'\n'*} == "cairn: sync: $1: bad endpoint: $2"* ]] ||
		fail "sync to $1 does not say 'bad endpoint: $2': $err"
}
bad6 "[::1:$B6:v6" "'[' without a closing ']'"
bad6 "[::1]$B6:v6" "a host in brackets must be followed by ':/STORE:DATASET'"
bad6 "[::1]:pool/ds" "a host in brackets must be followed by ':/STORE:DATASET'"
bad6 "bob@[::1]x:$B6:v6" "a host in brackets must be followed by ':/STORE:DATASET'"
bad6 "[]:$B6:v6" "not an IPv6 address between '[' and ']'"
bad6 "[far]:$B6:v6" "not an IPv6 address between '[' and ']'"
bad6 "bob@[-oProxyCommand=x]:$B6:v6" "not an IPv6 address between '[' and ']'"
bad6 "ho[st:$B6:v6" "'[' or ']' in a host"
[ -s "$TESTDIR/ssh.log" ] && fail "ssh ran for a malformed endpoint: $(cat "$TESTDIR/ssh.log")"
[ "$("$CAIRN" -s "$B6" list -H -p -t all -o name,guid)" = "$L0" ] || fail "a refused endpoint changed the target"
done_test
