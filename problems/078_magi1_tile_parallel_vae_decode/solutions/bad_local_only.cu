/*
 * 078_magi1_tile_parallel_vae_decode, known-bad: no communication. Every
 * rank's slot of the latent copy is filled with this rank's own z, so every
 * tile is decoded from the local latent, as if all ranks held the same one;
 * only the tiles this rank owns (and blends between them) are right.
 * Otherwise identical to ok_symm_latents.cu.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_latents.cu
 */

/* pkb-replace */
			zall[(size_t)p * NU + u] = from[u];
/* pkb-with */
			zall[(size_t)p * NU + u] = z[u];   /* own latent in every slot */
/* pkb-end */
