# mount.sh - sourced by the mount tests after lib.sh: mounting in the
# foreground as a job of the test's shell, unmounting with the mount
# process's exit status and stderr checked, and reading holds straight from
# the catalog.  mount_cleanup unmounts whatever is left; the test calls it
# from its EXIT trap.
pids=()

# mount_fg MOUNTPOINT DATASET ERRFILE: mounts in the foreground, as a job
# of this shell (its exit status and stderr are checked at unmount); the
# mount's pid is left in MPID.
mount_fg() {
	"$CAIRN" mount -f "$1" "$2" 2>"$3" &
	pids+=($!)
	MPID=$!
	for _ in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.05; done
	fail "$1 not mounted"
	return 1
}

# unmount_fg MOUNTPOINT PID ERRFILE: unmounts; the mount process must exit 0
# and print nothing (a failed release of its holds is printed).
unmount_fg() {
	fusermount3 -u "$1" || fail "unmount $1"
	wait "$2"
	local rc=$?
	[ $rc -eq 0 ] || fail "mount process of $1 exited $rc: $(cat "$3")"
	[ -s "$3" ] && fail "mount process of $1 printed: $(cat "$3")"
}

# mount_cleanup MOUNTPOINT...: lazily unmounts each and reaps the mounts.
mount_cleanup() {
	local m p
	for m in "$@"; do fusermount3 -u -z "$m" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}

# holds_of TAG: "snapshot pid" for each hold with TAG, read from the catalog
# without opening the store (any cairn command would reap a dead mount's
# temporary holds first, hiding holds an unmount failed to release).
holds_of() {
	python3 - "$CAIRN_STORE/catalog.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=60)
q = "SELECT d.name || '@' || s.name, h.pid FROM hold h JOIN snapshot s ON s.id = h.snapshot" \
    " JOIN dataset d ON d.id = s.dataset WHERE h.tag = ? ORDER BY 1"
for name, pid in db.execute(q, (sys.argv[2],)):
    print(name, pid)
PY
}
