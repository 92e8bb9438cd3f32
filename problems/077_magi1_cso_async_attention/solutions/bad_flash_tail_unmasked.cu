/*
 * 077_magi1_cso_async_attention, known-bad: ok_flash.cu with the key tail
 * not masked. tile_keys() says every tile is full, so the last tile of a
 * range is loaded whole (no zero-fill) and no score is set to -inf: its
 * rows past L count as keys. L is not a multiple of 64 at any W
 * (12150 = 189*64 + 54 at W <= 4, 21600 = 337*64 + 32 above), so this is
 * wrong at every W, 2 and 4 included. What those rows are: kv_clip holds
 * the ranges back to back (R*L rows, then a tile of zeros), so for ranges
 * 0-2 they are the next range's first 10 (or 32) keys and values, real
 * N(0, 1) data of another range; for range 3 they are the zero tile
 * (score 0, value 0: a small shrink of every output). Not W = 4's 2
 * padding positions, which the clipped concatenation never holds.
 * Simulated (numpy, L = 12150 keys plus the next range's 10, 512 queries):
 * 30% of the elements beyond their bound, the worst 14.7 bounds, L2 2.5
 * limits, in ranges 0-2 of every rank. Otherwise identical to ok_flash.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_flash.cu
 */

/* pkb-replace */
	return min(BN, len - k0);
/* pkb-with */
	(void)len;
	(void)k0;
	return BN;   /* BUG: the tail tile read whole, its rows past L kept as keys */
/* pkb-end */
