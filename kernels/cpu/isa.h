/*
 * isa.h: which instruction-set path the CPU kernels take.
 *
 * Every path computes bit for bit the same result (the reduction orders are fixed in the
 * algorithm, not left to the vector width), so the choice is about speed only. The active
 * path is the best the CPU supports, unless LKS_ISA=scalar|avx2|avx512 in the environment
 * or lks_isa_force() says otherwise; tests force each path in turn.
 */
#ifndef LKS_KERNELS_CPU_ISA_H
#define LKS_KERNELS_CPU_ISA_H

typedef enum lks_isa {
	LKS_ISA_SCALAR = 0,  /* portable C, fmaf() from libm where no FMA unit is assumed */
	LKS_ISA_AVX2 = 1,    /* AVX2 + FMA (+ F16C) */
	LKS_ISA_AVX512 = 2,  /* AVX-512 F/BW/VL/DQ */
	LKS_ISA_COUNT
} lks_isa;

const char *lks_isa_name(lks_isa isa);
/* Parses "scalar", "avx2", "avx512"; returns 0 and sets *out, or -1. */
int lks_isa_parse(const char *name, lks_isa *out);
/* Whether this CPU (and OS) can run the path. */
int lks_isa_supported(lks_isa isa);
/* The best path this CPU supports. */
lks_isa lks_isa_best(void);
/* The path in use: forced, else LKS_ISA from the environment (read once), else the best. */
lks_isa lks_isa_active(void);
/* Forces a path for the whole process; fails (lks_err) if the CPU cannot run it. */
int lks_isa_force(lks_isa isa);

#endif
