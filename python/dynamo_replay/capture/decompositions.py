"""Decompositions capture adds to PyTorch's Core ATen table, for operators that real models'
graphs call and PyTorch 2.13 has none for. Each is the operator's definition written with Core
ATen operators, so the decomposed graph computes the same values (not the same bits: the
fused kernels accumulate in another order)."""

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


def extra_decompositions() -> dict[Any, Any]:
    from dynamo_replay._torch import graphs

    return {graphs.aten_operator("_scaled_dot_product_flash_attention_for_cpu_backward"): flash_attention_backward}
