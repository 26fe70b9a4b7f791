"""One converter per ONNX op, in modules by family; importing this package
registers them all (registry.py loads it on the first conversion).

    math        arithmetic, comparison, logic, bit ops, unary math, Clip, Cast, Where
    activation  Relu family, Gelu, Softplus, ..., Softmax, LogSoftmax, Hardmax
    nn          Conv, ConvTranspose, Gemm, MatMul, pooling, Dropout, LRN
    attention   Attention (one nn.attention)
    norm        batch / instance / layer / group / RMS / Lp / mean-variance norms
    reduce      Reduce*, ArgMax, ArgMin
    shape       Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
                Slice, Expand, Tile, Pad, Shape, Size, DepthToSpace, SpaceToDepth
    indexing    Gather*, Scatter*, OneHot, Compress, NonZero, TopK, CumSum, ...
    generator   Constant, ConstantOfShape, Range, EyeLike
    image       Resize, Upsample
    rnn         LSTM, GRU, RNN (unrolled)
    control     If, Scan, Loop (unrolled)
    sequence    Sequence*, SplitToSequence, ConcatFromSequence, SequenceMap (as tuples)
    training    Adagrad, Momentum, Adam (ai.onnx.preview.training)
    quantize    QuantizeLinear, DequantizeLinear, QLinear*, *Integer
    quantize_contrib  onnxruntime's QGemm, QLinearAdd, ... (com.microsoft)
    strings     StringConcat, RegexFullMatch, StringNormalizer, StringSplit
    ml          LabelEncoder, Binarizer, ArrayFeatureExtractor (ai.onnx.ml)
"""

from . import (activation, attention, control, generator, image, indexing, math, ml, nn, norm, quantize,  # noqa: F401
               quantize_contrib, reduce, rnn, sequence, shape, strings, training)
