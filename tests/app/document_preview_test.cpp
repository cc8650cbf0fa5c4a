// SPDX-License-Identifier: GPL-3.0-or-later
// Long runs show their first layer before the others are done (RunRequest::preview).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "document.h"
#include "qtest_main.h"
#include "tiny_gpt2.h"

using attnscope::gui::Document;
using attnscope::render::ResultPtr;

class DocumentPreviewTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aLongRunShowsItsFirstLayerFirst() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    attnscope::test::TinyGpt2 spec;
    spec.layers = 3;
    spec.heads = 4;
    spec.positions = 1024;
    const std::string folder = dir.filePath(QStringLiteral("gpt2")).toStdString();
    attnscope::test::writeTinyGpt2(folder, spec);
    // 800 letters without 'h' and 'e': one token each (no merge of the vocabulary applies), so
    // the attention is 3 × 4 × 800² floats, 30 MB: a run long enough to preview.
    QString text;
    const QString letters = QStringLiteral("abcdfgijklmnopqrsuvwxyz");
    for (int i = 0; i < 800; ++i) text += letters[i % letters.size()];

    Document doc;
    attnscope::ModelSpec model;
    model.source = folder;
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.setModelSpec(model);
    doc.setText(text);
    doc.recompute();
    // Until the full result of this text arrives.
    const auto finalIndex = [&] {
      for (int i = 0; i < results.count(); ++i) {
        const ResultPtr r = results.at(i).at(0).value<ResultPtr>();
        if (r && !r->preview && r->group().queries() == 800) return i;
      }
      return -1;
    };
    for (int waited = 0; finalIndex() < 0 && waited < 60; ++waited) results.wait(1000);
    const int last = finalIndex();
    QVERIFY(last >= 1);
    const ResultPtr full = results.at(last).at(0).value<ResultPtr>();
    const ResultPtr preview = results.at(last - 1).at(0).value<ResultPtr>();
    QVERIFY(preview->preview);
    QCOMPARE(doc.result(), full);
    // The preview: layer 0 only, of a 3-layer model, on the same tokens as the full result.
    const attnscope::AttentionGroup &p = preview->group(), &f = full->group();
    QCOMPARE(p.layers(), 3);
    QVERIFY(p.hasLayer(0));
    QVERIFY(!p.hasLayer(1) && !p.hasLayer(2));
    QCOMPARE(p.queryLengths, f.queryLengths);
    QCOMPARE(p.tokens.at(0).size(), f.tokens.at(0).size());
    // Its weights are the full result's layer 0, bit for bit.
    const std::size_t n = static_cast<std::size_t>(f.heads()) * 800 * 800;
    QVERIFY(std::equal(p.headMatrix(0, 0, 0), p.headMatrix(0, 0, 0) + n, f.headMatrix(0, 0, 0)));
    QVERIFY(!full->preview);
    QVERIFY(!doc.isBusy());
  }
};

ATTNSCOPE_QTEST(DocumentPreviewTest)
#include "document_preview_test.moc"
