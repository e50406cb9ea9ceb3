/*
 * golden.h: golden data (DESIGN.md, golden): the reviewed reference trace of one run of one
 * case, kept as a text file golden/<class>/<case>/<run>.tsv and compared with new runs by the
 * 'golden' check. The class (lks_golden_class_of): "cpu", the bit-exact reference, met bit
 * for bit by every run of the reference arithmetic, cpu or cuda; or one per GPU
 * architecture and GEMM mode (cuda-sm90-cublaslt), whose runs meet their golden's loss and
 * grad norm within the tolerance of their recipe kept in golden/<class>/tolerances.ini.
 *
 * The file (format version 1), meant to be read in a git diff:
 *
 *   # lockstep golden 1
 *   # case: fp8_recipes                   header: '# key: value' lines; case, run, recipe,
 *   # run: bf16                           options, backend, world_size, steps and seed are
 *   # recipe: bf16                        required; the lockstep version and commit,
 *   # options: checkpoint=none ...        compiler and ISA path of the run that wrote it
 *   # backend: cpu                        are there to be read, not checked
 *   # world_size: 1
 *   # steps: 40
 *   # seed: 1234
 *   # lockstep: 0.1.0 1aaff7045500
 *   # compiler: GNU 12.2.0
 *   # isa: avx2
 *   step<TAB>rank<TAB>loss<TAB>grad_norm<TAB>lr                          step rows
 *   0<TAB>0<TAB>5.5451774597167969<TAB>...
 *   step<TAB>rank<TAB>seq<TAB>name<TAB>phase<TAB>l2<TAB>amax<TAB>scale<TAB>nonfinite
 *       <TAB>underflow<TAB>saturated<TAB>hash                         stat rows
 *   0<TAB>0<TAB>0<TAB>embed.out<TAB>forward<TAB>...<TAB>3f0c9a0d12e4b7a1
 *   # end<TAB>40<TAB>4480                                 step and stat rows: a cut file
 *                                                         is told from a short run
 *
 * An imported run's golden (class "import": golden/import/<case>/<run>.tsv) has the same
 * header, then 'step<TAB>rank<TAB>metric<TAB>value' and a row per value stored, by (step,
 * rank), each metric's kind from the import metric table (import_rec.h), then '# end<TAB>ROWS';
 * it is met bit for bit on its numerics, as the log wrote them.
 *
 * Rows are in (step, rank) and (step, rank, seq) order, each present once. Doubles (l2,
 * loss, grad_norm, lr) are written "%.17g" and floats (amax, scale) "%.9g": the shortest
 * fixed precisions that round-trip every value exactly through strtod/strtof, and decimal
 * rather than C99 hex floats ("%a") because a reviewer reads "0.0123" in a diff, not
 * "0x1.92a737p-7". NaN is "nan" (a scale of NaN: the tensor is not quantized), infinities
 * "inf" / "-inf"; hashes are 16 lowercase hex digits. Step time is not kept (not
 * reproducible), nor the step rows' non-finite count (the stat rows carry it per tensor).
 *
 * The golden directory: the one given (lockstep run|golden --golden DIR), else the
 * environment variable LKS_GOLDEN_DIR, else "golden" in the current directory
 * (lks_golden_dir); the commands pass it on to the checks (check.h, lks_check_opts).
 */
#ifndef LKS_HARNESS_GOLDEN_H
#define LKS_HARNESS_GOLDEN_H

#include <stddef.h>

#include "harness/base/atomic_file.h"
#include "harness/base/status.h"
#include "harness/store/run.h"

#define LKS_GOLDEN_VERSION 1


/* The golden directory: given when it is a non-empty string, else $LKS_GOLDEN_DIR when set
   and not empty, else "golden". */
const char *lks_golden_dir(const char *given);
/*
 * The class of golden data stored run r meets, into buf (golden_class.c): "import" for an
 * imported run (backend import:FMT); "cpu" for a run of the reference arithmetic on any backend (a cuda run with gemm = reference must meet
 * the CPU's golden bit for bit); for a run with gemm = cublaslt, one class per backend,
 * GPU architecture and GEMM mode, "<backend>-sm<major><minor>-cublaslt" (cuda-sm90-cublaslt),
 * the architecture from the compute capability the backend described (fingerprint key
 * backend.compute_capability), stored with the run. An error (lks_err) when such a run's
 * fingerprint lacks it.
 */
int lks_golden_class_of(const lks_stored_run *r, char *buf, size_t size);
/* 1 when class cls is compared bit for bit (cpu); else within its tolerances. */
int lks_golden_exact(const char *cls);
/* "<dir>/<class>/<case>/<run>.tsv" into buf; an error (lks_err) for a class, case or run
   name that breaks the name rule (name.h). */
int lks_golden_path(const char *dir, const char *cls, const char *case_name,
                    const char *run_name, char *buf, size_t size);
/*
 * The tolerance of recipe in class cls: *rtol and *atol (0 when not given) from section
 * [recipe] of <dir>/<cls>/tolerances.ini (its path into path), where every value carries a
 * comment saying what measurement gave it ('lockstep golden measure'). LKS_E_MISSING
 * (lks_err says which) when there is no such file or section, LKS_E_BAD_INPUT with
 * "path:line: what" for an unknown key, a bad value, a section or a key given twice, a key
 * before any section or a section without rtol, and for a file that is not a regular one
 * or is over LKS_TOLERANCES_FILE_MAX (harness/base/file.h); -1 for other failures.
 */
int lks_golden_tolerance(const char *dir, const char *cls, const char *recipe, double *rtol,
                         double *atol, char *path, size_t npath);
/* The same from the file at path: a comment, on its own line or after a value, may be of any
   length; a key line longer than inih's buffer allows is LKS_E_BAD_INPUT at its line. */
int lks_golden_tolerance_file(const char *path, const char *recipe, double *rtol, double *atol);

/* Run r (any source; stat rows read step by step when it has them so) into path, creating
   its directories; written to a temporary file beside it and renamed over path
   (harness/base/atomic_file.h), so an earlier golden is replaced whole or not at all, and a
   symlink at any other name is never followed. A run whose status is not 'complete' is
   refused (LKS_E_BAD_INPUT, lks_err): its trace may stop anywhere. */
int lks_golden_write(lks_stored_run *r, const char *path);
/* lks_golden_write's first half: the temporary beside path written whole into *a, for
   lks_atomic_commit (or lks_atomic_abort) later, so that a set of goldens is renamed in
   only once every one of them was written. */
int lks_golden_stage(lks_stored_run *r, const char *path, lks_atomic *a);
/* The file at path into r (held whole; status 'complete'), every line checked:
   LKS_E_MISSING when there is no file, LKS_E_BAD_INPUT with "path:line: what" for a
   bad one, -1 for other failures. Release r with lks_stored_run_release, also after a
   failure. */
int lks_golden_read(const char *path, lks_stored_run *r);

#endif
