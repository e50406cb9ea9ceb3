"""
lockstep_trace.py: lockstep-trace from Python. Traces the tensors of a training run (a
PyTorch model, or numpy arrays) with lockstep's own statistics into lockstep's SQLite
database, where 'lockstep check', 'lockstep diff' and the report read them as they read any
tensor trace. One file, no compiled part: it loads liblockstep-trace.so (the C library built
beside lockstep; kernels/trace/lockstep_trace.h is its contract) through ctypes. numpy and
torch are optional: each is used only when given its arrays.

Tracing a training loop (torchtitan's, Hugging Face's, your own) takes two lines:

    import lockstep_trace

    tracer = lockstep_trace.trace_module(model, "trace.db", case="titan", run="tonight")
    for step, batch in enumerate(loader):
        loss = model(batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        tracer.step(step)              # after optimizer.step(): step `step` is done
    tracer.close()                     # (or leave it to the end of the process)

A run that ends by an exception (out of a `with` block, or uncaught at the end of the
process) is stored failed, not complete, with the exception's message; so is one whose
process exits with a status other than 0 (sys.exit(1), sys.exit("fatal: ..."), why then
"the process exited with status N"); tracer.abort(why) does the same by hand.

Then, a second run of the same names (another night, another build, another GPU):

    lockstep diff titan/yesterday titan/tonight --db trace.db

names the first tensor that differs: its step, rank, module and phase.

What is measured. Every tensor given gets, in the caller's thread before the call returns,
the statistics lockstep's model gives its own tensors (the same C code, kernels/cpu/stats.h):

  l2         the L2 norm; the sum of squares in double in one fixed order (32 lanes, element
             i into lane i mod 32 in index order, the lanes summed as a balanced binary tree),
             so the same values give the same bits on every machine and ISA path
  amax       the largest magnitude (NaN when a value is NaN)
  nonfinite  the count of NaN and infinite values
  hash       XXH3-64 of the float32 bytes with every NaN one bit pattern (0x7fc00000)

float16 and bfloat16 tensors are widened to float32 exactly first (their hash is that of the
float32 bytes); other dtypes are converted to float32. A tensor is measured by its values:
a view with torch's negative or conjugate bit set (z.conj().imag) as the values it shows,
not the negated ones in its memory. A complex tensor or array is measured as its real and
imaginary parts interleaved (torch.view_as_real: re0, im0, re1, im1, ...), each part as a
value of its real dtype (complex64's parts are float32, complex128's converted): its l2 is
the complex norm, its amax the largest part. autograd's ZeroTensor (zeros with no memory)
is measured as its zeros. A meta tensor has no values: Trace.tensor refuses it
(TypeError), trace_module leaves it out. A run's records are stored by a
background thread of the library, so a training step waits only for the one before it.

What trace_module records, per step (names are the module paths of model.named_modules();
the model itself is "" and gives plain "output", "grad_output"):

  <module>.output       each module's forward output (phase "forward"; a tuple, list or
                        dict output gives <module>.output.<index or key> per tensor; a
                        key holding NUL is refused, ValueError naming the module). A
                        forward run again while the backward pass runs, as activation
                        checkpointing does, is phase "recompute".
  <module>.grad_output  the gradient of its output (phase "backward", through
                        register_full_backward_pre_hook, or before torch 2.0
                        register_full_backward_hook; .grad_output.<i> when several),
                        with gradients=True. Either hook makes autograd wrap the module's
                        input and output, which an in-place op on them refuses (torch
                        says "... is a view and is being modified inplace": an
                        nn.ReLU(inplace=True) after a traced module); trace such a model
                        with gradients=False, or make the op out of place. Under
                        FSDP2 the same wrapping makes torch warn that a module
                        "returned a view tensor": the gradients are unchanged, bit for
                        bit (tests/trace/test_trace_torch.py checks it against DDP).
  <parameter name>      each parameter after the optimizer's step (phase "update"), with
                        parameters=True (taken by tracer.step(); tracer.parameters() takes
                        them whenever called)

Ranks: rank and world size come from torchrun's RANK and WORLD_SIZE (else 0 of 1); every
rank opens the same database with the same case and run names and they join one run, which
is complete when every rank has closed it. The ranks of one launch join only one another:
a job relaunched after a crash makes a run of its own where its launcher names the launch
(torchrun's rendezvous id and restart count, Slurm's job id: launch_key()), or where job=
names it; without either, a relaunch would join the dead launch's incomplete run.

A DTensor (FSDP2, tensor parallelism) is measured as this rank's local shard; with
whole=True as the whole tensor (DTensor.full_tensor(), a collective: every rank of its mesh
must trace it, in the same order), so that a run of one layout compares with a run of
another (FSDP2 against DDP: every record, parameters too, bit for bit where the sums
agree). A tensor subclass with no memory of its own is measured as the
tensor it stands for: tensor parallelism's AsyncCollectiveTensor once its collective is done,
torchao's float8 training weight (torchtitan's FP8 under FSDP2) as its high-precision
tensor. Microbatches: set tracer.micro = k before microbatch k's forward
(it stays -1, none, otherwise). tracer.enabled = False stops recording (an evaluation pass
between steps, say) until it is set True again.

Costs and limits: a CUDA tensor is measured on its GPU by lockstep's cuda backend (the same
bits as on the host), after the work of the stream it is current on, which then waits for the
measuring; only a record of each comes home, at the step's end. That needs a library built
with the CUDA backend and a GPU it can use (device_support(lib) says why not); otherwise, and
for any other device, the tensor is copied to the host and measured there, which for a large
model is much of a step. Tracing every module is meant for finding where two runs part, not
for every production run. Trace an eager model:
under torch.compile each hook is a graph break. Full backward hooks refuse a module whose
output a later in-place operation (nn.ReLU(inplace=True), ...) modifies: pass
gradients=False for such a model. One Trace is one rank's and is not for several threads at
once (calls are serialized by a lock, so hooks on autograd's threads are safe).

Finding the library, in order: the path given (lib=...), the environment variable
LOCKSTEP_TRACE_LIB, build/liblockstep-trace.so of the repository this file is in, a
liblockstep-trace.so beside this file (an installed copy), then the system's loader
(LD_LIBRARY_PATH, ldconfig's cache). The library's lks_trace_version() must be API_VERSION.

The lower level, for any framework or none:

    with lockstep_trace.Trace("trace.db", "mycase", "run1", rank=0, world_size=1) as t:
        for step in range(n):
            ...
            t.tensor("layer0.output", array)            # numpy or torch
            t.tensor("layer0.grad", g, phase="backward", micro=0)
            t.step(step)
"""

import atexit
import ctypes
import os
import sys
import threading
import weakref

__all__ = ["API_VERSION", "PHASES", "DTYPES", "load", "Trace", "Tracer", "trace_module",
           "launch_key"]

# LKS_TRACE_API_VERSION of the header this file was written against.
API_VERSION = 4

# enum lks_trace_phase and enum lks_trace_dtype.
PHASES = {"forward": 0, "backward": 1, "update": 2, "recompute": 3}
DTYPES = {"float32": 0, "bfloat16": 1, "float16": 2}

LIB_NAME = "liblockstep-trace.so"

# What an empty tensor is handed over as: float32 at a real address (with no values the
# statistics are the same in any dtype). lockstep-trace 1 answers "out of memory" to a
# NULL pointer and to an empty half-type tensor.
_EMPTY = (ctypes.c_float * 1)()

_libs = {}
_libs_lock = threading.Lock()


def _candidates(path):
    """The places to load the library from, in order: (what, path or soname)."""
    if path is not None:
        return [("the path given", os.fspath(path))]
    env = os.environ.get("LOCKSTEP_TRACE_LIB")
    if env:
        return [("LOCKSTEP_TRACE_LIB", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))  # kernels/trace/ -> the repository
    out = []
    for what, p in (("the repository's build", os.path.join(repo, "build", LIB_NAME)),
                    ("this file's folder", os.path.join(here, LIB_NAME))):
        if os.path.isfile(p):
            out.append((what, p))
    out.append(("the system's loader", LIB_NAME))
    return out


def _bind(lib):
    """Sets the C API's signatures on lib, exactly as lockstep_trace.h declares them."""
    lib.lks_trace_version.argtypes = []
    lib.lks_trace_version.restype = ctypes.c_int
    lib.lks_trace_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_int, ctypes.c_int]
    lib.lks_trace_open.restype = ctypes.c_void_p
    lib.lks_trace_tensor.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                     ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_int]
    lib.lks_trace_tensor.restype = ctypes.c_int
    lib.lks_trace_device.argtypes = []
    lib.lks_trace_device.restype = ctypes.c_int
    lib.lks_trace_tensor_device.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                            ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                            ctypes.c_int, ctypes.c_void_p]
    lib.lks_trace_tensor_device.restype = ctypes.c_int
    lib.lks_trace_step.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.lks_trace_step.restype = ctypes.c_int
    lib.lks_trace_close.argtypes = [ctypes.c_void_p]
    lib.lks_trace_close.restype = ctypes.c_int
    lib.lks_trace_abort.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.lks_trace_abort.restype = ctypes.c_int
    lib.lks_trace_open_job.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.c_int, ctypes.c_int, ctypes.c_char_p]
    lib.lks_trace_open_job.restype = ctypes.c_void_p
    lib.lks_trace_close_at_exit.argtypes = [ctypes.c_void_p]
    lib.lks_trace_close_at_exit.restype = ctypes.c_int
    lib.lks_trace_error.argtypes = []
    lib.lks_trace_error.restype = ctypes.c_char_p


def load(path=None):
    """The C library (a ctypes.CDLL with its signatures set), loaded once per place: from
    path if given, else as the module docstring says. Raises OSError when it cannot be
    loaded, RuntimeError when its API version is not API_VERSION."""
    tried = []
    for what, p in _candidates(path):
        with _libs_lock:
            if p in _libs:
                return _libs[p]
            try:
                lib = ctypes.CDLL(p)
            except OSError as e:
                tried.append("%s (%s): %s" % (p, what, e))
                continue
            _bind(lib)
            v = lib.lks_trace_version()
            if v != API_VERSION:
                raise RuntimeError("%s: lockstep-trace API version %d, this module speaks %d"
                                   % (p, v, API_VERSION))
            _libs[p] = lib
            return lib
    raise OSError("cannot load %s; tried %s. Build it (the lockstep build makes "
                  "build/%s) or set LOCKSTEP_TRACE_LIB to its path"
                  % (LIB_NAME, "; ".join(tried), LIB_NAME))


def _error(lib):
    """The library's message for the last failure of this thread."""
    msg = lib.lks_trace_error()
    return msg.decode("utf-8", "replace") if msg else "lockstep-trace: unknown error"


# The largest C int. ctypes passes a larger Python int to a c_int parameter wrapped, without
# a word (rank 2**32 as rank 0, step 2**32 + 7 as step 7), so every int is checked here.
_INT_MAX = 2**31 - 1
_STEP_MAX = 2**31 - 2  # LKS_TRACE_STEP_MAX


def _c_int(what, v, least):
    """v as an int of least .. _INT_MAX, the range the library takes for argument `what`
    (its other checks, as rank < world_size, are its own); else ValueError naming it."""
    n = int(v)
    if not least <= n <= _INT_MAX:
        raise ValueError("%s %d: want %d to %d" % (what, n, least, _INT_MAX))
    return n


def _c_str(what, b):
    """b (bytes) as a C string argument: ValueError where it holds a NUL, which would end
    it there for the library (a tensor 'a\\0hidden' stored as 'a', beside another 'a')."""
    if b"\0" in b:
        raise ValueError("%s %r holds a NUL byte (the library would read %r)"
                         % (what, b.decode("utf-8", "replace"),
                            b.split(b"\0")[0].decode("utf-8", "replace")))
    return b


def _phase(phase):
    if isinstance(phase, str):
        try:
            return PHASES[phase]
        except KeyError:
            raise ValueError("phase %r: one of %s" % (phase, ", ".join(PHASES))) from None
    n = int(phase)
    if n not in PHASES.values():
        raise ValueError("phase %d: one of %s" % (n, ", ".join(
            "%d (%s)" % (v, k) for k, v in PHASES.items())))
    return n


def _torch_tensor(x):
    """The torch module when x is a torch.Tensor, else None; torch is never imported here
    (a torch tensor exists only where the caller imported it)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch
    return None


def _data_ptr(t):
    try:
        return t.data_ptr()
    except RuntimeError:  # a subclass without storage may say so
        return 0


def _plain(t):
    """t, or where t is a tensor with no memory of its own, the tensor it stands for:
    autograd's ZeroTensor (efficient zeros) its zeros; of a subclass that wraps others,
    functional collectives' AsyncCollectiveTensor (tensor parallelism's RowwiseParallel
    output) waited for, a wrapper of one inner tensor of its shape (torchao's float8
    training weight) that tensor. Another such subclass is a TypeError naming it."""
    if t.numel() == 0 or _data_ptr(t) != 0:
        return t
    if getattr(t, "_is_zerotensor", None) is not None and t._is_zerotensor():
        return t.new_zeros(t.shape)   # its values, in memory (new_zeros is a plain tensor)
    if type(t).__name__ == "AsyncCollectiveTensor" and hasattr(t, "wait"):
        return _plain(t.wait())
    flatten = getattr(t, "__tensor_flatten__", None)
    if flatten is not None:
        inner = [getattr(t, n, None) for n in flatten()[0]]
        if len(inner) == 1 and getattr(inner[0], "shape", None) == t.shape:
            return _plain(inner[0])
    raise TypeError("%s: a tensor with no memory of its own (a subclass that wraps others), "
                    "which lockstep_trace cannot read; trace a plain tensor of its values"
                    % type(t).__name__)


def _from_torch(torch, x, on_device, whole=False):
    """x as memory the library reads: (keep-alive, pointer, count, dtype code, stream). A
    CUDA tensor stays on its GPU where on_device (the library measures it there; a half
    type widened to float32 there first, which is exact), with the stream it is current on;
    else it is copied to the host (stream None). A DTensor is this rank's shard, or with
    whole the whole tensor, gathered from its mesh."""
    t = x.detach()
    if t.is_meta:  # before _plain, which would take it for a wrapper without memory
        raise TypeError("a meta tensor (device 'meta'): a shape with no values, nothing to "
                        "measure")
    if hasattr(t, "to_local") and type(t).__name__ == "DTensor":
        t = t.full_tensor() if whole else t.to_local()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_quantized:
        t = t.dequantize()
    t = _plain(t)
    # torch's conjugate and negative bits (z.conj(), z.conj().imag, _neg_view) mark a view
    # whose memory holds the conjugate or negation of its values; .contiguous() and a .to()
    # of the same dtype return such a view as it is, and the memory read below would be the
    # negated values (the same norms, another hash). Materialized first (no copy when unset).
    if hasattr(t, "resolve_neg"):  # torch >= 1.10
        t = t.resolve_conj().resolve_neg()
    if t.is_complex():  # its parts, interleaved (re, im, re, ...): float, half or double
        t = torch.view_as_real(t)
    if t.device.type == "cuda" and on_device:
        t = t.to(torch.float32).contiguous()
        return t, t.data_ptr(), t.numel(), 0, torch.cuda.current_stream(t.device).cuda_stream
    if t.device.type != "cpu":
        t = t.cpu()                         # measured on the host
    if t.dtype == torch.float32:
        code = 0
    elif t.dtype == torch.bfloat16:
        code = 1
    elif t.dtype == torch.float16:
        code = 2
    else:                                   # float64, integers, bool, float8: as float32
        t = t.to(torch.float32)
        code = 0
    t = t.contiguous()
    n = t.numel()
    return t, t.data_ptr(), n, code, None


def device_support(lib):
    """(True, "") when lib measures CUDA tensors on their GPU, else (False, why)."""
    if lib.lks_trace_device():
        return True, ""
    return False, _error(lib)


def _from_numpy(x):
    """x (a numpy array or anything numpy makes one of) as (keep-alive, pointer, count,
    dtype code): float32 and float16 as they are, a bfloat16 dtype (ml_dtypes', JAX's) as
    bfloat16, anything else converted to float32; C-contiguous and native byte order."""
    try:
        import numpy as np
    except ImportError:
        raise TypeError("%s: lockstep_trace takes numpy arrays (numpy is not installed) or "
                        "torch tensors" % type(x).__name__) from None
    a = np.asarray(x)
    if a.dtype.kind == "c":  # its parts interleaved, as torch.view_as_real's
        a = np.ascontiguousarray(a).reshape(-1).view(a.real.dtype)
    if a.dtype.type is np.float16:
        a, code = np.ascontiguousarray(a, dtype=np.float16), 2
    elif a.dtype.name == "bfloat16" and a.dtype.itemsize == 2:
        a, code = np.ascontiguousarray(a), 1
    else:
        a, code = np.ascontiguousarray(a, dtype=np.float32), 0
    n = int(a.size)
    return a, a.ctypes.data, n, code


_exit_hook = []  # not empty once _mark_exiting is registered
_exiting = []  # not empty once the interpreter is exiting (set by an atexit handler)


def _mark_exiting():
    _exiting.append(True)


def _uncaught():
    """The exception the interpreter printed as uncaught, if any (a script ending by one
    has it: sys.last_exc, or sys.last_value before Python 3.12)."""
    return getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)


def _failure(exc):
    """Whether exc ends a training as failed: any exception but a SystemExit of status 0."""
    if exc is None:
        return False
    return not (isinstance(exc, SystemExit) and exc.code in (None, 0))


def _why(exc):
    """What is stored with a run aborted by exc: its type and message, at most 400 bytes."""
    text = type(exc).__name__ + (": %s" % exc if str(exc) else "")
    return text.encode("utf-8", "replace")[:400].replace(b"\0", b" ")


def _close_handle(lib, handle, pid, stale):
    """Closes a handle left open (garbage collection, the end of the process); a forked
    child (a DataLoader's worker) does not close its parent's trace. A process ending by
    an uncaught exception (one other than stale, the id of one printed before the trace was
    opened, as in an interactive session) aborts it instead: the run is stored failed. At
    the interpreter's exit otherwise the library ends it once the process's exit status is
    known (lks_trace_close_at_exit): 0 closes it, any other (sys.exit(1), sys.exit("why"),
    which no Python handler sees) aborts it."""
    if not handle or os.getpid() != pid:
        return
    exc = _uncaught() if _exiting else None
    if exc is not None and id(exc) != stale:
        lib.lks_trace_abort(handle, _why(exc))
    elif not _exiting or lib.lks_trace_close_at_exit(handle):
        lib.lks_trace_close(handle)


class Trace:
    """One rank's trace: lks_trace_open ... lks_trace_close. A Trace left open is closed when
    it is garbage collected or the process exits (what it had is stored, and its rank is
    done), or aborted (abort()) when the process exits by an uncaught exception or with a
    status other than 0 (sys.exit(1)).

    job names the launch, so that the ranks of a job relaunched after a crash make a run of
    their own instead of joining the dead launch's run (the ranks join the latest
    incomplete run of the same names and job). None (the default): the launcher's, from
    the environment (launch_key()); "": none.

    A number out of the range the library takes (rank 0 to 2**31 - 1, step to 2**31 - 2,
    world_size from 1, micro from -1; ctypes would pass a larger one on wrapped), a phase
    not in PHASES, or a name or path holding NUL (which would end it there) raises
    ValueError naming it; every other failure raises RuntimeError with the library's
    message."""

    def __init__(self, db, case, run, rank=0, world_size=1, lib=None, whole=False,
                 job=None):
        self._lib = lib if isinstance(lib, ctypes.CDLL) else load(lib)
        self.whole = bool(whole)  # a DTensor measured whole (a collective), not its shard
        _bind(self._lib)
        self._lock = threading.Lock()
        self._on_device = None  # CUDA tensors measured on their GPU: asked at the first one
        self.db, self.case, self.run = os.fspath(db), case, run
        self.rank = _c_int("rank", rank, 0)
        self.world_size = _c_int("world_size", world_size, 1)
        self.job = launch_key() if job is None else job
        h = self._lib.lks_trace_open_job(_c_str("database", os.fsencode(self.db)),
                                         _c_str("case name", case.encode()),
                                         _c_str("run name", run.encode()),
                                         self.rank, self.world_size,
                                         _c_str("job", self.job.encode()) if self.job
                                         else None)
        if not h:
            raise RuntimeError(_error(self._lib))
        self._h = h
        self._pid = os.getpid()
        # closes the handle when this object is collected or at exit, if close() did not
        stale = _uncaught()
        self._finalizer = weakref.finalize(self, _close_handle, self._lib, h, self._pid,
                                           None if stale is None else id(stale))
        if not _exit_hook:  # after weakref's own: atexit runs it first
            _exit_hook.append(atexit.register(_mark_exiting))

    def _handle(self):
        if self._h is None:
            raise RuntimeError("lockstep-trace: the trace is closed")
        if os.getpid() != self._pid:  # the library's writer thread is the parent's alone
            raise RuntimeError("lockstep-trace: a forked process cannot use its parent's "
                               "trace; open one of its own")
        return self._h

    @property
    def closed(self):
        return self._h is None

    def tensor(self, name, array, phase="forward", micro=-1):
        """Measures one tensor of the step being traced: a numpy array or a torch tensor
        (detached; a CUDA tensor measured on its GPU where the library can). phase: "forward",
        "backward", "update", "recompute" (or its number); micro: the microbatch, -1 none.
        The statistics are taken before this returns (a CUDA tensor's on its GPU, ordered
        before what its stream does next): array may change afterwards."""
        phase, micro = _phase(phase), _c_int("micro", micro, -1)
        cname = _c_str("tensor name", name.encode())
        torch = _torch_tensor(array)
        stream = None
        if torch:
            if self._on_device is None and array.device.type == "cuda":
                self._on_device = device_support(self._lib)[0]
            keep, ptr, n, code, stream = _from_torch(torch, array, self._on_device,
                                                     self.whole)
        else:
            keep, ptr, n, code = _from_numpy(array)
        if n == 0:  # no values, the same statistics in any dtype: float32 at a real address
            ptr, code, stream = ctypes.addressof(_EMPTY), DTYPES["float32"], None
        with self._lock:
            if stream is not None:
                rc = self._lib.lks_trace_tensor_device(self._handle(), cname, phase, micro,
                                                       ptr, n, code, stream)
            else:
                rc = self._lib.lks_trace_tensor(self._handle(), cname, phase, micro, ptr, n,
                                                code)
            if rc:
                raise RuntimeError(_error(self._lib))
        del keep

    def step(self, step):
        """Ends step `step` (a rank's steps ascend): the tensors given since the last step
        are that step's, handed to the library's writer."""
        step = _c_int("step", step, 0)
        if step > _STEP_MAX:  # the last step + 1 is an int too
            raise ValueError("step %d: want 0 to %d" % (step, _STEP_MAX))
        with self._lock:
            if self._lib.lks_trace_step(self._handle(), step):
                raise RuntimeError(_error(self._lib))

    def close(self):
        """Stores what is left (tensors after the last step are a step of their own) and
        says this rank is done. Closing again does nothing."""
        self._end(None)

    def abort(self, why=None):
        """Ends this rank's trace because the training failed: the steps ended by step()
        are stored, the tensors given since are not, and the run is stored failed (why, a
        message, kept with it). A `with` block left by an exception, and a process ending
        by an uncaught one, abort the trace. Closing or aborting again does nothing."""
        self._end(b"aborted" if why is None
                  else str(why).encode("utf-8", "replace").replace(b"\0", b" "))

    def _end(self, why):
        with self._lock:
            if self._h is None:
                return
            h, self._h = self._h, None
            self._finalizer.detach()
            if os.getpid() != self._pid:  # a forked child lets go of its parent's trace
                return
            rc = (self._lib.lks_trace_close(h) if why is None
                  else self._lib.lks_trace_abort(h, why))
            if rc:
                raise RuntimeError(_error(self._lib))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if _failure(exc):
            self._end(_why(exc))
        else:
            self.close()
        return False

    def __repr__(self):
        return "<lockstep_trace.Trace %s/%s rank %d of %d in %s%s>" % (
            self.case, self.run, self.rank, self.world_size, self.db,
            ", closed" if self._h is None else "")


def _tensors(prefix, value, is_tensor):
    """(name, tensor) of each tensor in a module's output: the tensor itself as prefix, the
    elements of a tuple or list as prefix.<i>, of a dict (a Hugging Face ModelOutput) as
    prefix.<key>, nested likewise; None and other values are left out."""
    if is_tensor(value):
        yield prefix, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _tensors("%s.%s" % (prefix, k), v, is_tensor)
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from _tensors("%s.%d" % (prefix, i), v, is_tensor)


def _in_backward(torch):
    """True while autograd's engine runs a backward pass in this thread: a forward then is a
    recomputation (activation checkpointing)."""
    f = getattr(torch._C, "_current_graph_task_id", None)
    try:
        return f is not None and f() != -1
    except Exception:
        return False


class Tracer:
    """The hooks trace_module set on a model, and the rank's Trace they record into.

    micro    the microbatch of the records to come (-1: none); set it before each
             microbatch's forward when gradients are accumulated
    enabled  False: the hooks record nothing (an evaluation pass between steps)
    trace    the Trace
    """

    def __init__(self, model, trace, activations=True, gradients=True, parameters=False):
        import torch

        self._torch = torch
        self.model = model
        self.trace = trace
        self.micro = -1
        self.enabled = True
        self.parameters_after_step = parameters
        self._handles = []
        for path, module in model.named_modules():
            if activations:
                self._handles.append(module.register_forward_hook(self._forward_hook(path)))
            if gradients:
                self._handles.append(self._backward_hook(module, path))

    def _name(self, path, what):
        return "%s.%s" % (path, what) if path else what

    def _record(self, prefix, value, phase, path, module):
        is_tensor = lambda v: isinstance(v, self._torch.Tensor)  # noqa: E731
        for name, t in _tensors(prefix, value, is_tensor):
            if t.is_meta:  # a shape with no values (shape inference): nothing to measure
                continue
            if "\0" in name:  # Trace.tensor would refuse it too, without naming the module
                raise ValueError("module %r (%s): the tensor name %r holds a NUL byte (a key "
                                 "of its output, or its path), which lockstep_trace cannot "
                                 "store" % (path, type(module).__name__, name))
            self.trace.tensor(name, t, phase, self.micro)

    def _forward_hook(self, path):
        prefix = self._name(path, "output")

        def hook(module, args, output):
            if self.enabled:
                phase = "recompute" if _in_backward(self._torch) else "forward"
                self._record(prefix, output, phase, path, module)
        return hook

    def _backward_hook(self, module, path):
        """The hook on module's output gradient: the pre-hook, which is given it alone (the
        full hook also computes the gradient of the input, and warns on every model whose
        first module's input needs none, as token ids); the full hook before torch 2.0."""
        prefix = self._name(path, "grad_output")

        def record(grad_output):
            if self.enabled:
                g = [v for v in grad_output if v is not None]
                self._record(prefix, g[0] if len(g) == 1 and len(grad_output) == 1
                             else grad_output, "backward", path, module)

        if hasattr(module, "register_full_backward_pre_hook"):
            return module.register_full_backward_pre_hook(lambda m, g_out: record(g_out))
        return module.register_full_backward_hook(lambda m, g_in, g_out: record(g_out))

    def parameters(self):
        """Records every parameter's value now, as <name> of phase "update" (call it after
        the optimizer's step; step() does when trace_module was given parameters=True)."""
        with self._torch.no_grad():
            for name, p in self.model.named_parameters():
                self.trace.tensor(name, p, "update", -1)

    def step(self, step):
        """Ends step `step`: the parameters first (parameters=True), then the step's records
        are handed to the library. Call it after optimizer.step()."""
        if self.parameters_after_step and self.enabled:
            self.parameters()
        self.trace.step(step)

    def remove(self):
        """Removes the hooks from the model (the trace stays open)."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def close(self):
        """Removes the hooks and closes the trace: this rank is done."""
        self.remove()
        self.trace.close()

    def abort(self, why=None):
        """Removes the hooks and aborts the trace (Trace.abort): the run is stored failed."""
        self.remove()
        self.trace.abort(why)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.remove()
        self.trace.__exit__(exc_type, exc, tb)
        return False


def _key_chars(s):
    """s with each character a launch key does not take as '_'."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-.") else "_" for c in s)


def _key_hash(s):
    """16 hex digits of SHA-256 of s: what stands for a part too long to keep."""
    import hashlib
    return hashlib.sha256(s.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def launch_key(environ=None):
    """The key of this launch of a job, from its launcher's environment, or "" where none
    is known: torchrun's rendezvous id and restart count (TORCHELASTIC_RUN_ID, when not
    its default "none", and TORCHELASTIC_RESTART_COUNT), else Slurm's job id and restart
    count (SLURM_JOB_ID, SLURM_RESTART_COUNT): "ID.COUNT". Characters a key does not take
    become '_' (and a first character that a name may not start with is preceded by '_').
    A key has at most 63 characters: an id too long for that keeps its start and ends in
    16 hex digits of its hash, and the restart count is kept whole, so that the launches of
    a job with a long id still have keys of their own. A launcher without these (a plain
    mpirun, a script relaunched by hand) gives "": pass job= yourself (a time stamp the
    launcher exports, say)."""
    env = os.environ if environ is None else environ
    rid = env.get("TORCHELASTIC_RUN_ID", "")
    if rid and rid != "none":
        head, count = rid, env.get("TORCHELASTIC_RESTART_COUNT") or "0"
    elif env.get("SLURM_JOB_ID"):
        head, count = "slurm" + env["SLURM_JOB_ID"], env.get("SLURM_RESTART_COUNT") or "0"
    else:
        return ""
    key = _key_chars(head)
    if not (key[0].isalnum() or key[0] == "_"):
        key = "_" + key
    count = _key_chars(count) if len(count) <= 20 else _key_hash(count)
    room = 63 - 1 - len(count)
    if len(key) > room:
        key = key[:room - 17] + "-" + _key_hash(head)
    return key + "." + count


def _env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def trace_module(model, db, case, run, rank=None, world_size=None, activations=True,
                 gradients=True, parameters=False, lib=None, whole=False, job=None):
    """Traces model (a torch.nn.Module) into run `run` of case `case` in database db: hooks
    on every module for its forward outputs (activations) and its output gradients
    (gradients), and each parameter after the optimizer (parameters). rank and world_size
    default to torchrun's RANK and WORLD_SIZE, else 0 and 1. whole: a DTensor (FSDP2's
    parameters, tensor parallelism's) measured whole, gathered from its mesh by every rank
    at once, rather than this rank's shard. job: the launch's key (Trace). Returns a
    Tracer: call its step(n) after optimizer.step() of step n, and close() at the end."""
    if rank is None:
        rank = _env_int("RANK", 0)
    if world_size is None:
        world_size = _env_int("WORLD_SIZE", 1)
    trace = Trace(db, case, run, rank, world_size, lib=lib, whole=whole, job=job)
    try:
        return Tracer(model, trace, activations, gradients, parameters)
    except BaseException:
        trace.close()
        raise
