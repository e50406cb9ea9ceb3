/*
 * nightly_preload.c: a shared library that stands in for the C library's frexp and flips
 * the lowest bit of the mantissa it returns, so that test_nightly.c can plant a change of
 * numerics that the fingerprint does not see.
 *
 * Why this route: the fingerprint records lockstep's version and commit, the compiler and
 * its flags, the CPU and ISA path, SQLite, xxHash, inih and the numerics env vars
 * (fingerprint.c), but not the C math library. The CPU backend's log (kernels/mathf.h,
 * the loss of the cross-entropy) splits its argument with frexp, reached through the
 * dynamic linker, so a preloaded frexp changes the loss by an ulp and nothing that is
 * recorded: the same software, as far as the fingerprint can tell, giving other bits, as
 * a faulty device or a non-determinism would. No option, setting, env var of the list or
 * case key changes, so night over night must call it a change with an equal fingerprint.
 * Nothing else of lockstep calls frexp, so the gradients and hashes stay as they were.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

double frexp(double x, int *e)
{
	double (*next)(double, int *) = (double (*)(double, int *))dlsym(RTLD_NEXT, "frexp");
	double m;
	uint64_t bits;

	if (!next) {  /* no C library's frexp: nothing to stand in for */
		*e = 0;
		return x;
	}
	m = next(x, e);
	/* m in [0.5, 1) (or 0, inf, NaN, returned as they are): its lowest bit flipped stays
	   in [0.5, 1), a neighbouring value */
	if (m != 0 && m == m && m - m == 0) {
		memcpy(&bits, &m, sizeof(bits));
		bits ^= 1;
		memcpy(&m, &bits, sizeof(m));
	}
	return m;
}
