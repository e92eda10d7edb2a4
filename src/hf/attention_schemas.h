// The schemas of libtorch's private attention operators that fused_attention.cc
// calls, as torch 2.11 declares them (ATen/ops/*_ops.h, `schema_str`; the torch
// version scripts/requirements.txt pins, the GPU image's). Private operators
// change without notice between releases (2.15 adds arguments to
// _flash_attention_forward), so the calls are compiled only when the headers
// declare exactly these (VarlenAttentionCompiled, transformer.h), and the golden
// test (attention_test.cc) fails when they do not, or when the libtorch loaded at
// run time registers another schema.
// Internal to src/hf; no includes beyond the standard library.
#pragma once

#include <string_view>

namespace tokenbatch::hf {

inline constexpr std::string_view kFlashAttentionForwardSchema =
    "_flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, Tensor? cum_seq_k, "
    "SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, bool return_debug_mask, *, float? scale=None, "
    "SymInt? window_size_left=None, SymInt? window_size_right=None, Tensor? seqused_k=None, "
    "Tensor? alibi_slopes=None) -> (Tensor output, Tensor softmax_logsumexp, Tensor rng_state, Tensor unused, "
    "Tensor debug_attn_mask)";

inline constexpr std::string_view kEfficientAttentionForwardSchema =
    "_efficient_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? bias, Tensor? cu_seqlens_q, "
    "Tensor? cu_seqlens_k, SymInt? max_seqlen_q, SymInt? max_seqlen_k, float dropout_p, int custom_mask_type, "
    "bool compute_log_sumexp=False, *, float? scale=None, Tensor? seqlen_k=None, int? window_size=None) -> "
    "(Tensor output, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, SymInt max_seqlen_batch_q, "
    "SymInt max_seqlen_batch_k)";

}  // namespace tokenbatch::hf
