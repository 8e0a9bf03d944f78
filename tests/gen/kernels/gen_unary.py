"""The requantizing elementwise ops with one input: RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1
(relu.json, relu_16x8.json), ABS (abs.json, abs_16x8.json), NEG (neg.json), RSQRT (rsqrt.json)
and ELU (elu.json).

Every case has the fields ``op`` (the TFLite builtin's name), ``input``, ``input_scale``,
``input_zero_point``, ``output_scale``, ``output_zero_point`` and both oracles' outputs. The int8
cases hold every int8 value once (RSQRT: every value from the zero point up, the op's domain), so
each checks the whole function for its quantization; the int16 ones random values with the
extremes (zero points 0, as TFLite requires).

Where only one runtime has the op, the file's note says so and the other oracle's field is a copy
of the one that ran it (``Family.run_one``): TFLite Micro has no RELU_N1_TO_1, RELU_0_TO_1 or int8
NEG; the interpreter's BUILTIN_REF resolver has no ELU. Neither runs RELU_N1_TO_1 in int16.
"""
import numpy as np

from common import BO, Family, OracleError, case_rng, f32, fmt_num, run_tflite_ref, run_tflm, uniform_int
import goldenio

GEN = "tests/gen/kernels/gen_unary.py"


def all_int8(rng, shape=(1, 256)):
    x = np.arange(-128, 128, dtype=np.int16)
    rng.shuffle(x)
    return x.astype(np.int8).reshape(shape)


def int16_input(rng, shape=(2, 64)):
    x = uniform_int(rng, -32768, 32767, shape, np.int16)
    x.flat[:5] = [-32768, -1, 0, 1, 32767]
    return x


def _model(code, version, x, in_s, in_zp, out_s, out_zp):
    from gen_activations import unary_model
    return unary_model(code, version, x.shape, x.dtype, np.float32(in_s), in_zp, np.float32(out_s), out_zp)


def _fields(op, x, in_s, in_zp, out_s, out_zp):
    return {"op": op, "input": goldenio.tensor(np.asarray(x)), "input_scale": f32(in_s),
            "input_zero_point": int(in_zp), "output_scale": f32(out_s), "output_zero_point": int(out_zp)}


class OneOracleFamily(Family):
    """A family whose op only one runtime runs: ``oracle`` is "tflm" or "tflite_ref"; the other
    expected field is a copy (the file's note says so)."""

    def __init__(self, file, op, note, oracle):
        super().__init__(file, op, GEN, note)
        self.oracle = oracle

    def run(self, name, model, inputs, fields, must_differ=False):
        assert name not in self.names, f"duplicate case name {name}"
        self.names.add(name)
        try:
            out = (run_tflm if self.oracle == "tflm" else run_tflite_ref)(model, inputs)
        except OracleError as e:
            self.rejected.append({"name": name, "reason": str(e).replace("\r", "")})
            return False
        case = {"name": name}
        case.update(fields)
        case["expected_tflm"] = goldenio.tensor(out)
        case["expected_tflite_ref"] = goldenio.tensor(out)
        self.cases.append(case)
        self.stats["cases"] += 1
        self.stats["elements"] += int(out.size)
        return True


def case(fam, op, version, name, x, in_s, in_zp, out_s, out_zp):
    in_s, out_s = np.float32(in_s), np.float32(out_s)
    return fam.run(name, _model(getattr(BO, op), version, x, in_s, in_zp, out_s, out_zp), [x],
                   _fields(op, x, in_s, in_zp, out_s, out_zp))


def _name(op, in_s, in_zp, out_s, out_zp):
    return f"{op.lower()}_in_s{fmt_num(in_s)}_zp{in_zp}_out_s{fmt_num(out_s)}_zp{out_zp}"


# (input scale, input zp, output scale, output zp): equal quantizations (TFLite's converter gives
# RELU that when it shares its input's range; the max-pool-with-clamp result), finer and coarser
# outputs, zero points at the extremes.
RELU_Q = [(0.05, 0, 0.05, 0), (0.1, -20, 0.1, -20), (0.02, 127, 0.02, 127), (0.05, 5, 0.03, -3),
          (0.1, -128, 0.05, -128), (0.03, 40, 0.07, -128), (0.5, 3, 0.01, -100), (0.004, -90, 0.5, -128),
          (2.0, 0, 0.3, -30), (0.1, 0, 0.05, 127), (0.0123, -7, 0.0456, 11)]


def _relu6_q(rng):
    """Output scales for which 6 lands inside the int8 range, and a few random ones."""
    out = [(0.05, 0, 0.05, 0), (0.05, -128, 0.05, -128), (0.1, 10, 0.1, 10), (0.1, 10, 6.0 / 255, -128),
           (0.03, -60, 0.025, -128), (0.2, 0, 0.04, -100), (0.01, 100, 0.03, 0)]
    for _ in range(4):
        in_s = float(np.float32(np.exp(rng.uniform(np.log(0.005), np.log(0.2)))))
        out_s = float(np.float32(6.0 / (rng.uniform(0.3, 0.95) * 255)))
        out.append((in_s, int(rng.integers(-128, 128)), out_s, int(rng.integers(-128, 0))))
    return out


def _n1_to_1_q(rng):
    out = [(0.01, 0, 0.01, 0), (0.02, -30, 1.0 / 127, 0), (0.05, 10, 0.01, 5), (0.004, -128, 0.006, -1),
           (0.1, 0, 2.0 / 255, 0)]
    for _ in range(4):
        in_s = float(np.float32(np.exp(rng.uniform(np.log(0.002), np.log(0.05)))))
        out_s = float(np.float32(1.0 / (rng.uniform(0.15, 0.9) * 127)))
        out.append((in_s, int(rng.integers(-128, 128)), out_s, int(rng.integers(-40, 40))))
    return out


def gen_relu():
    fam = OneOracleFamily(
        "relu.json", "RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1",
        "int8, exhaustive inputs; free input and output quantization. TFLite Micro has no RELU_N1_TO_1 or "
        "RELU_0_TO_1: those cases' expected_tflm is a copy of the interpreter's output (cases with op "
        "RELU_N1_TO_1 / RELU_0_TO_1). TFLite Micro's RELU6 clamps in the input's quantization and does not "
        "requantize (Relu6Quantized); the interpreter's requantizes, so RELU6 cases with differing input and "
        "output quantization split the oracles.", "tflite_ref")
    both = Family.run.__get__(fam)
    for in_s, in_zp, out_s, out_zp in RELU_Q:
        name = _name("RELU", in_s, in_zp, out_s, out_zp)
        x = all_int8(case_rng(name))
        both(name, _model(BO.RELU, 1, x, np.float32(in_s), in_zp, np.float32(out_s), out_zp), [x],
             _fields("RELU", x, np.float32(in_s), in_zp, np.float32(out_s), out_zp))
    for in_s, in_zp, out_s, out_zp in _relu6_q(case_rng("relu6-q")):
        name = _name("RELU6", in_s, in_zp, out_s, out_zp)
        x = all_int8(case_rng(name))
        both(name, _model(BO.RELU6, 1, x, np.float32(in_s), in_zp, np.float32(out_s), out_zp), [x],
             _fields("RELU6", x, np.float32(in_s), in_zp, np.float32(out_s), out_zp))
    for in_s, in_zp, out_s, out_zp in _n1_to_1_q(case_rng("relu_n1_to_1-q")):
        name = _name("RELU_N1_TO_1", in_s, in_zp, out_s, out_zp)
        case(fam, "RELU_N1_TO_1", 1, name, all_int8(case_rng(name)), in_s, in_zp, out_s, out_zp)
    for in_s, in_zp, out_s, out_zp in [(0.01, 0, 1.0 / 255, -128), (0.005, -50, 0.002, -128), (0.02, 30, 0.01, 0)]:
        name = _name("RELU_0_TO_1", in_s, in_zp, out_s, out_zp)
        case(fam, "RELU_0_TO_1", 1, name, all_int8(case_rng(name)), in_s, in_zp, out_s, out_zp)
    return fam


def gen_relu_16x8():
    fam = Family("relu_16x8.json", "RELU, RELU6", GEN,
                 "int16 input and output, zero points 0 (TFLite requires it); random inputs with the extremes. "
                 "TFLite Micro's RELU6 does not requantize (see relu.json), so RELU6 cases with differing scales "
                 "split the oracles; neither runtime has an int16 RELU_N1_TO_1.")
    for op, qs in [("RELU", [(1e-4, 1e-4), (3e-4, 1e-4), (1e-3, 5e-3), (2.0 ** -12, 2.0 ** -10), (5e-4, 4e-4)]),
                   ("RELU6", [(3e-4, 3e-4), (3e-4, 2e-4), (1e-4, 6.0 / 20000), (5e-4, 1e-3)])]:
        for in_s, out_s in qs:
            name = _name(op, in_s, 0, out_s, 0).replace(op.lower(), op.lower() + "16", 1)
            case(fam, op, 3 if op == "RELU" else 2, name, int16_input(case_rng(name)), in_s, 0, out_s, 0)
    return fam


ABS_Q = [(0.05, 0, 0.05, 0), (0.05, 20, 0.05, -128), (0.1, -128, 0.1, -128), (0.05, 5, 0.03, -3),
         (0.1, -20, 0.05, -128), (0.02, 127, 0.07, -128), (0.5, 3, 0.01, -100), (0.004, -90, 0.5, -128),
         (0.1, 0, 0.05, 127), (0.0123, -7, 0.0456, 11), (0.05, 0, 0.05, 100)]


def gen_abs():
    fam = Family("abs.json", "ABS", GEN,
                 "int8, exhaustive inputs; free input and output quantization (equal scales: no rescale)")
    for in_s, in_zp, out_s, out_zp in ABS_Q:
        name = _name("ABS", in_s, in_zp, out_s, out_zp)
        case(fam, "ABS", 1, name, all_int8(case_rng(name)), in_s, in_zp, out_s, out_zp)
    return fam


def gen_abs_16x8():
    fam = Family("abs_16x8.json", "ABS", GEN,
                 "int16 input and output, zero points 0 (TFLite requires it); random inputs with the extremes")
    for in_s, out_s in [(1e-4, 1e-4), (3e-4, 1e-4), (1e-3, 5e-3), (2.0 ** -12, 2.0 ** -10), (5e-4, 4e-4)]:
        name = _name("ABS", in_s, 0, out_s, 0).replace("abs", "abs16", 1)
        case(fam, "ABS", 1, name, int16_input(case_rng(name)), in_s, 0, out_s, 0)
    return fam


def gen_neg():
    fam = OneOracleFamily(
        "neg.json", "NEG",
        "int8, exhaustive inputs. TFLite Micro has no int8 NEG: expected_tflm is a copy of the interpreter's "
        "output. The interpreter negates the stored integers (wrapping: -(-128) is -128) and ignores the "
        "quantization, which is a negation of the real values only when the output has the input's scale and "
        "the opposite zero point; every case here has that.", "tflite_ref")
    for in_s, in_zp in [(0.05, 0), (0.1, 20), (0.02, -20), (0.5, 127), (0.003, -127), (1.0, 64)]:
        out_zp = -in_zp
        name = _name("NEG", in_s, in_zp, in_s, out_zp)
        case(fam, "NEG", 1, name, all_int8(case_rng(name)), in_s, in_zp, in_s, out_zp)
    return fam


def gen_rsqrt():
    fam = Family("rsqrt.json", "RSQRT", GEN,
                 "int8; inputs every value from the input zero point up (TFLite refuses values below it); "
                 "free input and output quantization")
    for in_s, in_zp, out_s, out_zp in [(0.05, -128, 0.05, -128), (0.01, -128, 0.1, -128), (0.1, 0, 0.02, -128),
                                       (0.02, -100, 0.05, -60), (0.5, -128, 0.01, -128), (1.0, 0, 0.004, -128),
                                       (0.003, 50, 0.3, -128), (0.0625, -128, 0.125, 0), (0.2, -10, 0.01, 100)]:
        name = _name("RSQRT", in_s, in_zp, out_s, out_zp)
        x = np.arange(in_zp, 128, dtype=np.int16)
        case_rng(name).shuffle(x)
        case(fam, "RSQRT", 2, name, x.astype(np.int8).reshape(1, -1), in_s, in_zp, out_s, out_zp)
    return fam


def gen_elu():
    fam = OneOracleFamily(
        "elu.json", "ELU",
        "int8, exhaustive inputs; free input and output quantization. The interpreter's BUILTIN_REF resolver has "
        "no ELU: expected_tflite_ref is a copy of TFLite Micro's output.", "tflm")
    for in_s, in_zp, out_s, out_zp in [(0.05, 0, 0.05, 0), (0.05, 0, 0.04, -103), (0.1, -20, 0.06, -111),
                                       (0.02, 127, 0.01, 127), (0.03, -128, 0.05, -128), (0.5, 3, 0.3, -40),
                                       (0.004, -90, 0.002, -60), (0.2, 0, 0.1, -118), (0.0123, -7, 0.0456, 11)]:
        name = _name("ELU", in_s, in_zp, out_s, out_zp)
        case(fam, "ELU", 1, name, all_int8(case_rng(name)), in_s, in_zp, out_s, out_zp)
    return fam


GENERATORS = {"relu": gen_relu, "abs": gen_abs, "neg": gen_neg, "rsqrt": gen_rsqrt, "elu": gen_elu}
GENERATORS_16X8 = {"relu16x8": gen_relu_16x8, "abs16x8": gen_abs_16x8}
