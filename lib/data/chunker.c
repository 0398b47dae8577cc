/* chunker.c - FastCDC with normalized chunking (Xia et al., USENIX ATC 2016).
 *
 * Gear hash: h = (h << 1) + gear[byte].  Bit k of h depends on the last k+1
 * bytes only, so the high bits carry the widest window (64 bytes); the masks
 * therefore test the top bits of h ("high-bit masks").  This replaces the
 * paper's hand-spread masks with something derivable from the average size
 * alone; what matters is that it never changes, since it is part of the
 * format just like the table.
 *
 * Normalization level 2: mask_s has log2(avg)+2 one-bits (cuts before avg
 * are 4x rarer than 1/avg), mask_l has log2(avg)-2 (cuts after avg are 4x
 * more likely).  That squeezes chunk sizes towards avg.
 */
#include "data/chunker.h"

#include <errno.h>

#include "util.h"

/* The gear table: splitmix64 outputs 0..255 from seed 0x636169726e676561
 * ("cairngea").  A format constant: every boundary depends on it.  The seed
 * was picked so that a chunk made of zeros is never cut before max_size
 * for any allowed average size: long zero runs (sparse files, disk images)
 * then become identical max_size chunks instead of min-size confetti. */
static const uint64_t gear[256] = {
	0x8c3f8858532227a0ull, 0x0704325d9a97613cull, 0x3cb5e3232ccdc164ull,
	0xeda1b6da6727eee6ull, 0x8c46703c1de76ddcull, 0x7a7f127112da57aaull,
	0xb4b9ecc6a1dbde89ull, 0xe8c50bdae2eda792ull, 0x6b4acd09fcb923e0ull,
	0x4a2545039f48c06aull, 0x8f85e8a297a755c8ull, 0x29ca64e44a6a554dull,
	0xeea65c23a1aa54bfull, 0x37bf9ba9744a3d47ull, 0x9eb8b8e82dd21f65ull,
	0x6726e82a7a0197acull, 0x655ebd5d1b284d3aull, 0x6c0c303339f735b2ull,
	0xf5bbaa3fe572dc7bull, 0x459d17c378e07bdaull, 0x7bfe411b4538afa8ull,
	0x9c1ff395bdc35091ull, 0x005d3dbdd1ce2f90ull, 0x4e9dafb0f81c34cbull,
	0xf46a26b6b45afa73ull, 0x0b593298298e1abaull, 0xa66fb4c6ca9d866bull,
	0x6557a45e3621b85aull, 0x4333e8564e23ddeeull, 0xfe039745948bbe9dull,
	0x4b0d75fd5efc2e44ull, 0x5eebc62695ac5138ull, 0xcd433c7d10dd87fcull,
	0x7963c3d27f5fa644ull, 0x8fb6401dd9c71d0full, 0xe124d1845c441152ull,
	0x37f7a6dc6c6c857bull, 0x210cd3e041b6f31eull, 0x5aee26828f15c942ull,
	0xa1efd3caa2347a5eull, 0xae4a6b70098b95a3ull, 0xa66657640ce9d614ull,
	0xdc1839b17695c5fcull, 0xd0f55deb7c776983ull, 0xd16597a261ee78eeull,
	0x0031555c53df79bcull, 0x8740aa7b3f9da562ull, 0x96c6c107b1cac416ull,
	0x6fab0fe122fbfe8bull, 0xb369699cda885e5bull, 0xe387f8a3b8105fb2ull,
	0x1d94644e4beef737ull, 0x05adfafb9f8a0eb9ull, 0xc095ba020787187full,
	0x878615933759ca8aull, 0x06847761e5ef01e5ull, 0x7167fd80f085b09bull,
	0x8fddcca120d6889bull, 0x37d11b07e5b51f12ull, 0x42fed7ddebf6ff40ull,
	0x51a49a3a377fb65full, 0x1fed1aa64e078ea3ull, 0x537d24f34c318641ull,
	0xe30f6d192ec17d75ull, 0xd49088796382ef1cull, 0x34cb5c8d98827766ull,
	0xf079ec6eeb824b9full, 0xeb0fc1aefa8e1d8dull, 0x7f7b7f535541d345ull,
	0xa62fdb7b892b1ee8ull, 0x72aaa11d119f4434ull, 0x102010d3ec8f54e1ull,
	0xe0b457f650c756c5ull, 0x0f819ae6d6442964ull, 0x3a6f48c82322ca43ull,
	0x83466081453470fbull, 0xc97595ba3b8e6c47ull, 0x9fedd84d77e1ff30ull,
	0x98681752b6bce1e0ull, 0x9fefb868d797ba9aull, 0x73f11defb0509dd5ull,
	0xb63a57c8381ca9d6ull, 0x79e9ae53e08f8726ull, 0xe947c045ee1338d2ull,
	0xf23017168c899631ull, 0x2c31528c4c72f39eull, 0x2cac6079bc8952daull,
	0xea778f8e53dc1869ull, 0xe07d497e05749a9cull, 0xa546147db516102cull,
	0xf30bb5a1e6c7d2ffull, 0xacd228f0ebaf94c0ull, 0xcbb7f34a484682bbull,
	0x4963354aadd03721ull, 0x614dfb95740e5437ull, 0x20fb52ec001cc514ull,
	0x62b1cc21b8fe5dd9ull, 0x336c4d53cd13bb42ull, 0xd52d2a3b2129a077ull,
	0x50eb21d795c56696ull, 0xabf964699bf3fadeull, 0x67ba380656e7ad3full,
	0x62220adc95d2afe8ull, 0x1d1b2cf358b5cd5aull, 0x48aedf4ce56401b9ull,
	0xa897cb028631b368ull, 0x0d1087d467af7a3cull, 0xf5b51329ac78dfb5ull,
	0xdeb55d56f221c607ull, 0x7253a96058f2268bull, 0x12dcded6e3eb2295ull,
	0x90936f0a96f86607ull, 0xac6d5075b92615f5ull, 0x96b8ddd2a992c9a3ull,
	0x4d8728fa281ea95bull, 0x8bcc85e981341afaull, 0xcfeb3e393a1ae489ull,
	0x9b638a2ab6762842ull, 0xf0e8aaf652a08863ull, 0x6670908c196073e6ull,
	0x20a4e39b624c3a2dull, 0x9a5bd8467644cfbbull, 0x27b3ad2a19e1df2aull,
	0xd407fc7a7fe852dfull, 0x71b0993eb261770aull, 0xacd83ecffa370a50ull,
	0x0bf7789d0e741b2aull, 0x0ad4ea90a434e2adull, 0x95e0a24ea9df22dfull,
	0x151529834c517e81ull, 0xb451bfce1113d25aull, 0x299541139e130590ull,
	0x793f04074d75aa18ull, 0xdc050aadbdf365aeull, 0x613debfe89274c34ull,
	0xcdafa10b11ecf1f8ull, 0x48c0f6530c8434abull, 0x0c4625ebf6b8b359ull,
	0x44792463f944cc8dull, 0x946f966829cec654ull, 0x113001ad8de19e69ull,
	0x5b443a3aca8e601eull, 0x3e574ab484e2c216ull, 0x9f012a73676eca7dull,
	0x94e109f2ed72be62ull, 0xa955076b531a7117ull, 0x7800bc2e62632c88ull,
	0xa15f40d5dea3a007ull, 0xa50b8ebbf0cb9037ull, 0xbed85fb3287dec52ull,
	0x4302fd461542bb25ull, 0xb8eca6bcce52d8cbull, 0xac698e5edd09c98dull,
	0xd10beb3da88e91c7ull, 0x24ca56da1c2ac3beull, 0x7739da0955d73ad7ull,
	0x025c67c416339856ull, 0x2e335de97cd72a6dull, 0x0164d1d4848f9a61ull,
	0x40ba106a717f02fbull, 0x8adfe783ad4e2489ull, 0xcfe1d97c5fce6631ull,
	0xf5fb0feaac617533ull, 0x04c3eef055469f97ull, 0x511076011bd36372ull,
	0x2fb0688d68e3e3e8ull, 0xeb0675e14eb6995bull, 0x88fe4f85d51594bcull,
	0x94f8c452abe32e3full, 0xba410546353abb56ull, 0x7e1fe1192df842f0ull,
	0xc26a52911f2de321ull, 0x89af2a7684271aacull, 0x85e2062a7a6f3462ull,
	0xa830e06cb728b738ull, 0xfc341216d640f89dull, 0xed9d382379e4eab1ull,
	0x66fd8547bca03121ull, 0x8d2d20660f516248ull, 0x8ea441c42cdb7d73ull,
	0x51e58d3f5d9ed5c7ull, 0xe7563d9bce57c42cull, 0x4ea52fbc4ecb6105ull,
	0xb79bc08d4d7ce69bull, 0xfd585d758abd34a8ull, 0x3a179a89c0743411ull,
	0xd8ab93832ef5d8baull, 0xdfc00dceff72381aull, 0xc683961d272fdb83ull,
	0x45028213bb72f18full, 0x25f6ec8abd1ad6eaull, 0x7b2f8f2f7a9c68a3ull,
	0x20d73c8b9cf6c096ull, 0x7904ead9bba84e4full, 0x64d58f65580c3096ull,
	0x7a13116590586cecull, 0x897c67b9a104884cull, 0x774f4978d4bbe3edull,
	0xa1e3ae4d017c132bull, 0x38491602cad6213eull, 0x81afe8070bd48b92ull,
	0x22f7674c7e1dbb91ull, 0x4e6971bbf17eca80ull, 0xc2f4066ce77268d4ull,
	0xf0959f881be0b382ull, 0x6c2c71af45c78ad9ull, 0x0ecbae285d37f457ull,
	0x5a29fc66ba2ba125ull, 0xb646be5e438e1863ull, 0x7d69c121d8ce570dull,
	0x54c0b78a13143265ull, 0xdc439c6bfbb7d679ull, 0x25f3b8a8bc234b86ull,
	0xe91ee93462329810ull, 0xd0aa7d61d70af6b8ull, 0x9e11865288c1beb9ull,
	0xef60b02345658c94ull, 0x618cbcf1b1ce272full, 0x5c53fbbb446127faull,
	0x872031dfb8eff572ull, 0x7a7c17dd3306360eull, 0xea90c66c6bc81e5cull,
	0xf29a52700609eb02ull, 0x7d0a056beb3746e9ull, 0x92e36408b41b71aeull,
	0x8a9e1af51d48dffdull, 0x1dfc81eb4c4c262full, 0xfe6fc2e95ef93753ull,
	0x7bf6cce33facb52dull, 0xfa010e592ad2a4b5ull, 0x66d811476df6335cull,
	0xacc0490dcdacb70bull, 0x50f3ad75a6357a44ull, 0x0e000197308dd86eull,
	0xdc3ebedf1efe45e4ull, 0xb7312f0f0d14bb7aull, 0xc87406ee1eb856fdull,
	0x73b2df6cc8012206ull, 0x6ee77e5811608d86ull, 0x87efc076ac480337ull,
	0x2f1765d176ee05c4ull, 0x1648ffaa43097b3aull, 0xd694a2b6d47163f6ull,
	0x2aec90a5d03e30b4ull, 0x2fbf3b710aa5f794ull, 0x1b6224f55b871d1cull,
	0xab78ecb42a12c803ull, 0x20d56aaeeb427f7full, 0x6599e0b9b47f9339ull,
	0xa26277bfc4533c18ull, 0x30308377dc04eb8aull, 0x71104bab6a317a5bull,
	0xf547fb9af1e2df70ull, 0xc14b4b55ba98522dull, 0x5853ae55608206e9ull,
	0x8af200cb99400c6cull,
};

#define AVG_MIN (1u << 10)
#define AVG_MAX (8u << 20)

/* The top n bits of a 64-bit word. */
static uint64_t top_bits(unsigned n)
{
	return ~0ull << (64 - n);
}

int chunker_params_init(chunker_params_t *p, uint32_t avg_size)
{
	if (avg_size < AVG_MIN || avg_size > AVG_MAX || (avg_size & (avg_size - 1)))
		return -EINVAL;
	unsigned bits = __builtin_ctz(avg_size);
	p->min_size = avg_size / 4;
	p->avg_size = avg_size;
	p->max_size = avg_size * 4;
	p->mask_s = top_bits(bits + 2);
	p->mask_l = top_bits(bits - 2);
	p->gear = NULL;
	return 0;
}

void chunker_params_seed(chunker_params_t *p, const uint64_t *g)
{
	p->gear = g;
}

/* Scans data[from..to) continuing hash *h; returns the index just past the
 * first byte after which the hash has no bit of mask set, or 0 when there
 * is none (a cut is never at 0).  Unrolled by hand because each byte costs
 * one shift-add, so loop overhead would otherwise be a sizeable share. */
static size_t scan(const uint64_t *restrict gear, const uint8_t *data, size_t from, size_t to,
		   uint64_t mask, uint64_t *h)
{
	uint64_t x = *h;
	size_t i = from;

#define STEP(k)                                     \
	do {                                        \
		x = (x << 1) + gear[data[i + (k)]]; \
		if (!(x & mask))                    \
			return i + (k) + 1;         \
	} while (0)

	for (; i + 4 <= to; i += 4) {
		STEP(0);
		STEP(1);
		STEP(2);
		STEP(3);
	}
	for (; i < to; i++)
		STEP(0);
#undef STEP
	*h = x;
	return 0;
}

size_t chunker_cut(const chunker_params_t *p, const uint8_t *data, size_t len)
{
	if (len <= p->min_size)
		return len;
	size_t end = MIN(len, (size_t)p->max_size);
	size_t normal = MIN(end, (size_t)p->avg_size);
	/* The hash starts fresh at min_size: bytes before it cannot place a cut,
	 * so hashing them would only cost time (the paper's cut-point skipping).
	 * Every decision depends only on bytes before the cut and on offsets
	 * from the chunk start, never on len, which is what makes streaming
	 * (cut, refill, cut again) give the same boundaries as one big buffer. */
	const uint64_t *g = p->gear ? p->gear : gear;
	uint64_t h = 0;
	size_t cut = scan(g, data, p->min_size, normal, p->mask_s, &h);
	if (!cut)
		cut = scan(g, data, normal, end, p->mask_l, &h);
	return cut ? cut : end;
}
