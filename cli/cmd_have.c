/* cmd_have.c - cairn have: the far side of `cairn sync`.  Reads batches of
 * digests (u32 count, then 32 bytes each) on stdin and answers with one
 * byte per digest (1 = present) on stdout.  A present chunk is touched, so
 * the receiving store's GC keeps it until the receive that relies on it
 * has committed; with -n (sync -n: no receive follows) nothing is touched,
 * and the store is left as it was. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int read_all(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, (char *)buf + got, n - got);
		if (k <= 0)
			return got == 0 && k == 0 ? 1 : -1;
		got += k;
	}
	return 0;
}

static const char *u = "have [-n|--dry-run]   (internal: used by cairn sync over ssh)";

int cmd_have(int argc, char **argv)
{
	static const struct option lo[] = {{"dry-run", no_argument, 0, 'n'}, {0}};
	bool dry = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "n", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': dry = true; break;
		default: return cli_usage(u, NULL);
		}
	}
	if (optind != argc)
		return cli_usage(u, "unexpected argument '%s'", argv[optind]);
	cairn_store *st;
	if (cli_open(&st))
		return 1;
	static uint8_t digests[4096][32], present[4096];
	int rc = 0;
	for (;;) {
		uint8_t hdr[4];
		int e = read_all(0, hdr, 4);
		if (e)
			break;
		uint32_t n = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (uint32_t)hdr[3] << 24;
		if (n > 4096 || read_all(0, digests, (size_t)n * 32)) {
			cli_err(NULL, "malformed request");
			rc = 1;
			break;
		}
		const uint8_t(*d)[32] = (const uint8_t(*)[32])digests;
		int r = dry ? cairn_chunks_peek(st, d, n, present)
			    : cairn_chunks_present(st, d, n, present);
		if (r < 0) {
			rc = cli_fail(st, NULL, r); /* sync reports it as the far side's reason */
			break;
		}
		if (write(1, present, n) != (ssize_t)n) {
			rc = 1; /* sync is gone, or says why itself */
			break;
		}
	}
	cairn_store_close(st);
	return rc;
}
