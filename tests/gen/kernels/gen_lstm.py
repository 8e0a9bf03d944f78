"""UNIDIRECTIONAL_SEQUENCE_LSTM goldens: int8 (8x8->16, lstm.json) and 16x8 (lstm_16x8.json).

Each case is a one-operator model in the form TFLite Micro's integer LSTM kernel takes
(tensorflow/lite/micro/kernels/unidirectional_sequence_lstm.cc): the standard LSTM of Keras'
layer (no CIFG, no peephole, no projection, no layer norm), 24 inputs with the unused ones -1,
the hidden state (input 18) and the cell state (input 19) variable tensors:

* input ``[batch, time, n_input]`` (``[time, batch, n_input]`` when ``time_major``), int8 with a
  zero point (int16, zero point 0, for 16x8);
* eight weight tensors, int8 symmetric, one scale each (TFLM's LSTM takes per-tensor weights):
  input-to-gate ``[n_cell, n_input]`` and recurrent-to-gate ``[n_cell, n_cell]``, gates in
  TFLite's order input, forget, cell, output;
* four gate biases ``[n_cell]``, int32 (int64 for 16x8) with scale input_scale * weight_scale;
* hidden state ``[batch, n_cell]`` int8 (int16) with its own scale and zero point; the output
  has the same quantization (TFLM copies the hidden state into it);
* cell state ``[batch, n_cell]`` int16 with a power-of-two scale, zero point 0;
* options: cell activation TANH (the only one the schema's ActivationFunctionType and TFLM's
  kernel both have), ``cell_clip`` (0 = none), ``time_major``.

A case is a sequence of ``chunks`` invokes of the same interpreter on consecutive equal time
slices of the input: the variable tensors carry the state from one invoke to the next (streaming),
starting from TFLM's reset values (hidden = its zero point, cell = 0). ``input`` and
``expected_tflm`` hold the chunks' tensors one after the other (each chunk in the layout of the
model's input / output, of time length ``time / chunks``).

Oracle: TFLite Micro only. The TFLite interpreter's integer LSTM is another algorithm (it needs
the converter's five intermediate tensors and computes the gates at their scales, where TFLite
Micro uses a fixed Q3.12 gate input and Q0.15 gate output); run on these models it refuses them
(the reason is in the file's ``rejected``-free ``note``), so ``expected_tflite_ref`` is
``expected_tflm`` and the stats count no differences.
"""
import numpy as np

from common import BO, GOLDEN, OPT, S, Family, ModelBuilder, OracleError, case_rng, f32, f32s, run_tflite_ref, tensor_json, \
    uniform_int, _quiet_stderr, TFLM_ARENA, tflm_runtime

GATES = ("input", "forget", "cell", "output")

# Every case's .tflite model (its input one time slice), for the importer's end-to-end test
# (tests/host/lstm_tflite.rs): import, compile, invoke once per slice == expected_tflm.
MODELS = GOLDEN.parent / "lstm_models"


def lstm_model(batch, time, n_input, n_cell, time_major, q, w_in, w_rec, biases, act_dtype, cell_clip):
    mb = ModelBuilder()
    in_shape = [time, batch, n_input] if time_major else [batch, time, n_input]
    out_shape = [time, batch, n_cell] if time_major else [batch, time, n_cell]
    bias_dtype = np.int32 if act_dtype == np.int8 else np.int64
    inputs = [-1] * 24
    inputs[0] = mb.tensor("input", in_shape, act_dtype, [q["input_scale"]], [q["input_zp"]])
    for g in range(4):
        inputs[1 + g] = mb.tensor(f"input_to_{GATES[g]}_w", w_in[g].shape, np.int8, [q["w_in_scales"][g]], [0], 0,
                                  w_in[g])
        inputs[5 + g] = mb.tensor(f"recurrent_to_{GATES[g]}_w", w_rec[g].shape, np.int8, [q["w_rec_scales"][g]], [0],
                                  0, w_rec[g])
        bs = np.float32(np.float32(q["input_scale"]) * np.float32(q["w_in_scales"][g]))
        inputs[12 + g] = mb.tensor(f"{GATES[g]}_gate_bias", [n_cell], bias_dtype, [bs], [0], 0, biases[g])
    inputs[18] = mb.tensor("hidden_state", [batch, n_cell], act_dtype, [q["hidden_scale"]], [q["hidden_zp"]])
    inputs[19] = mb.tensor("cell_state", [batch, n_cell], np.int16, [q["cell_scale"]], [0])
    mb.tensors[inputs[18]].isVariable = True
    mb.tensors[inputs[19]].isVariable = True
    out = mb.tensor("output", out_shape, act_dtype, [q["hidden_scale"]], [q["hidden_zp"]])
    o = S.UnidirectionalSequenceLSTMOptionsT()
    o.fusedActivationFunction = S.ActivationFunctionType.TANH
    o.cellClip = float(cell_clip)
    o.projClip = 0.0
    o.timeMajor = bool(time_major)
    o.asymmetricQuantizeInputs = False
    mb.operator(BO.UNIDIRECTIONAL_SEQUENCE_LSTM, 1, inputs, [out], OPT.UnidirectionalSequenceLSTMOptions, o)
    return mb.build([inputs[0]], [out])


def run_tflm_chunks(model, chunks):
    """One interpreter, one invoke per chunk (the variable tensors carry the state)."""
    outs = []
    with _quiet_stderr() as err:
        try:
            it = tflm_runtime.Interpreter.from_bytes(model, arena_size=TFLM_ARENA)
            for x in chunks:
                it.set_input(x, 0)
                it.invoke()
                outs.append(np.array(it.get_output(0)))
        except Exception as e:
            exc = e
        else:
            exc = None
    if exc is not None:
        raise OracleError(f"TFLM: {type(exc).__name__}: {exc} {err['text'].strip()}"[:400])
    return outs


def split_time(x, chunks, time_major):
    axis = 0 if time_major else 1
    return [np.ascontiguousarray(c) for c in np.split(x, chunks, axis=axis)]


def lstm_case(fam, name, batch=1, time=4, n_input=3, n_cell=4, time_major=False, chunks=1, act_dtype=np.int8,
              input_zp=None, hidden_zp=None, cell_pow=-11, cell_clip=0.0, gate_rms=2.0, hidden_scale=None,
              input_scale=None, tflite_reasons=None):
    rng = case_rng(name)
    qmin, qmax = int(np.iinfo(act_dtype).min), int(np.iinfo(act_dtype).max)
    sixteen = act_dtype == np.int16
    if input_zp is None:
        input_zp = 0 if sixteen else int(rng.integers(-128, 128))
    if hidden_zp is None:
        hidden_zp = 0 if sixteen else int(rng.integers(-20, 21))
    if input_scale is None:
        input_scale = (1.0 / 4096 if sixteen else 1.0 / 40) * rng.uniform(0.5, 2.0)
    if hidden_scale is None:
        # The hidden state o * tanh(c) lies in (-1, 1).
        hidden_scale = (1.0 / 32768 if sixteen else 1.0 / 128) * rng.uniform(1.0, 1.6)
    q = {"input_scale": np.float32(input_scale), "input_zp": input_zp, "hidden_scale": np.float32(hidden_scale),
         "hidden_zp": hidden_zp, "cell_scale": np.float32(2.0 ** cell_pow)}
    x_rms = 0.58 * (qmax - qmin) / 2.0
    h_rms = 0.5 / float(hidden_scale)
    # Gate pre-activations (real) of about gate_rms: half from the input, half from the hidden state.
    w_in_scales = [np.float32(gate_rms / (np.sqrt(n_input) * x_rms * float(input_scale) * 73.0) * rng.uniform(0.6, 1.4))
                   for _ in range(4)]
    w_rec_scales = [np.float32(gate_rms / (np.sqrt(n_cell) * h_rms * float(hidden_scale) * 73.0) * rng.uniform(0.6, 1.4))
                    for _ in range(4)]
    q["w_in_scales"], q["w_rec_scales"] = w_in_scales, w_rec_scales
    w_in = [uniform_int(rng, -127, 127, (n_cell, n_input), np.int8) for _ in range(4)]
    w_rec = [uniform_int(rng, -127, 127, (n_cell, n_cell), np.int8) for _ in range(4)]
    bias_dtype = np.int32 if not sixteen else np.int64
    biases = []
    for g in range(4):
        amp = int(1.0 / (float(input_scale) * float(w_in_scales[g])))  # about +-1.0 real
        biases.append(uniform_int(rng, -amp, amp, (n_cell,), bias_dtype))
    in_shape = (time, batch, n_input) if time_major else (batch, time, n_input)
    x = uniform_int(rng, qmin, qmax, in_shape, act_dtype)
    assert time % chunks == 0, name
    # The model takes one chunk; the interpreter is invoked once per chunk.
    model = lstm_model(batch, time // chunks, n_input, n_cell, time_major, q, w_in, w_rec, biases, act_dtype,
                       cell_clip)
    xs = split_time(x, chunks, time_major)
    assert name not in fam.names, name
    fam.names.add(name)
    MODELS.mkdir(parents=True, exist_ok=True)
    (MODELS / f"{name}.tflite").write_bytes(model)
    try:
        outs = run_tflm_chunks(model, xs)
    except OracleError as e:
        fam.rejected.append({"name": name, "reason": str(e)})
        return False
    try:
        run_tflite_ref(model, [xs[0]])
        tflite = "ran"
    except OracleError as e:
        tflite = str(e)
    if tflite_reasons is not None:
        tflite_reasons.add(tflite)
    expected = np.concatenate([o.reshape(-1) for o in outs])
    flat_in = np.concatenate([c.reshape(-1) for c in xs])
    out_shape = [time, batch, n_cell] if time_major else [batch, time, n_cell]
    case = {
        "name": name, "batch": batch, "time": time, "n_input": n_input, "n_cell": n_cell,
        "time_major": bool(time_major), "chunks": chunks,
        "input": tensor_json(flat_in.reshape(in_shape) if chunks == 1 else flat_in),
        "input_scale": f32(q["input_scale"]), "input_zero_point": input_zp,
        "input_weights": tensor_json(np.stack(w_in)), "input_weight_scales": f32s(w_in_scales),
        "recurrent_weights": tensor_json(np.stack(w_rec)), "recurrent_weight_scales": f32s(w_rec_scales),
        "bias": tensor_json(np.stack(biases)),
        "hidden_scale": f32(q["hidden_scale"]), "hidden_zero_point": hidden_zp,
        "cell_scale": f32(q["cell_scale"]), "cell_clip": f32(cell_clip),
        "expected_tflm": tensor_json(expected.reshape(out_shape) if chunks == 1 else expected),
    }
    case["expected_tflite_ref"] = case["expected_tflm"]
    fam.cases.append(case)
    fam.stats["cases"] += 1
    fam.stats["elements"] += int(expected.size)
    return True


NOTE = ("UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite Micro's integer kernel (gates: FC to Q3.12, sigmoid/tanh to Q0.15, "
        "int16 cell state with a power-of-two scale). Oracle TFLite Micro only: expected_tflite_ref is a copy of "
        "expected_tflm (the TFLite interpreter: {}). Cases with chunks > 1 run the interpreter once per time slice, "
        "the state carried between invokes; input and expected_tflm then hold the slices one after the other (flat).")


def _cases(fam, act_dtype):
    reasons = set()
    s16 = act_dtype == np.int16
    sfx = "_16x8" if s16 else ""
    c = dict(act_dtype=act_dtype, tflite_reasons=reasons)
    lstm_case(fam, f"lstm{sfx}_b1_t3_i2_c3", batch=1, time=3, n_input=2, n_cell=3, **c)
    lstm_case(fam, f"lstm{sfx}_b2_t4_i5_c4", batch=2, time=4, n_input=5, n_cell=4, **c)
    lstm_case(fam, f"lstm{sfx}_b2_t4_i5_c4_time_major", batch=2, time=4, n_input=5, n_cell=4, time_major=True, **c)
    lstm_case(fam, f"lstm{sfx}_b3_t5_i3_c6_time_major", batch=3, time=5, n_input=3, n_cell=6, time_major=True, **c)
    lstm_case(fam, f"lstm{sfx}_b1_t8_i16_c20", batch=1, time=8, n_input=16, n_cell=20, **c)
    lstm_case(fam, f"lstm{sfx}_b1_t6_i4_c5_stream3", batch=1, time=6, n_input=4, n_cell=5, chunks=3, **c)
    lstm_case(fam, f"lstm{sfx}_b2_t4_i3_c4_time_major_stream2", batch=2, time=4, n_input=3, n_cell=4,
              time_major=True, chunks=2, **c)
    lstm_case(fam, f"lstm{sfx}_b2_t6_i3_c4_stream2", batch=2, time=6, n_input=3, n_cell=4, chunks=2, **c)
    # Cell state scales: tanh's input shift positive (2^-8, 2^-11), zero (2^-12), negative (2^-15).
    for p in (-8, -12, -15):
        lstm_case(fam, f"lstm{sfx}_b1_t6_i3_c4_cell2p{-p}", batch=1, time=6, n_input=3, n_cell=4, cell_pow=p, **c)
    # Cell clip binding (the cell state grows with large forget/input gates).
    lstm_case(fam, f"lstm{sfx}_b1_t8_i3_c4_clip0p5", batch=1, time=8, n_input=3, n_cell=4, cell_clip=0.5, gate_rms=4.0,
              **c)
    lstm_case(fam, f"lstm{sfx}_b2_t6_i4_c3_clip2_cell2p13", batch=2, time=6, n_input=4, n_cell=3, cell_clip=2.0,
              cell_pow=-13, gate_rms=4.0, **c)
    # Gate pre-activations beyond Q3.12's +-8: the int16 FC outputs and their sum saturate.
    lstm_case(fam, f"lstm{sfx}_b1_t5_i6_c4_saturating", batch=1, time=5, n_input=6, n_cell=4, gate_rms=20.0, **c)
    lstm_case(fam, f"lstm{sfx}_b1_t5_i3_c4_small_gates", batch=1, time=5, n_input=3, n_cell=4, gate_rms=0.05, **c)
    if not s16:
        for izp, hzp in ((-128, 127), (127, -128), (0, 0)):
            lstm_case(fam, f"lstm_b1_t4_i3_c4_izp{izp}_hzp{hzp}".replace("-", "m"), batch=1, time=4, n_input=3,
                      n_cell=4, input_zp=izp, hidden_zp=hzp, **c)
        # A coarse hidden scale: o * tanh(c) lands on few steps; a fine one: it saturates.
        lstm_case(fam, "lstm_b1_t4_i3_c4_hidden_coarse", batch=1, time=4, n_input=3, n_cell=4, hidden_scale=0.05, **c)
        lstm_case(fam, "lstm_b1_t4_i3_c4_hidden_fine", batch=1, time=4, n_input=3, n_cell=4, hidden_scale=0.002, **c)
    fam.note = NOTE.format("; ".join(sorted(r.split("\n")[0][:160] for r in reasons)))


def gen_lstm():
    fam = Family("lstm.json", "UNIDIRECTIONAL_SEQUENCE_LSTM", "tests/gen/kernels/gen_lstm.py")
    _cases(fam, np.int8)
    return fam


def gen_lstm_16x8():
    fam = Family("lstm_16x8.json", "UNIDIRECTIONAL_SEQUENCE_LSTM", "tests/gen/kernels/gen_lstm.py")
    _cases(fam, np.int16)
    return fam


GENERATORS = {"lstm": gen_lstm}
GENERATORS_16X8 = {"lstm_16x8": gen_lstm_16x8}
