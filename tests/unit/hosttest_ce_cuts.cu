/*
 * hosttest_ce_cuts.cu -- pkb_ce_cuts (include/pkb_ce.cuh), the parts a copy
 * engine step is cut into, on the host: no GPU. Built with nvcc and run by
 * tests/cli/t0190-header-host.sh; prints "ok N" or a FAIL line per broken
 * case, and exits 1 on any.
 */
#include <stdio.h>
#include "pkb_ce.cuh"

static int fails, cases;

static void check(size_t bytes, int chunks, size_t tail, int last)
{
	struct pkb_ce ce = {};
	ce.tail = tail;
	size_t cut[PKB_CE_MAX_PARTS];
	int n = pkb_ce_cuts(&ce, bytes, chunks, last, cut);
	const char *why = NULL;
	cases++;
	if (n < 1 || n > PKB_CE_MAX_PARTS)
		why = "part count out of range";
	else if (cut[n - 1] != bytes)
		why = "parts do not end at bytes";
	for (int i = 0; !why && i < n; i++) {
		size_t from = i ? cut[i - 1] : 0, len = cut[i] - from;
		if (i < n - 1 && cut[i] % 16)
			why = "an inner end off 16 bytes";
		else if (cut[i] < from || (bytes && !len))
			why = "an empty or backward part";
		else if (i && i < n - 1 && len > cut[i - 1] - (i > 1 ? cut[i - 2] : 0))
			why = "a part longer than the one before";
	}
	size_t lastlen = n > 1 ? bytes - cut[n - 2] : bytes;
	if (!why && last && tail) {
		/* halves: the last part is within the tail, unless nothing is left to halve */
		if (lastlen > tail && lastlen > 32 && n < PKB_CE_MAX_PARTS)
			why = "last part over the tail";
		if (n > 1 && cut[0] < bytes / 2)
			why = "first part under half";
	} else if (!why) {
		/* equal parts: at most `chunks`, all equal but a shorter last */
		if (bytes && n > chunks)
			why = "more parts than chunks";
		for (int i = 1; !why && i < n - 1; i++)
			if (cut[i] - cut[i - 1] != cut[0])
				why = "unequal inner parts";
		if (!why && lastlen > cut[0])
			why = "last part longer than the first";
	}
	if (why) {
		fails++;
		printf("FAIL bytes %zu chunks %d tail %zu last %d: %s:", bytes, chunks, tail, last, why);
		for (int i = 0; i < n && i < 12; i++)
			printf(" %zu", cut[i]);
		printf("\n");
	}
}

int main(void)
{
	static const size_t sizes[] = { 0, 1, 6, 15, 16, 17, 31, 33, 1000, 4096, 6006,
					(size_t)3 << 20, (size_t)16 << 20, ((size_t)16 << 20) + 2,
					(size_t)134217728, (size_t)268435456, (size_t)805306371 };
	static const size_t tails[] = { 0, 1, 16, 4096, (size_t)16 << 20 };
	for (size_t s : sizes)
		for (int chunks = 1; chunks <= 8; chunks++)
			for (size_t t : tails)
				for (int last = 0; last < 2; last++)
					check(s, chunks, t, last);
	/* the schedule the candidates use at 256 MiB: 1/2, 1/4, 1/8, 1/16, 1/16 */
	struct pkb_ce ce = {};
	ce.tail = (size_t)16 << 20;
	size_t cut[PKB_CE_MAX_PARTS];
	int n = pkb_ce_cuts(&ce, (size_t)256 << 20, 1, 1, cut);
	cases++;
	if (n != 5 || cut[0] != (size_t)128 << 20 || cut[3] != (size_t)240 << 20) {
		fails++;
		printf("FAIL 256 MiB in halves to 16 MiB: %d parts\n", n);
	}
	/* a step that is not the last ignores the tail */
	cases++;
	if (pkb_ce_cuts(&ce, (size_t)256 << 20, 1, 0, cut) != 1) {
		fails++;
		printf("FAIL an earlier step cut although chunks = 1\n");
	}
	printf("ok %d cases, %d failed\n", cases, fails);
	return fails != 0;
}
