/* util.c - digests, buffers, packing and syscall wrappers. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

void util_freep(void *pp)
{
	free(*(void **)pp);
}

void util_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

void digest_of(const void *data, size_t len, digest_t *out)
{
	SHA256(data, len, out->b);
}

void digest_to_hex(const digest_t *d, char out[DIGEST_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < DIGEST_LEN; i++) {
		out[2 * i] = hex[d->b[i] >> 4];
		out[2 * i + 1] = hex[d->b[i] & 15];
	}
	out[DIGEST_HEX_LEN] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int digest_from_hex(const char *hex, digest_t *out)
{
	for (int i = 0; i < DIGEST_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out->b[i] = hi << 4 | lo;
	}
	return hex[DIGEST_HEX_LEN] ? -EINVAL : 0;
}

void chunk_ref_pack(const chunk_ref_t *r, uint8_t out[CHUNK_REF_WIRE])
{
	memcpy(out, r->digest.b, DIGEST_LEN);
	put_u32(out + 32, r->plain_len);
	put_u32(out + 36, r->stored_len);
}

void chunk_ref_unpack(const uint8_t in[CHUNK_REF_WIRE], chunk_ref_t *r)
{
	memcpy(r->digest.b, in, DIGEST_LEN);
	r->plain_len = get_u32(in + 32);
	r->stored_len = get_u32(in + 36);
}

int array_reserve(void *arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / elem)
		return -ENOMEM;
	void **a = arr;
	void *p = realloc(*a, c * elem);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = c;
	return 0;
}

int buf_reserve(buf_t *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return 0;
	size_t want = b->len + extra;
	if (want < b->len)
		return -ENOMEM;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap * 2 > cap ? cap * 2 : want;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(buf_t *b, const void *data, size_t len)
{
	if (!len)
		return 0;
	int r = buf_reserve(b, len);
	if (r < 0)
		return r;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

int buf_put_u8(buf_t *b, uint8_t v)
{
	return buf_append(b, &v, 1);
}

int buf_put_u16(buf_t *b, uint16_t v)
{
	uint8_t p[2];
	put_u16(p, v);
	return buf_append(b, p, 2);
}

int buf_put_u32(buf_t *b, uint32_t v)
{
	uint8_t p[4];
	put_u32(p, v);
	return buf_append(b, p, 4);
}

int buf_put_u64(buf_t *b, uint64_t v)
{
	uint8_t p[8];
	put_u64(p, v);
	return buf_append(b, p, 8);
}

void buf_consume(buf_t *b, size_t n)
{
	if (!n)
		return;
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

void buf_free(buf_t *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += n;
	}
	return 0;
}

int rename_noreplace(int dirfd, const char *from, const char *to)
{
	if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (linkat(dirfd, from, dirfd, to, 0) < 0)
		return -errno;
	unlinkat(dirfd, from, 0);
	return 0;
}

int pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += n;
	}
	return 0;
}

int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t random_u64(void)
{
	uint64_t v = 0;
	while (v == 0) {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint64_t)now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	}
	return v;
}

unsigned fd_limit_share(unsigned divisor, unsigned lo, unsigned hi)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return hi;
	rlim_t share = rl.rlim_cur / divisor;
	return share < lo ? lo : share > hi ? hi : (unsigned)share;
}

uint64_t process_start_time(int pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = 0;
	/* The command name may contain spaces and parentheses: skip past the
	 * last ')' and count fields from there (state is field 3). */
	char *p = strrchr(line, ')');
	if (!p)
		return 0;
	/* A zombie has exited: whatever it owned is gone. */
	if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return 0;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

uint64_t fnv1a64(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int open_regular(int dirfd, const char *path, int flags)
{
	int fd = openat(dirfd, path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == ELOOP ? CAIRN_ECORRUPT : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return CAIRN_ECORRUPT;
	}
	return fd;
}

int lock_try(int fd, short type)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return errno == EACCES ? -EAGAIN : -errno;
}

void stop_signals_block(sigset_t *old)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, old);
}

void stop_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

int thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t old;
	stop_signals_block(&old);
	int r = pthread_create(th, NULL, fn, arg);
	stop_signals_restore(&old);
	return r;
}
