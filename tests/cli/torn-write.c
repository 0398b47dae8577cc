/* torn-write.c - LD_PRELOAD shim that writes to a file while the backup
 * reads it: the first read or pread of an fd open on the file named
 * $TORN_NAME first either overwrites its first bytes in place with 'X'
 * ($TORN_MODE=rewrite, the size unchanged) or appends a line to it
 * ($TORN_MODE=append, as a log grows), through a descriptor of its own,
 * and notes "rewrote NAME" or "appended NAME" in $SWAP_LOG, so a test can
 * see the write happened while the file was open for the backup.  It waits
 * 20 ms first, so the write lands in a later tick of the kernel's clock
 * than the open's stat even where file times are that coarse. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int done;

static void disturb(int fd)
{
	const char *want = getenv("TORN_NAME"), *mode = getenv("TORN_MODE");
	const char *log = getenv("SWAP_LOG");
	if (!want || !mode || !log || atomic_load(&done))
		return;
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return;
	path[n] = 0;
	const char *base = strrchr(path, '/');
	if (strcmp(base ? base + 1 : path, want) || atomic_exchange(&done, 1))
		return;
	usleep(20000);
	int rewrite = !strcmp(mode, "rewrite");
	int w = open(path, O_WRONLY | O_CLOEXEC | (rewrite ? 0 : O_APPEND));
	if (w < 0)
		return;
	static const char xs[] = "XXXXXXXXXXXXXXXX", line[] = "one more log line\n";
	ssize_t k = rewrite ? pwrite(w, xs, sizeof(xs) - 1, 0) : write(w, line, sizeof(line) - 1);
	close(w);
	FILE *f = k > 0 ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s %s\n", rewrite ? "rewrote" : "appended", want);
		fclose(f);
	}
}

ssize_t read(int fd, void *buf, size_t len)
{
	static ssize_t (*real)(int, void *, size_t);
	if (!real)
		real = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	disturb(fd);
	return real(fd, buf, len);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	static ssize_t (*real)(int, void *, size_t, off_t);
	if (!real)
		real = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
	disturb(fd);
	return real(fd, buf, len, off);
}
