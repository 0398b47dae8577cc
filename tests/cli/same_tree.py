#!/usr/bin/env python3
"""same_tree.py A B: is tree B a faithful copy of tree A?

Compares every entry (the roots included) for: type, permission bits,
owner and group, mtime in nanoseconds, size, content, symlink target, device
numbers, every extended attribute (user.*, trusted.*, security.*, and the
system.posix_acl_* ones that hold ACLs), the hardlink structure (which paths
share an inode), and sparseness: every hole of A must be a hole of B (B may
not allocate data where A has none).  atime and ctime are not compared (a
backup reads A; ctime cannot be set).  Prints up to 20 differences and exits
1 if there is any, 2 on a usage error.
"""
import os
import stat
import sys

MAX_SHOWN = 20


def entries(root):
    """rel path -> lstat result, for root and everything under it."""
    out = {".": os.lstat(root)}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            full = os.path.join(dirpath, n)
            out[os.path.relpath(full, root)] = os.lstat(full)
    return out


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    vals = {}
    for n in names:
        try:
            vals[n] = os.getxattr(path, n, follow_symlinks=False)
        except OSError as e:
            vals[n] = "unreadable: %s" % e.strerror
    return vals


def data_map(path, size):
    """[(start, end)] of the data regions, by SEEK_DATA / SEEK_HOLE."""
    regions = []
    fd = os.open(path, os.O_RDONLY)
    try:
        off = 0
        while off < size:
            try:
                d = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            h = os.lseek(fd, d, os.SEEK_HOLE)
            regions.append((d, h))
            off = h
    finally:
        os.close(fd)
    return regions


def covered(inner, outer):
    """Is every region of inner inside some region of outer?"""
    return all(any(os_ <= s and e <= oe for os_, oe in outer) for s, e in inner)


def same_content(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x = fa.read(1 << 20)
            y = fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def link_groups(root, ents):
    """The hardlink structure: sets of paths that share one inode."""
    by_ino = {}
    for rel, st in ents.items():
        if not stat.S_ISDIR(st.st_mode):
            by_ino.setdefault((st.st_dev, st.st_ino), []).append(rel)
    return sorted(sorted(g) for g in by_ino.values() if len(g) > 1)


def compare(a, b):
    diffs = []
    ea, eb = entries(a), entries(b)
    for rel in sorted(set(ea) - set(eb)):
        diffs.append("%s: only in %s" % (rel, a))
    for rel in sorted(set(eb) - set(ea)):
        diffs.append("%s: only in %s" % (rel, b))
    for rel in sorted(set(ea) & set(eb)):
        sa, sb = ea[rel], eb[rel]
        pa, pb = os.path.join(a, rel), os.path.join(b, rel)

        def differ(what, va, vb):
            if va != vb:
                diffs.append("%s: %s %r != %r" % (rel, what, va, vb))
                return True
            return False

        if differ("type", stat.S_IFMT(sa.st_mode), stat.S_IFMT(sb.st_mode)):
            continue
        differ("mode", oct(stat.S_IMODE(sa.st_mode)), oct(stat.S_IMODE(sb.st_mode)))
        differ("owner", (sa.st_uid, sa.st_gid), (sb.st_uid, sb.st_gid))
        differ("mtime_ns", sa.st_mtime_ns, sb.st_mtime_ns)
        differ("xattrs", xattrs(pa), xattrs(pb))
        m = sa.st_mode
        if stat.S_ISLNK(m):
            differ("symlink target", os.readlink(pa), os.readlink(pb))
        elif stat.S_ISCHR(m) or stat.S_ISBLK(m):
            differ("device", (os.major(sa.st_rdev), os.minor(sa.st_rdev)),
                   (os.major(sb.st_rdev), os.minor(sb.st_rdev)))
        elif stat.S_ISREG(m):
            if differ("size", sa.st_size, sb.st_size):
                continue
            if not same_content(pa, pb):
                diffs.append("%s: content differs" % rel)
            ma, mb = data_map(pa, sa.st_size), data_map(pb, sb.st_size)
            if not covered(mb, ma):
                diffs.append("%s: holes lost: data %s, copy has data %s (%d vs %d blocks)"
                             % (rel, ma[:4], mb[:4], sa.st_blocks, sb.st_blocks))
    differ_links = link_groups(a, ea), link_groups(b, eb)
    if differ_links[0] != differ_links[1]:
        diffs.append("hardlinks: %s has %s, %s has %s"
                     % (a, differ_links[0][:5], b, differ_links[1][:5]))
    return diffs


def main():
    if len(sys.argv) != 3:
        print("usage: same_tree.py A B", file=sys.stderr)
        return 2
    diffs = compare(sys.argv[1], sys.argv[2])
    for d in diffs[:MAX_SHOWN]:
        print(d)
    if len(diffs) > MAX_SHOWN:
        print("... %d more differences" % (len(diffs) - MAX_SHOWN))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
