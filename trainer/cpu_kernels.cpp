#include "trainer/cpu_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

// Compiled for x86-64-v3 and the baseline, chosen at load time (see the header), by GCC 12 and later (clang's
// and older GCCs' dispatch of "arch=x86-64-v3" clones is missing or wrong). Not under the sanitizers: their
// instrumentation and ifunc resolvers that run before it is set up do not mix.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SHARELENS_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12 && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(SHARELENS_SANITIZED)
#define SHARELENS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SHARELENS_SIMD_CLONES
#endif

namespace sharelens::kernels {
namespace {

// expInPlace's body, inlined into each kernel (and so compiled for each of its targets).
inline void expLoop(float* x, int64_t n) {
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

// s[i] = sigmoid(g[i]) = 1 / (1 + exp(-g[i])).
inline void sigmoidLoop(const float* g, float* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) s[i] = -g[i];
  expLoop(s, n);
  for (int64_t i = 0; i < n; ++i) s[i] = 1.0f / (1.0f + s[i]);
}

constexpr int64_t kChunk = 4096;  // elements per pass: the sigmoid scratch stays in L1

}  // namespace

SHARELENS_SIMD_CLONES void expInPlace(float* x, int64_t n) {
  expLoop(x, n);
}

SHARELENS_SIMD_CLONES void rmsNormRows(const float* x, const float* w, float* y, float* inv, int64_t rowBegin,
                                       int64_t rowEnd, int64_t d, float eps) {
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const float* xr = x + row * d;
    float* yr = y + row * d;
    float sum = 0;
    for (int64_t i = 0; i < d; ++i) sum += xr[i] * xr[i];
    const float r = 1.0f / std::sqrt(sum / static_cast<float>(d) + eps);
    inv[row] = r;
    for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * r * w[i];
  }
}

SHARELENS_SIMD_CLONES void rmsNormBackwardRows(const float* x, const float* w, const float* inv,
                                               const float* gy, float* gx, float* gw, int64_t rowBegin,
                                               int64_t rowEnd, int64_t d) {
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const float *xr = x + row * d, *gr = gy + row * d;
    float* gxr = gx + row * d;
    const float r = inv[row];
    float dot = 0;
    for (int64_t i = 0; i < d; ++i) dot += gr[i] * w[i] * xr[i];
    const float k = r * r * r * dot / static_cast<float>(d);
    for (int64_t i = 0; i < d; ++i) {
      gxr[i] = r * gr[i] * w[i] - xr[i] * k;
      gw[i] += gr[i] * xr[i] * r;
    }
  }
}

SHARELENS_SIMD_CLONES void ropeRows(const float* in, int64_t inStride, const float* cos, const float* sin,
                                    float* out, int64_t outStride, int64_t rowBegin, int64_t rowEnd,
                                    int64_t time, int64_t heads, int64_t hd, float direction) {
  const int64_t half = hd / 2;
  for (int64_t bt = rowBegin; bt < rowEnd; ++bt) {
    const int64_t t = bt % time;
    const float *c = cos + t * hd, *s = sin + t * hd;
    for (int64_t h = 0; h < heads; ++h) {
      const float* x = in + bt * inStride + h * hd;
      float* y = out + bt * outStride + h * hd;
      for (int64_t i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half], si = direction * s[i];
        y[i] = a * c[i] - b * si;
        y[i + half] = b * c[i] + a * si;
      }
    }
  }
}

SHARELENS_SIMD_CLONES void swigluForward(const float* g, const float* u, float* y, int64_t n) {
  float s[kChunk];
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t m = std::min(kChunk, n - at);
    sigmoidLoop(g + at, s, m);
    for (int64_t i = 0; i < m; ++i) y[at + i] = u[at + i] * g[at + i] * s[i];
  }
}

SHARELENS_SIMD_CLONES void swigluBackward(const float* g, const float* u, const float* gy, float* gg,
                                          float* gu, int64_t n) {
  float s[kChunk];
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t m = std::min(kChunk, n - at);
    sigmoidLoop(g + at, s, m);
    for (int64_t i = 0; i < m; ++i) {
      const float gi = g[at + i], d = gy[at + i];
      gu[at + i] = d * gi * s[i];
      gg[at + i] = d * u[at + i] * s[i] * (1.0f + gi * (1.0f - s[i]));
    }
  }
}

SHARELENS_SIMD_CLONES double rowNll(const float* x, int64_t vocab, int64_t t, float* scratch, float* lse) {
  const float top = *std::max_element(x, x + vocab);
  for (int64_t j = 0; j < vocab; ++j) scratch[j] = x[j] - top;
  expLoop(scratch, vocab);
  double sum = 0.0;
  for (int64_t j = 0; j < vocab; ++j) sum += scratch[j];
  *lse = top + static_cast<float>(std::log(sum));
  return std::log(sum) - static_cast<double>(x[t] - top);  // not lse - x_t: no rounding of lse
}

SHARELENS_SIMD_CLONES void crossEntropyGradRows(const float* logits, const float* lse, const int64_t* targets,
                                                float g, float* gx, int64_t rowBegin, int64_t rowEnd,
                                                int64_t vocab) {
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    const float* x = logits + r * vocab;
    float* out = gx + r * vocab;
    for (int64_t j = 0; j < vocab; ++j) out[j] = x[j] - lse[r];
    expLoop(out, vocab);
    for (int64_t j = 0; j < vocab; ++j) out[j] *= g;
    out[targets[r]] -= g;
  }
}

SHARELENS_SIMD_CLONES void causalSoftmaxRows(float* scores, int64_t time) {
  for (int64_t i = 0; i < time; ++i) {
    float* row = scores + i * time;
    const int64_t seen = i + 1;
    const float top = *std::max_element(row, row + seen);
    for (int64_t j = 0; j < seen; ++j) row[j] -= top;
    expLoop(row, seen);
    float sum = 0.0f;
    for (int64_t j = 0; j < seen; ++j) sum += row[j];
    const float inverse = 1.0f / sum;
    for (int64_t j = 0; j < seen; ++j) row[j] *= inverse;
    std::fill(row + seen, row + time, 0.0f);
  }
}

SHARELENS_SIMD_CLONES void causalSoftmaxBackwardRows(float* dp, const float* p, int64_t time) {
  for (int64_t i = 0; i < time; ++i) {
    float* row = dp + i * time;
    const float* prow = p + i * time;
    float dot = 0.0f;
    for (int64_t j = 0; j <= i; ++j) dot += row[j] * prow[j];
    for (int64_t j = 0; j <= i; ++j) row[j] = prow[j] * (row[j] - dot);
    std::fill(row + i + 1, row + time, 0.0f);
  }
}

SHARELENS_SIMD_CLONES void adamwUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                                       const AdamWScalars& s) {
  const float w = s.oneMinusBeta1;
  const bool small = w < 0.5f;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    m[i] = small ? m[i] + w * (gi - m[i]) : gi - (gi - m[i]) * (1.0f - w);
    v[i] = v[i] * s.beta2 + (s.oneMinusBeta2 * gi) * gi;
    const float denom = std::sqrt(v[i]) / s.biasCorrection2Sqrt + s.eps;
    p[i] = p[i] * s.decay + (s.negativeStepSize * m[i]) / denom;
  }
}

}  // namespace sharelens::kernels
