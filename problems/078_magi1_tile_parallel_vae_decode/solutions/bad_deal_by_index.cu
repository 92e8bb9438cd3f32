/*
 * 078_magi1_tile_parallel_vae_decode, known-bad: the tiles dealt round-robin
 * by index (tile i to rank i % W) without the original's sort by size, so
 * most tiles are decoded from another rank's latent than the owner's.
 * Otherwise identical to ok_symm_latents.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_latents.cu
 */

/* pkb-replace */
			if (extent(i / 4 % 4) * extent(i % 4) == size)
				s->d.owner[i] = k++ % ctx->world;
/* pkb-with */
			if (size == 1)
				s->d.owner[i] = k++ % ctx->world;   /* index order */
/* pkb-end */
