// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/rotary_embedding.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "attnscope/error.h"

namespace attnscope {
namespace {

/// 1 / base^(2i / dim), as transformers computes it (int64 arange, float32 powers).
torch::Tensor baseFrequencies(double base, int64_t dim) {
  // scalar_tensor would throw c10's overflow error (an internal error) for a base past float32;
  // the dynamic scaling's grown base can get there from a legal rope_theta.
  if (!(base <= static_cast<double>(std::numeric_limits<float>::max())))
    throw Error(ErrorKind::Format, "the rotary base (" + std::to_string(base) +
                                       ") does not fit in float32: rope_theta or rope_scaling is "
                                       "too large");
  const torch::Tensor exponents =
      torch::arange(0, dim, 2, torch::kLong).to(torch::kFloat) / static_cast<double>(dim);
  return 1.0 / torch::pow(torch::scalar_tensor(base, torch::kFloat), exponents);
}

torch::Tensor rotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

/// (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)
torch::Tensor rotateEveryTwo(const torch::Tensor& x) {
  const int64_t n = x.size(-1);
  const torch::Tensor even = x.slice(-1, 0, n, 2), odd = x.slice(-1, 1, n, 2);
  return torch::stack({-odd, even}, -1).flatten(-2);
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(RotaryOptions options) : m_options(options) {
  if (m_options.rotaryDim <= 0 || m_options.rotaryDim % 2 != 0) {
    throw Error(ErrorKind::Format, "rotary dimensions must be a positive even number (got " +
                                       std::to_string(m_options.rotaryDim) + ")");
  }
  if (!(m_options.theta > 0)) throw Error(ErrorKind::Format, "rope_theta must be positive");
  if (m_options.scaling.type == RopeScaling::Type::Dynamic && m_options.maxPositions <= 0) {
    throw Error(ErrorKind::Format, "dynamic rope_scaling needs max_position_embeddings");
  }
  if (m_options.scaling.type != RopeScaling::Type::None && !(m_options.scaling.factor > 0)) {
    throw Error(ErrorKind::Format, "rope_scaling.factor must be positive");
  }
}

torch::Tensor RotaryEmbedding::inverseFrequencies(int64_t seqLen) const {
  const RopeScaling& s = m_options.scaling;
  const int64_t dim = m_options.rotaryDim;
  switch (s.type) {
    case RopeScaling::Type::None:
      return baseFrequencies(m_options.theta, dim);
    case RopeScaling::Type::Linear:
      // Positions divided by the factor: the same as dividing every frequency.
      return baseFrequencies(m_options.theta, dim) / s.factor;
    case RopeScaling::Type::Dynamic: {
      // NTK-aware: the base grows only once the sequence is longer than the trained context.
      const double maxPos = static_cast<double>(m_options.maxPositions);
      const double len = std::max(static_cast<double>(seqLen), maxPos);
      const double base =
          m_options.theta * std::pow(s.factor * len / maxPos - (s.factor - 1.0),
                                     static_cast<double>(dim) / static_cast<double>(dim - 2));
      return baseFrequencies(base, dim);
    }
    case RopeScaling::Type::Llama3: {
      const torch::Tensor inv = baseFrequencies(m_options.theta, dim);
      const double oldContext = static_cast<double>(s.originalMaxPositions);
      const double lowWavelen = oldContext / s.lowFreqFactor,
                   highWavelen = oldContext / s.highFreqFactor;
      const torch::Tensor wavelen = 2.0 * M_PI / inv;
      // Long wavelengths are slowed by the factor, short ones kept, the band between blended.
      torch::Tensor scaled = torch::where(wavelen > lowWavelen, inv / s.factor, inv);
      const torch::Tensor smooth =
          (oldContext / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      const torch::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
      const torch::Tensor medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
      return torch::where(medium, smoothed, scaled);
    }
  }
  return baseFrequencies(m_options.theta, dim);
}

std::pair<torch::Tensor, torch::Tensor> RotaryEmbedding::cosSin(
    const torch::Tensor& positions) const {
  const int64_t seqLen = positions.numel() > 0 ? positions.max().item<int64_t>() + 1 : 0;
  const torch::Tensor inv = inverseFrequencies(seqLen).to(positions.device());
  const torch::Tensor freqs = torch::outer(positions.to(torch::kFloat), inv);  // [T, rot/2]
  const torch::Tensor emb = torch::cat({freqs, freqs}, -1);                    // [T, rot]
  return {emb.cos(), emb.sin()};
}

torch::Tensor RotaryEmbedding::apply(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const int64_t rot = cos.size(-1), hd = x.size(-1);
  if (rot == hd) return x * cos + rotateHalf(x) * sin;
  const torch::Tensor r = x.narrow(-1, 0, rot), pass = x.narrow(-1, rot, hd - rot);
  return torch::cat({r * cos + rotateHalf(r) * sin, pass}, -1);
}

torch::Tensor RotaryEmbedding::applyInterleaved(const torch::Tensor& x, const torch::Tensor& cos,
                                                const torch::Tensor& sin) {
  const int64_t rot = cos.size(-1), hd = x.size(-1);
  // cosSin repeats the frequencies as (f0 .. f_{rot/2-1}, f0 ..); neighbours share one here.
  const torch::Tensor c = cos.narrow(-1, 0, rot / 2).repeat_interleave(2, -1),
                      s = sin.narrow(-1, 0, rot / 2).repeat_interleave(2, -1);
  if (rot == hd) return x * c + rotateEveryTwo(x) * s;
  const torch::Tensor r = x.narrow(-1, 0, rot), pass = x.narrow(-1, rot, hd - rot);
  return torch::cat({r * c + rotateEveryTwo(r) * s, pass}, -1);
}

std::string RotaryEmbedding::describe(int64_t headDim) const {
  std::ostringstream s;
  s << "rope_theta " << m_options.theta << ", " << m_options.rotaryDim << " of " << headDim
    << " dims";
  const char* names[] = {"", "linear", "dynamic", "llama3"};
  if (m_options.scaling.type != RopeScaling::Type::None) {
    s << ", " << names[static_cast<int>(m_options.scaling.type)] << " x"
      << m_options.scaling.factor;
  }
  return s.str();
}

}  // namespace attnscope
