/*
 * hosttest_lamport.cu -- the "empty" value of include/pkb_lamport.cuh on
 * the host: no GPU. A unit is taken once no element is "empty" (the NaN
 * with every bit set), so every unit a sender puts must have none
 * (pkb_lp_scrub, which changes that NaN alone: every other pattern, negative
 * zero included, must pass unchanged), and pkb_lp_landed must see an empty
 * element wherever one is. Built with nvcc and run by
 * tests/cli/t0190-header-host.sh; prints "ok N" or a FAIL line per broken
 * case, and exits 1 on any.
 */
#include <stdio.h>
#include <cuda_bf16.h>
#include "pkb_lamport.cuh"

static int fails, cases;

static void fail(const char *why, uint32_t x)
{
	if (fails++ < 10)
		printf("FAIL %s: 0x%08x\n", why, x);
}

/* a 16-bit element type: every pattern of one half beside a few of the other */
static void check16(uint32_t x)
{
	cases++;
	const uint32_t s = pkb_lp_scrub_word(x, 2);
	const uint32_t lo = x & 0xffff, hi = x >> 16;
	if ((s & 0xffff) != (lo == 0xffff ? 0x7fff : lo))
		fail("low half: empty kept, or another value changed", x);
	if ((s >> 16) != (hi == 0xffff ? 0x7fff : hi))
		fail("high half: empty kept, or another value changed", x);
	uint4 v = make_uint4(0x3f803f80u, x, 0x3f803f80u, 0x3f803f80u);
	if (pkb_lp_landed<__nv_bfloat16>(v) == (lo == 0xffff || hi == 0xffff))
		fail("landed wrong for a 16-bit unit", x);
	if (!pkb_lp_landed<__nv_bfloat16>(pkb_lp_scrub<__nv_bfloat16>(v)))
		fail("a scrubbed 16-bit unit reads as not landed", x);
}

static void check32(uint32_t x)
{
	cases++;
	const uint32_t s = pkb_lp_scrub_word(x, 4);
	if (s != (x == 0xffffffffu ? 0x7fffffffu : x))
		fail("fp32: empty kept, or another value changed", x);
	uint4 v = make_uint4(0x3f800000u, 0x3f800000u, 0x3f800000u, x);
	if (pkb_lp_landed<float>(v) == (x == 0xffffffffu))
		fail("landed wrong for an fp32 unit", x);
	if (!pkb_lp_landed<float>(pkb_lp_scrub<float>(v)))
		fail("a scrubbed fp32 unit reads as not landed", x);
}

int main(void)
{
	const uint32_t some[] = { 0x0000, 0x8000, 0xfffe, 0x7fff, 0x3f80, 0xbf80, 0xffff, 0xff80 };
	for (uint32_t a = 0; a < 0x10000; a++)
		for (uint32_t b : some) {
			check16(b << 16 | a);
			check16(a << 16 | b);
		}
	const uint32_t words[] = { 0, 0x80000000u, 0xfffffffeu, 0x7fffffffu, 0x3f800000u,
				   0xbf800000u, 0xffff0000u, 0x0000ffffu, 0xff800000u };
	for (uint32_t x : words)
		check32(x);
	for (uint32_t a = 0; a < 0x10000; a++) {
		check32(a << 16 | 0x1234u);
		check32(a << 16 | 0xffffu);
	}
	/* the empty values themselves */
	const uint32_t e = PKB_LP_EMPTY;
	cases++;
	if (pkb_lp_landed<__nv_bfloat16>(make_uint4(e, e, e, e)))
		fail("bf16 empty unit", e);
	cases++;
	if (pkb_lp_landed<float>(make_uint4(e, e, e, e)))
		fail("fp32 empty unit", e);
	printf(fails ? "FAIL %d of %d cases\n" : "ok %d cases, %d failed\n", fails ? fails : cases,
	       fails ? cases : 0);
	return fails ? 1 : 0;
}
