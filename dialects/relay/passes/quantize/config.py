"""The quantization configuration: TVM's ``relay.quantize.qconfig``.

Field names and defaults are TVM's (``nbit_input = 8``, ``calibrate_mode =
"global_scale"``, ``skip_conv_layers = [0]``, ...); on the command line they
are spelled with dashes: ``--quantize='calibrate-mode=kl_divergence
skip-conv-layers=0,3'``.  Extensions over TVM, at the end:

    percentile = 0.99999   the fraction of |x| below the threshold, for
                           calibrate_mode = percentile (TVM hard-codes it)
    per_channel = false    weight scales per output channel of conv2d/dense
    dataset = ""           the calibration data: a .npz file or a folder of them
    realize_to = "integer" "qnn" stops after realize, with qnn ops in the graph;
                           "integer" lowers them to relay integer arithmetic

``debug_enabled_ops`` takes op names (``nn.conv2d,add``); empty means all,
TVM's None.  ``round_for_shift``, ``calibrate_chunk_by`` and
``partition_conversions`` are not here: realize goes through
qnn.requantize, whose fixed-point rounding subsumes the first, and the
others are memory and VTA knobs with no counterpart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .....ir.pass_manager import option

CALIBRATE_MODES = ("global_scale", "kl_divergence", "percentile")
WEIGHT_SCALES = ("power2", "max")
ROUNDINGS = ("UPWARD", "TONEAREST")
REALIZE_TO = ("qnn", "integer")
SIGNED = {"int8": 8, "int16": 16, "int32": 32}
KINDS = ("input", "weight", "activation")


@dataclass
class QConfig:
    nbit_input: int = option(8, "bits of a quantized input (below the dtype's width a clip is added)")
    nbit_weight: int = option(8, "bits of a quantized weight")
    nbit_activation: int = option(32, "bits of an accumulated activation")
    dtype_input: str = option("int8", "dtype of quantized inputs: int8 or int16")
    dtype_weight: str = option("int8", "dtype of quantized weights: int8 or int16")
    dtype_activation: str = option("int32", "dtype of accumulations: int32")
    calibrate_mode: str = option("global_scale", "how thresholds are chosen: global_scale, kl_divergence "
                                                 "or percentile (the last two need dataset=)")
    global_scale: float = option(8.0, "the threshold of every non-weight point in global_scale mode")
    weight_scale: str = option("power2", "weight thresholds: power2 (2^ceil(log2 max|w|)) or max (max|w|)")
    skip_dense_layer: bool = option(True, "leave nn.dense in float")
    skip_conv_layers: list[int] = option([0], "conv2d indices (program order, from 0) left in float")
    do_simulation: bool = option(False, "stop after calibration: simulated_quantize ops, float arithmetic")
    debug_enabled_ops: list[str] = option([], "only annotate these ops, e.g. nn.conv2d,add (empty: all)")
    rounding: str = option("UPWARD", "requantize rounding: UPWARD or TONEAREST")
    percentile: float = option(0.99999, "the quantile of |x| taken as threshold for calibrate-mode=percentile")
    per_channel: bool = option(False, "a weight scale per output channel of conv2d / dense")
    dataset: str = option("", "calibration data: a .npz file or a folder of them", path=True)
    realize_to: str = option("integer", "qnn: stop with qnn ops in the graph; integer: lower them to integer ops")

    def validate(self):
        """Raise ValueError naming the first bad option (dashed, as typed)."""
        def choice(name, allowed):
            v = getattr(self, name)
            if v not in allowed:
                raise ValueError(f"{name.replace('_', '-')} must be one of {', '.join(allowed)}, got '{v}'")

        choice("calibrate_mode", CALIBRATE_MODES)
        choice("weight_scale", WEIGHT_SCALES)
        choice("rounding", ROUNDINGS)
        choice("realize_to", REALIZE_TO)
        for kind in KINDS:
            dt = getattr(self, f"dtype_{kind}")
            if dt not in SIGNED:
                raise ValueError(f"dtype-{kind} must be a signed integer type (int8, int16, int32), got '{dt}': "
                                 "the quantization is symmetric")
            nbit = getattr(self, f"nbit_{kind}")
            if not 2 <= nbit <= SIGNED[dt]:
                raise ValueError(f"nbit-{kind} = {nbit} does not fit dtype-{kind} = {dt} (2 to {SIGNED[dt]} bits)")
        if self.dtype_input == "int32" or self.dtype_weight == "int32":
            raise ValueError("dtype-input and dtype-weight must be int8 or int16 (the operands of qnn.conv2d)")
        if self.dtype_activation != "int32":
            raise ValueError(f"dtype-activation must be int32 (the accumulator), got '{self.dtype_activation}'")
        if not self.global_scale > 0:
            raise ValueError(f"global-scale must be positive, got {self.global_scale}")
        if not 0 < self.percentile <= 1:
            raise ValueError(f"percentile must be in (0, 1], got {self.percentile}")
        if any(i < 0 for i in self.skip_conv_layers):
            raise ValueError(f"skip-conv-layers holds conv2d indices from 0, got {self.skip_conv_layers}")
        if self.calibrate_mode != "global_scale" and not self.dataset and getattr(self, "samples", None) is None:
            raise ValueError(f"calibrate-mode={self.calibrate_mode} needs calibration data: give dataset=PATH "
                             "(a .npz file or a folder of them)")
        if self.dataset and not os.path.exists(self.dataset):
            raise ValueError(f"dataset '{self.dataset}' does not exist")
        if self.dataset and not (os.path.isdir(self.dataset) or self.dataset.endswith(".npz")):
            raise ValueError(f"dataset '{self.dataset}' is neither a .npz file nor a folder of them")

    # -- per-kind settings (TVM's get_nbit_by_kind / get_dtype_by_kind) ----------

    def nbit(self, kind: str) -> int:
        return getattr(self, f"nbit_{kind}")

    def dtype(self, kind: str) -> str:
        return getattr(self, f"dtype_{kind}")

    def clip_bound(self, kind: str) -> int:
        """The symmetric clip of a kind: 2^(nbit - 1) - 1 (sign = true)."""
        return (1 << (self.nbit(kind) - 1)) - 1

    def dom_scale(self, kind: str, scale):
        """TVM's _set_params: the threshold `scale` over 2^(nbit - sign)."""
        return scale / float(1 << (self.nbit(kind) - 1))

    def guard(self, op_name: str) -> bool:
        """TVM's QConfig.guard: is this op (TVM spelling) to be annotated?"""
        return not self.debug_enabled_ops or op_name in self.debug_enabled_ops
