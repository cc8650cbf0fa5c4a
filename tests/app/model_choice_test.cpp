// SPDX-License-Identifier: GPL-3.0-or-later
// Choosing the model: the bundled trained model opens at start-up, the toy layer with a banner when
// it is missing, over-long input and dropped scores are announced, next-token candidates show, and
// the model menu offers every source.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGroupBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "../core/tiny_gguf.h"
#include "attnscope/tiny_gpt.h"
#include "document.h"
#include "main_window.h"
#include "model_panel.h"
#include "qtest_main.h"

using attnscope::TinyGpt;
using attnscope::TinyGptConfig;
using attnscope::gui::Document;
using attnscope::gui::MainWindow;
using attnscope::gui::ModelPanel;

namespace {

constexpr int kModelWaitMs = 30000;

/// Every character the tests type, so only the notices they provoke on purpose appear.
const std::string kAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,.:;!?'-\n";

/// A fresh (untrained) tiny GPT checkpoint: a trained one is not needed to test the plumbing.
QString writeCheckpoint(const QTemporaryDir& dir, int blockSize) {
  TinyGptConfig c;
  c.nLayer = 2;
  c.nHead = 2;
  c.nEmbd = 16;
  c.blockSize = blockSize;
  const QString path = dir.filePath(QStringLiteral("tiny.safetensors"));
  TinyGpt::create(c, TinyGpt::vocabularyOf(kAlphabet), 7).save(path.toStdString());
  return path;
}

}  // namespace

class ModelChoiceTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void cleanup() { qunsetenv("ATTNSCOPE_DEFAULT_MODEL"); }

  void theBundledModelOpensAtStartup() {
    QTemporaryDir dir;
    qputenv("ATTNSCOPE_DEFAULT_MODEL", writeCheckpoint(dir, 64).toUtf8());
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kModelWaitMs);
    QCOMPARE(doc.modelSpec().source, std::string("default"));
    QVERIFY(doc.modelInfo());
    QCOMPARE(doc.modelInfo()->kind, std::string("tiny-gpt"));
    QCOMPARE(doc.modelInfo()->layers, 2);
    QVERIFY(doc.text().contains(QStringLiteral("hear me speak")));
    QVERIFY2(window.bannerMessage().isEmpty(), qPrintable(window.bannerMessage()));
    // A language model: five candidates for the next character under the text box.
    QCOMPARE(doc.result()->nextToken.size(), std::size_t(5));
    QVERIFY(window.nextTokenText().startsWith(QStringLiteral("Next:")));
    QCOMPARE(window.nextTokenText().count(QLatin1Char('%')), 5);
  }

  void aMissingBundledModelFallsBackToTheToyWithABanner() {
    QTemporaryDir dir;
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    MainWindow::StartOptions start;
    start.bundledModel = dir.filePath(QStringLiteral("gone.safetensors"));
    window.start(start);
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kModelWaitMs);
    QCOMPARE(doc.modelSpec().source, std::string("toy"));
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("bundled model")),
             qPrintable(window.bannerMessage()));
    QVERIFY(window.nextTokenText().isEmpty());  // the toy layer predicts nothing
  }

  void overlongInputIsAnnouncedNotRefused() {
    QTemporaryDir dir;
    const QString checkpoint = writeCheckpoint(dir, 16);
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    MainWindow::StartOptions start;
    start.model = checkpoint;
    start.text = QStringLiteral("this line is forty characters long, yes.");
    window.start(start);
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kModelWaitMs);
    QVERIFY(doc.error().isEmpty());
    QCOMPARE(doc.result()->group().queries(), 16);
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("the last 16")),
             qPrintable(window.bannerMessage()));

    // Characters the model never saw are announced too.
    doc.setText(QStringLiteral("naïve 😀"));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 2, kModelWaitMs);
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("unknown"), Qt::CaseInsensitive) ||
                 window.bannerMessage().contains(QStringLiteral("vocabulary")),
             qPrintable(window.bannerMessage()));
  }

  void largeAttentionDropsTheScoresAndSaysSo() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.setScoresLimitBytes(64);  // a 1-layer, 4-head toy over 5 tokens is 400 bytes
    MainWindow::StartOptions start;
    start.model = QStringLiteral("toy");
    start.text = QStringLiteral("hello");
    window.start(start);
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kModelWaitMs);
    QVERIFY(doc.result()->group().scores.empty());
    QVERIFY(!doc.result()->group().attention.empty());
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("Scores are not kept")),
             qPrintable(window.bannerMessage()));

    doc.setScoresLimitBytes(1ull << 30);
    doc.setText(QStringLiteral("hello!"));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 2, kModelWaitMs);
    QVERIFY(!doc.result()->group().scores.empty());
    QVERIFY(window.bannerMessage().isEmpty());
  }

  void anInMemoryModelIsShownAndKept() {
    TinyGptConfig c;
    c.nLayer = 3;
    c.nHead = 2;
    c.nEmbd = 8;
    c.blockSize = 16;
    const TinyGpt model = TinyGpt::create(c, TinyGpt::vocabularyOf(kAlphabet), 3);
    Document doc;
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.setText(QStringLiteral("abc"));
    doc.setModel(QStringLiteral("step 5"), model.asModel("snapshot"));
    QVERIFY(results.wait(kModelWaitMs));
    QCOMPARE(doc.modelSpec().source, std::string("memory:step 5"));
    QCOMPARE(doc.result()->group().layers(), 3);

    // Away to the toy and back by the menu's source string: the snapshot is still there.
    attnscope::ModelSpec toy;
    doc.setModelSpec(toy);
    QVERIFY(results.wait(kModelWaitMs));
    QCOMPARE(doc.result()->group().layers(), 1);
    attnscope::ModelSpec back;
    back.source = "memory:step 5";
    doc.setModelSpec(back);
    QVERIFY(results.wait(kModelWaitMs));
    QCOMPARE(doc.result()->group().layers(), 3);

    // A snapshot the document no longer holds is an error, not a crash.
    QSignalSpy errors(&doc, &Document::errorChanged);
    back.source = "memory:step 9";
    doc.setModelSpec(back);
    QVERIFY(errors.wait(kModelWaitMs));
    QVERIFY(doc.error().contains(QStringLiteral("step 9")));
  }

  void theMenuOffersEverySourceAndExplainsDisabledFields() {
    // A Hugging Face cache with one model in it (only config.json is needed to be listed).
    QTemporaryDir cache;
    const QString snapshot = cache.filePath(QStringLiteral("models--gpt2/snapshots/0123abcd"));
    QVERIFY(QDir().mkpath(snapshot));
    QFile config(snapshot + QStringLiteral("/config.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(R"({"model_type": "gpt2"})");
    config.close();
    // A cached model of an architecture no family opens is left out of the menu.
    const QString other = cache.filePath(QStringLiteral("models--org--xlnet-base/snapshots/4567"));
    QVERIFY(QDir().mkpath(other));
    QFile otherConfig(other + QStringLiteral("/config.json"));
    QVERIFY(otherConfig.open(QIODevice::WriteOnly));
    otherConfig.write(R"({"model_type": "xlnet"})");
    otherConfig.close();
    // An Ollama store with a Llama GGUF (listed by its readable name) and a phi2 one (no family
    // maps it: left out).
    QTemporaryDir ollama;
    const auto ollamaModel = [&](const QString& name, const std::string& arch, char digit) {
      const QString manifest =
          ollama.filePath(QStringLiteral("manifests/registry.ollama.ai/library/%1/1b").arg(name));
      QVERIFY(QDir().mkpath(QFileInfo(manifest).path()));
      QVERIFY(QDir().mkpath(ollama.filePath(QStringLiteral("blobs"))));
      const std::string digest(64, digit);
      QFile m(manifest);
      QVERIFY(m.open(QIODevice::WriteOnly));
      m.write(QByteArray::fromStdString(
          R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
          digest + R"("}]})"));
      QFile blob(ollama.filePath(QString::fromStdString("blobs/sha256-" + digest)));
      QVERIFY(blob.open(QIODevice::WriteOnly));
      blob.write(QByteArray::fromStdString(attnscope::test::tinyGguf(arch, 15)));
    };
    ollamaModel(QStringLiteral("tiny"), "llama", 'a');
    ollamaModel(QStringLiteral("other"), "phi2", 'b');
    const bool hadCache = qEnvironmentVariableIsSet("HF_HUB_CACHE");
    const QByteArray oldCache = qgetenv("HF_HUB_CACHE");
    const bool hadOllama = qEnvironmentVariableIsSet("OLLAMA_MODELS");
    const QByteArray oldOllama = qgetenv("OLLAMA_MODELS");
    qputenv("HF_HUB_CACHE", cache.path().toUtf8());
    qputenv("OLLAMA_MODELS", ollama.path().toUtf8());
    ModelPanel panel;
    if (hadCache)
      qputenv("HF_HUB_CACHE", oldCache);
    else
      qunsetenv("HF_HUB_CACHE");
    if (hadOllama)
      qputenv("OLLAMA_MODELS", oldOllama);
    else
      qunsetenv("OLLAMA_MODELS");
    auto* menu = panel.findChild<QComboBox*>(QStringLiteral("modelMenu"));
    QVERIFY(menu);
    QStringList items;
    for (int i = 0; i < menu->count(); ++i) items << menu->itemText(i);
    QVERIFY2(items.join(QLatin1Char('|')).contains(QStringLiteral("Bundled: Tiny Shakespeare")),
             qPrintable(items.join(QLatin1Char('|'))));
    QVERIFY(items.contains(QStringLiteral("Toy layer (configurable)")));
    QVERIFY2(items.contains(QStringLiteral("gpt2 (gpt2, Hugging Face cache)")),
             qPrintable(items.join(QLatin1Char('|'))));
    QCOMPARE(
        menu->itemData(items.indexOf(QStringLiteral("gpt2 (gpt2, Hugging Face cache)"))).toString(),
        QStringLiteral("gpt2"));
    QVERIFY2(!items.join(QLatin1Char('|')).contains(QStringLiteral("xlnet")),
             qPrintable(items.join(QLatin1Char('|'))));
    const QString gguf = QStringLiteral("ollama: tiny:1b (Q4_K_M)");
    QVERIFY2(items.contains(gguf), qPrintable(items.join(QLatin1Char('|'))));
    QCOMPARE(menu->itemData(items.indexOf(gguf)).toString(), QStringLiteral("ollama:tiny:1b"));
    QVERIFY2(!items.join(QLatin1Char('|')).contains(QStringLiteral("other")),
             qPrintable(items.join(QLatin1Char('|'))));
    QVERIFY(items.contains(QStringLiteral("Open checkpoint file…")));
    QVERIFY(items.contains(QStringLiteral("Open model folder…")));

    attnscope::ModelSpec spec;
    spec.source = "default";
    panel.setModelSpec(spec);
    QCOMPARE(menu->currentData().toString(), QStringLiteral("default"));
    QGroupBox* toyBox = nullptr;
    for (QGroupBox* box : panel.findChildren<QGroupBox*>()) {
      if (box->title().contains(QStringLiteral("Toy"))) toyBox = box;
    }
    QVERIFY(toyBox);
    QVERIFY(!toyBox->isEnabled());
    QVERIFY(toyBox->toolTip().contains(QStringLiteral("Only the toy layer")));
    spec.source = "toy";
    panel.setModelSpec(spec);
    QVERIFY(toyBox->isEnabled());
    QVERIFY(toyBox->toolTip().isEmpty());
  }

  // A GGUF file's matrices stay quantized: the model line says what the file held.
  void theModelLineSaysWhatAGgufFileHeld() {
    ModelPanel panel;
    attnscope::ModelInfo info;
    info.name = "model.gguf";
    info.layers = 2;
    info.heads = 4;
    info.dModel = 256;
    info.weightDtype = "F32";
    info.fileSummary =
        "GGUF Q4_K_M: 113 Q4_K, 17 Q6_K, 65 F32 tensors, 0.8 GB; kept quantized, dequantized per "
        "layer as it runs";
    panel.setModelInfo(info);
    QString all;
    for (const QLabel* label : panel.findChildren<QLabel*>()) all += label->text() + '\n';
    QVERIFY2(all.contains(QString::fromStdString(" · " + info.fileSummary)), qPrintable(all));
  }
};

ATTNSCOPE_QTEST(ModelChoiceTest)
#include "model_choice_test.moc"
