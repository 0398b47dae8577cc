#!/bin/bash
# Findings of a review of the key verbs against zfs's behaviour: each
# check below failed before its fix.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store

# change-key without the current key: refused before the new key is asked
# for (zfs: "Key must be loaded"), so nothing of stdin is read.
ok mkroot tank "$PASS1"
ok cairn unload-key tank
out=$(printf '%s\n' "$PASS2" | { cairn change-key tank 2>&1; echo "rc=$?"; cat; })
echo "$out" | grep -q "tank: encryption key not loaded" || fail "change-key unloaded: $out"
echo "$out" | grep -q "^rc=1$" || fail "change-key unloaded exit: $out"
echo "$out" | grep -qx "$PASS2" || fail "change-key read the new key before refusing: $out"
# a current key file that is gone: refused before prompting for the new key
printf '%s\n' "$PASS1" >"$TESTDIR/cur"
printf '%s\n' "$PASS1" | ok cairn change-key -l -o keylocation="file://$TESTDIR/cur" tank
ok cairn unload-key tank
mv "$TESTDIR/cur" "$TESTDIR/cur.away"
out=$(printf '%s\n' "$PASS2" | { cairn change-key -o keylocation=prompt tank 2>&1; echo "rc=$?"; cat; })
echo "$out" | grep -q "keylocation file://$TESTDIR/cur: No such file" || fail "missing key file: $out"
echo "$out" | grep -qx "$PASS2" || fail "change-key read the new key before its current key failed: $out"
[ "$(cairn get -H -o value keylocation tank)" = "file://$TESTDIR/cur" ] || fail "keylocation changed"
# with the key file back, the same command works and reads the new key
mv "$TESTDIR/cur.away" "$TESTDIR/cur"
printf '%s\n' "$PASS2" | ok cairn change-key -o keylocation=prompt tank
printf '%s\n' "$PASS2" | ok cairn load-key -n tank
[ "$(keystatus tank)" = unavailable ] || fail "change-key from a key file loaded the key"

# recv -o encryption=on: refused before anything is created, and no key of
# a root that was never committed stays in the keyring (it did: the new
# root's key was loaded, then the plain stream was refused below it).
SRC=$TESTDIR/src
mkdir -p "$SRC" && echo content >"$SRC/f"
ok cairn create -o source="$SRC" plain
ok cairn snapshot plain@a
cairn send plain@a >"$TESTDIR/plain.stream" || fail "send plain"
printf '%s\n' "$PASS1" >"$TESTDIR/p.key"
keys0=$(keyctl rlist @s | wc -w)
fails_with 1 "enc: -o encryption: a receive cannot encrypt" cairn recv -o encryption=on \
	-o keyformat=passphrase -o keylocation="file://$TESTDIR/p.key" enc <"$TESTDIR/plain.stream"
[ "$(keyctl rlist @s | wc -w)" = "$keys0" ] || fail "a refused recv left a key in the keyring: $(keyctl show @s)"
cairn get name enc >/dev/null 2>&1 && fail "refused recv created enc"
# a raw stream: the sender's keys, never new ones (zfs refuses this too)
printf '%s\n' "$PASS2" | ok cairn load-key tank
ok cairn create -o source="$SRC" tank/d
ok cairn snapshot tank/d@a
cairn send -w tank/d@a >"$TESTDIR/raw.stream" || fail "send -w"
fails_with 1 "-o keyformat: a receive cannot encrypt" cairn recv -o keyformat=hex enc <"$TESTDIR/raw.stream"
ok cairn recv enc <"$TESTDIR/raw.stream"
[ "$(cairn get -H -o value encryptionroot,keystatus enc | tr '\n' ' ')" = "enc unavailable " ] ||
	fail "raw receive: $(cairn get -H -o value encryptionroot,keystatus enc)"

# a snapshot shows its dataset's encryption, encryptionroot and keystatus,
# as zfs does (they were -); keyformat and keylocation stay -.
[ "$(cairn get -H -o value encryption,encryptionroot,keystatus,keyformat,keylocation tank/d@a | tr '\n' ' ')" = \
	"aes-256-gcm tank available - - " ] || fail "snapshot props: $(cairn get encryption,encryptionroot,keystatus tank/d@a)"
[ "$(cairn list -H -t snapshot -o name,keystatus,encryptionroot enc@a)" = "enc@a	unavailable	enc" ] ||
	fail "list snapshot: $(cairn list -H -t snapshot -o name,keystatus,encryptionroot enc@a)"
[ "$(cairn get -H -o value encryption,encryptionroot,keystatus plain@a | tr '\n' ' ')" = "off - - " ] ||
	fail "plain snapshot props: $(cairn get encryption,encryptionroot,keystatus plain@a)"

# load-key -a/-r -L file://: one key file would be tried on every root;
# refused as zfs does, with nothing loaded.  -L prompt stays allowed.
printf '%s\n' "$PASS2" >"$TESTDIR/tank.key"
ok cairn unload-key -a >/dev/null
fails_with 2 "alternate keylocation may only be 'prompt' with -r or -a" \
	cairn load-key -a -L "file://$TESTDIR/tank.key"
fails_with 2 "alternate keylocation may only be 'prompt' with -r or -a" \
	cairn load-key -r -L "file://$TESTDIR/tank.key" tank
[ "$(keystatus tank)" = unavailable ] || fail "refused load-key -a -L loaded a key"
ok cairn load-key -L "file://$TESTDIR/tank.key" tank
ok cairn unload-key tank
out=$(printf '%s\n' "$PASS2" | cairn load-key -r -L prompt tank) || fail "load-key -r -L prompt: $out"
[ "$out" = "1 / 1 keys loaded" ] || fail "load-key -r -L prompt said: $out"

# ^C at a passphrase prompt ends the command by SIGINT with the terminal's
# echo back on (it stayed off); a normal prompt still reads both entries.
ptyrun() {
	python3 - "$@" <<'PY'
import os, pty, select, sys, termios, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
def drain(t):
    out, end = b"", time.time() + t
    while time.time() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out
out = drain(1.0)
for line in sys.argv[1].split("|"):
    os.write(fd, b"\x03" if line == "^C" else line.encode() + b"\n")
    out += drain(1.0)
st = os.waitpid(pid, 0)[1]
print("status=%d echo=%s prompts=%d" % (os.waitstatus_to_exitcode(st),
      bool(termios.tcgetattr(fd)[3] & termios.ECHO), out.count(b"passphrase for")))
PY
}
out=$(ptyrun "^C" "$CAIRN" create -o encryption=on -o keyformat=passphrase tty1)
[ "$out" = "status=-2 echo=True prompts=1" ] || fail "^C at the prompt: $out"
cairn get name tty1 >/dev/null 2>&1 && fail "^C at the prompt created tty1"
out=$(ptyrun "$PASS1|$PASS1" "$CAIRN" create -o encryption=on -o keyformat=passphrase tty2)
[ "$out" = "status=0 echo=True prompts=2" ] || fail "create at a terminal: $out"
out=$(ptyrun "$PASS1|^C" "$CAIRN" create -o encryption=on -o keyformat=passphrase tty3)
[ "$out" = "status=-2 echo=True prompts=2" ] || fail "^C at the second prompt: $out"

# a key line longer than the read buffer: the limits, not "Argument list
# too long"
long=$(head -c 1100 /dev/zero | tr '\0' a)
printf '%s\n' "$long" | fails_with 1 "big: reading the key from standard input: too long (a passphrase is 8 to 512 bytes" \
	cairn create -o encryption=on -o keyformat=passphrase big
done_test
