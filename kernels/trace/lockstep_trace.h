/*
 * lockstep_trace.h: lockstep-trace, lockstep's own statistics of the tensors of any training
 * run (a PyTorch model through kernels/trace/lockstep_trace.py, or any C caller), stored in
 * lockstep's SQLite database as a tensor trace that 'lockstep check', 'diff' and the report
 * read as they read an imported one (DESIGN.md, Imported runs and tensor traces).
 *
 * A stable C API (this header is all of it; LKS_TRACE_API_VERSION says which), in the shared
 * library liblockstep-trace.so built beside lockstep. Each tensor given gets the statistics
 * lockstep's model gives its own (kernels/cpu/stats.h, the same code): the L2 norm with the
 * sum of squares in double in the fixed 32-lane order, amax (NaN when a value is NaN), the
 * count of non-finite values, and XXH3-64 of the float32 bytes with every NaN one pattern.
 * So a tensor traced here and the same values traced by lockstep's model have the same bits.
 * They are computed at once, in the caller's thread (the caller may change the tensor when
 * lks_trace_tensor returns); a step's records are stored by a background thread, so that a
 * training step waits only for the one before it.
 *
 * The ranks of a job each open the same database with the same case and run names and
 * their own rank: they join one run (the latest incomplete run of those names, that world
 * size and that launch's key, lks_trace_open_job, that has not seen their rank), each
 * storing its own rows; the run is complete when every rank has closed it, and failed once
 * a rank has aborted it. Errors: functions return 0 or -1 (NULL for open) and
 * lks_trace_error() says why, in this thread.
 */
#ifndef LOCKSTEP_TRACE_H
#define LOCKSTEP_TRACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LKS_TRACE_API_VERSION 4  /* 2: device tensors; 3: lks_trace_abort;
                                    4: lks_trace_close_at_exit */

typedef struct lks_trace lks_trace;

/* The element types a tensor may have. Half types are widened to float32 exactly before
   they are measured (their hash is of those float32 bytes, as the model hashes the
   tensors it keeps in float32). */
enum lks_trace_dtype {
	LKS_TRACE_F32 = 0,
	LKS_TRACE_BF16 = 1,
	LKS_TRACE_F16 = 2,
};

/* lockstep's phases (the store's): activations and weights as the forward reads them,
   gradients, parameters after the optimizer's step, activations recomputed. */
enum lks_trace_phase {
	LKS_TRACE_FORWARD = 0,
	LKS_TRACE_BACKWARD = 1,
	LKS_TRACE_UPDATE = 2,
	LKS_TRACE_RECOMPUTE = 3,
};

/* The API version of the library loaded (LKS_TRACE_API_VERSION of its build). */
int lks_trace_version(void);

/* Opens the database db (made if missing) and joins run run_name of case case_name as rank
   rank of world_size (names: letters, digits, '_', '-', '.'). NULL on failure. */
lks_trace *lks_trace_open(const char *db, const char *case_name, const char *run_name,
                          int rank, int world_size);

/* lks_trace_open for the ranks of one launch of a job: a rank joins only a run of the same
   job (a key naming the launch: 1 to 63 letters, digits, '_', '-', '.', '+', the first not
   '-', '.' or '+', else refused, never cut; NULL or "": none, as
   lks_trace_open), so that a job relaunched after a crash makes a run of its own instead of
   joining the dead launch's ranks. The run's options hold it ("job=KEY"). (API version 3.) */
lks_trace *lks_trace_open_job(const char *db, const char *case_name, const char *run_name,
                              int rank, int world_size, const char *job);

/* One tensor of the step being traced: n elements of dtype at data, host memory. name is
   the module and the tensor ("layers.0.mlp.fc1.output"; fewer than 256 bytes), micro the
   microbatch (-1: none). Its statistics are taken before this returns. */
int lks_trace_tensor(lks_trace *t, const char *name, int phase, int micro, const void *data,
                     size_t n, int dtype);

/* 1 when this library measures device tensors on their GPU (built with the cuda backend,
   its module found, a GPU seen); else 0, and lks_trace_error() says why. */
int lks_trace_device(void);

/* lks_trace_tensor of n float32 values in the memory of a CUDA GPU (dtype LKS_TRACE_F32;
   widen a half type there first, which is exact). They are measured on that GPU by the
   cuda backend's own device statistics (the same bits as on the host), after the work
   queued on stream (a cudaStream_t, the one that made the tensor; NULL: the legacy default
   stream), and that stream then waits for the measuring: the caller may write or free the
   tensor as soon as this returns, and the host waits for nothing. The record comes home
   at lks_trace_step. A trace's device tensors are on one GPU. (API version 2.) */
int lks_trace_tensor_device(lks_trace *t, const char *name, int phase, int micro,
                            const void *data, size_t n, int dtype, void *stream);

/* The largest step: 2^31 - 2, so that the last step + 1 (a run's steps) is an int too. */
#define LKS_TRACE_STEP_MAX 2147483646

/* Ends the step: the tensors given since the last lks_trace_step (or the open) are step
   step's, stored in the background. Steps of a rank ascend, from 0 to LKS_TRACE_STEP_MAX:
   a step that does not is refused (-1), and the tensors given for it are dropped, not
   kept for the next step. */
int lks_trace_step(lks_trace *t, int step);

/* Stores what is left, says this rank is done (the run is complete once every rank is),
   and frees t (also when it fails). */
int lks_trace_close(lks_trace *t);

/* Ends this rank's trace because the training failed (an exception, an interrupt): the
   steps handed over by lks_trace_step are stored, the tensors given since are not (a step
   cut short), and the run is stored failed, whatever the other ranks do; why (NULL: none
   given) is kept with it. Frees t (also when it fails). (API version 3.) */
int lks_trace_abort(lks_trace *t, const char *why);

/* Leaves t to the end of the process, for a caller whose own exit path cannot see the
   process's exit status (Python's, at the interpreter's exit: sys.exit(1) is seen by no
   handler): when the process exits (exit(), or a return from main) with status 0, t is
   closed, else aborted with why "the process exited with status N". 0; -1 where the C
   library has no on_exit (t is then left as it is: close it). (API version 4.) */
int lks_trace_close_at_exit(lks_trace *t);

/* Why the last call of this thread failed. */
const char *lks_trace_error(void);

#ifdef __cplusplus
}
#endif

#endif
