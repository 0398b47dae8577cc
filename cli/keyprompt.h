/* keyprompt.h - reading key material for keylocation=prompt. */
#ifndef CAIRN_KEYPROMPT_H
#define CAIRN_KEYPROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEYPROMPT_MAX 1024

/* Reads key material for root in keyformat fmt ("passphrase", "hex",
 * "raw").  From a terminal on stdin: a prompt on stderr, no echo, and
 * with confirm a second entry that must match (raw keys cannot be typed:
 * refused).  Otherwise all of stdin (up to KEYPROMPT_MAX bytes).
 * Returns 0, or 1 after printing the reason. */
int keyprompt_read(const char *root, const char *fmt, bool confirm, uint8_t buf[KEYPROMPT_MAX],
		   size_t *len);

/* Wipes buf. */
void keyprompt_wipe(uint8_t *buf, size_t len);

#endif
