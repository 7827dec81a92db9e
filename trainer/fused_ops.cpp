#include "trainer/fused_ops.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace sharelens {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool fusable(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

// ---- RMSNorm ----------------------------------------------------------------------------------------------
// y = x r w with r = 1 / sqrt(mean(x^2) + eps) per row. Backward, with u = gy w:
//   gx = r u - x r^3 mean(u x),   gw = sum_rows gy x r.

struct RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               double eps) {
    const int64_t d = x.size(-1), rows = x.numel() / d;
    torch::Tensor y = at::empty_like(x), inv = at::empty({rows}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* rp = inv.data_ptr<float>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float* xr = xp + row * d;
        float* yr = yp + row * d;
        float sum = 0;
        for (int64_t i = 0; i < d; ++i) sum += xr[i] * xr[i];
        const float r = 1.0f / std::sqrt(sum / static_cast<float>(d) + static_cast<float>(eps));
        rp[row] = r;
        for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * r * wp[i];
      }
    });
    ctx->save_for_backward({x, weight, inv});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1], &inv = saved[2];
    const torch::Tensor gy = grads[0].contiguous();
    const int64_t d = x.size(-1), rows = x.numel() / d;
    torch::Tensor gx = at::empty_like(x);
    // gw is a sum over rows: each chunk of rows accumulates its own partial sum, added up at the end.
    const int64_t chunk = 256, chunks = (rows + chunk - 1) / chunk;
    std::vector<float> partial(static_cast<size_t>(chunks * d), 0.0f);
    const float *xp = x.data_ptr<float>(), *wp = weight.data_ptr<float>(), *rp = inv.data_ptr<float>(),
                *gp = gy.data_ptr<float>();
    float* gxp = gx.data_ptr<float>();
    at::parallel_for(0, chunks, 1, [&](int64_t cBegin, int64_t cEnd) {
      for (int64_t c = cBegin; c < cEnd; ++c) {
        float* gw = partial.data() + c * d;
        for (int64_t row = c * chunk; row < std::min(rows, (c + 1) * chunk); ++row) {
          const float *xr = xp + row * d, *gr = gp + row * d;
          float* gxr = gxp + row * d;
          const float r = rp[row];
          float dot = 0;
          for (int64_t i = 0; i < d; ++i) dot += gr[i] * wp[i] * xr[i];
          const float k = r * r * r * dot / static_cast<float>(d);
          for (int64_t i = 0; i < d; ++i) {
            gxr[i] = r * gr[i] * wp[i] - xr[i] * k;
            gw[i] += gr[i] * xr[i] * r;
          }
        }
      }
    });
    torch::Tensor gw = at::zeros({d}, x.options());
    float* gwp = gw.data_ptr<float>();
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t i = 0; i < d; ++i) gwp[i] += partial[static_cast<size_t>(c * d + i)];
    return {gx, gw, torch::Tensor()};
  }
};

// ---- RoPE -------------------------------------------------------------------------------------------------
// Per position t and pair (i, i + h) of a head, h = hd / 2, with c = cos[t][i], s = sin[t][i]:
//   y_i = x_i c - x_{i+h} s,   y_{i+h} = x_{i+h} c + x_i s      (a rotation by the position's angle)
// and the backward is the inverse rotation of the gradient:
//   gx_i = gy_i c + gy_{i+h} s,   gx_{i+h} = gy_{i+h} c - gy_i s.

void rotate(const torch::Tensor& in, const torch::Tensor& cos, const torch::Tensor& sin, torch::Tensor& out,
            float direction) {
  const int64_t batch = in.size(0), time = in.size(1), heads = in.size(2), hd = in.size(3), half = hd / 2;
  const float *ip = in.data_ptr<float>(), *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, batch * time, 8, [&](int64_t begin, int64_t end) {
    for (int64_t bt = begin; bt < end; ++bt) {
      const int64_t t = bt % time;
      const float *c = cp + t * hd, *s = sp + t * hd;
      for (int64_t h = 0; h < heads; ++h) {
        const float* x = ip + (bt * heads + h) * hd;
        float* y = op + (bt * heads + h) * hd;
        for (int64_t i = 0; i < half; ++i) {
          const float a = x[i], b = x[i + half], si = direction * s[i];
          y[i] = a * c[i] - b * si;
          y[i + half] = b * c[i] + a * si;
        }
      }
    }
  });
}

struct RopeFunction : public torch::autograd::Function<RopeFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& cos,
                               const torch::Tensor& sin) {
    torch::Tensor y = at::empty_like(x);
    rotate(x, cos, sin, y, 1.0f);
    ctx->save_for_backward({cos, sin});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor gy = grads[0].contiguous();
    torch::Tensor gx = at::empty_like(gy);
    rotate(gy, saved[0], saved[1], gx, -1.0f);
    return {gx, torch::Tensor(), torch::Tensor()};
  }
};

// ---- SwiGLU product --------------------------------------------------------------------------------------
// y = u silu(g) = u g s, s = sigmoid(g). Backward: gu = gy g s, gg = gy u s (1 + g (1 - s)).

// s[i] = sigmoid(g[i]) = 1 / (1 + exp(-g[i])).
void sigmoidInto(const float* g, float* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) s[i] = -g[i];
  expInPlace(s, n);
  for (int64_t i = 0; i < n; ++i) s[i] = 1.0f / (1.0f + s[i]);
}

constexpr int64_t kChunk = 4096;  // elements per pass: the sigmoid scratch stays in L1

struct SwiGluFunction : public torch::autograd::Function<SwiGluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& gate, const torch::Tensor& up) {
    torch::Tensor y = at::empty_like(gate);
    const float *gp = gate.data_ptr<float>(), *up_ = up.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float s[kChunk];
    for (int64_t at0 = 0, n = gate.numel(); at0 < n; at0 += kChunk) {
      const int64_t m = std::min(kChunk, n - at0);
      sigmoidInto(gp + at0, s, m);
      for (int64_t i = 0; i < m; ++i) yp[at0 + i] = up_[at0 + i] * gp[at0 + i] * s[i];
    }
    ctx->save_for_backward({gate, up});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor gy = grads[0].contiguous();
    torch::Tensor gg = at::empty_like(gy), gu = at::empty_like(gy);
    const float *gp = saved[0].data_ptr<float>(), *up_ = saved[1].data_ptr<float>(),
                *dy = gy.data_ptr<float>();
    float *ggp = gg.data_ptr<float>(), *gup = gu.data_ptr<float>();
    float s[kChunk];
    for (int64_t at0 = 0, n = gy.numel(); at0 < n; at0 += kChunk) {
      const int64_t m = std::min(kChunk, n - at0);
      sigmoidInto(gp + at0, s, m);
      for (int64_t i = 0; i < m; ++i) {
        const float g = gp[at0 + i], d = dy[at0 + i];
        gup[at0 + i] = d * g * s[i];
        ggp[at0 + i] = d * up_[at0 + i] * s[i] * (1.0f + g * (1.0f - s[i]));
      }
    }
    return {gg, gu};
  }
};

// ---- Cross-entropy ---------------------------------------------------------------------------------------
// loss = mean_i (lse_i - x_i[t_i]), lse_i = log sum_j exp(x_ij). Backward: gx_ij = g / N (exp(x_ij - lse_i) -
// [j == t_i]).

// -log softmax(x)[t] of one row x of `vocab` logits, in double; *lse gets the row's log-sum-exp. scratch:
// `vocab` floats.
double rowNll(const float* x, int64_t vocab, int64_t t, float* scratch, float* lse) {
  TORCH_CHECK(t >= 0 && t < vocab, "cross-entropy target ", t, " outside the vocabulary of ", vocab);
  const float top = *std::max_element(x, x + vocab);
  for (int64_t j = 0; j < vocab; ++j) scratch[j] = x[j] - top;
  expInPlace(scratch, vocab);
  double sum = 0.0;
  for (int64_t j = 0; j < vocab; ++j) sum += scratch[j];
  *lse = top + static_cast<float>(std::log(sum));
  return std::log(sum) - static_cast<double>(x[t] - top);  // not lse - x_t: no rounding of lse
}

struct CrossEntropyFunction : public torch::autograd::Function<CrossEntropyFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets) {
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    torch::Tensor lse = at::empty({rows}, logits.options());
    const float* xp = logits.data_ptr<float>();
    const int64_t* tp = targets.data_ptr<int64_t>();
    float* lp = lse.data_ptr<float>();
    std::vector<float> row(static_cast<size_t>(vocab));
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) total += rowNll(xp + r * vocab, vocab, tp[r], row.data(), lp + r);
    ctx->save_for_backward({logits, targets, lse});
    return at::full({}, total / static_cast<double>(rows), logits.options());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &logits = saved[0], &targets = saved[1], &lse = saved[2];
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    const float g = grads[0].item<float>() / static_cast<float>(rows);
    torch::Tensor gx = at::empty_like(logits);
    const float *xp = logits.data_ptr<float>(), *lp = lse.data_ptr<float>();
    const int64_t* tp = targets.data_ptr<int64_t>();
    float* gp = gx.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = xp + r * vocab;
      float* out = gp + r * vocab;
      for (int64_t j = 0; j < vocab; ++j) out[j] = x[j] - lp[r];
      expInPlace(out, vocab);
      for (int64_t j = 0; j < vocab; ++j) out[j] *= g;
      out[tp[r]] -= g;
    }
    return {gx, torch::Tensor()};
  }
};

torch::Tensor rotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

torch::Tensor rmsNormReference(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  if (fusable(x) && fusable(weight)) return RmsNormFunction::apply(x, weight, eps);
  return rmsNormReference(x, weight, eps);
}

torch::Tensor applyRopeReference(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t time = x.size(1);
  const auto c = cos.narrow(0, 0, time).unsqueeze(1), s = sin.narrow(0, 0, time).unsqueeze(1);  // [T, 1, hd]
  return x * c + rotateHalf(x) * s;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  if (fusable(x) && fusable(cos) && fusable(sin) && !cos.requires_grad() && !sin.requires_grad())
    return RopeFunction::apply(x, cos, sin);
  return applyRopeReference(x, cos, sin);
}

torch::Tensor swigluReference(const torch::Tensor& gate, const torch::Tensor& up) {
  return at::silu(gate) * up;
}

torch::Tensor swiglu(const torch::Tensor& gate, const torch::Tensor& up) {
  if (fusable(gate) && fusable(up) && gate.sizes() == up.sizes()) return SwiGluFunction::apply(gate, up);
  return swigluReference(gate, up);
}

torch::Tensor crossEntropyReference(const torch::Tensor& logits, const torch::Tensor& targets) {
  return at::cross_entropy_loss(logits, targets);
}

torch::Tensor crossEntropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  if (fusable(logits) && logits.dim() == 2 && targets.dim() == 1 && targets.scalar_type() == at::kLong &&
      targets.device().is_cpu() && targets.is_contiguous() && targets.size(0) == logits.size(0) &&
      logits.size(0) > 0 && logits.size(1) > 0)
    return CrossEntropyFunction::apply(logits, targets);
  return crossEntropyReference(logits, targets);
}

torch::Tensor tokenNllReference(const torch::Tensor& logits, const torch::Tensor& targets) {
  return -at::log_softmax(logits.to(at::kDouble), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
}

torch::Tensor tokenNll(const torch::Tensor& logits, const torch::Tensor& targets) {
  if (!(fusable(logits) && logits.dim() == 2 && targets.dim() == 1 && targets.scalar_type() == at::kLong &&
        targets.device().is_cpu() && targets.is_contiguous() && targets.size(0) == logits.size(0) &&
        logits.size(1) > 0))
    return -at::log_softmax(logits.to(at::kFloat), -1)
                .gather(-1, targets.unsqueeze(-1))
                .squeeze(-1)
                .to(at::kDouble);
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  torch::Tensor nll = at::empty({rows}, logits.options().dtype(at::kDouble));
  const float* xp = logits.data_ptr<float>();
  const int64_t* tp = targets.data_ptr<int64_t>();
  double* np = nll.data_ptr<double>();
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(vocab));
    float lse = 0;
    for (int64_t r = begin; r < end; ++r) np[r] = rowNll(xp + r * vocab, vocab, tp[r], row.data(), &lse);
  });
  return nll;
}

void expInPlace(float* x, int64_t n) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
  constexpr float kRound =
      12582912.0f;  // 1.5 x 2^23: adding and subtracting it rounds to the nearest integer
  for (int64_t i = 0; i < n; ++i) {
    const float in = x[i];
    const float clamped = in > -87.0f ? (in < 88.0f ? in : 88.0f) : -87.0f;  // NaN -> -87: k stays finite
    const float k = (clamped * kLog2e + kRound) - kRound;                    // nearest integer to x / ln 2
    const float r = (clamped - k * kLn2High) - k * kLn2Low;                  // |r| <= ln 2 / 2
    const float r2 = r * r;
    float poly = 1.9875691500e-4f;
    poly = poly * r + 1.3981999507e-3f;
    poly = poly * r + 8.3334519073e-3f;
    poly = poly * r + 4.1665795894e-2f;
    poly = poly * r + 1.6666665459e-1f;
    poly = poly * r + 5.0000001201e-1f;
    const float er = poly * r2 + r + 1.0f;
    const float twoK = std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
    const float y = in < -87.0f ? 0.0f : er * twoK;
    x[i] = in != in ? in : y;  // NaN stays NaN
  }
}

}  // namespace sharelens
