/*
 * stats_loop.h: the block loops of stats.h, written once and compiled twice: by stats.c
 * (scalar block, libxxhash) and by stats_avx2.c (AVX2 block, xxHash compiled for AVX2).
 * The includer defines LKS_STATS_PREFIX, provides
 *   static void <prefix>_block(const float *x, size_t n, struct lks_stats_acc *a);
 * (n a multiple of LKS_SUMSQ_LANES except for the last piece) and includes <xxhash.h> and
 * stats_acc.h first. Private to kernels/cpu.
 */
#define LKS_CAT2(a, b) a##b
#define LKS_CAT(a, b) LKS_CAT2(a, b)
#define LKS_BLOCK LKS_CAT(LKS_STATS_PREFIX, _block)

/* floats per block: a multiple of the lane count keeps the lane order; 16 KiB stay in L1
   between the statistics and the hash */
#define LKS_STATS_BLOCK 4096

/* Adds n floats to st with every NaN as LKS_HASH_NAN (stats.h); nan = 0 says x holds none,
   and its bytes go in as they are. Pieces of a stream hash as the whole would. */
static void LKS_CAT(LKS_STATS_PREFIX, _hash_f32)(XXH3_state_t *st, const float *x, size_t n,
                                                 int nan)
{
	uint32_t c[LKS_STATS_BLOCK];

	if (!nan) {
		XXH3_64bits_update(st, x, n * sizeof(float));
		return;
	}
	for (size_t i = 0; i < n; i += LKS_STATS_BLOCK) {
		size_t k = n - i < LKS_STATS_BLOCK ? n - i : LKS_STATS_BLOCK;

		memcpy(c, x + i, k * sizeof(float));
		for (size_t j = 0; j < k; j++)
			c[j] = (c[j] & 0x7fffffffu) > 0x7f800000u ? LKS_HASH_NAN : c[j];
		XXH3_64bits_update(st, c, k * sizeof(float));
	}
}

static double LKS_CAT(LKS_STATS_PREFIX, _sumsq)(const float *x, size_t n)
{
	struct lks_stats_acc a;

	lks_stats_acc_init(&a);
	LKS_BLOCK(x, n, &a);
	return lks_stats_acc_sumsq(&a);
}

static void LKS_CAT(LKS_STATS_PREFIX, _stats_f32)(const float *x, size_t n, double *l2,
                                                   float *amax, int64_t *nonfinite,
                                                   uint64_t *hash)
{
	struct lks_stats_acc a;
	XXH3_state_t st;

	lks_stats_acc_init(&a);
	XXH3_64bits_reset(&st);
	for (size_t i = 0; i < n; i += LKS_STATS_BLOCK) {
		size_t k = n - i < LKS_STATS_BLOCK ? n - i : LKS_STATS_BLOCK;
		int64_t bad = a.bad;

		LKS_BLOCK(x + i, k, &a);
		/* a block with a non-finite value may hold a NaN */
		LKS_CAT(LKS_STATS_PREFIX, _hash_f32)(&st, x + i, k, a.bad != bad);
	}
	*l2 = sqrt(lks_stats_acc_sumsq(&a));
	*amax = lks_stats_acc_amax(&a);
	*nonfinite = a.bad;
	*hash = XXH3_64bits_digest(&st);
}

static uint64_t LKS_CAT(LKS_STATS_PREFIX, _hash_rows)(const uint8_t *rows, int nrows, int cols,
                                                      size_t ld, const float *scales,
                                                      size_t nscales)
{
	XXH3_state_t st;

	XXH3_64bits_reset(&st);
	if (ld == (size_t)cols)  /* contiguous: one update, the same bytes */
		XXH3_64bits_update(&st, rows, (size_t)nrows * (size_t)cols);
	else
		for (int r = 0; r < nrows; r++)
			XXH3_64bits_update(&st, rows + (size_t)r * ld, (size_t)cols);
	LKS_CAT(LKS_STATS_PREFIX, _hash_f32)(&st, scales, nscales, 1);
	return XXH3_64bits_digest(&st);
}
