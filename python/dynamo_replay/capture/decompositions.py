"""Decompositions capture adds to PyTorch's Core ATen table, for operators that real models'
graphs call and PyTorch has none for (in some release, or in any): fused attention's backward,
kthvalue, and the quantize and dequantize operators of PT2E quantization (quantized_decomposed,
which PyTorch defines in Python and never decomposes). Each is the operator's definition
written with Core ATen operators, so the decomposed graph computes the same values (not the
same bits where a fused kernel accumulates in another order)."""

from __future__ import annotations

import math
from typing import Any


def flash_attention_backward(
    grad_out: Any,
    query: Any,
    key: Any,
    value: Any,
    out: Any,
    logsumexp: Any,
    dropout_p: float,
    is_causal: bool,
    *,
    attn_mask: Any = None,
    scale: Any = None,
) -> Any:
    """The gradients of softmax(q k^T * scale + mask) v, from the forward's logsumexp:
    p = exp(s - lse), dv = p^T do, ds = p * (do v^T - rowsum(do * out)), dq = ds k * scale,
    dk = ds^T q * scale. Grouped-query attention (fewer key heads) sums each group's gradients."""
    import torch

    if dropout_p:
        return NotImplemented
    compute = torch.float32 if query.dtype in (torch.float16, torch.bfloat16) else query.dtype
    q, k, v, do, o = (t.to(compute) for t in (query, key, value, grad_out, out))
    groups = q.shape[1] // k.shape[1]
    if groups != 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    factor = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = torch.matmul(q, k.transpose(-2, -1)) * factor
    if is_causal:
        rows, cols = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(rows, cols, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    p = torch.exp(scores - logsumexp.to(compute).unsqueeze(-1))
    dv = torch.matmul(p.transpose(-2, -1), do)
    ds = p * (torch.matmul(do, v.transpose(-2, -1)) - (do * o).sum(-1, keepdim=True))
    dq = torch.matmul(ds, k) * factor
    dk = torch.matmul(ds.transpose(-2, -1), q) * factor
    if groups != 1:
        dk = dk.unflatten(1, (-1, groups)).sum(2)
        dv = dv.unflatten(1, (-1, groups)).sum(2)
    return dq.to(query.dtype), dk.to(key.dtype), dv.to(value.dtype)


def kthvalue(x: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The k-th smallest value along dim and its index: the k-th of a stable sort (NaN sorts
    last, as kthvalue counts it). The value is always PyTorch's; where it occurs more than once,
    the index may name another of its positions than the CPU kernel's selection does."""
    import torch

    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    values, indices = torch.sort(x, dim=dim, stable=True)
    value, index = values.narrow(dim, k - 1, 1), indices.narrow(dim, k - 1, 1)
    return (value, index) if keepdim else (value.squeeze(dim), index.squeeze(dim))


def _to_float32(x: Any) -> Any:
    import torch

    return x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x


def quantize_per_tensor(x: Any, scale: Any, zero_point: Any, quant_min: Any, quant_max: Any, dtype: Any) -> Any:
    """clamp(round(x / scale) + zero_point) as the quantized dtype, x divided by multiplying
    with 1 / scale as PyTorch's definition does (the same rounding). Scale and zero point are
    numbers or one-element tensors (the .tensor and .tensor2 overloads), the bounds numbers
    or tensors."""
    import torch

    shifted = torch.round(_to_float32(x) * (1.0 / scale)) + zero_point
    return torch.clamp(shifted, quant_min, quant_max).to(dtype)


def dequantize_per_tensor(
    x: Any, scale: Any, zero_point: Any, quant_min: Any, quant_max: Any, dtype: Any, *, out_dtype: Any = None
) -> Any:
    import torch

    out_dtype = out_dtype or torch.float32
    return (x.to(out_dtype) - zero_point) * scale


def _along(values: Any, axis: int, rank: int) -> Any:
    """A per-channel parameter shaped to broadcast along `axis` of a tensor of `rank` dims."""
    shape = [1] * rank
    shape[axis] = values.shape[0]
    return values.reshape(shape)


def quantize_per_channel(
    x: Any, scales: Any, zero_points: Any, axis: int, quant_min: int, quant_max: int, dtype: Any
) -> Any:
    import torch

    rank = x.dim()
    shifted = torch.round(_to_float32(x) * (1.0 / _along(scales, axis, rank))) + _along(zero_points, axis, rank)
    return torch.clamp(shifted, quant_min, quant_max).to(dtype)


def dequantize_per_channel(
    x: Any,
    scales: Any,
    zero_points: Any,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: Any,
    *,
    out_dtype: Any = None,
) -> Any:
    import torch

    rank = x.dim()
    shifted = x - _along(zero_points, axis, rank) if zero_points is not None else x
    return (shifted * _along(scales, axis, rank)).to(out_dtype or torch.float32)


_QUANTIZED = (
    ("quantize_per_tensor", ("default", "tensor", "tensor2"), quantize_per_tensor),
    ("dequantize_per_tensor", ("default", "tensor", "tensor2"), dequantize_per_tensor),
    ("quantize_per_channel", ("default",), quantize_per_channel),
    ("dequantize_per_channel", ("default",), dequantize_per_channel),
)


def extra_decompositions() -> dict[Any, Any]:
    from dynamo_replay._torch import graphs

    table = {
        graphs.aten_operator("_scaled_dot_product_flash_attention_for_cpu_backward"): flash_attention_backward,
        graphs.aten_operator("kthvalue"): kthvalue,
    }
    for name, overloads, decomposition in _QUANTIZED:  # defined once torch.ao's module is imported
        for overload in overloads:
            found = graphs.operator("quantized_decomposed", name, overload)
            if found is not None:
                table[found] = decomposition
    return table
