// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 33 in the window: when every layer's attention does not fit the memory limit but the
// on-demand state does, the compute worker runs on demand and says so; the views then show the
// same matrices, grid and heatmap as the stored run of the same text.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

#include "attnscope/model.h"
#include "compute_worker.h"
#include "exporter.h"
#include "grid_view.h"
#include "head_matrix.h"
#include "heatmap_view.h"
#include "qtest_main.h"
#include "tiny_gpt2.h"

using namespace attnscope;
using namespace attnscope::gui;
using attnscope::render::HeadMatrix;
using attnscope::render::ResultPtr;

namespace {

QImage renderView(render::AttentionView& view, const render::ViewState& state) {
  view.setViewState(state);
  render::ExportOptions o;
  o.width = 900;
  o.height = 800;
  o.dpi = 96;
  return render::Exporter::renderImage(view, o);
}

// The largest per-pixel colour difference (sum over channels) of two images of one size.
int largestDifference(const QImage& a, const QImage& b) {
  int worst = 0;
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x) {
      const QRgb p = a.pixel(x, y), q = b.pixel(x, y);
      worst = std::max(worst, std::abs(qRed(p) - qRed(q)) + std::abs(qGreen(p) - qGreen(q)) +
                                  std::abs(qBlue(p) - qBlue(q)));
    }
  return worst;
}

}  // namespace

class OnDemandWorkerTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void overTheLimitTheWorkerRecomputesOnDemand() {
    qRegisterMetaType<ComputeOutcome>();
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    test::TinyGpt2 spec;
    spec.layers = 2;
    spec.heads = 4;
    spec.positions = 1600;
    const std::string folder = dir.filePath(QStringLiteral("gpt2")).toStdString();
    test::writeTinyGpt2(folder, spec);
    // 1,500 letters without 'h' and 'e': one token each (no merge applies).
    QString text;
    const QString letters = QStringLiteral("abcdfgijklmnopqrsuvwxyz");
    for (int i = 0; i < 1500; ++i) text += letters[(i * 7 + i / 23) % letters.size()];

    ModelSpec model;
    model.source = folder;
    const std::shared_ptr<Model> opened = openModel(model);
    RunRequest request;
    request.texts = {text.toStdString()};
    request.keepScores = false;
    const MemoryEstimate stored = opened->estimate(request);
    RunRequest onDemand = request;
    onDemand.attentionOnDemand = true;
    const MemoryEstimate kept = opened->estimate(onDemand);
    QVERIFY2(kept.total * 2 < stored.total, "the fixture must be one whose attention dominates");

    // A tenth of the way from the on-demand estimate to the stored one: not one layer's attention
    // fits stored, where the window used to keep a single layer.
    ComputeWorker worker(std::make_shared<std::atomic<quint64>>(0));
    QSignalSpy computed(&worker, &ComputeWorker::computed);
    ComputeJob job;
    job.generation = 1;
    job.spec = model;
    job.model = opened;
    job.request = request;
    job.request.limits.memoryLimitBytes = kept.total + (stored.total - kept.total) / 10;
    worker.compute(job);
    QCOMPARE(computed.count(), 1);
    const ComputeOutcome outcome = computed.at(0).at(0).value<ComputeOutcome>();
    QVERIFY2(outcome.error.isEmpty(), qPrintable(outcome.error));
    QVERIFY(!outcome.notices.isEmpty());
    QVERIFY2(outcome.notices.front().startsWith(QStringLiteral("Attention recomputed on demand")),
             qPrintable(outcome.notices.front()));
    const ResultPtr lazy = outcome.result;
    QVERIFY(lazy->group().onDemand());
    QVERIFY(lazy->group().keptLayers.empty());  // every layer, not the ones around the focus
    QVERIFY(outcome.estimate.total <= job.request.limits.memoryLimitBytes);

    // Under a limit the stored attention fits, it is stored as before.
    job.generation = 2;
    job.request.limits.memoryLimitBytes = stored.total * 4;
    worker.compute(job);
    QCOMPARE(computed.count(), 2);
    const ResultPtr full = computed.at(1).at(0).value<ComputeOutcome>().result;
    QVERIFY(full && !full->group().onDemand());

    // Every head through HeadMatrix, with and without the sink: within 1e-6 of the stored run.
    const AttentionGroup &a = full->group(), &b = lazy->group();
    QCOMPARE(b.queries(), 1500);
    double worst = 0;
    QElapsedTimer timer;
    timer.start();
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h)
        for (int sink : {0, 3}) {
          HeadMatrix x = HeadMatrix::of(a, l, 0, h, false), y = HeadMatrix::of(b, l, 0, h, false);
          HeadMatrix::dropSink(x, sink);
          HeadMatrix::dropSink(y, sink);
          QCOMPARE(y.rows, x.rows);
          QCOMPARE(y.cols, x.cols);
          for (std::size_t i = 0; i < x.values.size(); ++i)
            worst = std::max(worst, std::abs(double(x.values[i]) - y.values[i]));
        }
    qInfo("T = 1500, 8 heads x 2 on demand through HeadMatrix: %lld ms, largest difference %.3g",
          timer.elapsed(), worst);
    QVERIFY2(worst <= 1e-6, qPrintable(QString::number(worst)));

    // The grid and the heatmap (linear, log, sink hidden) draw the same pictures.
    render::GridView ga, gb;
    ga.setResult(full);
    gb.setResult(lazy);
    QVERIFY(largestDifference(renderView(ga, {}), renderView(gb, {})) <= 6);
    render::HeatmapView ha, hb;
    ha.setResult(full);
    hb.setResult(lazy);
    render::ViewState s;
    s.layer = 1;
    s.head = 2;
    for (bool log : {false, true})
      for (int sink : {0, 1}) {
        s.logScale = log;
        s.dropSink = sink;
        const QImage ia = renderView(ha, s), ib = renderView(hb, s);
        QVERIFY2(largestDifference(ia, ib) <= 6, log ? "log" : "linear");
      }
  }
};

ATTNSCOPE_QTEST(OnDemandWorkerTest)

#include "on_demand_worker_test.moc"
