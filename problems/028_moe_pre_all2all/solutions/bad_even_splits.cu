/*
 * 028_moe_pre_all2all, known-bad: moves the original's synthetic metadata
 * instead of the inputs -- 2M/W rows between every pair of ranks and 2M/8
 * rows per (rank, expert) chunk, the remainder on the first chunks, which
 * is what the original's input generator passes whatever the routing. No
 * metadata to read; wrong for every routing but the even one.
 * pkb-mutant-of: ok_symm_pull.cu
 * pkb-expect: mismatch
 */

/* pkb-replace */
	if (threadIdx.x < w) {
		/* where rank j's rows for us start in its expert-major order */
		int j = threadIdx.x;
		const int64_t *sent = (const int64_t *)(stage[j] + h);
		int64_t o = 0;
		for (int d = 0; d < me; d++)
			o += sent[d];
		start[j] = o;
	}
	if (threadIdx.x == 0) {
		/* counts[j][l]: rank j's rows for our expert l */
		for (int j = 0; j < w; j++) {
			int64_t o = 0;
			for (int l = 0; l < el; l++) {
				in_off[j * el + l] = o;
				o += counts[j * el + l];
			}
		}
		out_off[0] = 0;
		for (int c = 0; c < EXPERTS; c++)   /* chunk c = l * W + j */
			out_off[c + 1] = out_off[c] + counts[(c % w) * el + c / w];
	}
/* pkb-with */
	if (threadIdx.x < w)
		start[threadIdx.x] = me * (rows / w);
	if (threadIdx.x == 0) {
		for (int j = 0; j < w; j++) {
			int64_t o = 0;
			for (int l = 0; l < el; l++) {
				in_off[j * el + l] = o;
				o += rows / EXPERTS + (j * el + l < rows % EXPERTS);
			}
		}
		out_off[0] = 0;
		for (int c = 0; c < EXPERTS; c++) {
			int k = (c % w) * el + c / w;
			out_off[c + 1] = out_off[c] + rows / EXPERTS + (k < rows % EXPERTS);
		}
	}
/* pkb-end */

/* pkb-replace */
		int64_t p = start[j] + in_off[j * el + l] + o - out_off[c];
/* pkb-with */
		int64_t p = min(start[j] + in_off[j * el + l] + o - out_off[c], rows - 1);
/* pkb-end */
