#!/bin/bash
# systemd units: each service's ExecStart, with %I/%i/%% and @BINDIR@
# substituted and its Environment= defaults applied, runs against a test
# store and does its job; the units and their calendars parse.
. "$(dirname "$0")/lib.sh"
SRC=${CAIRN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
U=$SRC/systemd
new_store
mkdir -p "$TESTDIR/src/home"
echo x >"$TESTDIR/src/home/file"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn create tank/home
DS=tank/home
INST=$(systemd-escape "$DS" 2>/dev/null || echo tank-home)
[ "$INST" = tank-home ] || fail "systemd-escape gives $INST"
BINDIR=$(dirname "$CAIRN")

# run_unit UNIT: runs its ExecStart line(s) as systemd would (roughly).
run_unit() {
	local unit=$1 line env
	(
		while IFS= read -r env; do
			env=${env#Environment=}
			env=${env#\"}
			env=${env%\"}
			export "${env%%=*}=${env#*=}"
		done < <(grep '^Environment=' "$U/$unit")
		grep '^ExecStart=' "$U/$unit" | while IFS= read -r line; do
			line=${line#ExecStart=}
			line=${line//@BINDIR@/$BINDIR}
			line=${line//%I/$DS}
			line=${line//%i/$INST}
			line=${line//%%/%}
			eval "$line" || exit 1
		done
	)
}

for u in "$U"/*.service "$U"/*.timer; do
	grep -q '^\[Install\]\|^\[Service\]' "$u" || fail "$(basename "$u"): no [Service] or [Install]"
done
# The snapshot unit: one snapshot in sanoid's autosnap style.
run_unit cairn-snapshot@.service || fail "cairn-snapshot@ ExecStart failed"
names=$(cairn list -H -o name -t snapshot "$DS")
echo "$names" | grep -Eqx "$DS@autosnap_[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}:[0-9]{2}:[0-9]{2}_hourly" ||
	fail "snapshot name not in autosnap style: $names"
[ "$(cairn list -H -o name -t snapshot "$DS" | wc -l)" = 1 ] || fail "expected one snapshot"
# Prune: three snapshots in the same hour keep only the newest (keep-hourly).
sleep 1
ok cairn snapshot "$DS@manual1"
ok cairn snapshot "$DS@manual2"
run_unit cairn-prune@.service >/dev/null || fail "cairn-prune@ ExecStart failed"
[ "$(cairn list -H -o name -t snapshot "$DS")" = "$DS@manual2" ] ||
	fail "prune unit kept: $(cairn list -H -o name -t snapshot "$DS")"
# GC and verify.
run_unit cairn-gc.service >/dev/null || fail "cairn-gc ExecStart failed"
run_unit cairn-verify.service >/dev/null || fail "cairn-verify ExecStart failed"
# A damaged chunk makes the verify unit fail.
chunk=$(find "$CAIRN_STORE/.chunks" -type f -size +0 | head -1)
[ -n "$chunk" ] || fail "no chunk to damage"
printf 'garbage' | dd of="$chunk" bs=1 seek=30 conv=notrunc status=none
run_unit cairn-verify.service >/dev/null 2>&1 && fail "verify unit passed over a damaged chunk"

# Units parse (when systemd-analyze can run here) and calendars are valid.
if command -v systemd-analyze >/dev/null; then
	d=$TESTDIR/units
	mkdir -p "$d"
	for u in "$U"/*; do sed "s|@BINDIR@|$BINDIR|g" "$u" >"$d/$(basename "$u")"; done
	out=$(cd "$d" && SYSTEMD_LOG_LEVEL=err systemd-analyze verify --man=no ./cairn-gc.service \
		./cairn-gc.timer ./cairn-verify.service ./cairn-verify.timer \
		"./cairn-snapshot@$INST.service" "./cairn-snapshot@$INST.timer" \
		"./cairn-prune@$INST.service" "./cairn-prune@$INST.timer" 2>&1)
	[ -z "$out" ] || fail "systemd-analyze verify: $out"
	grep -h '^OnCalendar=' "$U"/*.timer | cut -d= -f2- | while IFS= read -r cal; do
		systemd-analyze calendar "$cal" >/dev/null 2>&1 || echo "bad calendar: $cal"
	done | grep . && fail "timer calendars"
fi
done_test
