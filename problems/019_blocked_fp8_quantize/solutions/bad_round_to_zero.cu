/*
 * 019_blocked_fp8_quantize, known-bad: the ok_stage_pull exchange, but the
 * codes are rounded toward zero instead of to nearest even -- what a
 * hand-written fp32 -> e4m3 converter that just drops mantissa bits does.
 * Every code is within one step of the right one, so each element passes
 * its bound; about half of them are one step low in magnitude, and the
 * whole-output l2 bound (2^-7; this gives ~0.06) fails.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_stage_pull.cu
 */

/* pkb-replace */
template <typename T>
__global__ void __launch_bounds__(THREADS)
quant_gather(pkb_dev_comm comm, const T *x, uint8_t *y_out, float *s_out,
/* pkb-with */
/* RN code, stepped one code toward zero where it rounded up in magnitude
 * (e4m3 magnitudes grow with the code, 0x00 .. 0x7e) */
__device__ __forceinline__ uint8_t fp8_round_to_zero(float v)
{
	uint8_t c = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
	__half back = __half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3));
	if (fabsf(__half2float(back)) > fabsf(v) && (c & 0x7f))
		c = (uint8_t)((c & 0x80) | ((c & 0x7f) - 1));
	return c;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
quant_gather(pkb_dev_comm comm, const T *x, uint8_t *y_out, float *s_out,
/* pkb-end */

/* pkb-replace */
			packed |= (uint32_t)__nv_cvt_float_to_fp8(f[k] / div, __NV_SATFINITE, __NV_E4M3)
				  << (8 * k);
/* pkb-with */
			packed |= (uint32_t)fp8_round_to_zero(f[k] / div) << (8 * k);
/* pkb-end */
