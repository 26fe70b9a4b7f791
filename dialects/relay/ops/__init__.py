"""Relay operators, one module per family; importing this registers them all.

    elemwise   unary, binary broadcast, comparison, logical, where, clip, cast, activations
    nn         dense, matmul, contrib_dense_pack, batch_matmul, bias_add, softmax, dropout, pad, lrn, ...
    attention  nn.attention: softmax(scale q k^T + bias, masked) v in one op
    conv       conv1d, conv2d, conv3d, conv2d_transpose
    deformable_conv  nn.deformable_conv2d (ONNX DeformConv; with or without a mask)
    pool       max/avg pools, global and adaptive pools
    norm       batch_norm, layer_norm, group_norm, instance_norm
    reduce     sum, mean, max, min, prod, argmax, argmin, variance, std
    transform  reshape, transpose, concatenate, split, strided_slice, take, layout_transform, ...
    tensor     arange, zeros, ones, full, shape_of, ...
    dyn        dyn.reshape, dyn.topk, dyn.arange, dyn.slice, dyn.unique, dyn.non_max_suppression:
               output shapes from input values
    image      resize2d, upsampling
    image_decode  image.decode (ONNX ImageDecoder, through Pillow)
    grid_sample  image.grid_sample (ONNX GridSample)
    signal     dft (ONNX DFT)
    linalg     det, col2im (ONNX Det, Col2Im)
    pool_argmax  nn.max_pool_argmax (ONNX MaxPool's Indices)
    roi_align  vision.roi_align (ONNX RoiAlign)
    strings    strings.concat, regex_full_match, normalize, split: string tensors
    ml         ml.tfidf_vectorizer (ONNX ai.onnx.ml ops no other op composes)
    qnn        quantize, dequantize, requantize, qnn.conv2d, qnn.dense, ...
    control    tuples, projections, if / yield
    loop       counted loops: carried values, stacked per-step outputs
    closure    fn (closures), call of a function value, a global function as a value
    adt        algebraic data types: relay.adt, constructors, match
    ref        references (mutable cells): ref_create, ref_read, ref_write
    function   relay.func, call, return, constant
"""

from . import (base, function, control, loop, closure, adt, ref, elemwise, nn, attention, conv, pool, norm, reduce,  # noqa: F401
               transform, tensor, dyn, image, image_decode, grid_sample, signal, linalg, pool_argmax, roi_align, strings, ml, deformable_conv, qnn)
from .base import OpPattern, RelayOp  # noqa: F401
