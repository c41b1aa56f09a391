# Crucible triton-backend worker: runs ONE side of a KernelBench-style task
# on the single GPU this process may see (CUDA_VISIBLE_DEVICES): the
# reference (Model, get_inputs, get_init_inputs) or one candidate (ModelNew).
# The reference and the candidate are never in one process. The verifier
# (Go) drives it over stdin/stdout (moved away at start, so prints go to
# stderr) and compares the outputs itself; see kernels/triton.go.
#
# Job header: u32 length + JSON {role, code, entry, init_seed, init,
# flush_bytes}. Replies: 'S' once torch sees the GPU (before any code of the
# side runs), 'L' + u32 length + JSON {init} once loaded;
# per call: the reference gets u32 1 + u64 seed (it draws the inputs with
# get_inputs() under that seed) and replies 'D' + inputs frame + outputs
# frame + (ms, hidden_ms) as two float64; a candidate gets u32 1 + inputs
# frame and replies 'D' + outputs frame + (ms, hidden_ms). u32 2 asks for
# the compute aten ops one call uses ('O' + u32 length + JSON list). u32 0:
# quit. Any failure: 'E' + u32 length + JSON outcome, then exit.
#
# A frame is u32 count, then per value u32 length + JSON header
# ({"dtype", "shape"} for a tensor, raw little-endian bytes follow; else
# {"value"}).
import importlib.util
import json
import os
import struct
import sys
import time
import traceback

CMD = os.fdopen(os.dup(0), "rb", buffering=0)
REP = os.fdopen(os.dup(1), "wb", buffering=0)
os.dup2(2, 1)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)


def readn(n):
    buf = bytearray()
    while len(buf) < n:
        b = CMD.read(n - len(buf))
        if not b:
            os._exit(0)  # the verifier went away
        buf += b
    return bytes(buf)


def u32():
    return struct.unpack("<I", readn(4))[0]


def send(b):
    REP.write(b)
    REP.flush()


def send_json(tag, obj):
    j = json.dumps(obj, allow_nan=False, default=str).encode()
    send(tag + struct.pack("<I", len(j)) + j)


def report(stage, kstage, cause, exc=None):
    log = ""
    if exc is not None:
        log = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
    send_json(b"E", {"Stage": stage, "KernelStage": kstage, "Cause": cause[:2000], "Log": log})
    os._exit(0)


def flat(out):
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flat(o))
        return res
    return [out]


def tensor_bytes(t):
    import torch

    t = t.detach().contiguous().reshape(-1)
    if t.numel() == 0:
        return b""
    return t.view(torch.uint8).cpu().numpy().tobytes()


def write_frame(values):
    import torch

    parts = [struct.pack("<I", len(values))]
    for v in values:
        if torch.is_tensor(v):
            hdr = {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape)}
            raw = tensor_bytes(v)
        else:
            hdr, raw = {"value": v}, b""
        h = json.dumps(hdr, default=str).encode()
        parts += [struct.pack("<I", len(h)), h, raw]
    send(b"".join(parts))


def read_frame(dev):
    import torch

    out = []
    for _ in range(u32()):
        hdr = json.loads(readn(u32()))
        if "dtype" not in hdr:
            out.append(hdr.get("value"))
            continue
        dt = getattr(torch, hdr["dtype"])
        n = 1
        for d in hdr["shape"]:
            n *= d
        size = torch.empty((), dtype=dt).element_size()
        raw = readn(n * size)
        if n == 0:
            out.append(torch.empty(hdr["shape"], dtype=dt, device=dev))
            continue
        t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dt).reshape(hdr["shape"])
        out.append(t.to(dev))
    return out


# Ops that move or allocate but compute nothing: calling them is not delegation.
NON_COMPUTE = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
               "ones", "ones_like", "full", "full_like", "fill", "zero", "view", "reshape", "_reshape_alias",
               "_unsafe_view", "contiguous", "clone", "copy", "_to_copy", "to", "detach", "alias", "as_strided",
               "t", "transpose", "permute", "expand", "squeeze", "unsqueeze", "flatten", "select", "slice",
               "split", "lift_fresh", "resize", "set", "numel", "size", "stride", "is_contiguous", "item",
               "_local_scalar_dense", "result_type", "arange", "new_zeros", "new_ones", "new_full"}


def aten_ops(fn):
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
    return sorted(seen)


def main():
    job = json.loads(readn(u32()))
    role = job["role"]
    try:
        import torch
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001
        report("toolchain_missing", "", "cannot import torch/triton: %s" % e, e)
    if not torch.cuda.is_available():
        report("toolchain_missing", "", "no-device: torch sees no CUDA device")
    dev = torch.device("cuda")
    send(b"S")  # from here on the side's own code runs: nothing it reports is an infrastructure fault
    path = os.path.abspath(role + ".py")
    with open(path, "w") as f:
        f.write(job["code"])
    try:
        spec = importlib.util.spec_from_file_location("crucible_" + role, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        report("compile", "compile", "syntax error: %s" % e, e)
    except Exception as e:  # noqa: BLE001
        report("compile", "compile", "does not import: %r" % e, e)
    entry = job.get("entry") or ("Model" if role == "reference" else "ModelNew")
    if not hasattr(mod, entry):
        report("elaborate", "load", "defines no %s" % entry)
    try:
        init = mod.get_init_inputs() if role == "reference" else job.get("init") or []
        torch.manual_seed(int(job["init_seed"]) % (2 ** 63))
        model = getattr(mod, entry)(*init).to(dev).eval()
    except Exception as e:  # noqa: BLE001
        report("elaborate", "load", "model construction: %r" % e, e)
    flush = torch.empty(int(job["flush_bytes"]) // 4 + 1, dtype=torch.float32, device=dev)
    send_json(b"L", {"init": list(init)})

    last = None
    calls = 0
    while True:
        cmd = u32()
        if cmd == 0:
            os._exit(0)
        if cmd == 2:  # the compute ops one call uses
            try:
                args = [x.clone() if torch.is_tensor(x) else x for x in last]
                with torch.no_grad():
                    ops = aten_ops(lambda: model(*args))
            except Exception as e:  # noqa: BLE001
                ops = ["<error %r>" % e]
            send_json(b"O", ops)
            continue
        if role == "reference":
            torch.manual_seed(struct.unpack("<Q", readn(8))[0] % (2 ** 63))
            with torch.device(dev):
                inputs = [x.to(dev) if torch.is_tensor(x) else x for x in mod.get_inputs()]
        else:
            inputs = read_frame(dev)
        last = inputs
        args = [x.clone() if torch.is_tensor(x) else x for x in inputs]
        calls += 1
        flush.fill_(float(calls))
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        try:
            with torch.no_grad():
                out = model(*args)
        except Exception as e:  # noqa: BLE001
            name = type(e).__name__
            if "Compil" in name or "triton" in type(e).__module__:
                report("compile", "compile", "kernel failed to compile: %s: %s" % (name, e), e)
            if isinstance(e, torch.cuda.OutOfMemoryError):
                report("resource", "launch", "ran out of device memory: %s" % e, e)
            report("simulate", "runtime", "raised %s: %s" % (name, str(e)[:500]), e)
        end.record()
        end.synchronize()
        t0 = time.perf_counter()
        torch.cuda.synchronize()  # anything still running lives on another stream
        hidden = (time.perf_counter() - t0) * 1e3
        outs = [o for o in flat(out) if torch.is_tensor(o)]
        send(b"D")
        if role == "reference":
            write_frame(inputs)
        write_frame(outs)
        send(struct.pack("<dd", start.elapsed_time(end), hidden))


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        report("worker_crash", "", "worker error: %r" % e, e)
