"""Shared code of the single-op kernel golden generators (tests/gen/kernels/gen_*.py).

Each case is a one-operator TFLite model written directly with TFLite's flatbuffer schema object
API (``ai_edge_litert.schema_py_generated``), so every scale, zero point and option is exactly what
the case says. The model runs through both oracles:

* TFLite Micro (``tflite_micro.runtime.Interpreter.from_bytes``): the strict reference, whose
  conv / depthwise / fully-connected requantization rounds twice (our default);
* the TFLite interpreter with its reference kernels (``ai_edge_litert.interpreter.Interpreter``
  with ``OpResolverType.BUILTIN_REF``): per-channel fully connected rounds once there.

Both outputs are stored. A configuration either oracle rejects is dropped and reported.

Pinned tools (also in tests/gen/requirements.txt; checked at start-up by ``check_versions``):
    numpy==2.4.6  flatbuffers==25.12.19  ai-edge-litert==2.3.0
    tflite-micro==0.dev20261023182759 (pip install --pre)
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import os
import pathlib
import re
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/gen, for goldenio
import goldenio  # noqa: E402

PINNED = {
    "numpy": "2.4.6",
    "flatbuffers": "25.12.19",
    "ai-edge-litert": "2.3.0",
    "tflite-micro": "0.dev20261023182759",
}

GOLDEN = HERE.parent.parent / "golden" / "kernels"

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import flatbuffers  # noqa: E402
from ai_edge_litert import schema_py_generated as S  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402
from tflite_micro import runtime as tflm_runtime  # noqa: E402

BO = S.BuiltinOperator
OPT = S.BuiltinOptions
TT = S.TensorType

ACTIVATIONS = {"NONE": S.ActivationFunctionType.NONE, "RELU": S.ActivationFunctionType.RELU,
               "RELU6": S.ActivationFunctionType.RELU6,
               "RELU_N1_TO_1": S.ActivationFunctionType.RELU_N1_TO_1}
PADDINGS = {"SAME": S.Padding.SAME, "VALID": S.Padding.VALID}
_NP_TO_TT = {np.dtype(np.int8): TT.INT8, np.dtype(np.int16): TT.INT16, np.dtype(np.int32): TT.INT32,
             np.dtype(np.int64): TT.INT64, np.dtype(np.float32): TT.FLOAT32}

# TFLM's arena for one small op: generous, the models here are tiny.
TFLM_ARENA = 4 << 20


def check_versions():
    """Refuses to run with other tool versions than the pinned ones (the data would change)."""
    goldenio.check_pins(PINNED)


def tool_versions():
    return {pkg: importlib.metadata.version(pkg) for pkg in PINNED}


def case_rng(name):
    """A numpy generator seeded from the case name, so adding or removing a case never changes
    the data of another one."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(x):
    """A float32 value as the Python float with exactly the same value (JSON-exact)."""
    return float(np.float32(x))


def f32s(xs):
    return [f32(x) for x in xs]


def fmt_num(v):
    """A float32 value for a case name: 6 significant digits, ``-`` as ``m``, ``.`` as ``p``."""
    return f"{float(np.float32(v)):.6g}".replace("-", "m").replace(".", "p")


# ---------------------------------------------------------------------------------------------
# Model building


def pack_int4(values):
    """int8 values in [-8, 7] packed two per byte as TFLite stores an INT4 tensor's buffer (and as
    its ``tensor_utils::UnpackDenseInt4IntoInt8`` reads it back): the tensor flattened in row-major
    order, element ``2 i`` in the low nibble of byte ``i``, element ``2 i + 1`` in the high nibble,
    an odd count's last byte with a zero high nibble. Returns the uint8 bytes."""
    a = np.asarray(values, dtype=np.int8).reshape(-1)
    assert a.size == 0 or (a.min() >= -8 and a.max() <= 7), "int4 values outside [-8, 7]"
    if a.size % 2:
        a = np.append(a, np.int8(0))
    lo = a[0::2].astype(np.uint8) & 0x0F
    hi = a[1::2].astype(np.uint8) & 0x0F
    return (lo | (hi << 4)).astype(np.uint8)


class ModelBuilder:
    """A one-subgraph TFLite model built with the schema object API."""

    def __init__(self):
        self.tensors = []
        self.buffers = [S.BufferT()]  # buffer 0: the conventional empty buffer
        self.opcodes = []
        self.operators = []

    def tensor(self, name, shape, dtype, scales=None, zero_points=None, qdim=0, data=None):
        """Adds a tensor; ``data`` makes it a constant. Returns its index. ``dtype`` ``"int4"``:
        an INT4 tensor whose constant ``data`` (int8 values in [-8, 7]) is stored packed, two
        per byte (``pack_int4``), as TFLite stores INT4 buffers."""
        t = S.TensorT()
        t.name = name
        t.shape = [int(d) for d in shape]
        if isinstance(dtype, str) and dtype == "int4":
            t.type = TT.INT4
        else:
            t.type = _NP_TO_TT[np.dtype(dtype)]
        if scales is not None:
            q = S.QuantizationParametersT()
            q.scale = f32s(scales)
            q.zeroPoint = [int(z) for z in (zero_points if zero_points is not None else [0] * len(scales))]
            q.quantizedDimension = int(qdim)
            t.quantization = q
        if data is not None and t.type == TT.INT4:
            a = np.ascontiguousarray(np.asarray(data, dtype=np.int8))
            assert list(a.shape) == t.shape, (name, a.shape, t.shape)
            b = S.BufferT()
            b.data = pack_int4(a)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        elif data is not None:
            a = np.ascontiguousarray(np.asarray(data, dtype=dtype))
            assert list(a.shape) == t.shape, (name, a.shape, t.shape)
            b = S.BufferT()
            b.data = np.frombuffer(a.astype(a.dtype.newbyteorder("<")).tobytes(), np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        else:
            t.buffer = 0
        self.tensors.append(t)
        return len(self.tensors) - 1

    def operator(self, code, version, inputs, outputs, options_type=None, options=None):
        for i, oc in enumerate(self.opcodes):
            if oc.builtinCode == code and oc.version == version:
                idx = i
                break
        else:
            oc = S.OperatorCodeT()
            oc.builtinCode = code
            # Codes below 127 also go in the deprecated int8 field, which older readers (and
            # TFLM's GetBuiltinCode) consult.
            oc.deprecatedBuiltinCode = min(code, BO.PLACEHOLDER_FOR_GREATER_OP_CODES)
            oc.version = version
            self.opcodes.append(oc)
            idx = len(self.opcodes) - 1
        op = S.OperatorT()
        op.opcodeIndex = idx
        op.inputs = list(inputs)
        op.outputs = list(outputs)
        if options_type is not None:
            op.builtinOptionsType = options_type
            op.builtinOptions = options
        self.operators.append(op)

    def build(self, inputs, outputs):
        sg = S.SubGraphT()
        sg.name = "main"
        sg.tensors = self.tensors
        sg.inputs = list(inputs)
        sg.outputs = list(outputs)
        sg.operators = self.operators
        m = S.ModelT()
        m.version = 3
        m.description = "microquant single-op golden"
        m.operatorCodes = self.opcodes
        m.subgraphs = [sg]
        m.buffers = self.buffers
        b = flatbuffers.Builder(4096)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


# ---------------------------------------------------------------------------------------------
# Oracles


class OracleError(Exception):
    pass


@contextlib.contextmanager
def _quiet_stderr():
    """Both runtimes print their diagnostics on fd 2; capture them for the error message."""
    import tempfile
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        box = {"text": ""}
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode(errors="replace")


def run_tflm(model, inputs):
    with _quiet_stderr() as err:
        try:
            it = tflm_runtime.Interpreter.from_bytes(model, arena_size=TFLM_ARENA)
            for i, x in enumerate(inputs):
                it.set_input(x, i)
            it.invoke()
            out = np.array(it.get_output(0))
        except Exception as e:  # the wrapper raises RuntimeError / ValueError
            exc = e
        else:
            exc = None
    if exc is not None:
        raise OracleError(f"TFLM: {type(exc).__name__}: {exc} {err['text'].strip()}"[:400])
    return out


def run_tflite_ref(model, inputs):
    with _quiet_stderr() as err:
        try:
            it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
            it.allocate_tensors()
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], x)
            it.invoke()
            out = np.array(it.get_tensor(it.get_output_details()[0]["index"]))
        except Exception as e:
            exc = e
        else:
            exc = None
    if exc is not None:
        raise OracleError(f"TFLite BUILTIN_REF: {type(exc).__name__}: {exc} {err['text'].strip()}"[:400])
    return out


# ---------------------------------------------------------------------------------------------
# Quantization helpers for building cases


def output_scale_for(activation, rng, act_dtype=np.int8):
    """An output scale for which the activation's real-valued clamp lands inside the output
    type's range (so it binds: RELU6 at 6 / scale, RELU_N1_TO_1 at 1 / scale steps from the zero
    point), or a free log-uniform one."""
    qmax = float(np.iinfo(act_dtype).max)
    if activation == "RELU6":
        return np.float32(6.0 / (rng.uniform(0.3, 0.85) * qmax))
    if activation == "RELU_N1_TO_1":
        return np.float32(1.0 / (rng.uniform(0.15, 0.5) * qmax))
    lo, hi = (0.005, 0.5) if act_dtype == np.int8 else (2e-5, 2e-3)
    return np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def zero_points(i, activation):
    """The i-th (input, output) zero-point pair of a fixed rotation through the extremes. With
    RELU / RELU6 an output zero point near 127 would leave no positive range (every output 127),
    so -128 is used instead (cases named ..._relu_ozp127 test that corner on purpose)."""
    izp, ozp = ZERO_POINTS[i % len(ZERO_POINTS)]
    if activation in ("RELU", "RELU6") and ozp > 64:
        ozp = -128
    return izp, ozp


ZERO_POINTS = [(-128, 127), (127, -128), (0, 0), (-128, -128), (127, 127), (5, -7), (-1, 3), (-128, 20)]


def uniform_int(rng, lo, hi, shape, dtype):
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


REGIMES = ("typ", "near1", "tiny", "zeromult", "big", "spread")


def linear_quant(rng, regime, k, n_out, activation, in_zp, per_channel, act_dtype=np.int8, w_cap=127):
    """Scales and data ranges for a conv / depthwise / fully connected case with ``k``
    accumulated products per output and ``n_out`` channels.

    Regimes (effective multiplier M = input_scale * filter_scale / output_scale):
      typ      M ~ 50 / rms(accumulator): outputs spread over the int8 range;
      tiny     M ~ 2^-22 (shift about -21) with int32 biases up to 2^27 so outputs still move;
      zeromult M ~ 2^-33, below what a Q31 multiplier can hold: TFLite's QuantizeMultiplier
               turns it into multiplier 0, shift 0, so every output is the zero point;
      near1    M in [0.25, 1) (shift 0 or -1): inputs and weights in small ranges so outputs
               spread; where single and double rounding disagree most often;
      big      M > 1 (left shifts): inputs within a few steps of the zero point, weights in
               [-3, 3], so outputs are not all saturated;
      spread   per-channel filter scales spanning 2^16, so channels get very different shifts.
    ``w_cap``: the largest weight magnitude the weight type holds (7 for int4 weights).
    Returns a dict with input_scale, filter_scales, output_scale, x_lo, x_hi, w_amp, bias_amp."""
    info = np.iinfo(act_dtype)
    qmin, qmax = int(info.min), int(info.max)
    target = 50.0 if act_dtype == np.int8 else 8000.0
    x_lo, x_hi = qmin, qmax
    w_amp = 127
    near1_m = rng.uniform(0.25, 0.99)
    if regime == "big":
        x_lo, x_hi = max(qmin, in_zp - 3), min(qmax, in_zp + 3)
        w_amp = 3
    elif regime == "near1":
        amp = int(np.clip(round(np.sqrt(3.0 * target / (near1_m * np.sqrt(k)))), 1, 127))
        x_lo, x_hi = max(qmin, in_zp - amp), min(qmax, in_zp + amp)
        w_amp = amp
    w_amp = min(w_amp, w_cap)
    # Rough rms of the accumulator sum((x - zp) * w) from the data ranges.
    mean_x = (x_lo + x_hi) / 2.0
    var_x = ((x_hi - x_lo + 1) ** 2 - 1) / 12.0
    rms_x = np.sqrt(var_x + (mean_x - in_zp) ** 2)
    rms_w = np.sqrt(((2 * w_amp + 1) ** 2 - 1) / 12.0)
    acc_rms = max(1.0, np.sqrt(k) * rms_x * rms_w)
    out_scale = output_scale_for(activation, rng, act_dtype)
    nch = n_out if per_channel else 1
    if regime == "spread" and per_channel:
        w_scales = 0.004 * np.exp2(rng.uniform(-10, 6, nch))
    else:
        w_scales = np.exp(rng.uniform(np.log(0.002), np.log(0.05), nch))
    w_scales = w_scales.astype(np.float32)
    w_ref = float(np.median(w_scales))
    bias_amp = int(max(1, acc_rms // 2))
    if regime in ("typ", "spread", "big"):
        m = target / acc_rms
    elif regime == "near1":
        m = near1_m
    elif regime == "tiny":
        m = 2.0 ** -22 * rng.uniform(1, 2)
        bias_amp = 1 << 27 if act_dtype == np.int8 else 1 << 36
    elif regime == "zeromult":
        m = 2.0 ** -33 * rng.uniform(1, 1.9)
    else:
        raise ValueError(regime)
    in_scale = np.float32(m * float(out_scale) / w_ref)
    return {"input_scale": in_scale, "filter_scales": w_scales, "output_scale": out_scale,
            "x_lo": x_lo, "x_hi": x_hi, "w_amp": w_amp, "bias_amp": bias_amp}


def int4_weights(rng, w_amp, shape):
    """int4 weights uniform in [-w_amp, w_amp], and down to -8 when ``w_amp`` is 7 (the int4
    type's full range, so the sign extension of nibble 0x8 is exercised)."""
    return uniform_int(rng, -8 if w_amp >= 7 else -w_amp, min(w_amp, 7), shape, np.int8)


def bias_scales(in_scale, w_scales):
    return [np.float32(np.float32(in_scale) * np.float32(s)) for s in w_scales]


# ---------------------------------------------------------------------------------------------
# Families


class Family:
    """Collects the cases of one op family (one golden file) and the oracle statistics."""

    def __init__(self, file, op, generator, note=""):
        self.file = file
        self.op = op
        self.generator = generator
        self.note = note
        self.cases = []
        self.rejected = []
        self.names = set()
        self.stats = {"cases": 0, "cases_differing": 0, "elements": 0, "elements_differing": 0,
                      "max_abs_diff": 0}

    def run(self, name, model, inputs, fields, must_differ=False):
        """Runs ``model`` on ``inputs`` through both oracles; appends the case (``fields`` plus
        the two expected outputs) or records the rejection. Returns True when kept.

        ``must_differ``: the case was built from a search for inputs on which the oracles differ
        (``*_split_*`` cases); the oracles are deterministic, so agreeing here is a generator bug."""
        assert name not in self.names, f"duplicate case name {name}"
        self.names.add(name)
        try:
            a = run_tflm(model, inputs)
            b = run_tflite_ref(model, inputs)
        except OracleError as e:
            # TFLM prints the compared values of a failed check with a float-as-int format bug
            # (different garbage each run): drop them so the file stays deterministic.
            reason = re.sub(r"\s*\(-?\d+ [!=<>]+ -?\d+\)", "", str(e)).replace("\r", "")
            self.rejected.append({"name": name, "reason": reason})
            return False
        assert a.shape == b.shape and a.dtype == b.dtype, (name, a.shape, b.shape, a.dtype, b.dtype)
        if must_differ and np.array_equal(a, b):
            raise AssertionError(f"{name}: built to split the oracles, but they agree")
        case = {"name": name}
        case.update(fields)
        case["expected_tflm"] = goldenio.tensor(a)
        case["expected_tflite_ref"] = goldenio.tensor(b)
        self.cases.append(case)
        d = np.abs(a.astype(np.int64) - b.astype(np.int64))
        self.stats["cases"] += 1
        self.stats["elements"] += int(a.size)
        n = int(np.count_nonzero(d))
        if n:
            self.stats["cases_differing"] += 1
            self.stats["elements_differing"] += n
            self.stats["max_abs_diff"] = max(self.stats["max_abs_diff"], int(d.max()))
        return True

    def write(self):
        doc = {"op": self.op, "generator": self.generator, "tools": tool_versions(),
               "note": self.note, "stats": self.stats, "rejected": self.rejected, "cases": self.cases}
        p = goldenio.write(GOLDEN / self.file, doc)
        size = p.stat().st_size
        s = self.stats
        print(f"{self.file}: {s['cases']} cases, {s['cases_differing']} differ between TFLM and "
              f"BUILTIN_REF ({s['elements_differing']}/{s['elements']} elements, max {s['max_abs_diff']}), "
              f"{len(self.rejected)} rejected, {size} bytes")
        return {"file": self.file, "op": self.op, "bytes": size, "rejected": len(self.rejected), **s}


def tensor_json(a):
    return goldenio.tensor(np.asarray(a))


# ---------------------------------------------------------------------------------------------
# Searching for inputs on which the two oracles differ (the ``*_split_*`` cases)
#
# The oracles decide: a configuration is kept only when TFLite Micro's and the interpreter's
# outputs differ. The integer emulations below only choose which candidates are worth running
# through the oracles (a prefilter); they never produce an expected value.


def run_both(model, inputs):
    """Both oracles' outputs ``(tflm, tflite_ref)``, or None when either refuses the model."""
    try:
        return run_tflm(model, inputs), run_tflite_ref(model, inputs)
    except OracleError:
        return None


def split_rng(tag):
    """The generator of one search, seeded from its tag (deterministic, independent of the others)."""
    return np.random.default_rng(zlib.crc32(("split/" + tag).encode()))


def quantize_multiplier(real):
    """TFLite's ``QuantizeMultiplier`` (Q31 significand rounded half away from zero, exponent);
    prefilter only."""
    if real == 0.0:
        return 0, 0
    frac, shift = np.frexp(real)
    q = int(np.floor(abs(float(frac)) * (1 << 31) + 0.5))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, int(shift)


def mbqm_double(x, q, shift):
    """TFLite's double-rounding ``MultiplyByQuantizedMultiplier`` of int64 array ``x`` (values
    within int32): ``SaturatingRoundingDoublingHighMul`` then ``RoundingDivideByPOT``;
    prefilter only (no saturation handling: candidates are small)."""
    x = np.asarray(x, np.int64) << max(shift, 0)
    ab = x * np.int64(q)
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    s = ab + nudge
    hi = np.where(s >= 0, s >> 31, -((-s) >> 31))  # C division by 2^31: truncation toward zero
    e = max(-shift, 0)
    mask = (1 << e) - 1
    rem = hi & mask
    threshold = (mask >> 1) + (hi < 0)
    return (hi >> e) + (rem > threshold)


def mbqm_int64_reduced(x, q, shift):
    """TFLite's 64-bit ``MultiplyByQuantizedMultiplier`` (16x8 kernels in TFLite Micro): the Q31
    multiplier reduced to Q15 with rounding, one rounding shift; prefilter only."""
    reduced = (q + (1 << 15)) >> 16 if q < 0x7FFF0000 else 0x7FFF
    total = 15 - shift
    return (np.asarray(x, np.int64) * np.int64(reduced) + np.int64(1 << (total - 1))) >> total


def round_half_away(v):
    """``std::round`` of a float64 array; prefilter only."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)
