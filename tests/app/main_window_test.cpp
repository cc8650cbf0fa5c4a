// SPDX-License-Identifier: GPL-3.0-or-later
// The window on the offscreen platform: typing reaches the views, a grid click opens the heatmap,
// failures show in the banner and the window keeps working.
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <QApplication>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>

#include <mutex>
#include <sstream>

#include "attention_view.h"
#include "attnscope/model.h"
#include "document.h"
#include "error_banner.h"
#include "heatmap_view.h"
#include "main_window.h"
#include "settings.h"
#include "view_selector_bar.h"

using attnscope::gui::Document;
using attnscope::gui::MainWindow;
using attnscope::render::ViewKind;

namespace {

/// An encoder as the window sees one: [CLS] words [SEP] (pair words [SEP]), the specials marked,
/// segments set, uniform attention, and fills for a [MASK]. It records the pair it was given.
class FakeEncoder final : public attnscope::Model {
 public:
  attnscope::ModelInfo info() const override {
    attnscope::ModelInfo i;
    i.kind = "bert";
    i.name = "fake-bert";
    i.variant = "bert";
    i.layers = 1;
    i.heads = 2;
    i.dModel = 8;
    i.supportsPair = true;
    i.maskToken = "[MASK]";
    return i;
  }
  std::vector<attnscope::Token> tokenize(const std::string& text) const override {
    std::vector<attnscope::Token> out;
    std::istringstream words(text);
    for (std::string w; words >> w;) {
      attnscope::Token t;
      t.id = static_cast<int64_t>(out.size()) + 10;
      t.text = t.label = w;
      out.push_back(t);
    }
    return out;
  }
  attnscope::AttentionResult run(const attnscope::RunRequest& request) const override {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_lastPair = request.pair.value_or("");
    }
    const auto special = [](const char* text, int segment) {
      attnscope::Token t;
      t.text = t.label = text;
      t.special = true;
      t.segment = segment;
      return t;
    };
    std::vector<attnscope::Token> tokens{special("[CLS]", 0)};
    for (const auto& t : tokenize(request.texts.at(0))) tokens.push_back(t);
    tokens.push_back(special("[SEP]", 0));
    if (request.pair) {
      for (auto t : tokenize(*request.pair)) {
        t.segment = 1;
        tokens.push_back(t);
      }
      tokens.push_back(special("[SEP]", 1));
    }
    const int n = static_cast<int>(tokens.size());
    attnscope::AttentionResult r;
    r.modelName = "fake-bert";
    attnscope::AttentionGroup& g = r.group();
    g.attention = attnscope::FloatTensor({1, 1, 2, n, n});
    std::fill(g.attention.data.begin(), g.attention.data.end(), 1.0f / n);
    g.queryLengths = {n};
    g.keyLengths = {n};
    for (int i = 0; i < n; ++i) {
      if (tokens[static_cast<std::size_t>(i)].text != "[MASK]") continue;
      attnscope::MaskFill fill;
      fill.position = i;
      attnscope::Prediction p;
      p.token.label = "Paris";
      p.probability = 0.8f;
      fill.predictions.push_back(p);
      r.maskFills.push_back(fill);
    }
    g.tokens.push_back(std::move(tokens));
    return r;
  }
  std::vector<attnscope::NamedTensor> parameters() const override { return {}; }
  std::string lastPair() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_lastPair;
  }

 private:
  mutable std::mutex m_mutex;
  mutable std::string m_lastPair;
};

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void typingUpdatesTheViews() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("first"), QStringLiteral("toy"), std::nullopt});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // The first result may already have come while the window was being exposed.
    QTRY_VERIFY_WITH_TIMEOUT(results.count() == 1, 20000);

    auto* edit = window.findChild<QPlainTextEdit*>();
    QVERIFY(edit);
    QCOMPARE(edit->toPlainText(), QStringLiteral("first"));
    edit->setFocus();
    edit->moveCursor(QTextCursor::End);
    QTest::keyClicks(edit, QStringLiteral(" and more"));
    QCOMPARE(doc.text(), QStringLiteral("first and more"));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() == 2, 20000);
    QCOMPARE(doc.result()->group().queryLengths.at(0), 14);
    QVERIFY(window.bannerMessage().isEmpty());
  }

  void gridClickOpensTheHeadInTheHeatmap() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
    auto* tabs = window.findChild<QTabWidget*>();
    tabs->setCurrentWidget(window.view(ViewKind::Grid));
    QVERIFY(doc.currentView() == ViewKind::Grid);
    Q_EMIT window.view(ViewKind::Grid)->headActivated(0, 2);
    QCOMPARE(doc.viewState().head, 2);
    QVERIFY(doc.currentView() == ViewKind::Heatmap);
    QCOMPARE(window.currentView(), window.view(ViewKind::Heatmap));
  }

  void errorsShowInTheBannerAndKeepTheResult() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
    const auto good = doc.result();

    QTemporaryDir dir;
    const QString binary = dir.filePath(QStringLiteral("image.txt"));
    QFile f(binary);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray("\x89PNG\0\0", 6));
    f.close();
    QVERIFY(!window.loadTextFile(binary));
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("binary")),
             qPrintable(window.bannerMessage()));
    QCOMPARE(doc.text(), QStringLiteral("abc"));

    QVERIFY(!window.openSession(dir.filePath(QStringLiteral("none.attnscope"))));
    QVERIFY(window.bannerMessage().contains(QStringLiteral("none.attnscope")));

    QSignalSpy errors(&doc, &Document::errorChanged);
    attnscope::ModelSpec spec = doc.modelSpec();
    spec.source = "missing-model";
    doc.setModelSpec(spec);
    QVERIFY(errors.wait(20000));
    QVERIFY(window.bannerMessage().contains(QStringLiteral("missing-model")));
    QCOMPARE(doc.result(), good);
  }

  // An encoder: the pair box appears, its text reaches the model, the mask's fills are shown,
  // the special tokens can be hidden and the export title says so.
  void encoderPairsMasksAndSpecialTokens() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start(
        {QString(), QStringLiteral("the capital is [MASK]"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
    auto* pairCheck = window.findChild<QCheckBox*>(QStringLiteral("pairCheck"));
    auto* pairEdit = window.findChild<QLineEdit*>(QStringLiteral("pairEdit"));
    QVERIFY(pairCheck && pairEdit);
    QVERIFY(pairCheck->isHidden());  // the toy layer takes no pairs

    auto model = std::make_shared<FakeEncoder>();
    doc.setModel(QStringLiteral("fake-bert"), model);
    QTRY_VERIFY_WITH_TIMEOUT(doc.result() && doc.result()->modelName == "fake-bert", 20000);
    QTRY_VERIFY(!pairCheck->isHidden());
    QVERIFY2(window.nextTokenText().contains(QStringLiteral("Mask at token 4: Paris 80%")),
             qPrintable(window.nextTokenText()));

    const int before = results.count();
    pairCheck->setChecked(true);
    QTest::keyClicks(pairEdit, QStringLiteral("of France"));
    QTRY_VERIFY_WITH_TIMEOUT(model->lastPair() == "of France", 20000);
    QTRY_VERIFY_WITH_TIMEOUT(results.count() > before && doc.result()->group().queryLengths[0] == 9,
                             20000);
    auto* heatmap = static_cast<attnscope::render::HeatmapView*>(window.view(ViewKind::Heatmap));
    QTRY_COMPARE(heatmap->matrix().colSegmentStart, 6);

    auto* hide = window.findChild<QCheckBox*>(QStringLiteral("hideSpecialCheck"));
    QVERIFY(hide && !hide->isHidden());
    hide->setChecked(true);
    QVERIFY(doc.viewState().hideSpecial);
    QTRY_COMPARE(heatmap->matrix().rows, 6);
    QVERIFY(window.defaultTitle().contains(QStringLiteral("special tokens hidden")));

    // A later session keeps both.
    QCOMPARE(doc.session().run.pair, QStringLiteral("of France"));
    QVERIFY(doc.session().view.hideSpecial);
  }

  // A 1024×700 screen holds the whole window, in classroom mode too: nothing forces it wider,
  // and the view bar stacks its controls instead of cutting them off.
  void fitsASmallScreen() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
    for (bool classroom : {false, true}) {
      window.setClassroomMode(classroom);
      QApplication::processEvents();
      QVERIFY2(window.minimumSizeHint().width() <= 1024,
               qPrintable(QString::number(window.minimumSizeHint().width())));
      window.resize(1024, 700);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      QApplication::processEvents();
      QCOMPARE(window.width(), 1024);
      auto* bar = window.findChild<attnscope::gui::ViewSelectorBar*>();
      QVERIFY(bar);
      for (QWidget* w : bar->findChildren<QWidget*>()) {
        if (!w->isVisible()) continue;
        const QRect r(w->mapTo(&window, QPoint(0, 0)), w->size());
        QVERIFY2(
            r.right() < window.width(),
            qPrintable(
                QStringLiteral("%1 ends at %2").arg(w->metaObject()->className()).arg(r.right())));
      }
    }
    window.setClassroomMode(false);
  }

  // View › Theme › Dark recolours the window and the views; System brings the original back.
  void darkThemeRecoloursTheViews() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
    window.resize(1200, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QColor before = QApplication::palette().color(QPalette::Window);
    window.setTheme(attnscope::gui::Theme::Dark);
    QApplication::processEvents();
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
    const QImage dark = window.view(ViewKind::Heatmap)->grab().toImage();
    QVERIFY2(QColor(dark.pixel(3, 3)).lightness() < 80,
             qPrintable(QColor(dark.pixel(3, 3)).name()));
    window.setTheme(attnscope::gui::Theme::System);
    QApplication::processEvents();
    QCOMPARE(QApplication::palette().color(QPalette::Window), before);
  }

  // A configuration that fails is not remembered for the next start; one line in the banner,
  // the rest behind Details….
  void aFailedConfigurationIsNotRemembered() {
    QTemporaryDir dir;
    attnscope::gui::Settings settings(dir.filePath(QStringLiteral("s.ini")));
    {
      Document doc;
      MainWindow window(&doc, &settings);
      QSignalSpy results(&doc, &Document::resultChanged);
      window.start({QString(), QStringLiteral("good text"), QStringLiteral("toy"), std::nullopt});
      QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
      window.close();
    }
    QVERIFY(settings.lastConfiguration());
    QCOMPARE(settings.lastConfiguration()->text, QStringLiteral("good text"));
    {
      Document doc;
      MainWindow window(&doc, &settings);
      QSignalSpy errors(&doc, &Document::errorChanged);
      window.start(
          {QString(), QStringLiteral("bad text"), QStringLiteral("missing-model"), std::nullopt});
      QTRY_VERIFY_WITH_TIMEOUT(!doc.error().isEmpty(), 20000);
      window.close();
    }
    QCOMPARE(settings.lastConfiguration()->text, QStringLiteral("good text"));

    attnscope::gui::ErrorBanner banner;
    banner.showMessage(QStringLiteral("first line\nbacktrace 1\nbacktrace 2"));
    QCOMPARE(banner.message(), QStringLiteral("first line\nbacktrace 1\nbacktrace 2"));
    auto* details = banner.findChild<QToolButton*>(QStringLiteral("bannerDetails"));
    QVERIFY(details && !details->isHidden());
    bool shortShown = false;
    for (QLabel* l : banner.findChildren<QLabel*>())
      shortShown = shortShown || l->text() == QStringLiteral("first line");
    QVERIFY(shortShown);
    details->click();
    bool fullShown = false;
    for (QLabel* l : banner.findChildren<QLabel*>())
      fullShown = fullShown || l->text().contains(QStringLiteral("backtrace 2"));
    QVERIFY(fullShown);
    banner.showMessage(QStringLiteral("one line"));
    QVERIFY(details->isHidden());
  }

  void sessionsSaveAndOpen() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.attnscope"));
    {
      Document doc;
      MainWindow window(&doc, nullptr);
      QSignalSpy results(&doc, &Document::resultChanged);
      window.start({QString(), QStringLiteral("saved text"), QStringLiteral("toy"), std::nullopt});
      QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
      doc.selectHead(0, 3);
      QVERIFY(window.saveSession(path));
    }
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({path, std::nullopt, std::nullopt, std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
    QCOMPARE(doc.text(), QStringLiteral("saved text"));
    QCOMPARE(doc.viewState().head, 3);
    QVERIFY(window.windowTitle().contains(QStringLiteral("s.attnscope")));
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
