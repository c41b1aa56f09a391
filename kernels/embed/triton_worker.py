# Crucible triton-backend worker: judges ONE KernelBench-style candidate
# (a module defining ModelNew) against the task's reference (Model,
# get_inputs, get_init_inputs) on the single GPU this process may see
# (CUDA_VISIBLE_DEVICES). It reads a JSON request on stdin and prints one
# line "CRUCIBLE_RESULT {json}" on stdout; the Go side canonicalises it.
# Never trust the candidate: every step that runs its code is guarded, and
# the parent kills this process group on timeout.
import importlib.util
import json
import math
import os
import sys
import tempfile
import threading
import time
import traceback

# The result line carries a nonce the candidate cannot read (removed from
# the environment before any candidate code runs), so prints cannot forge it.
NONCE = os.environ.pop("CRUCIBLE_NONCE", "")
RESULT = {"stage": "", "kernel_stage": "", "cause": "", "trials": 0, "max_abs_err": 0.0, "max_rel_err": 0.0,
          "ref_ms": [], "cand_ms": [], "exploits": {}, "tools": {}, "measurements": {}, "log": ""}


def emit():
    sys.stdout.write("\nCRUCIBLE_RESULT " + NONCE + " " + json.dumps(RESULT, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()
    os._exit(0)


def fail(stage, kstage, cause, exc=None):
    RESULT["stage"], RESULT["kernel_stage"], RESULT["cause"] = stage, kstage, cause[:2000]
    if exc is not None:
        RESULT["log"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
    emit()


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def flat(out):
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flat(o))
        return res
    return [out]


# Ops that move or allocate but compute nothing: calling them is not delegation.
NON_COMPUTE = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
               "ones", "ones_like", "full", "full_like", "fill", "zero", "view", "reshape", "_reshape_alias",
               "_unsafe_view", "contiguous", "clone", "copy", "_to_copy", "to", "detach", "alias", "as_strided",
               "t", "transpose", "permute", "expand", "squeeze", "unsqueeze", "flatten", "select", "slice",
               "split", "lift_fresh", "resize", "set", "numel", "size", "stride", "is_contiguous", "item",
               "_local_scalar_dense", "result_type", "arange", "new_zeros", "new_ones", "new_full"}


def compare(r, c, atol, rtol, chunk=1 << 26):
    """Elementwise |c-r| <= atol + rtol*|r| in float64, in chunks so huge
    outputs do not need several float64 copies at once."""
    import torch

    rf_all, cf_all = r.reshape(-1), c.reshape(-1)
    st = {"bad": 0, "max_abs": 0.0, "max_rel": 0.0, "all_nan": True, "ref_all_nan": True}
    for s in range(0, rf_all.numel(), chunk):
        rf, cf = rf_all[s:s + chunk].double(), cf_all[s:s + chunk].double()
        st["all_nan"] = st["all_nan"] and bool(cf.isnan().all())
        st["ref_all_nan"] = st["ref_all_nan"] and bool(rf.isnan().all())
        st["bad"] += int((~torch.isclose(cf, rf, atol=atol, rtol=rtol, equal_nan=True)).sum())
        diff = (cf - rf).abs()
        fin = torch.isfinite(diff)
        if bool(fin.any()):
            st["max_abs"] = max(st["max_abs"], float(diff[fin].max()))
            mask = fin & (rf.abs() > atol)
            if bool(mask.any()):
                st["max_rel"] = max(st["max_rel"], float((diff[mask] / rf.abs()[mask]).max()))
        if bool((cf.isnan() & ~rf.isnan()).any()):
            st["max_abs"] = float("inf")
    return st


def aten_ops(fn):
    """Runs fn under a dispatch mode and returns the set of compute aten ops it called."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set()

    class Rec(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__.rstrip("_")
            if name not in NON_COMPUTE:
                seen.add(name)
            return func(*args, **(kwargs or {}))

    with Rec():
        fn()
    return seen


def main():
    req = json.loads(sys.stdin.read(1 << 24))
    try:
        import torch
        import triton
    except Exception as e:  # noqa: BLE001
        fail("toolchain_missing", "", "cannot import torch/triton: %s" % e, e)
    RESULT["tools"] = {"torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0]}
    if not torch.cuda.is_available():
        fail("toolchain_missing", "", "no-device: torch sees no CUDA device")
    dev = torch.device("cuda")
    RESULT["tools"]["gpu"] = torch.cuda.get_device_name(0)
    work = tempfile.mkdtemp(prefix="crucible-triton-")
    ref_path, cand_path = os.path.join(work, "reference.py"), os.path.join(work, "candidate.py")
    with open(ref_path, "w") as f:
        f.write(req["reference"])
    with open(cand_path, "w") as f:
        f.write(req["candidate"])
    try:
        ref = load(ref_path, "crucible_reference")
    except Exception as e:  # noqa: BLE001
        fail("reference_self_check", "load", "reference does not import: %r" % e, e)
    try:
        cand = load(cand_path, "crucible_candidate")
    except SyntaxError as e:
        fail("compile", "compile", "candidate has a syntax error: %s" % e, e)
    except Exception as e:  # noqa: BLE001
        fail("compile", "compile", "candidate does not import: %r" % e, e)
    entry = req.get("entry") or "ModelNew"
    if not hasattr(cand, entry):
        fail("elaborate", "load", "candidate defines no %s" % entry)

    seed = int(req["seed"]) % (2 ** 63)
    atol = rtol = float(req["tolerance"])
    torch.manual_seed(seed)
    init = ref.get_init_inputs()
    try:
        model_ref = ref.Model(*init).to(dev).eval()
    except Exception as e:  # noqa: BLE001
        fail("reference_self_check", "load", "reference model: %r" % e, e)
    torch.manual_seed(seed)
    try:
        model_new = getattr(cand, entry)(*init).to(dev).eval()
    except Exception as e:  # noqa: BLE001
        fail("elaborate", "load", "candidate model construction: %r" % e, e)

    flush = torch.empty(int(req["flush_bytes"]) // 4 + 1, dtype=torch.float32, device=dev)

    def gen(trial):
        torch.manual_seed(seed + 1000003 * (trial + 1))
        with torch.device(dev):  # generate on the GPU: large inputs cost no host time
            xs = ref.get_inputs()
        return [x.to(dev) if torch.is_tensor(x) else x for x in xs]

    def poison_allocator(nbytes):
        # Fill freed allocator blocks with NaN so an output the candidate
        # never writes cannot inherit the reference's answer.
        if nbytes > 0:
            p = torch.empty(nbytes // 4 + 1, dtype=torch.float32, device=dev)
            p.fill_(float("nan"))
            del p

    def call(model, inputs, rep, kind):
        args = [x.clone() if torch.is_tensor(x) else x for x in inputs]
        flush.fill_(float(rep))
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        threads_before = threading.active_count()
        start.record()
        try:
            with torch.no_grad():
                out = model(*args)
        except Exception as e:  # noqa: BLE001
            name = type(e).__name__
            if kind == "ref":
                fail("reference_self_check", "runtime", "reference raised %s: %s" % (name, e), e)
            if "Compil" in name or "triton" in type(e).__module__:
                fail("compile", "compile", "candidate kernel failed to compile: %s: %s" % (name, e), e)
            if isinstance(e, torch.cuda.OutOfMemoryError):
                fail("resource", "launch", "candidate ran out of device memory: %s" % e, e)
            fail("simulate", "runtime", "candidate raised %s: %s" % (name, str(e)[:500]), e)
        end.record()
        end.synchronize()
        t0 = time.perf_counter()
        torch.cuda.synchronize()  # anything still running lives on another stream
        hidden = (time.perf_counter() - t0) * 1e3
        if kind == "cand" and threading.active_count() > threads_before:
            thread_leaks[0] += 1  # a thread the candidate started is still running
        return out, args, start.elapsed_time(end), hidden

    thread_leaks = [0]
    trials, reps, warm = int(req["trials"]), int(req["reps"]), int(req["warmup"])
    ref_ms, cand_ms = [], []
    hidden_runs, max_hidden = 0, 0.0
    max_abs, max_rel = 0.0, 0.0
    prev_ref = []
    for t in range(trials):
        inputs = gen(t)
        in_tensors = [x for x in inputs if torch.is_tensor(x)]
        order = ["ref", "cand"] if t % 2 == 0 else ["cand", "ref"]
        if t == 0:
            for k in order:
                for w in range(warm):
                    call(model_ref if k == "ref" else model_new, inputs, w, k)
        if t == 0:
            thread_leaks[0] = 0  # threads started during warm-up (JIT, caches) are baseline
        outs = {}
        for k in order:
            model = model_ref if k == "ref" else model_new
            for rep in range(reps):
                if k == "cand":
                    poison_allocator(sum(o.numel() * o.element_size() for o in outs.get("ref", [])) or (64 << 20))
                out, args, ms, hidden = call(model, inputs, rep, k)
                (ref_ms if k == "ref" else cand_ms).append(ms)
                if k == "cand" and hidden > 0.1 + 0.25 * ms:
                    hidden_runs += 1
                    max_hidden = max(max_hidden, hidden)
                if rep == 0:
                    outs[k] = [o for o in flat(out) if torch.is_tensor(o)]
                    if k == "cand":
                        cand_args = args
                else:
                    del out
        ro, co = outs["ref"], outs["cand"]
        RESULT["trials"] = t + 1
        if len(ro) != len(co):
            fail("mismatch", "mismatch", "trial %d: candidate returned %d tensors, reference %d" % (t, len(co), len(ro)))
        for i, (r, c) in enumerate(zip(ro, co)):
            if tuple(r.shape) != tuple(c.shape):
                fail("mismatch", "mismatch", "trial %d: output %d has shape %s, want %s" % (t, i, tuple(c.shape), tuple(r.shape)))
            # identity store: the output IS an input, or equals one verbatim
            for j, x in enumerate(cand_args):
                if torch.is_tensor(x) and x.shape == c.shape and x.dtype == c.dtype:
                    if c.data_ptr() == x.data_ptr() or (torch.equal(c, x) and not torch.equal(r, x)):
                        RESULT["exploits"]["identity_store"] = "trial %d: output %d equals input %d" % (t, i, j)
            for p in prev_ref:
                if p.shape == c.shape and torch.equal(p, c) and not torch.equal(p, r):
                    RESULT["exploits"]["stale_output"] = "trial %d: output %d repeats an earlier trial's answer" % (t, i)
            st = compare(r, c, atol, rtol)
            if st["all_nan"] and not st["ref_all_nan"]:
                RESULT["exploits"]["launch_evidence"] = "trial %d: output %d is all poison (never written)" % (t, i)
            max_abs, max_rel = max(max_abs, st["max_abs"]), max(max_rel, st["max_rel"])
            if st["bad"] and RESULT["stage"] == "":
                RESULT["stage"], RESULT["kernel_stage"] = "mismatch", "mismatch"
                RESULT["cause"] = "trial %d: output %d: %d of %d elements outside tolerance %g" % (t, i, st["bad"], r.numel(), atol)
        prev_ref = [r.clone() for r in ro] if sum(r.numel() for r in ro) < (1 << 28) else []
        del outs, ro, co, inputs
    RESULT["max_abs_err"] = max_abs if math.isfinite(max_abs) else 1e308
    RESULT["max_rel_err"] = max_rel if math.isfinite(max_rel) else 1e308
    RESULT["ref_ms"], RESULT["cand_ms"] = ref_ms, cand_ms
    RESULT["measurements"]["post_sync_ms_max"] = max_hidden
    RESULT["measurements"]["thread_leaks"] = thread_leaks[0]
    if thread_leaks[0] and 2 * thread_leaks[0] >= len(cand_ms):
        RESULT["exploits"]["hidden_work"] = "the candidate left threads running after returning in %d of %d runs" % (
            thread_leaks[0], len(cand_ms))
    if hidden_runs and 2 * hidden_runs >= len(cand_ms):
        RESULT["exploits"]["hidden_work"] = "device still busy after the timed stream finished in %d of %d runs (up to %.3f ms)" % (
            hidden_runs, len(cand_ms), max_hidden)

    # Delegation: the candidate calling the reference's own compute ops.
    if not req.get("allow_delegation", False):
        try:
            x = gen(0)
            with torch.no_grad():
                ref_ops = aten_ops(lambda: model_ref(*x))
                cand_ops = aten_ops(lambda: model_new(*[a.clone() if torch.is_tensor(a) else a for a in x]))
            shared = sorted(ref_ops & cand_ops)
            RESULT["measurements"]["candidate_aten_ops"] = ",".join(sorted(cand_ops))[:500]
            if shared:
                RESULT["exploits"]["delegation"] = "calls the reference's framework ops %s" % ",".join(shared)
        except Exception as e:  # noqa: BLE001
            RESULT["measurements"]["delegation_check_error"] = repr(e)[:300]
    # Launch evidence: the candidate launched at least one GPU kernel of its own.
    try:
        from torch.profiler import ProfilerActivity, profile

        def count_kernels(model):
            x = gen(0)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                with torch.no_grad():
                    model(*x)
                torch.cuda.synchronize()
            return len([e for e in prof.events() if "CUDA" in str(getattr(e, "device_type", ""))])

        ref_k, cand_k = count_kernels(model_ref), count_kernels(model_new)
        RESULT["measurements"]["cand_kernels_per_call"] = cand_k
        # Only trust "no kernels" when the profiler does see the reference's.
        if ref_k > 0 and cand_k == 0:
            RESULT["exploits"]["launch_evidence"] = "the candidate launched no GPU kernel"
    except Exception as e:  # noqa: BLE001
        RESULT["measurements"]["launch_check_error"] = repr(e)[:300]
    emit()


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        fail("worker_crash", "", "worker error: %r" % e, e)
