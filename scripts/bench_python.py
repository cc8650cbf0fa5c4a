#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python baseline for BENCHMARKS.md: the same forwards written the way the course material
writes them, on Debian's python3-torch (the same LibTorch as ours), with the same thread count.

  /usr/bin/python3 scripts/bench_python.py --threads 1 --out build-bench/python.json

Names match attnscope-bench's ("BM_ToyFused/T:128/H:8"), times are milliseconds per forward.
"""
import argparse
import json
import math
import re
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- The chapter: one Head module per head, concatenated, then a projection. -------------------
class Head(nn.Module):
    def __init__(self, input_dim, head_size, causal=False, block_size=0):
        super().__init__()
        self.key = nn.Linear(input_dim, head_size, bias=False)
        self.query = nn.Linear(input_dim, head_size, bias=False)
        self.value = nn.Linear(input_dim, head_size, bias=False)
        self.causal = causal
        if causal:
            self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        if self.causal:
            wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        v = self.value(x)
        return wei @ v, wei


class MultiHeadAttention(nn.Module):
    def __init__(self, input_dim, d_model, num_heads, causal=False, block_size=0):
        super().__init__()
        hs = d_model // num_heads
        self.heads = nn.ModuleList([Head(input_dim, hs, causal, block_size) for _ in range(num_heads)])
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        outs = [h(x) for h in self.heads]
        out = torch.cat([o for o, _ in outs], dim=-1)
        return self.proj(out), torch.stack([w for _, w in outs], dim=1)  # weights [B, H, T, T]


# --- The tutorial: one fused qkv layer. ------------------------------------------------------------
def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    scaled = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        scaled += mask
    attention = F.softmax(scaled, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


class FusedMultiheadAttention(nn.Module):
    def __init__(self, input_dim, d_model, num_heads):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_layer = nn.Linear(input_dim, 3 * d_model)
        self.linear_layer = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        batch_size, sequence_length, input_dim = x.size()
        qkv = self.qkv_layer(x)
        qkv = qkv.reshape(batch_size, sequence_length, self.num_heads, 3 * self.head_dim)
        qkv = qkv.permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        values, attention = scaled_dot_product(q, k, v, mask)
        values = values.permute(0, 2, 1, 3).reshape(batch_size, sequence_length, self.num_heads * self.head_dim)
        out = self.linear_layer(values)
        return out, attention


# --- The chapter's tiny GPT. -----------------------------------------------------------------------
class FeedForward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.sa = MultiHeadAttention(n_embd, n_embd, n_head, causal=True, block_size=block_size)
        self.ffwd = FeedForward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        a, wei = self.sa(self.ln1(x))
        x = x + a
        x = x + self.ffwd(self.ln2(x))
        return x, wei


class TinyGpt(nn.Module):
    def __init__(self, vocab_size, n_embd=64, n_head=4, n_layer=4, block_size=128):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        B, T = idx.shape
        x = self.token_embedding_table(idx) + self.position_embedding_table(torch.arange(T))
        weights = []
        for block in self.blocks:
            x, wei = block(x)
            weights.append(wei)
        logits = self.lm_head(self.ln_f(x))
        return logits, torch.stack(weights)


# --- GPT-2 small, Hugging Face layout (Conv1D), keeping every head's weights. ----------------------
class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.size(-1),)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)


class Gpt2Attention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(n_positions, n_positions, dtype=torch.bool)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        split = lambda t: t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        w = torch.where(self.bias[:T, :T], w, torch.tensor(torch.finfo(w.dtype).min))
        w = F.softmax(w, dim=-1)
        a = torch.matmul(w, v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(a), w


class Gpt2Block(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = Gpt2Attention(n_embd, n_head, n_positions)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = Conv1D(4 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, 4 * n_embd)

    def forward(self, x):
        a, w = self.attn(self.ln_1(x))
        x = x + a
        h = self.c_fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.c_proj(h), w


class Gpt2(nn.Module):
    def __init__(self, n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList([Gpt2Block(n_embd, n_head, n_positions) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(T))
        attentions = []
        for block in self.h:
            x, w = block(x)
            attentions.append(w)
        x = self.ln_f(x)
        # Next-token logits for the last position only, as attnscope computes them (HF's model
        # computes all T positions; that would add 2·T·768·50257 FLOPs that neither tool shows).
        logits = x[:, -1] @ self.wte.weight.t()
        return logits, torch.stack(attentions)  # [L, B, H, T, T]


# --- SmolLM-135M shapes, written like transformers' modeling_llama.py (eager attention, ---------
# output_attentions=True: every layer's weights kept).
class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.head_dim = hidden // heads
        self.num_key_value_groups = heads // kv_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights


class LlamaMLP(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden, inner, heads, kv_heads):
        super().__init__()
        self.self_attn = LlamaAttention(hidden, heads, kv_heads)
        self.mlp = LlamaMLP(hidden, inner)
        self.input_layernorm = LlamaRMSNorm(hidden)
        self.post_attention_layernorm = LlamaRMSNorm(hidden)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, weights = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states, weights


class SmolLm(nn.Module):
    def __init__(self, layers=30, hidden=576, inner=1536, heads=9, kv_heads=3, vocab=259):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([LlamaDecoderLayer(hidden, inner, heads, kv_heads) for _ in range(layers)])
        self.norm = LlamaRMSNorm(hidden)
        self.rotary_emb = LlamaRotaryEmbedding(hidden // heads)

    def forward(self, ids):
        T = ids.shape[1]
        hidden_states = self.embed_tokens(ids)
        position_ids = torch.arange(T)[None]
        mask = torch.full((T, T), torch.finfo(torch.float32).min).triu(1)[None, None]
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        attentions = []
        for layer in self.layers:
            hidden_states, w = layer(hidden_states, mask, position_embeddings)
            attentions.append(w)
        hidden_states = self.norm(hidden_states)
        logits = hidden_states[:, -1] @ self.embed_tokens.weight.t()  # the last position, as attnscope
        return logits, torch.stack(attentions)  # [L, B, H, T, T]


# --- bert-base shapes, written like transformers' modeling_bert.py (eager BertSelfAttention, ---
# output_attentions=True: every layer's weights kept; BertModel without a head).
class BertEmbeddings(nn.Module):
    def __init__(self, vocab, hidden, positions, eps=1e-12):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(positions, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, ids):
        T = ids.shape[1]
        position_ids = torch.arange(T)[None]
        token_type_ids = torch.zeros_like(ids)
        x = self.word_embeddings(ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (-1,))
        return context_layer, attention_probs


class BertLayer(nn.Module):
    def __init__(self, hidden, inner, heads, eps=1e-12):
        super().__init__()
        self.self = BertSelfAttention(hidden, heads)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, inner)
        self.output = nn.Linear(inner, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, hidden_states, attention_mask):
        context, probs = self.self(hidden_states, attention_mask)
        attention_output = self.attention_norm(self.attention_output(context) + hidden_states)
        intermediate = F.gelu(self.intermediate(attention_output))
        return self.output_norm(self.output(intermediate) + attention_output), probs


class BertBase(nn.Module):
    def __init__(self, layers=12, hidden=768, inner=3072, heads=12, vocab=31, positions=512):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, hidden, positions)
        self.layer = nn.ModuleList([BertLayer(hidden, inner, heads) for _ in range(layers)])

    def forward(self, ids):
        hidden_states = self.embeddings(ids)
        # get_extended_attention_mask of an all-ones mask: (1 - mask) * finfo.min = 0 everywhere.
        attention_mask = torch.zeros(ids.shape[0], 1, 1, ids.shape[1])
        attentions = []
        for layer in self.layer:
            hidden_states, probs = layer(hidden_states, attention_mask)
            attentions.append(probs)
        return hidden_states, torch.stack(attentions)  # [L, B, H, T, T]


# --- t5-small shapes, written like transformers' modeling_t5.py (eager T5Attention with the ---
# relative position bias of block 0 reused by the later blocks, output_attentions=True: every
# encoder, decoder and cross-attention weight kept; the tied head for the last position only).
class T5LayerNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


class T5Attention(nn.Module):
    def __init__(self, d_model, d_kv, heads, is_decoder, has_relative_attention_bias, buckets=32, max_distance=128):
        super().__init__()
        self.is_decoder, self.n_heads, self.key_value_proj_dim = is_decoder, heads, d_kv
        self.buckets, self.max_distance = buckets, max_distance
        inner = heads * d_kv
        self.q, self.k = nn.Linear(d_model, inner, bias=False), nn.Linear(d_model, inner, bias=False)
        self.v, self.o = nn.Linear(d_model, inner, bias=False), nn.Linear(inner, d_model, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(buckets, heads)

    def _relative_position_bucket(self, relative_position, bidirectional):
        num_buckets, relative_buckets = self.buckets, 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(self.max_distance / max_exact)
                             * (num_buckets - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return relative_buckets + torch.where(is_small, relative_position, large)

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        bucket = self._relative_position_bucket(memory_position - context_position, not self.is_decoder)
        return self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask, key_value_states=None, position_bias=None):
        B, T = hidden_states.shape[:2]
        shape = lambda s: s.view(B, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        source = hidden_states if key_value_states is None else key_value_states
        query_states, key_states, value_states = shape(self.q(hidden_states)), shape(self.k(source)), shape(self.v(source))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            if hasattr(self, "relative_attention_bias"):
                position_bias = self.compute_bias(T, key_states.shape[2])
            else:
                position_bias = torch.zeros((1, self.n_heads, T, key_states.shape[2]))
            position_bias = position_bias + mask
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous().view(B, T, -1)
        return self.o(attn_output), position_bias, attn_weights


class T5Block(nn.Module):
    def __init__(self, d_model, d_kv, d_ff, heads, is_decoder, first):
        super().__init__()
        self.is_decoder = is_decoder
        self.self_norm = T5LayerNorm(d_model)
        self.SelfAttention = T5Attention(d_model, d_kv, heads, is_decoder, first)
        if is_decoder:
            self.cross_norm = T5LayerNorm(d_model)
            self.EncDecAttention = T5Attention(d_model, d_kv, heads, True, False)
        self.ff_norm = T5LayerNorm(d_model)
        self.wi, self.wo = nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_ff, d_model, bias=False)

    def forward(self, h, mask, bias, encoder_hidden_states=None, encoder_mask=None, cross_bias=None):
        out, bias, a = self.SelfAttention(self.self_norm(h), mask, position_bias=bias)
        h = h + out
        c = None
        if self.is_decoder:
            out, cross_bias, c = self.EncDecAttention(self.cross_norm(h), encoder_mask, encoder_hidden_states, cross_bias)
            h = h + out
        h = h + self.wo(F.relu(self.wi(self.ff_norm(h))))
        return h, bias, a, cross_bias, c


class T5Small(nn.Module):
    def __init__(self, layers=6, d_model=512, d_kv=64, d_ff=2048, heads=8, vocab=32128):
        super().__init__()
        self.shared = nn.Embedding(vocab, d_model)
        self.encoder = nn.ModuleList([T5Block(d_model, d_kv, d_ff, heads, False, i == 0) for i in range(layers)])
        self.decoder = nn.ModuleList([T5Block(d_model, d_kv, d_ff, heads, True, i == 0) for i in range(layers)])
        self.encoder_norm, self.decoder_norm = T5LayerNorm(d_model), T5LayerNorm(d_model)
        self.d_model = d_model

    def forward(self, ids, decoder_ids):
        T, Tt = ids.shape[1], decoder_ids.shape[1]
        h = self.shared(ids)
        mask, bias, enc = torch.zeros(1, 1, 1, T), None, []
        for block in self.encoder:
            h, bias, a, _, _ = block(h, mask, bias)
            enc.append(a)
        memory = self.encoder_norm(h)
        causal = torch.full((Tt, Tt), torch.finfo(torch.float32).min).triu(1)[None, None]
        h, bias, cross_bias, dec, cross = self.shared(decoder_ids), None, None, [], []
        for block in self.decoder:
            h, bias, a, cross_bias, c = block(h, causal, bias, memory, mask, cross_bias)
            dec.append(a)
            cross.append(c)
        hidden = self.decoder_norm(h)
        logits = (hidden[:, -1] * self.d_model ** -0.5) @ self.shared.weight.t()
        return logits, torch.stack(enc), torch.stack(dec), torch.stack(cross)


# --- One generation step through a key/value cache (BM_*GenerationStep), written from the ------
# architectures above with their modules' weights: keys and values preallocated per layer and
# written one position per step (attnscope's LayerKvCache); SmolLM caches its 3 key/value heads and
# repeats them per step, as transformers' cache does. The step keeps its query's attention row.
def gpt2_step(m, ids, start, cache):
    """ids [1, n] at positions start..; cache: per layer (K, V) [1, H, capacity, hd]. -> logits of
    the last position, its attention rows [L, 1, H, T]."""
    n = ids.shape[1]
    T = start + n
    x = m.wte(ids) + m.wpe(torch.arange(start, T))
    C = x.shape[-1]
    rows = []
    for (K, V), b in zip(cache, m.h):
        a = b.attn
        H = a.n_head
        split = lambda t: t.view(1, n, H, C // H).transpose(1, 2)
        q, k, v = a.c_attn(b.ln_1(x)).split(C, dim=2)
        K[:, :, start:T], V[:, :, start:T] = split(k), split(v)
        w = torch.matmul(split(q), K[:, :, :T].transpose(-1, -2)) / math.sqrt(C // H)
        if n > 1:
            w = torch.where(torch.ones(n, T, dtype=torch.bool).tril(start), w, torch.tensor(torch.finfo(w.dtype).min))
        w = F.softmax(w, dim=-1)
        rows.append(w[:, :, -1])
        x = x + a.c_proj(torch.matmul(w, V[:, :, :T]).transpose(1, 2).reshape(1, n, C))
        h = b.c_fc(b.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        x = x + b.c_proj(h)
    return m.ln_f(x)[:, -1] @ m.wte.weight.t(), torch.stack(rows)


def smollm_step(m, ids, start, cache):
    """As gpt2_step for SmolLm: cache per layer (K, V) [1, kv heads, capacity, hd]."""
    n = ids.shape[1]
    T = start + n
    x = m.embed_tokens(ids)
    cos, sin = m.rotary_emb(x, torch.arange(start, T)[None])
    mask = torch.full((n, T), torch.finfo(torch.float32).min).triu(start + 1)[None, None]
    rows = []
    for (K, V), layer in zip(cache, m.layers):
        a = layer.self_attn
        h = layer.input_layernorm(x)
        shape = (1, n, -1, a.head_dim)
        q = a.q_proj(h).view(shape).transpose(1, 2)
        k = a.k_proj(h).view(shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        K[:, :, start:T], V[:, :, start:T] = k, a.v_proj(h).view(shape).transpose(1, 2)
        keys = repeat_kv(K[:, :, :T], a.num_key_value_groups)
        values = repeat_kv(V[:, :, :T], a.num_key_value_groups)
        w = F.softmax(torch.matmul(q, keys.transpose(2, 3)) * a.scaling + mask, dim=-1)
        rows.append(w[:, :, -1])
        x = x + a.o_proj(torch.matmul(w, values).transpose(1, 2).reshape(1, n, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return m.norm(x)[:, -1] @ m.embed_tokens.weight.t(), torch.stack(rows)


def generation_step(step, m, cache_heads, head_dim, layers, T):
    """The step that writes token T (its query over T - 1 keys), after a prompt of T - 2 tokens
    run through the cache once (untimed); each call rewrites position T - 2, so the cost repeats."""
    with torch.inference_mode():
        cache = [(torch.empty(1, cache_heads, T, head_dim), torch.empty(1, cache_heads, T, head_dim))
                 for _ in range(layers)]
        prompt = torch.randint(0, 259, (1, T - 2))
        logits, _ = step(m, prompt, 0, cache)
        nxt = logits.argmax(-1).view(1, 1)
    return lambda: step(m, nxt, T - 2, cache)


# --- Gemma 2 and Mixtral from the bench's BF16 folders (bench_support.cpp), written like -----------
# transformers' modeling_gemma2.py and modeling_mixtral.py (eager attention, output_attentions=True:
# every layer's weights kept), on the folder's weights widened to float32 once at load.
def load_bf16_folder(folder):
    """config.json and every tensor of model.safetensors as float32, read one tensor at a time."""
    import os
    import struct

    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    weights = {}
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            if info["dtype"] != "BF16":
                raise ValueError(f"{name}: {info['dtype']}, expected BF16")
            a, b = info["data_offsets"]
            f.seek(8 + n + a)
            raw = bytearray(b - a)
            f.readinto(raw)
            weights[name] = torch.frombuffer(raw, dtype=torch.bfloat16).view(info["shape"]).float()
    return cfg, weights


class LoadedLinear(nn.Module):
    """nn.Linear without bias around a loaded weight (no random init to overwrite)."""

    def __init__(self, weight):
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)

    def forward(self, x):
        return F.linear(x, self.weight)


class Gemma2RMSNorm(nn.Module):
    def __init__(self, weight, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(weight, requires_grad=False)

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())  # Gemma: (1 + w)
        return output.type_as(x)


class Gemma2Attention(nn.Module):
    def __init__(self, w, p, cfg, layer_idx):
        super().__init__()
        self.head_dim = cfg["head_dim"]
        self.num_key_value_groups = cfg["num_attention_heads"] // cfg["num_key_value_heads"]
        self.scaling = cfg["query_pre_attn_scalar"] ** -0.5
        self.attn_logit_softcapping = cfg["attn_logit_softcapping"]
        self.sliding_window = cfg["sliding_window"] if not layer_idx % 2 else None
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            LoadedLinear(w[f"{p}self_attn.{n}_proj.weight"]) for n in "qkvo")

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        if self.attn_logit_softcapping is not None:
            attn_weights = attn_weights / self.attn_logit_softcapping
            attn_weights = torch.tanh(attn_weights)
            attn_weights = attn_weights * self.attn_logit_softcapping
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights


class Gemma2MLP(nn.Module):
    def __init__(self, w, p):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = (
            LoadedLinear(w[f"{p}mlp.{n}_proj.weight"]) for n in ("gate", "up", "down"))

    def forward(self, x):  # hidden_activation gelu_pytorch_tanh
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class Gemma2DecoderLayer(nn.Module):
    def __init__(self, w, p, cfg, layer_idx):
        super().__init__()
        self.is_sliding = not bool(layer_idx % 2)
        self.self_attn = Gemma2Attention(w, p, cfg, layer_idx)
        self.mlp = Gemma2MLP(w, p)
        norm = lambda n: Gemma2RMSNorm(w[f"{p}{n}.weight"], cfg["rms_norm_eps"])
        self.input_layernorm = norm("input_layernorm")
        self.post_attention_layernorm = norm("post_attention_layernorm")
        self.pre_feedforward_layernorm = norm("pre_feedforward_layernorm")
        self.post_feedforward_layernorm = norm("post_feedforward_layernorm")

    def forward(self, hidden_states, position_embeddings, causal_mask, sliding_mask):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, weights = self.self_attn(hidden_states, position_embeddings,
                                                sliding_mask if self.is_sliding else causal_mask)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        return residual + hidden_states, weights


class Gemma2(nn.Module):
    def __init__(self, folder):
        super().__init__()
        cfg, w = load_bf16_folder(folder)
        self.config = cfg
        self.embed_tokens = nn.Embedding.from_pretrained(w["model.embed_tokens.weight"])  # tied head
        self.layers = nn.ModuleList([Gemma2DecoderLayer(w, f"model.layers.{i}.", cfg, i)
                                     for i in range(cfg["num_hidden_layers"])])
        self.norm = Gemma2RMSNorm(w["model.norm.weight"], cfg["rms_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(cfg["head_dim"], cfg["rope_theta"])
        self.final_logit_softcapping = cfg["final_logit_softcapping"]

    def forward(self, ids):
        T = ids.shape[1]
        hidden_states = self.embed_tokens(ids)
        normalizer = torch.tensor(self.config["hidden_size"] ** 0.5, dtype=hidden_states.dtype)
        hidden_states = hidden_states * normalizer
        position_ids = torch.arange(T)[None]
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        lowest = torch.finfo(torch.float32).min
        causal = torch.zeros(T, T).masked_fill(j > i, lowest)[None, None]
        sliding = causal.masked_fill(i - j >= self.config["sliding_window"], lowest)
        attentions = []
        for layer in self.layers:
            hidden_states, w = layer(hidden_states, position_embeddings, causal, sliding)
            attentions.append(w)
        hidden_states = self.norm(hidden_states)
        logits = hidden_states[:, -1] @ self.embed_tokens.weight.t()  # the last position, as attnscope
        logits = torch.tanh(logits / self.final_logit_softcapping) * self.final_logit_softcapping
        return logits, torch.stack(attentions)  # [L, B, H, T, T]


class MixtralAttention(LlamaAttention):
    """LlamaAttention's forward (Mixtral's attention is Mistral's, without a sliding window here)
    on loaded weights."""

    def __init__(self, w, p, heads, kv_heads):
        nn.Module.__init__(self)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            LoadedLinear(w[f"{p}self_attn.{n}_proj.weight"]) for n in "qkvo")
        self.head_dim = self.q_proj.weight.shape[0] // heads
        self.num_key_value_groups = heads // kv_heads
        self.scaling = self.head_dim ** -0.5


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, w, p):
        super().__init__()
        self.w1, self.w2, self.w3 = (LoadedLinear(w[f"{p}{n}.weight"]) for n in ("w1", "w2", "w3"))

    def forward(self, hidden_states):
        return self.w2(F.silu(self.w1(hidden_states)) * self.w3(hidden_states))


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, w, p, num_experts, top_k):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = LoadedLinear(w[p + "gate.weight"])
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(w, f"{p}experts.{e}.")
                                      for e in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)  # top-2 renormalised
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.shape[0] == 0:
                continue
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = self.experts[expert_idx](current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim), router_logits


class MixtralDecoderLayer(nn.Module):
    def __init__(self, w, p, cfg):
        super().__init__()
        self.self_attn = MixtralAttention(w, p, cfg["num_attention_heads"], cfg["num_key_value_heads"])
        self.block_sparse_moe = MixtralSparseMoeBlock(w, p + "block_sparse_moe.", cfg["num_local_experts"],
                                                      cfg["num_experts_per_tok"])
        self.input_layernorm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.input_layernorm.weight = nn.Parameter(w[p + "input_layernorm.weight"], requires_grad=False)
        self.post_attention_layernorm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm.weight = nn.Parameter(w[p + "post_attention_layernorm.weight"],
                                                            requires_grad=False)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, weights = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states, _ = self.block_sparse_moe(hidden_states)
        return residual + hidden_states, weights


class Mixtral(nn.Module):
    def __init__(self, folder):
        super().__init__()
        cfg, w = load_bf16_folder(folder)
        self.embed_tokens = nn.Embedding.from_pretrained(w["model.embed_tokens.weight"])
        self.layers = nn.ModuleList([MixtralDecoderLayer(w, f"model.layers.{i}.", cfg)
                                     for i in range(cfg["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.norm.weight = nn.Parameter(w["model.norm.weight"], requires_grad=False)
        self.lm_head = LoadedLinear(w["lm_head.weight"])
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        self.rotary_emb = LlamaRotaryEmbedding(head_dim, cfg["rope_theta"])

    def forward(self, ids):
        T = ids.shape[1]
        hidden_states = self.embed_tokens(ids)
        position_ids = torch.arange(T)[None]
        mask = torch.full((T, T), torch.finfo(torch.float32).min).triu(1)[None, None]
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        attentions = []
        for layer in self.layers:
            hidden_states, w = layer(hidden_states, mask, position_embeddings)
            attentions.append(w)
        hidden_states = self.norm(hidden_states)
        logits = self.lm_head(hidden_states[:, -1])  # the last position, as attnscope
        return logits, torch.stack(attentions)  # [L, B, H, T, T]


def timed(fn, min_time):
    """Mean wall and CPU milliseconds per call, over at least min_time seconds and one call."""
    n, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed * 1000.0 / n, (time.process_time() - cpu) * 1000.0 / n, n

def gpt2_process(folder, text):
    """The whole-process baseline of BENCHMARKS.md: a short script that shows GPT-2's attention,
    timed from the interpreter's start to its exit against `attnscope-cli run` on the same folder
    and text. It maps model.safetensors (no copy, as attnscope does), runs the forward of the
    Gpt2 module above written out with torch.nn.functional, keeps every layer's [B, H, T, T]
    weights as Hugging Face's output_attentions does (one tensor per layer, not stacked) and
    prints the top-5 next tokens. The bench text's letters are one token each in the bench
    folder's vocab.json (no merge applies), so tokenising is a lookup."""
    import mmap
    import os
    import struct

    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(folder, "vocab.json")) as f:
        vocab = json.load(f)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)  # private: writable, not copied
    n = struct.unpack("<Q", mm[:8])[0]
    header, base = json.loads(mm[8:8 + n]), 8 + n

    def w(name):
        info = header.get(name) or header["transformer." + name]
        a, b = info["data_offsets"]
        return torch.frombuffer(mm, dtype=torch.float32, offset=base + a, count=(b - a) // 4).view(info["shape"])

    ids = torch.tensor([[vocab[c] for c in text]])
    T, C, H, eps = ids.shape[1], cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    ln = lambda x, p: F.layer_norm(x, (C,), w(p + ".weight"), w(p + ".bias"), eps)
    conv = lambda x, p: torch.addmm(w(p + ".bias"), x.view(-1, x.size(-1)), w(p + ".weight")).view(1, T, -1)
    split = lambda t: t.view(1, T, H, C // H).transpose(1, 2)
    x = F.embedding(ids, w("wte.weight")) + w("wpe.weight")[:T]
    attentions = []
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        q, k, v = conv(ln(x, p + "ln_1"), p + "attn.c_attn").split(C, dim=2)
        q, k, v = split(q), split(k), split(v)
        a = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // H)
        a = F.softmax(torch.where(causal, a, torch.tensor(torch.finfo(a.dtype).min)), dim=-1)
        attentions.append(a)
        x = x + conv(torch.matmul(a, v).transpose(1, 2).reshape(1, T, C), p + "attn.c_proj")
        h = F.gelu(conv(ln(x, p + "ln_2"), p + "mlp.c_fc"), approximate="tanh")
        x = x + conv(h, p + "mlp.c_proj")
    logits = ln(x, "ln_f")[:, -1] @ w("wte.weight").t()
    top = torch.softmax(logits[0], -1).topk(5)
    print(f"attention of {len(attentions)} layers, {list(attentions[0].shape)} each; next token:",
          [(int(i), round(float(p), 3)) for p, i in zip(top.values, top.indices)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--filter", default="", help="only benchmarks whose name contains this")
    ap.add_argument("--match", default="", help="only benchmarks whose name matches this regex")
    ap.add_argument("--gpt2-process", nargs=2, metavar=("FOLDER", "TEXT_FILE"),
                    help="run the whole-process GPT-2 script once instead (timed from outside)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.gpt2_process:
        with open(args.gpt2_process[1]) as f:
            text = f.read()
        with torch.inference_mode():
            gpt2_process(args.gpt2_process[0], text)
        return
    if not args.out:
        ap.error("--out is required")
    torch.manual_seed(0)
    results = {}

    def record(name, fn, min_time, warm_up=True):
        if args.filter and args.filter not in name:
            return
        if args.match and not re.search(args.match, name):
            return
        with torch.inference_mode():
            if warm_up:
                fn()  # untimed, as attnscope-bench warms each forward up once: both measure a repeat
            ms, cpu_ms, n = timed(fn, min_time)
        results[name] = {"ms": ms, "cpu_ms": cpu_ms, "iterations": n}
        print(f"{name:45s} {ms:10.3f} ms wall {cpu_ms:10.3f} ms CPU ({n} iterations)", flush=True)

    def toy(name, module, B, T, input_dim, min_time):
        # A fresh X ~ N(0, 1) per forward, as the tutorial's cell does and as attnscope's
        # Model::run(RandomInput) does: both sides pay for the same random numbers.
        module.eval()
        g = torch.Generator().manual_seed(1)
        record(name, lambda: module(torch.randn(B, T, input_dim, generator=g)), min_time)

    for T in (16, 128, 512, 1024, 4096):
        for H in (4, 8, 12):
            C = 64 * H
            toy(f"BM_ToyFused/T:{T}/H:{H}", FusedMultiheadAttention(C, C, H), 1, T, C, 0.3)
            toy(f"BM_ToyPerHead/T:{T}/H:{H}", MultiHeadAttention(C, C, H), 1, T, C, 0.3)
    toy("BM_ToyTutorialFused", FusedMultiheadAttention(1024, 512, 8), 30, 5, 1024, 0.5)
    toy("BM_ToyTutorialPerHead", MultiHeadAttention(1024, 512, 8), 30, 5, 1024, 0.5)

    tiny = TinyGpt(26).eval()
    idx = torch.randint(0, 26, (1, 128))
    record("BM_TinyGptForward", lambda: tiny(idx), 0.5)

    def builds(name):
        """Whether a model's benchmark (name up to its first '/') is wanted: its module is only
        built then (GPT-2's or SmolLM's random init takes seconds)."""
        return ((not args.filter or name in args.filter) and
                (not args.match or re.search(args.match, f"BM_{name}Forward/")))

    gpt2 = Gpt2().eval() if builds("Gpt2") else None
    for T in (128, 1000, 1024) if gpt2 is not None else ():
        ids = torch.randint(0, 259, (1, T))
        record(f"BM_Gpt2Forward/T:{T}/scores:0", lambda: gpt2(ids), 0.5)

    # One cached generation step at T = 1024 (generation_bench.cpp).
    name = "BM_Gpt2GenerationStep/T:1024"
    if (not args.filter or args.filter in name) and (not args.match or re.search(args.match, name)):
        model = gpt2 if gpt2 is not None else Gpt2().eval()
        record(name, generation_step(gpt2_step, model, 12, 64, 12, 1024), 0.5)
    name = "BM_SmolLmGenerationStep/T:1024"
    if (not args.filter or args.filter in name) and (not args.match or re.search(args.match, name)):
        record(name, generation_step(smollm_step, SmolLm().eval(), 3, 64, 30, 1024), 0.5)

    smollm = SmolLm().eval() if builds("SmolLm") else None
    if smollm is not None:
        ids = torch.randint(0, 259, (1, 1024))
        record("BM_SmolLmForward/T:1024/scores:0", lambda: smollm(ids), 0.5)

    bert = BertBase().eval() if builds("BertBase") else None
    if bert is not None:
        ids = torch.randint(5, 31, (1, 512))
        record("BM_BertBaseForward/T:512/scores:0", lambda: bert(ids), 0.5)

    t5 = T5Small().eval() if builds("T5Small") else None
    if t5 is not None:
        ids, decoder_ids = torch.randint(3, 800, (1, 64)), torch.randint(3, 800, (1, 64))
        record("BM_T5SmallForward/T:64/scores:0", lambda: t5(ids, decoder_ids), 0.5)

    def checked_folder_row(name, module, folder, stem, T, tolerance=1e-3):
        """A forward of a bench BF16 folder (bench_support.cpp), timed only once its last layer's
        attention agrees with what attnscope-bench wrote in its warm run (core_bench.cpp
        writeLastLayer: the token ids and [heads, T, T]) within `tolerance` (max absolute
        difference); that checking forward is the untimed warm-up. Records the difference, the
        load time and the process's peak RSS so far (ru_maxrss)."""
        import os
        import resource
        import tempfile

        if not builds(module.__name__):
            return
        scratch = os.path.join(tempfile.gettempdir(), "attnscope-bench")
        ref = os.path.join(scratch, f"{stem}-T{T}")
        if not os.path.exists(ref + ".json") or not os.path.isdir(os.path.join(scratch, folder)):
            results[name] = {"error": f"no {ref}.json or {folder}: attnscope-bench writes them"}
            print(f"!! {name}: {results[name]['error']}", flush=True)
            return
        with open(ref + ".json") as f:
            meta = json.load(f)
        with open(ref + ".attention.f32", "rb") as f:
            ours = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).view(meta["heads"], T, T)
        start = time.perf_counter()
        model = module(os.path.join(scratch, folder)).eval()
        load_s = time.perf_counter() - start
        ids = torch.tensor([meta["ids"]])
        with torch.inference_mode():
            _, attentions = model(ids)
        diff = (attentions[meta["layer"], 0] - ours).abs().max().item()
        del attentions
        check = {"max_abs_diff": diff, "tolerance": tolerance, "load_s": load_s}
        if not diff <= tolerance:
            results[name] = dict(check, error=f"layer {meta['layer']}'s attention differs from attnscope's by "
                                              f"{diff:.2e} (> {tolerance:g}): not timed")
            print(f"!! {name}: {results[name]['error']}", flush=True)
            return
        record(name, lambda: model(ids), 0.5, warm_up=False)
        if name in results:
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            results[name].update(check, rss_peak=rss)
            print(f"{'':45s} last layer's attention within {diff:.1e} of attnscope's; peak RSS "
                  f"{rss / 2 ** 30:.2f} GiB; load {load_s:.1f} s", flush=True)

    # The smaller first: each row's rss_peak is the process's peak so far.
    checked_folder_row("BM_MixtralForward/T:512/scores:0", Mixtral, "mixtral-4l-8x2048-bf16-random",
                       "mixtral-4l", 512)
    checked_folder_row("BM_Gemma2Forward/T:512/scores:0", Gemma2, "gemma2-2b-bf16-random", "gemma2-2b", 512)

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    record("BM_TorchMm/2048", lambda: torch.mm(a, b), 1.0)
    results["__context__"] = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
