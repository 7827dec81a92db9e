// The arithmetic of the fused CPU training ops (trainer/fused_ops, trainer/cpu_attention) as plain loops over
// float arrays, without torch. Each kernel is compiled twice, for x86-64-v3 (AVX2 and FMA: eight floats per
// instruction) and for the x86-64 baseline (SSE2: four), and the dynamic loader picks the one the machine
// runs (GCC's target_clones, an ifunc), so one build is both portable and at the wider machines' speed. On
// other architectures, and under the sanitizers, each is compiled once.
//
// Row-wise kernels take a range [rowBegin, rowEnd) so that callers can split rows over threads.
#pragma once

#include <cstdint>

namespace sharelens::kernels {

// exp(x) for every element of x[0..n), in place: Cephes' range reduction and polynomial, written so that the
// compiler vectorises the loop (relative error below 2e-7 over the float range; 0 below -87 and at -inf;
// NaN stays NaN).
void expInPlace(float* x, int64_t n);

// RMSNorm of rows [rowBegin, rowEnd) of x [rows, d]: y = x r w with r = 1 / sqrt(mean(x^2) + eps), r kept
// in inv[row] for the backward.
void rmsNormRows(const float* x, const float* w, float* y, float* inv, int64_t rowBegin, int64_t rowEnd,
                 int64_t d, float eps);

// Its backward over rows [rowBegin, rowEnd), with u = gy w: gx = r u - x r^3 mean(u x); gw[i] += gy x r
// summed over those rows (gw: d floats, accumulated, not cleared).
void rmsNormBackwardRows(const float* x, const float* w, const float* inv, const float* gy, float* gx,
                         float* gw, int64_t rowBegin, int64_t rowEnd, int64_t d);

// Rotate-half RoPE of the (batch x time) token rows [rowBegin, rowEnd) of in [B, T, heads, hd] into out, by
// direction x the angle (+1 forward, -1 the backward's inverse rotation): per pair (i, i + hd/2) with
// c = cos[t][i], s = direction sin[t][i]: y_i = x_i c - x_{i+h} s, y_{i+h} = x_{i+h} c + x_i s.
// Token row r of in starts at in + r inStride and of out at out + r outStride (heads x hd when packed; more
// when the heads are a slice of a wider row, as Q and K are of the stacked QKV projection's).
void ropeRows(const float* in, int64_t inStride, const float* cos, const float* sin, float* out,
              int64_t outStride, int64_t rowBegin, int64_t rowEnd, int64_t time, int64_t heads, int64_t hd,
              float direction);

// SwiGLU's product y = u silu(g) = u g sigmoid(g) over n elements, and its backward: with s = sigmoid(g),
// gu = gy g s, gg = gy u s (1 + g (1 - s)).
void swigluForward(const float* g, const float* u, float* y, int64_t n);
void swigluBackward(const float* g, const float* u, const float* gy, float* gg, float* gu, int64_t n);

// -log softmax(x)[t] of one row x of `vocab` logits (0 <= t < vocab, the caller checks), in double; *lse
// gets the row's log-sum-exp. scratch: `vocab` floats.
double rowNll(const float* x, int64_t vocab, int64_t t, float* scratch, float* lse);

// The cross-entropy gradient of rows [rowBegin, rowEnd) of logits [rows, vocab]: g (exp(x - lse) - [j == t]).
void crossEntropyGradRows(const float* logits, const float* lse, const int64_t* targets, float g, float* gx,
                          int64_t rowBegin, int64_t rowEnd, int64_t vocab);

// Row i of scores [time, time] (already scaled) becomes softmax over keys 0..i; keys after i become 0.
void causalSoftmaxRows(float* scores, int64_t time);

// Attention's softmax backward in place, with P the causal probabilities [time, time] and dP [time, time]:
// dS_ij = P_ij (dP_ij - sum_k dP_ik P_ik) for j <= i, 0 after.
void causalSoftmaxBackwardRows(float* dp, const float* p, int64_t time);

// One AdamW update's scalars, in float.
struct AdamWScalars {
  float decay, oneMinusBeta1, beta2, oneMinusBeta2, biasCorrection2Sqrt, eps, negativeStepSize;
};

// AdamW's update of n parameters p with gradients g and moments m, v, in one pass, element by element in
// ATen's order of operations for the composite update: p *= decay; m = lerp(m, g, 1 - b1) (ATen: m + w (g -
// m) for w < 0.5, else g - (g - m)(1 - w)); v = v b2 + ((1 - b2) g) g (addcmul); p += ((-step) m) / (sqrt(v)
// / c2 + eps) (addcdiv).
void adamwUpdate(float* p, const float* g, float* m, float* v, int64_t n, const AdamWScalars& s);

}  // namespace sharelens::kernels
