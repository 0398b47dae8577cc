/* lockholders.c - see lockholders.h. */
#include "crypt/lockholders.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define HOLDERS_NAMED 4 /* more are only counted */

/* One "lock:" line of an fdinfo file:
 *   lock:	1: OFDLCK  ADVISORY  READ -1 fe:00:10952975 100 100
 * (a waiter's has "->" before the kind; the end may be "EOF").  Whether
 * it is a held lock on (dev, ino) overlapping [start, end] that an OFD
 * lock conflicts with: a POSIX or OFD (fcntl) one.  flock() locks and
 * leases are apart from those on Linux: a process holding flock on the
 * file keeps nothing from being locked, and naming it would send the
 * user after the wrong process (t1386).  With flock, the reverse: only
 * a flock() lock, which covers the whole file, counts (t1762). */
static bool line_covers(const char *line, dev_t dev, ino_t ino, off_t start, off_t end,
			bool flock)
{
	char kind[16], mode[16], type[16], last[32];
	unsigned maj, min;
	unsigned long long i;
	long long s;
	if (sscanf(line, "lock: %*d: %15s %15s %15s %*d %x:%x:%llu %lld %31s", kind, mode, type,
		   &maj, &min, &i, &s, last) != 8)
		return false; /* a waiter's line ("->" shifts the fields), or another */
	if (flock ? strcmp(kind, "FLOCK") != 0 : strcmp(kind, "OFDLCK") && strcmp(kind, "POSIX"))
		return false;
	long long e = strcmp(last, "EOF") ? strtoll(last, NULL, 10) : INT64_MAX;
	return maj == major(dev) && min == minor(dev) && i == (unsigned long long)ino &&
	       (flock || (s <= (long long)end && e >= (long long)start));
}

/* Whether descriptor fd of process pid (a directory fd of /proc/PID)
 * holds a lock on the file (dev, ino) overlapping [start, end].  Only its
 * fdinfo is read: its lock lines name their file, and reading them asks
 * no filesystem.  A stat of fd/N would follow it to its file and wait on
 * that file's server: one descriptor anywhere on a stalled FUSE or NFS
 * mount, and the refusal never came (t1387). */
static bool fd_holds(int piddir, const char *fd, dev_t dev, ino_t ino, off_t start, off_t end,
		     bool flock)
{
	char path[300];
	snprintf(path, sizeof(path), "fdinfo/%s", fd);
	int f = openat(piddir, path, O_RDONLY | O_CLOEXEC);
	FILE *in = f < 0 ? NULL : fdopen(f, "re");
	if (!in) {
		if (f >= 0)
			close(f);
		return false;
	}
	char line[256];
	bool held = false, at_start = true;
	/* A line longer than the buffer comes in pieces: only a line's
	 * first piece may be a lock line. */
	while (!held && fgets(line, sizeof(line), in)) {
		held = at_start && !strncmp(line, "lock:", 5) &&
		       line_covers(line, dev, ino, start, end, flock);
		at_start = strchr(line, '\n') != NULL;
	}
	fclose(in);
	return held;
}

/* Whether process pid holds such a lock through any descriptor. */
static bool pid_holds(int proc, const char *pid, dev_t dev, ino_t ino, off_t start, off_t end,
		      bool flock)
{
	int piddir = openat(proc, pid, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0)
		return false;
	int fds = openat(piddir, "fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fds < 0 ? NULL : fdopendir(fds);
	bool held = false;
	struct dirent *de;
	while (d && !held && (de = readdir(d)))
		held = de->d_name[0] != '.' &&
		       fd_holds(piddir, de->d_name, dev, ino, start, end, flock);
	if (d)
		closedir(d);
	else if (fds >= 0)
		close(fds);
	close(piddir);
	return held;
}

/* A process names itself (prctl PR_SET_NAME: any 15 bytes), and the
 * holder may be anyone who may read the store, while the message goes to
 * root's terminal: every byte that is not printable ASCII, and the
 * backslash, is written as \ooo, so no escape sequence gets through
 * (t1386).  out holds 4 bytes per byte of in, and the NUL. */
static void comm_escape(const char *in, char *out, size_t outlen)
{
	size_t o = 0;
	for (; *in && o + 5 <= outlen; in++) {
		unsigned char ch = (unsigned char)*in;
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\%03o", ch);
	}
	out[o] = 0;
}

/* Appends "pid N (comm)" for process pid to buf. */
static void name_holder(int proc, const char *pid, size_t nth, char *buf, size_t buflen)
{
	char path[300], comm[32] = "?", shown[4 * sizeof(comm) + 1];
	snprintf(path, sizeof(path), "%s/comm", pid);
	int f = openat(proc, path, O_RDONLY | O_CLOEXEC);
	if (f >= 0) {
		ssize_t n = read(f, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = 0;
		/* the kernel ends it with one newline; one inside is the name's */
		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = 0;
		close(f);
	}
	comm_escape(comm, shown, sizeof(shown));
	size_t used = strlen(buf);
	if (used < buflen)
		snprintf(buf + used, buflen - used, "%spid %s (%s)", nth ? ", " : "", pid, shown);
}

/* lock_holders, or with flock flock_holders. */
static size_t holders(dev_t dev, ino_t ino, off_t start, off_t len, bool flock, char *buf,
		      size_t buflen)
{
	if (buflen)
		buf[0] = 0;
	/* One descriptor for both the listing and the openat()s (openat does
	 * not move readdir's place): a dup() of it leaked when fdopendir
	 * failed. */
	DIR *d = opendir("/proc");
	int proc = d ? dirfd(d) : -1;
	size_t found = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    !pid_holds(proc, de->d_name, dev, ino, start, start + len - 1, flock))
			continue;
		if (found < HOLDERS_NAMED)
			name_holder(proc, de->d_name, found, buf, buflen);
		found++;
	}
	if (found > HOLDERS_NAMED) {
		size_t used = strlen(buf);
		if (used < buflen)
			snprintf(buf + used, buflen - used, " and %zu more",
				 found - HOLDERS_NAMED);
	}
	if (d)
		closedir(d);
	return found;
}

size_t lock_holders(dev_t dev, ino_t ino, off_t start, off_t len, char *buf, size_t buflen)
{
	return holders(dev, ino, start, len, false, buf, buflen);
}

size_t flock_holders(dev_t dev, ino_t ino, char *buf, size_t buflen)
{
	return holders(dev, ino, 0, 0, true, buf, buflen);
}
