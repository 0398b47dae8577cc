#!/bin/bash
# Debian's sanoid and syncoid (unmodified) drive two cairn stores through
# the zfs entry point: snapshot policy, then replication full, incremental,
# after a cut (resume token), with --no-sync-snap, --create-bookmark,
# bookmark sources and -F rollbacks.  After each: the same snapshot names
# and guids on both sides, and every common snapshot restores identically.
. "$(dirname "$0")/lib.sh"

for c in sanoid syncoid faketime; do
	if ! command -v $c >/dev/null; then
		[ "${CI:-}" = true ] && { echo "FAIL: $c missing (scripts/deps.sh)"; exit 1; }
		echo "$c not installed"
		exit 77
	fi
done

BIN=$TESTDIR/bin
mkdir -p "$BIN"
ln -s "$CAIRN" "$BIN/zfs"
ln -s "$CAIRN" "$BIN/zpool"
A=$TESTDIR/sa
B=$TESTDIR/sb
"$CAIRN" -s "$A" init >/dev/null || fail "init A"
"$CAIRN" -s "$B" init >/dev/null || fail "init B"
printf '# pool store\ntank %s\nbackup %s\n' "$A" "$B" >"$TESTDIR/pools"
export CAIRN_POOLS_FILE=$TESTDIR/pools
export PATH="$BIN:$PATH"
unset CAIRN_STORE
[ "$(command -v zfs)" = "$BIN/zfs" ] || fail "zfs link not first in PATH"

S=$TESTDIR/src
mkdir -p "$S/t" "$S/a" "$S/a1" "$S/b" "$TESTDIR/r" "$TESTDIR/cfg" "$TESTDIR/cache" "$TESTDIR/run"
echo top >"$S/t/f"
echo aaa >"$S/a/f"
mkdir "$S/a/sub" && echo deep >"$S/a/sub/g" && chmod 640 "$S/a/sub/g"
echo one >"$S/a1/f"
ln -s f "$S/b/link"
echo bbb >"$S/b/f"
ok zfs create -o source="$S/t" tank
ok zfs create -o source="$S/a" tank/a
ok zfs create -o source="$S/a1" tank/a/one
ok zfs create -o source="$S/b" tank/b
ok zfs create -o source="$S/b" backup

# snaps POOLDS: "relative-name guid" of every snapshot below POOLDS, read
# from the store's catalog: the truth does not depend on the listing code
# under test (a `zfs list` that dropped a snapshot on both sides would
# otherwise compare equal).  zfs list must agree with it.
snaps() {
	local store=$A
	case $1 in backup*) store=$B ;; esac
	sqlite3 -separator '	' "$store/catalog.db" \
		"SELECT d.name || '@' || s.name, s.guid FROM snapshot s JOIN dataset d ON d.id = s.dataset
		 WHERE d.name = '$1' OR d.name LIKE '$1/%'" >"$TESTDIR/snaps.cat" ||
		fail "catalog snapshots of $1"
	zfs list -H -o name -t snapshot -r "$1" >"$TESTDIR/snaps.tmp" || fail "list snapshots of $1"
	[ "$(cut -f1 "$TESTDIR/snaps.cat" | sort)" = "$(sort "$TESTDIR/snaps.tmp")" ] ||
		fail "zfs list -t snapshot -r $1 disagrees with the catalog"
	sed "s#^$1##" "$TESTDIR/snaps.cat" | sort
}

# same_side SRC DST [subset]: names and guids equal (or SRC's within
# DST's), and every snapshot SRC has restores identically on both.
n_restore=0
declare -A compared # guid -> 1: each snapshot pair is restored once
same_side() {
	local a b
	a=$(snaps "$1")
	b=$(snaps "$2")
	if [ "${3:-}" = subset ]; then
		[ -z "$(comm -23 <(echo "$a") <(echo "$b"))" ] ||
			fail "$1 snapshots missing on $2: $(comm -23 <(echo "$a") <(echo "$b") | head -3)"
	else
		[ "$a" = "$b" ] || {
			fail "snapshots differ between $1 and $2"
			diff <(echo "$a") <(echo "$b") | head -6 >&2
		}
	fi
	[ -n "$a" ] || fail "no snapshots under $1"
	local rel guid
	while read -r rel guid; do
		[ -n "$rel" ] || continue
		[ -z "${compared[$guid]:-}" ] || continue
		compared[$guid]=1
		n_restore=$((n_restore + 1))
		local ra=$TESTDIR/r/$n_restore.a rb=$TESTDIR/r/$n_restore.b
		"$CAIRN" -s "$A" restore "$1$rel" "$ra" >/dev/null || fail "restore $1$rel"
		"$CAIRN" -s "$B" restore "$2$rel" "$rb" >/dev/null || fail "restore $2$rel"
		same_tree "$ra" "$rb"
		rm -rf "$ra" "$rb"
	done <<<"$a"
}

SANOID="sanoid --configdir=$TESTDIR/cfg --cache-dir=$TESTDIR/cache --run-dir=$TESTDIR/run"
SYNCOID="syncoid --no-privilege-elevation"

# ---- sanoid: policy on a recursive tree, snapshots 3h1m, 2h1m, 1h1m and 0 ago ----
cat >"$TESTDIR/cfg/sanoid.conf" <<'EOF'
[tank]
	use_template = production
	recursive = yes

[template_production]
	frequently = 0
	hourly = 2
	daily = 2
	monthly = 1
	yearly = 0
	autosnap = yes
	autoprune = yes
EOF
# A minute more than whole hours: sanoid prunes an hourly only when it is
# strictly older than hourly x 1 h, and the whole run can fit in one second.
for h in 3 2 1; do
	faketime -f "-$((h * 3600 + 60))" $SANOID --take-snapshots --force-update >"$TESTDIR/sanoid.log" 2>&1 ||
		fail "sanoid --take-snapshots (-${h}h1m): $(tail -3 "$TESTDIR/sanoid.log")"
	echo "change $h" >>"$S/a/f"
done
ok $SANOID --take-snapshots --force-update >"$TESTDIR/sanoid.log" 2>&1
# A monthly at the first run, and one more when the runs straddle the 1st
# at 00:00 (sanoid's default monthly_mday and monthly_hour).
monthlies=1
[ "$(date -d "-$((3 * 3600 + 60)) seconds" +%m)" = "$(date +%m)" ] || monthlies=2
for ds in tank tank/a tank/a/one tank/b; do
	n=$(zfs list -H -o name -t snapshot "$ds" | grep -c '_hourly$')
	[ "$n" = 4 ] || fail "$ds: $n hourly snapshots before pruning, expected 4"
	n=$(zfs list -H -o name -t snapshot "$ds" | grep -c '_monthly$')
	[ "$n" = "$monthlies" ] || fail "$ds: $n monthly snapshots, expected $monthlies"
done
ok $SANOID --prune-snapshots --force-update >"$TESTDIR/sanoid.log" 2>&1
grep -q 'pruning' "$TESTDIR/sanoid.log" || $SANOID --prune-snapshots --verbose --force-update >/dev/null 2>&1
# sanoid takes a daily snapshot at each 23:59 (its default daily_hour and
# daily_min) it has not covered yet: two when the run three hours back
# and the one now straddle 23:59, else one (daily = 2 keeps both).
first=$(($(date +%s) - 3 * 3600 - 60))
cut=$(date -d "$(date -d "@$first" +%F) 23:59" +%s)
dailies=1
[ "$first" -lt "$cut" ] && [ "$cut" -le "$(date +%s)" ] && dailies=2
for ds in tank tank/a tank/a/one tank/b; do
	n=$(zfs list -H -o name -t snapshot "$ds" | grep -c '_hourly$')
	[ "$n" = 2 ] || fail "$ds: $n hourly snapshots after pruning hourly=2, expected 2"
	n=$(zfs list -H -o name -t snapshot "$ds" | grep -c '_daily$')
	[ "$n" = "$dailies" ] || fail "$ds: $n daily snapshots, expected $dailies"
done

# ---- syncoid -r: full ----
$SYNCOID -r tank backup/tank >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid -r full: $(tail -5 "$TESTDIR/sync.log")"
grep -q 'Sending oldest full snapshot tank/a/one@' "$TESTDIR/sync.log" || fail "no full send logged"
same_side tank backup/tank

# ---- incremental after new snapshots and changes ----
echo changed >"$S/a1/f"
touch -d '2020-01-02 03:04:05' "$S/a1/f"
echo new >"$S/b/new"
ok zfs snapshot -r tank@inc1
$SYNCOID -r tank backup/tank >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid -r incremental: $(tail -5 "$TESTDIR/sync.log")"
grep -q 'Sending incremental tank/a/one@' "$TESTDIR/sync.log" || fail "no incremental logged"
same_side tank backup/tank

# ---- a cut: the pipe dies mid-stream, syncoid resumes with the token ----
head -c 3000000 /dev/urandom >"$S/a/big"
ok zfs snapshot tank/a@cut
last=$(zfs list -H -o name -t snapshot backup/tank/a | tail -1)
zfs send -I "tank/a@${last#*@}" tank/a@cut 2>/dev/null | head -c 1500000 |
	zfs receive -s -F backup/tank/a 2>/dev/null
[ "${PIPESTATUS[2]}" = 1 ] || fail "the cut receive did not fail"
tok=$(zfs get -H -o value receive_resume_token backup/tank/a)
[ -n "$tok" ] && [ "$tok" != - ] || fail "no resume token after the cut"
$SYNCOID -r tank backup/tank >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid after a cut: $(tail -5 "$TESTDIR/sync.log")"
grep -q 'Resuming interrupted zfs send/receive from tank/a to backup/tank/a' "$TESTDIR/sync.log" ||
	fail "syncoid did not resume: $(head -5 "$TESTDIR/sync.log")"
[ "$(zfs get -H -o value receive_resume_token backup/tank/a)" = - ] || fail "token left"
same_side tank backup/tank

# ---- a cut whose source snapshot is then destroyed: syncoid resets (-A) ----
head -c 3000000 /dev/urandom >"$S/a/big2"
ok zfs snapshot tank/a@gone
zfs send -i tank/a@cut tank/a@gone 2>/dev/null | head -c 1500000 |
	zfs receive -s -F backup/tank/a 2>/dev/null
[ "$(zfs get -H -o value receive_resume_token backup/tank/a)" != - ] || fail "no token (2nd cut)"
ok zfs destroy tank/a@gone
ok zfs snapshot tank/a@after
$SYNCOID tank/a backup/tank/a >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid after a cut with the source gone: $(tail -5 "$TESTDIR/sync.log")"
grep -q 'resetting partially receive state because the snapshot source no longer exists' \
	"$TESTDIR/sync.log" || fail "syncoid did not reset: $(head -5 "$TESTDIR/sync.log")"
same_side tank/a backup/tank/a

# ---- --no-sync-snap --create-bookmark ----
echo more >"$S/t/more"
ok zfs snapshot -r tank@nosync1
ok zfs bookmark tank/b@inc1 tank/b#nosync1 # taken: syncoid falls back to a guid suffix
n_before=$(zfs list -H -o name -t snapshot -r tank | grep -c syncoid_)
$SYNCOID -r --no-sync-snap --create-bookmark tank backup/tank >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid --no-sync-snap --create-bookmark: $(tail -5 "$TESTDIR/sync.log")"
n_after=$(zfs list -H -o name -t snapshot -r tank | grep -c syncoid_)
[ "$n_before" = "$n_after" ] || fail "--no-sync-snap took a snapshot ($n_before -> $n_after)"
for ds in tank tank/a tank/a/one; do
	g1=$(zfs get -H -p -o value guid "$ds@nosync1")
	g2=$(zfs get -H -p -o value guid "$ds#nosync1")
	[ -n "$g1" ] && [ "$g1" = "$g2" ] || fail "$ds#nosync1: guid '$g2', snapshot has '$g1'"
done
g=$(zfs get -H -p -o value guid tank/b@nosync1)
zfs list -H -o name -t bookmark tank/b | grep -qx "tank/b#nosync1${g:0:6}" ||
	fail "no guid-suffixed bookmark tank/b#nosync1${g:0:6}"
same_side tank backup/tank

# ---- an incremental from a bookmark: the source kept no common snapshot ----
zfs list -H -o name -t snapshot tank/a/one >"$TESTDIR/one.snaps" || fail "list tank/a/one"
while read -r s; do ok zfs destroy "$s"; done <"$TESTDIR/one.snaps"
echo after-bookmark >"$S/a1/f"
ok zfs snapshot tank/a/one@afterbm
$SYNCOID --no-sync-snap tank/a/one backup/tank/a/one >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid from a bookmark: $(tail -5 "$TESTDIR/sync.log")"
grep -q "Sending incremental tank/a/one#'nosync1' " "$TESTDIR/sync.log" ||
	fail "no bookmark incremental: $(head -5 "$TESTDIR/sync.log")"
same_side tank/a/one backup/tank/a/one subset

# ---- -F rollbacks: the target has a snapshot the source does not ----
ok zfs set source="$S/b" backup/tank/b
ok zfs snapshot backup/tank/b@extra
echo again >"$S/b/f"
ok zfs snapshot -r tank@final
$SYNCOID -r tank backup/tank >"$TESTDIR/sync.log" 2>&1 ||
	fail "syncoid with rollback: $(tail -5 "$TESTDIR/sync.log")"
zfs list -H -o name -t snapshot backup/tank/b | grep -q '@extra$' && fail "@extra survived -F"
same_side tank/b backup/tank/b
same_side tank backup/tank subset # tank/a/one's source snapshots were destroyed above
[ $n_restore -gt 30 ] || fail "only $n_restore snapshots compared"
done_test
