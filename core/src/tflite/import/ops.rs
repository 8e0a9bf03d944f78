//! Pass 3: one TFLite operator → one graph node: the builtin code → [`Op`] table, options and
//! attribute operands.

use super::*;

impl<'a> Importer<'a> {
    pub(super) fn convert_op(&self, raw: &RawOp<'a>) -> Result<Node, ConvertError> {
        let op = match raw.code {
            CONV_2D => {
                let o = required_options!(raw, Conv2DOptions);
                Op::Conv2d(Conv2d {
                    stride_h: positive(o.stride_h().fb()?, "stride_h")?,
                    stride_w: positive(o.stride_w().fb()?, "stride_w")?,
                    dilation_h: positive(o.dilation_h_factor().fb()?, "dilation_h_factor")?,
                    dilation_w: positive(o.dilation_w_factor().fb()?, "dilation_w_factor")?,
                    padding: padding(o.padding().fb()?),
                    activation: activation(o.fused_activation_function().fb()?)?,
                })
            }
            DEPTHWISE_CONV_2D => {
                let o = required_options!(raw, DepthwiseConv2DOptions);
                // TFLite's kernels derive the multiplier from the shapes; so do we.
                let x_c = raw.input(0).and_then(|i| self.shape(i).ok()).and_then(|s| s.last().copied()).unwrap_or(0);
                let f_c = raw.input(1).and_then(|i| self.shape(i).ok()).and_then(|s| s.last().copied()).unwrap_or(0);
                if x_c == 0 || f_c % x_c != 0 {
                    return Err(malformed(format!(
                        "depthwise filter channels {f_c} are not a multiple of the input channels {x_c}"
                    )));
                }
                Op::DepthwiseConv2d(DepthwiseConv2d {
                    stride_h: positive(o.stride_h().fb()?, "stride_h")?,
                    stride_w: positive(o.stride_w().fb()?, "stride_w")?,
                    dilation_h: positive(o.dilation_h_factor().fb()?, "dilation_h_factor")?,
                    dilation_w: positive(o.dilation_w_factor().fb()?, "dilation_w_factor")?,
                    depth_multiplier: f_c / x_c,
                    padding: padding(o.padding().fb()?),
                    activation: activation(o.fused_activation_function().fb()?)?,
                })
            }
            FULLY_CONNECTED => {
                let (act, keep) = match options!(raw, FullyConnectedOptions) {
                    Some(o) => {
                        if o.weights_format().fb()? != fb::FullyConnectedOptionsWeightsFormat::Default {
                            return Err(err(
                                Kind::Unsupported,
                                "shuffled (SHUFFLED4x16INT8) fully-connected weights are not supported",
                            ));
                        }
                        (activation(o.fused_activation_function().fb()?)?, o.keep_num_dims().fb()?)
                    }
                    None => (FusedActivation::None, false),
                };
                Op::FullyConnected(FullyConnected { activation: act, keep_num_dims: keep })
            }
            MAX_POOL_2D | AVERAGE_POOL_2D => {
                let o = required_options!(raw, Pool2DOptions);
                let p = Pool2d {
                    filter_h: positive(o.filter_height().fb()?, "filter_height")?,
                    filter_w: positive(o.filter_width().fb()?, "filter_width")?,
                    stride_h: positive(o.stride_h().fb()?, "stride_h")?,
                    stride_w: positive(o.stride_w().fb()?, "stride_w")?,
                    padding: padding(o.padding().fb()?),
                    activation: activation(o.fused_activation_function().fb()?)?,
                };
                if raw.code == MAX_POOL_2D { Op::MaxPool2d(p) } else { Op::AvgPool2d(p) }
            }
            ADD | SUB => {
                let (act, pot) = if raw.code == ADD {
                    match options!(raw, AddOptions) {
                        Some(o) => (o.fused_activation_function().fb()?, o.pot_scale_int16().fb()?),
                        None => (fb::ActivationFunctionType::None, true),
                    }
                } else {
                    match options!(raw, SubOptions) {
                        Some(o) => (o.fused_activation_function().fb()?, o.pot_scale_int16().fb()?),
                        None => (fb::ActivationFunctionType::None, true),
                    }
                };
                let int16 =
                    raw.input(0).and_then(|i| self.id(i).ok()).and_then(|id| self.graph.tensor(id)).map(|t| t.dtype)
                        == Some(DType::I16);
                if int16 && pot {
                    return Err(err(
                        Kind::UnsupportedQuantization,
                        "int16 ADD/SUB with pot_scale_int16 (the power-of-two-scale variant) is not supported; the 16x8 converter writes pot_scale_int16 = false",
                    ));
                }
                let activation = activation(act)?;
                if raw.code == ADD { Op::Add { activation } } else { Op::Sub { activation } }
            }
            MUL => {
                let act = match options!(raw, MulOptions) {
                    Some(o) => activation(o.fused_activation_function().fb()?)?,
                    None => FusedActivation::None,
                };
                Op::Mul { activation: act }
            }
            MINIMUM => Op::Minimum,
            MAXIMUM => Op::Maximum,
            PRELU => Op::Prelu,
            SQUARED_DIFFERENCE => Op::SquaredDifference,
            BATCH_MATMUL => match options!(raw, BatchMatMulOptions) {
                Some(o) => {
                    if o.asymmetric_quantize_inputs().fb()? {
                        return Err(err(
                            Kind::UnsupportedQuantization,
                            "BATCH_MATMUL with asymmetric_quantize_inputs (hybrid float x int8) is not supported",
                        ));
                    }
                    Op::BatchMatMul { adj_x: o.adj_x().fb()?, adj_y: o.adj_y().fb()? }
                }
                None => Op::BatchMatMul { adj_x: false, adj_y: false },
            },
            DIV => Op::Div {
                activation: match options!(raw, DivOptions) {
                    Some(o) => activation(o.fused_activation_function().fb()?)?,
                    None => FusedActivation::None,
                },
            },
            SOFTMAX => Op::Softmax { beta: required_options!(raw, SoftmaxOptions).beta().fb()? },
            LOGISTIC => Op::Logistic,
            TANH => Op::Tanh,
            HARD_SWISH => Op::HardSwish,
            RELU => Op::Relu,
            RELU6 => Op::Relu6,
            RELU_N1_TO_1 => Op::Clip { min: -1.0, max: 1.0 },
            RELU_0_TO_1 => Op::Clip { min: 0.0, max: 1.0 },
            ABS => Op::Abs,
            NEG => Op::Neg,
            RSQRT => Op::Rsqrt,
            ELU => Op::Elu { alpha: 1.0 },
            SQRT => Op::Unary(crate::graph::UnaryFn::Sqrt),
            LEAKY_RELU => Op::LeakyRelu { alpha: required_options!(raw, LeakyReluOptions).alpha().fb()? },
            CONCATENATION => {
                let o = required_options!(raw, ConcatenationOptions);
                Op::Concatenation {
                    axis: axis(o.axis().fb()?.into(), self.input_rank(raw)?, "concatenation")?,
                    activation: activation(o.fused_activation_function().fb()?)?,
                }
            }
            PAD | PADV2 => {
                let p = raw.input(1).ok_or_else(|| malformed(format!("{} has no paddings operand", raw.name)))?;
                let values = self.const_ints(p, "paddings")?;
                let rank = self.input_rank(raw)?;
                if values.len() != rank * 2 {
                    return Err(malformed(format!(
                        "paddings has {} values, input rank {rank} needs {}",
                        values.len(),
                        rank * 2
                    )));
                }
                let mut paddings = Vec::with_capacity(rank);
                for pair in values.chunks_exact(2) {
                    let (b, a) = (pair[0], pair[1]);
                    if b < 0 || a < 0 {
                        return Err(err(Kind::Unsupported, format!("negative padding {pair:?} is not supported")));
                    }
                    let to = |v: i64| usize::try_from(v).map_err(|_| malformed(format!("padding {v} too large")));
                    paddings.push([to(b)?, to(a)?]);
                }
                Op::Pad { paddings }
            }
            MEAN => {
                let a = raw.input(1).ok_or_else(|| malformed("MEAN has no axes operand"))?;
                let rank = self.input_rank(raw)?;
                let mut axes = Vec::new();
                for v in self.const_ints(a, "axes")? {
                    axes.push(axis(v, rank, "mean")?);
                }
                crate::vecmap::sort_usizes(&mut axes);
                axes.dedup();
                let keep_dims = match options!(raw, ReducerOptions) {
                    Some(o) => o.keep_dims().fb()?,
                    None => false,
                };
                Op::Mean { axes, keep_dims }
            }
            RESHAPE => {
                let out = raw.outputs.first().copied().ok_or_else(|| malformed("RESHAPE has no output"))?;
                let new_shape = self.shape(out)?.to_vec();
                // A constant shape operand (or the option) must agree with the output tensor.
                let declared: Option<Vec<i64>> = match raw.input(1) {
                    Some(s) if self.buffer_bytes(s, &self.tensor_ref(s)?)?.is_some() => {
                        Some(self.const_ints(s, "shape")?)
                    }
                    Some(_) => None,
                    None => options!(raw, ReshapeOptions)
                        .map(|o| o.new_shape().fb())
                        .transpose()?
                        .flatten()
                        .map(|v| v.iter().map(i64::from).collect()),
                };
                if let Some(d) = declared {
                    check_reshape(&d, &new_shape)?;
                }
                Op::Reshape { new_shape }
            }
            TRANSPOSE => {
                let p = raw.input(1).ok_or_else(|| malformed("TRANSPOSE has no perm operand"))?;
                let mut perm = Vec::new();
                for v in self.const_ints(p, "perm")? {
                    perm.push(usize::try_from(v).map_err(|_| malformed(format!("perm value {v} is negative")))?);
                }
                Op::Transpose { perm }
            }
            SQUEEZE => {
                let x = raw.input(0).ok_or_else(|| malformed("SQUEEZE has no input"))?;
                let shape = self.shape(x)?;
                let dims: Vec<i32> = options!(raw, SqueezeOptions)
                    .map(|o| o.squeeze_dims().fb())
                    .transpose()?
                    .flatten()
                    .map(|v| v.iter().collect())
                    .unwrap_or_default();
                let mut axes = Vec::new();
                if dims.is_empty() {
                    axes.extend(shape.iter().enumerate().filter(|(_, d)| **d == 1).map(|(a, _)| a));
                } else {
                    for d in dims {
                        axes.push(axis(d.into(), shape.len(), "squeeze")?);
                    }
                }
                crate::vecmap::sort_usizes(&mut axes);
                axes.dedup();
                Op::Squeeze { axes }
            }
            SLICE | STRIDED_SLICE => self.convert_slice(raw)?,
            MIRROR_PAD => self.convert_mirror_pad(raw)?,
            GATHER => self.convert_gather(raw)?,
            TILE | BROADCAST_TO => self.convert_tile(raw)?,
            DEPTH_TO_SPACE => {
                let block = positive(required_options!(raw, DepthToSpaceOptions).block_size().fb()?, "block_size")?;
                Op::DepthToSpace { block, crd: false }
            }
            SPACE_TO_DEPTH => Op::SpaceToDepth {
                block: positive(required_options!(raw, SpaceToDepthOptions).block_size().fb()?, "block_size")?,
            },
            QUANTIZE => Op::Quantize,
            DEQUANTIZE => Op::Dequantize,
            RESIZE_BILINEAR | RESIZE_NEAREST_NEIGHBOR => self.resize(raw)?,
            SUM | REDUCE_MAX => {
                let a = raw.input(1).ok_or_else(|| malformed(format!("{} has no axes operand", raw.name)))?;
                let rank = self.input_rank(raw)?;
                let mut axes = Vec::new();
                for v in self.const_ints(a, "axes")? {
                    axes.push(axis(v, rank, "reduction")?);
                }
                crate::vecmap::sort_usizes(&mut axes);
                axes.dedup();
                let keep_dims = options!(raw, ReducerOptions).map(|o| o.keep_dims().fb()).transpose()?.unwrap_or(false);
                if raw.code == SUM { Op::Sum { axes, keep_dims } } else { Op::ReduceMax { axes, keep_dims } }
            }
            UNIDIRECTIONAL_SEQUENCE_LSTM => self.lstm(raw)?,
            TRANSPOSE_CONV => self.transpose_conv(raw)?,
            CUSTOM if raw.name == MEDIAPIPE_TRANSPOSE_CONV => self.mediapipe_transpose_conv(raw)?,
            _ => return Err(err(Kind::UnsupportedOp, format!("{} is not supported", raw.name))),
        };

        let mut inputs = Vec::new();
        for k in raw.data_input_positions() {
            match raw.inputs.get(k) {
                Some(Some(i)) => inputs.push(Some(self.id(*i)?)),
                Some(None) => inputs.push(None),
                None => {}
            }
        }
        // Trailing absent operands carry no information.
        while inputs.last() == Some(&None) {
            inputs.pop();
        }
        let outputs = raw.outputs.iter().map(|&o| self.id(o)).collect::<Result<Vec<_>, _>>()?;
        let name = raw.outputs.first().map(|&o| self.tensor_name(o)).unwrap_or_default();
        Ok(Node::new(name, op, inputs, outputs))
    }
}

impl Importer<'_> {
    /// RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: the size operand (constant, or the output
    /// tensor's height and width when it is computed) and the two options.
    fn resize(&self, raw: &RawOp<'_>) -> Result<Op, ConvertError> {
        let bilinear = raw.code == RESIZE_BILINEAR;
        let (align_corners, half_pixel_centers) = if bilinear {
            match options!(raw, ResizeBilinearOptions) {
                Some(o) => (o.align_corners().fb()?, o.half_pixel_centers().fb()?),
                None => (false, false),
            }
        } else {
            match options!(raw, ResizeNearestNeighborOptions) {
                Some(o) => (o.align_corners().fb()?, o.half_pixel_centers().fb()?),
                None => (false, false),
            }
        };
        let out = raw.outputs.first().copied().ok_or_else(|| malformed(format!("{} has no output", raw.name)))?;
        let out_shape = self.shape(out)?.to_vec();
        let size = match raw.input(1) {
            Some(s) if self.buffer_bytes(s, &self.tensor_ref(s)?)?.is_some() => {
                let v = self.const_ints(s, "size")?;
                match *v {
                    [h, w] if h > 0 && w > 0 => [h as usize, w as usize],
                    _ => return Err(malformed(format!("{} size {v:?} is not two positive extents", raw.name))),
                }
            }
            _ => match *out_shape {
                [_, h, w, _] => [h, w],
                _ => return Err(malformed(format!("{} output {out_shape:?} is not 4-D", raw.name))),
            },
        };
        if let [_, h, w, _] = *out_shape {
            if [h, w] != size {
                return Err(malformed(format!("{} size {size:?} does not match its output {out_shape:?}", raw.name)));
            }
        }
        if bilinear && align_corners && half_pixel_centers {
            return Err(err(
                Kind::Unsupported,
                format!(
                    "{}: RESIZE_BILINEAR with both align_corners and half_pixel_centers (TFLite refuses it)",
                    raw.name
                ),
            ));
        }
        let method =
            if bilinear { crate::graph::ResizeMethod::Bilinear } else { crate::graph::ResizeMethod::NearestNeighbor };
        Ok(Op::Resize { method, size, align_corners, half_pixel_centers })
    }
}
impl<'a> Importer<'a> {
    /// UNIDIRECTIONAL_SEQUENCE_LSTM: the standard LSTM TFLite Micro runs (no CIFG, peephole,
    /// projection or layer norm; cell activation TANH). A quantized one keeps its cell state's
    /// scale as an attribute, and its hidden state must be quantized as its output (TFLite Micro
    /// copies one into the other).
    fn lstm(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let o = required_options!(raw, UnidirectionalSequenceLstmOptions);
        if o.fused_activation_function().fb()? != fb::ActivationFunctionType::Tanh {
            return Err(err(
                Kind::Unsupported,
                "UNIDIRECTIONAL_SEQUENCE_LSTM: only the TANH cell activation is supported",
            ));
        }
        if o.proj_clip().fb()? != 0.0 || o.diagonal_recurrent_tensors().fb()? {
            return Err(err(
                Kind::Unsupported,
                "UNIDIRECTIONAL_SEQUENCE_LSTM: projection and diagonal recurrent weights are not supported",
            ));
        }
        let missing = (1..=8).chain(12..=15).find(|&k| raw.input(k).is_none());
        if let Some(k) = missing {
            return Err(err(
                Kind::Unsupported,
                format!("UNIDIRECTIONAL_SEQUENCE_LSTM: operand {k} is absent (CIFG LSTMs are not supported)"),
            ));
        }
        if let Some(k) = [9, 10, 11, 16, 17, 20, 21, 22, 23].into_iter().find(|&k| raw.input(k).is_some()) {
            return Err(err(
                Kind::Unsupported,
                format!(
                    "UNIDIRECTIONAL_SEQUENCE_LSTM: operand {k} is present (peephole, projection and layer-norm LSTMs are not supported)"
                ),
            ));
        }
        let cell_clip = o.cell_clip().fb()?;
        if !(cell_clip.is_finite() && cell_clip >= 0.0) {
            return Err(malformed(format!("UNIDIRECTIONAL_SEQUENCE_LSTM: cell clip {cell_clip}")));
        }
        let x = raw.input(0).ok_or_else(|| malformed("UNIDIRECTIONAL_SEQUENCE_LSTM has no input"))?;
        let quantized = self.convert_tensor(x)?.dtype != DType::F32;
        let cell_scale = if quantized {
            let state = |k: usize| -> Result<Tensor, ConvertError> {
                let i = raw
                    .input(k)
                    .ok_or_else(|| malformed(format!("UNIDIRECTIONAL_SEQUENCE_LSTM: state operand {k} is absent")))?;
                self.convert_tensor(i)
            };
            let (h, c) = (state(18)?, state(19)?);
            let out =
                raw.outputs.first().copied().ok_or_else(|| malformed("UNIDIRECTIONAL_SEQUENCE_LSTM has no output"))?;
            let y = self.convert_tensor(out)?;
            let per_tensor = |t: &Tensor| t.quant.as_ref().and_then(|q| q.per_tensor_params());
            if h.dtype != y.dtype || per_tensor(&h).is_none() || per_tensor(&h) != per_tensor(&y) {
                return Err(err(
                    Kind::UnsupportedQuantization,
                    "UNIDIRECTIONAL_SEQUENCE_LSTM: the hidden state must have the output's type and quantization",
                ));
            }
            match (c.dtype, per_tensor(&c)) {
                (DType::I16, Some((scale, 0))) => Some(scale),
                _ => {
                    return Err(err(
                        Kind::UnsupportedQuantization,
                        "UNIDIRECTIONAL_SEQUENCE_LSTM: the cell state must be int16, per tensor, zero point 0",
                    ));
                }
            }
        } else {
            None
        };
        Ok(Op::Lstm(crate::graph::Lstm { time_major: o.time_major().fb()?, cell_clip, cell_scale }))
    }
}

/// Checks a TFLite reshape target (`-1` = inferred, dynamic batch allowed) against the output.
pub(super) fn check_reshape(declared: &[i64], output: &[usize]) -> Result<(), ConvertError> {
    let fits = declared.len() == output.len()
        && declared
            .iter()
            .zip(output.iter())
            .enumerate()
            .all(|(a, (&d, &o))| d == -1 || d as i128 == o as i128 || (a == 0 && d < 0));
    if fits {
        Ok(())
    } else {
        Err(malformed(format!("reshape target {declared:?} does not match the output shape {output:?}")))
    }
}

impl<'a> Importer<'a> {
    /// The filter's `[kh, kw]` and the input's `[h, w]` of a transposed convolution whose
    /// operands are at `input` and `filter`.
    fn transpose_conv_shapes(&self, raw: &RawOp<'a>, input: usize, filter: usize) -> Result<[usize; 4], ConvertError> {
        let x = raw.input(input).ok_or_else(|| malformed(format!("{} has no input", raw.name)))?;
        let w = raw.input(filter).ok_or_else(|| malformed(format!("{} has no weights", raw.name)))?;
        match (self.shape(x)?, self.shape(w)?) {
            (&[_, h, wd, _], &[_, kh, kw, _]) if kh > 0 && kw > 0 => Ok([h, wd, kh, kw]),
            (x, w) => Err(malformed(format!("{}: input {x:?} and weights {w:?} must be 4-D", raw.name))),
        }
    }

    /// TRANSPOSE_CONV: `[output_shape, weights OHWI, input, bias?]`; the output size is the
    /// output tensor's (the `output_shape` operand agrees with it when constant), the padding
    /// TFLite's (the padding of the convolution of the output size).
    fn transpose_conv(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let o = required_options!(raw, TransposeConvOptions);
        let stride = Hw::new(positive(o.stride_h().fb()?, "stride_h")?, positive(o.stride_w().fb()?, "stride_w")?);
        let [_, _, kh, kw] = self.transpose_conv_shapes(raw, 2, 1)?;
        let out = raw.outputs.first().copied().ok_or_else(|| malformed("TRANSPOSE_CONV has no output"))?;
        let (oh, ow) = match *self.shape(out)? {
            [_, h, w, _] => (h, w),
            ref s => return Err(malformed(format!("TRANSPOSE_CONV output {s:?} is not 4-D"))),
        };
        let constant =
            |s: usize| self.tensor_ref(s).ok().and_then(|t| self.buffer_bytes(s, &t).ok().flatten()).is_some();
        if let Some(s) = raw.input(0).filter(|&s| constant(s)) {
            let declared = self.const_ints(s, "output_shape")?;
            if declared.len() != 4 || declared[1] != oh as i64 || declared[2] != ow as i64 {
                return Err(malformed(format!(
                    "TRANSPOSE_CONV output_shape {declared:?} differs from the output tensor's {oh}x{ow}"
                )));
            }
        }
        let pad = transpose_conv_padding(padding(o.padding().fb()?), Hw::new(oh, ow), Hw::new(kh, kw), stride)
            .map_err(|e| malformed(format!("TRANSPOSE_CONV: {e}")))?;
        Ok(Op::TransposeConv2d(TransposeConv2d {
            stride_h: stride.h,
            stride_w: stride.w,
            pad_top: pad.h,
            pad_left: pad.w,
            output_h: oh,
            output_w: ow,
            activation: activation(o.fused_activation_function().fb()?)?,
        }))
    }

    /// MediaPipe's `Convolution2DTransposeBias`: `[input, weights OHWI, bias]`, options in the
    /// custom options as TFLite's `TfLiteTransposeConvParams` (int32 padding: 1 SAME, 2 VALID;
    /// int32 stride_width; int32 stride_height). The output size is MediaPipe's:
    /// `stride * (in - 1) + k - pad`, where SAME pads `max(0, k - (in - 1) % stride - 1)` in
    /// total, half of it (rounded down) before.
    fn mediapipe_transpose_conv(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let bytes = raw.op.custom_options().fb()?.unwrap_or(&[]);
        let word = |k: usize| -> Result<i32, ConvertError> {
            bytes
                .get(4 * k..4 * k + 4)
                .and_then(|b| b.try_into().ok())
                .map(i32::from_le_bytes)
                .ok_or_else(|| malformed(format!("{}: custom options shorter than 12 bytes", raw.name)))
        };
        let same = match word(0)? {
            1 => true,
            2 => false,
            p => return Err(malformed(format!("{}: padding {p} is neither SAME (1) nor VALID (2)", raw.name))),
        };
        let (sw, sh) = (positive(word(1)?, "stride_width")?, positive(word(2)?, "stride_height")?);
        if raw.inputs.len() != 3 {
            return Err(malformed(format!("{} takes 3 inputs (input, weights, bias)", raw.name)));
        }
        let [h, w, kh, kw] = self.transpose_conv_shapes(raw, 0, 1)?;
        let axis = |n: usize, k: usize, s: usize| -> Option<(usize, usize)> {
            let total = if same { k.saturating_sub((n.checked_sub(1)? % s) + 1) } else { 0 };
            Some((s.checked_mul(n - 1)?.checked_add(k)? - total, total / 2))
        };
        let ((oh, pad_top), (ow, pad_left)) = match (axis(h, kh, sh), axis(w, kw, sw)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(malformed(format!("{}: empty or oversized input", raw.name))),
        };
        Ok(Op::TransposeConv2d(TransposeConv2d {
            stride_h: sh,
            stride_w: sw,
            pad_top,
            pad_left,
            output_h: oh,
            output_w: ow,
            activation: FusedActivation::None,
        }))
    }
}
