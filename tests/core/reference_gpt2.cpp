// SPDX-License-Identifier: GPL-3.0-or-later
#include "reference_gpt2.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

namespace attnscope::test {
namespace {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

const FloatTensor& get(const std::map<std::string, const FloatTensor*>& w,
                       const std::string& name) {
  const auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("reference: missing " + name);
  return *it->second;
}

Matrix layerNorm(const Matrix& x, const FloatTensor& g, const FloatTensor& b, double eps) {
  Matrix out = x;
  for (auto& row : out) {
    double mean = 0, var = 0;
    for (double v : row) mean += v;
    mean /= static_cast<double>(row.size());
    for (double v : row) var += (v - mean) * (v - mean);
    var /= static_cast<double>(row.size());
    for (std::size_t c = 0; c < row.size(); ++c)
      row[c] = (row[c] - mean) / std::sqrt(var + eps) * g.data[c] + b.data[c];
  }
  return out;
}

// x @ W + b with W stored [in, out] (Conv1D).
Matrix conv1d(const Matrix& x, const FloatTensor& W, const FloatTensor& b) {
  const std::size_t in = static_cast<std::size_t>(W.shape[0]),
                    out = static_cast<std::size_t>(W.shape[1]);
  Matrix y(x.size(), std::vector<double>(out));
  for (std::size_t t = 0; t < x.size(); ++t) {
    for (std::size_t o = 0; o < out; ++o) {
      double s = b.data[o];
      for (std::size_t i = 0; i < in; ++i) s += x[t][i] * W.data[i * out + o];
      y[t][o] = s;
    }
  }
  return y;
}

}  // namespace

ReferenceGpt2 referenceGpt2(const std::vector<NamedTensor>& weights, int layers, int heads,
                            const std::vector<int64_t>& ids, double eps, HeadScale scaled) {
  std::map<std::string, const FloatTensor*> w;
  for (const NamedTensor& t : weights) w[t.name] = &t.tensor;
  const FloatTensor& wte = get(w, "wte.weight");
  const FloatTensor& wpe = get(w, "wpe.weight");
  const std::size_t T = ids.size(), C = static_cast<std::size_t>(wte.shape[1]),
                    V = static_cast<std::size_t>(wte.shape[0]);
  const std::size_t H = static_cast<std::size_t>(heads), hd = C / H;

  Matrix x(T, std::vector<double>(C));
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < C; ++c)
      x[t][c] = wte.data[static_cast<std::size_t>(ids[t]) * C + c] + wpe.data[t * C + c];

  ReferenceGpt2 ref;
  ref.attention.assign(static_cast<std::size_t>(layers) * H * T * T, 0.0);
  ref.valueNorms.assign(ref.attention.size(), 0.0);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    const Matrix a = layerNorm(x, get(w, p + "ln_1.weight"), get(w, p + "ln_1.bias"), eps);
    const Matrix qkv = conv1d(a, get(w, p + "attn.c_attn.weight"), get(w, p + "attn.c_attn.bias"));
    Matrix merged(T, std::vector<double>(C, 0.0));
    const FloatTensor& wo = get(w, p + "attn.c_proj.weight");  // [C, C], y = z W_O
    for (std::size_t h = 0; h < H; ++h) {
      const double factor =
          scaled.layer == l && static_cast<std::size_t>(scaled.head) == h ? scaled.factor : 1.0;
      // f[j] = v_j^h W_O^h: what key j sends through head h before its attention weight.
      Matrix f(T, std::vector<double>(C, 0.0));
      for (std::size_t j = 0; j < T; ++j)
        for (std::size_t d = 0; d < hd; ++d)
          for (std::size_t c = 0; c < C; ++c)
            f[j][c] += qkv[j][2 * C + h * hd + d] * wo.data[(h * hd + d) * C + c];
      for (std::size_t i = 0; i < T; ++i) {
        std::vector<double> s(i + 1);
        double top = -INFINITY;
        for (std::size_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::size_t d = 0; d < hd; ++d) dot += qkv[i][h * hd + d] * qkv[j][C + h * hd + d];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          top = std::max(top, s[j]);
        }
        double sum = 0;
        for (double& v : s) sum += (v = std::exp(v - top));
        for (std::size_t j = 0; j <= i; ++j) {
          const double p_ij = s[j] / sum;
          ref.attention[((static_cast<std::size_t>(l) * H + h) * T + i) * T + j] = p_ij;
          double squared = 0;
          for (std::size_t c = 0; c < C; ++c) squared += (p_ij * f[j][c]) * (p_ij * f[j][c]);
          ref.valueNorms[((static_cast<std::size_t>(l) * H + h) * T + i) * T + j] =
              std::sqrt(squared);
          for (std::size_t d = 0; d < hd; ++d)
            merged[i][h * hd + d] += factor * p_ij * qkv[j][2 * C + h * hd + d];
        }
      }
    }
    const Matrix attnOut =
        conv1d(merged, get(w, p + "attn.c_proj.weight"), get(w, p + "attn.c_proj.bias"));
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) x[t][c] += attnOut[t][c];
    const Matrix b = layerNorm(x, get(w, p + "ln_2.weight"), get(w, p + "ln_2.bias"), eps);
    Matrix f = conv1d(b, get(w, p + "mlp.c_fc.weight"), get(w, p + "mlp.c_fc.bias"));
    const double k = std::sqrt(2.0 / M_PI);
    for (auto& row : f)
      for (double& v : row) v = 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
    const Matrix mlpOut = conv1d(f, get(w, p + "mlp.c_proj.weight"), get(w, p + "mlp.c_proj.bias"));
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c) x[t][c] += mlpOut[t][c];
  }
  const Matrix final = layerNorm(x, get(w, "ln_f.weight"), get(w, "ln_f.bias"), eps);
  for (const auto& row : final) ref.hidden.insert(ref.hidden.end(), row.begin(), row.end());
  ref.lastLogits.assign(V, 0.0);
  for (std::size_t v = 0; v < V; ++v)
    for (std::size_t c = 0; c < C; ++c) ref.lastLogits[v] += final[T - 1][c] * wte.data[v * C + c];
  return ref;
}

}  // namespace attnscope::test
