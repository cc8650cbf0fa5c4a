// SPDX-License-Identifier: GPL-3.0-or-later
// The alignment view on a hand-made encoder-decoder result whose cross-attention is known: each
// target token's lines go to its strongest source tokens (at most three, none below the floor),
// the mean is over the heads of the layer or of every layer, and a result without
// cross-attention says why it draws nothing.
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>
#include <QtTest>

#include "alignment_view.h"
#include "exporter.h"
#include "fake_result.h"
#include "qtest_main.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

// Encoder self (3 source tokens), decoder self (4 target tokens) and cross [4 x 3] over two
// layers of two heads. Layer 0: head 0 puts 0.8 on source (t % 3), head 1 puts 0.8 on source
// ((t + 1) % 3), the rest spread evenly; layer 1: every head on source 2.
std::shared_ptr<AttentionResult> encoderDecoder() {
  auto r = test::makeResult(
      2, 2, 3, 1, [](int, int, int, int, int) { return 1.0f / 3; }, "s");
  r->group().name = "self";
  auto target = test::makeResult(
      2, 2, 4, 1, [](int, int, int, int q, int k) { return k <= q ? 1.0f / (q + 1) : 0.0f; }, "t");
  AttentionGroup decoder = target->group();
  decoder.name = "decoder_self";
  AttentionGroup cross;
  cross.name = "cross";
  cross.tokens = decoder.tokens;
  cross.contextTokens = r->group().tokens;
  cross.queryLengths = {4};
  cross.keyLengths = {3};
  cross.attention = FloatTensor({2, 1, 2, 4, 3});
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 4; ++t) {
        const int strong = l == 1 ? 2 : (t + h) % 3;
        for (int s = 0; s < 3; ++s)
          cross.attention.data[static_cast<std::size_t>(((l * 2 + h) * 4 + t) * 3 + s)] =
              s == strong ? 0.8f : 0.1f;
      }
  r->groups.push_back(decoder);
  r->groups.push_back(cross);
  return r;
}

void draw(AlignmentView& view) {
  QImage image(900, 600, QImage::Format_RGB32);
  QPainter p(&image);
  view.renderTo(p, image.rect(), QStringLiteral("alignment"));
}

}  // namespace

class AlignmentViewTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void linesGoToEachTargetTokensStrongestSources() {
    AlignmentView view;
    view.setResult(encoderDecoder());
    ViewState s;
    view.setViewState(s);
    draw(view);
    QVERIFY2(view.problem().isEmpty(), qPrintable(view.problem()));
    // Layer 0's mean: 0.45 on sources t % 3 and (t + 1) % 3, 0.1 on the third.
    const HeadMatrix& m = view.mean();
    QCOMPARE(m.rows, 4);
    QCOMPARE(m.cols, 3);
    QVERIFY(std::abs(m.at(1, 1) - 0.45f) < 1e-6f);
    QVERIFY(std::abs(m.at(1, 0) - 0.1f) < 1e-6f);
    // Every weight is at least 0.05, so each target token draws its top three.
    QCOMPARE(static_cast<int>(view.lastLines().size()), 4 * 3);
    for (const AlignmentView::Line& line : view.lastLines()) {
      QVERIFY(std::abs(line.weight - m.at(line.target, line.source)) < 1e-9);
      if (line.source != line.target % 3 && line.source != (line.target + 1) % 3)
        QVERIFY(std::abs(line.weight - 0.1) < 1e-6);
    }
    // Over every layer: (0.45 + 0.8) / 2 on source 2 for target 1, and the strongest line first.
    view.setAllLayers(true);
    draw(view);
    QVERIFY(std::abs(view.mean().at(1, 2) - (0.45f + 0.8f) / 2) < 1e-6f);
    const auto& lines = view.lastLines();
    const auto first = std::find_if(lines.begin(), lines.end(),
                                    [](const AlignmentView::Line& l) { return l.target == 1; });
    QVERIFY(first != lines.end());
    QCOMPARE(first->source, 2);
  }

  void weakWeightsAreNotDrawn() {
    auto r = encoderDecoder();
    AttentionGroup& cross = r->groups[2];
    // Target 0 of layer 0: 0.97 on source 0, 0.015 on each other: one line only.
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 3; ++s)
        cross.attention.data[static_cast<std::size_t>((h * 4 + 0) * 3 + s)] =
            s == 0 ? 0.97f : 0.015f;
    AlignmentView view;
    view.setResult(r);
    view.setViewState(ViewState());
    draw(view);
    int lines = 0;
    for (const AlignmentView::Line& l : view.lastLines()) lines += l.target == 0;
    QCOMPARE(lines, 1);
  }

  // Issue #32 (13): a near-uniform model over 30 source tokens has every weight (1/30) below the
  // floor; each target token still draws its strongest source, and the caption counts the lines.
  void aNearUniformModelStillDrawsItsStrongestSources() {
    constexpr int kSources = 30;
    auto r = encoderDecoder();
    auto source = test::makeResult(
        2, 2, kSources, 1, [](int, int, int, int, int) { return 1.0f / kSources; }, "s");
    AttentionGroup& cross = r->groups[2];
    cross.contextTokens = source->group().tokens;
    cross.keyLengths = {kSources};
    cross.attention = FloatTensor({2, 1, 2, 4, kSources});
    for (std::size_t i = 0; i < cross.attention.data.size(); ++i)  // 1/30, a little above on one
      cross.attention.data[i] = (1.0f + (i % kSources == 7 ? 0.1f : 0.0f)) / (kSources + 0.1f);
    AlignmentView view;
    view.setResult(r);
    view.setViewState(ViewState());
    QTemporaryDir dir;
    ExportOptions o;
    o.format = ImageFormat::Svg;
    o.width = 900;
    o.height = 600;
    const QString path = dir.filePath(QStringLiteral("alignment.svg"));
    QCOMPARE(Exporter::exportView(view, path, o), QString());
    QCOMPARE(static_cast<int>(view.lastLines().size()), 4);
    for (const AlignmentView::Line& line : view.lastLines()) QCOMPARE(line.source, 7);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(f.readAll()).contains(QStringLiteral("4 lines")));
  }

  void aResultWithoutCrossAttentionSaysSo() {
    AlignmentView view;
    view.setResult(test::checkerboard(4));
    view.setViewState(ViewState());
    draw(view);
    QVERIFY(view.problem().contains(QStringLiteral("encoder-decoder")));
    QVERIFY(view.lastLines().empty());
  }
};

ATTNSCOPE_QTEST(AlignmentViewTest)
#include "alignment_view_test.moc"
