// SPDX-License-Identifier: GPL-3.0-or-later
// Offscreen rendering of the views the GUI shows, and each export format.
#include <benchmark/benchmark.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QString>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <random>

#include "bench_support.h"
#include "exporter.h"
#include "grid_view.h"
#include "view_factory.h"

namespace attnscope::bench {
namespace {

using render::ResultPtr;

// Random causal attention (rows normalised), like a GPT's.
ResultPtr fakeResult(int layers, int heads, int tokens) {
  auto r = std::make_shared<AttentionResult>();
  r->modelName = "bench";
  r->group().attention = FloatTensor({layers, 1, heads, tokens, tokens});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      float* a = const_cast<float*>(r->group().headMatrix(l, 0, h));
      for (int q = 0; q < tokens; ++q) {
        float sum = 0;
        for (int k = 0; k <= q; ++k) sum += (a[q * tokens + k] = u(rng));
        for (int k = 0; k <= q; ++k) a[q * tokens + k] /= sum;
      }
    }
  }
  std::vector<Token> items;
  for (int i = 0; i < tokens; ++i) {
    Token t;
    t.id = i;
    t.text = t.label = "tok" + std::to_string(i);
    items.push_back(t);
  }
  r->group().tokens.push_back(items);
  r->group().queryLengths.push_back(tokens);
  r->group().keyLengths.push_back(tokens);
  r->traces.resize(static_cast<std::size_t>(layers));
  return r;
}

// Each iteration hands the view its result again, so per-result caches (the grid's tiles) are
// rebuilt: the cost of showing a new result, not of repainting a cached one.
void renderView(benchmark::State& state, render::ViewKind kind, const ResultPtr& result) {
  std::unique_ptr<render::AttentionView> view(render::createView(kind));
  render::ExportOptions options;  // 1200 x 900 at 150 dpi, as the CLI exports
  for (auto _ : state) {
    view->setResult(result);
    const QImage image = render::Exporter::renderImage(*view, options);
    benchmark::DoNotOptimize(image.constBits());
  }
}

void BM_RenderHeatmap(benchmark::State& s) {
  renderView(s, render::ViewKind::Heatmap, fakeResult(1, 1, static_cast<int>(s.range(0))));
}
BENCHMARK(BM_RenderHeatmap)
    ->ArgName("T")
    ->Arg(16)
    ->Arg(128)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

void BM_RenderGrid12x12(benchmark::State& s) {
  renderView(s, render::ViewKind::Grid, fakeResult(12, 12, static_cast<int>(s.range(0))));
}
BENCHMARK(BM_RenderGrid12x12)
    ->ArgName("T")
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// The window's grid of 144 heads at T = 1024: the longest the UI thread is held, from the paint
// that starts the pooling on a pool thread, through the event-loop turns until the tiles are in,
// to the paint that draws them (a 1400 × 1000 widget).
void BM_GridWindowT1024(benchmark::State& s) {
  static const ResultPtr result = fakeResult(12, 12, 1024);
  double worst = 0, wait = 0;
  for (auto _ : s) {
    render::GridView view;
    view.resize(1400, 1000);
    view.setResult(result);
    view.setViewState(render::ViewState());
    QElapsedTimer total, t;
    total.start();
    t.start();
    view.grab();
    worst = std::max(worst, t.nsecsElapsed() / 1e6);
    while (!view.tilesReady()) {
      t.restart();
      QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
      worst = std::max(worst, t.nsecsElapsed() / 1e6);
      QThread::msleep(1);
    }
    t.restart();
    view.grab();
    worst = std::max(worst, t.nsecsElapsed() / 1e6);
    wait = total.nsecsElapsed() / 1e6;
  }
  s.counters["ui_thread_max_ms"] = worst;
  s.counters["tiles_ready_ms"] = wait;
}
BENCHMARK(BM_GridWindowT1024)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

// The whole export: render, encode, write atomically. Heatmap at T = 128.
void BM_Export(benchmark::State& state) {
  const char* ext[] = {"png", "svg", "pdf"};
  const QString name = QString::fromLatin1(ext[state.range(0)]);
  render::ExportOptions options;
  render::parseImageFormat(name, &options.format);
  std::unique_ptr<render::AttentionView> view(render::createView(render::ViewKind::Heatmap));
  view->setResult(fakeResult(1, 1, 128));
  const QString path = QString::fromStdString(scratchDir()) + "/export." + name;
  for (auto _ : state) {
    const QString error = render::Exporter::exportView(*view, path, options);
    if (!error.isEmpty()) state.SkipWithError(error.toStdString().c_str());
  }
  state.SetLabel(name.toStdString());
}
BENCHMARK(BM_Export)
    ->ArgName("format")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

}  // namespace
}  // namespace attnscope::bench
