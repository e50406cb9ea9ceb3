/* isa.c: run-time choice of the CPU kernels' instruction-set path (see isa.h). */
#include "kernels/cpu/isa.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/err.h"

static const char *const lks_isa_names[LKS_ISA_COUNT] = { "scalar", "avx2", "avx512" };

/* -1: not chosen yet. Chosen at first use, by whichever thread comes first (ranks start
   their GEMMs at the same time), or set by lks_isa_force(); atomic, so that every thread
   sees one valid path. */
static atomic_int lks_isa_current = -1;

const char *lks_isa_name(lks_isa isa)
{
	return (unsigned)isa < LKS_ISA_COUNT ? lks_isa_names[isa] : "unknown";
}

int lks_isa_parse(const char *name, lks_isa *out)
{
	for (int i = 0; i < LKS_ISA_COUNT; i++) {
		if (strcmp(name, lks_isa_names[i]) == 0) {
			*out = (lks_isa)i;
			return 0;
		}
	}
	return lks_err("unknown ISA path '%s' (expected scalar, avx2 or avx512)", name);
}

int lks_isa_supported(lks_isa isa)
{
	switch (isa) {
	case LKS_ISA_SCALAR:
		return 1;
	case LKS_ISA_AVX2:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	case LKS_ISA_AVX512:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
		    && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
		    && __builtin_cpu_supports("fma");
	default:
		return 0;
	}
}

lks_isa lks_isa_best(void)
{
	for (int i = LKS_ISA_COUNT - 1; i > 0; i--)
		if (lks_isa_supported((lks_isa)i))
			return (lks_isa)i;
	return LKS_ISA_SCALAR;
}

lks_isa lks_isa_active(void)
{
	int cur = atomic_load(&lks_isa_current);

	if (cur < 0) {
		const char *env = getenv("LKS_ISA");
		lks_isa isa = LKS_ISA_SCALAR;
		int unset = -1;

		/* An unknown or unsupported LKS_ISA falls back to the best path; 'lockstep env'
		   shows which one is active, and main rejects a bad value before any work. */
		if (!(env && *env && lks_isa_parse(env, &isa) == 0 && lks_isa_supported(isa)))
			isa = lks_isa_best();
		/* threads that meet here choose the same path; a forced one stays */
		cur = atomic_compare_exchange_strong(&lks_isa_current, &unset, (int)isa) ? (int)isa
		                                                                         : unset;
	}
	return (lks_isa)cur;
}

int lks_isa_force(lks_isa isa)
{
	if (!lks_isa_supported(isa))
		return lks_err("this CPU cannot run the '%s' path", lks_isa_name(isa));
	atomic_store(&lks_isa_current, (int)isa);
	return 0;
}
