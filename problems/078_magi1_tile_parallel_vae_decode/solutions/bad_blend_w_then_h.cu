/*
 * 078_magi1_tile_parallel_vae_decode, known-bad: the two blends in the other
 * order (with the tile to the left first, then with the tile above). The
 * original blends h first, and the w blend then mixes the h-blended values:
 * the orders differ by (1 - x/64)(1 - y/64)(left - up) in the 64 x 64
 * corners of the tiles with h, w > 0. Otherwise identical to
 * ok_symm_latents.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_latents.cu
 */

/* pkb-replace */
		if (h > 0 && y < 64)
			v = blend(decode(zall + (size_t)d.owner[i - 4] * NZ, c, t, h - 1, w, tt, 192 + y, x),
				  v, y / 64.f);
		if (w > 0 && x < 64)
			v = blend(decode(zall + (size_t)d.owner[i - 1] * NZ, c, t, h, w - 1, tt, y, 192 + x),
				  v, x / 64.f);
/* pkb-with */
		if (w > 0 && x < 64)
			v = blend(decode(zall + (size_t)d.owner[i - 1] * NZ, c, t, h, w - 1, tt, y, 192 + x),
				  v, x / 64.f);
		if (h > 0 && y < 64)
			v = blend(decode(zall + (size_t)d.owner[i - 4] * NZ, c, t, h - 1, w, tt, 192 + y, x),
				  v, y / 64.f);
/* pkb-end */
