// SPDX-License-Identifier: GPL-3.0-or-later
// The window on the offscreen platform: typing reaches the views, a grid click opens the heatmap,
// failures show in the banner and the window keeps working.
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>

#include <mutex>
#include <sstream>

#include "attention_view.h"
#include "attnscope/model.h"
#include "compare_view.h"
#include "core_message.h"
#include "document.h"
#include "error_banner.h"
#include "fake_result.h"
#include "heatmap_view.h"
#include "main_window.h"
#include "model_panel.h"
#include "qtest_main.h"
#include "settings.h"
#include "training_panel.h"
#include "view_selector_bar.h"

using attnscope::gui::Document;
using attnscope::gui::MainWindow;
using attnscope::render::ViewKind;

namespace {

/// An encoder as the window sees one: [CLS] words [SEP] (pair words [SEP]), the specials marked,
/// segments set, uniform attention, and fills for a [MASK]. It records the pair it was given.
class FakeEncoder final : public attnscope::Model {
 public:
  /// `pairs` false: a model that reads one sentence (a decoder, as the window sees one).
  explicit FakeEncoder(bool pairs = true, std::string name = "fake-bert")
      : m_pairs(pairs), m_name(std::move(name)) {}
  attnscope::ModelInfo info() const override {
    attnscope::ModelInfo i;
    i.kind = "bert";
    i.name = m_name;
    i.variant = "bert";
    i.layers = 1;
    i.heads = 2;
    i.dModel = 8;
    i.supportsPair = m_pairs;
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
    r.modelName = m_name;
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
  bool m_pairs;
  std::string m_name;
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

  // Issue #32 (1): a model folder that fails to open leaves the window as it was: the model menu
  // lists only models that opened, and the model, text, pair and session are the old ones.
  void aFailedOpenLeavesTheSessionAsItWas() {
    QTemporaryDir dir;
    const QString sessionPath = dir.filePath(QStringLiteral("s.attnscope"));
    {
      Document doc;
      MainWindow window(&doc, nullptr);
      QSignalSpy results(&doc, &Document::resultChanged);
      window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
      QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);  // the first may come during start()
      const auto good = doc.result();
      QVERIFY(!doc.isModified());
      auto* panel = window.findChild<attnscope::gui::ModelPanel*>();
      auto* menu = window.findChild<QComboBox*>(QStringLiteral("modelMenu"));
      QVERIFY(panel && menu);
      const int entries = menu->count();
      for (const QString& name : {QStringLiteral("empty-a"), QStringLiteral("empty-b")}) {
        QVERIFY(QDir(dir.path()).mkdir(name));
        const QString folder = dir.filePath(name);
        panel->chooseSource(folder);
        QTRY_VERIFY_WITH_TIMEOUT(window.bannerMessage().contains(name), 20000);
        QCOMPARE(doc.modelSpec().source, std::string("toy"));
        QCOMPARE(menu->currentData().toString(), QStringLiteral("toy"));
        QCOMPARE(menu->findData(folder), -1);
        QCOMPARE(menu->count(), entries);
        QCOMPARE(doc.result(), good);
        QCOMPARE(doc.text(), QStringLiteral("abc"));
        QCOMPARE(doc.session().model.source, std::string("toy"));
        QVERIFY(!doc.isModified());
      }
      QVERIFY(window.saveSession(sessionPath));
    }
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({sessionPath, std::nullopt, std::nullopt, std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);
    QVERIFY(doc.result());
    QVERIFY(doc.error().isEmpty());
  }

  // Issue #32 (5): a sentence pair belongs to the model it was typed for: another model neither
  // reads nor saves it (and says nothing about it), and going back to the first brings it back.
  void aSentencePairBelongsToItsModel() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("the cat sat"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);
    auto* pairCheck = window.findChild<QCheckBox*>(QStringLiteral("pairCheck"));
    auto* pairEdit = window.findChild<QLineEdit*>(QStringLiteral("pairEdit"));
    QVERIFY(pairCheck && pairEdit);

    auto bert = std::make_shared<FakeEncoder>();
    doc.setModel(QStringLiteral("fake-bert"), bert);
    QTRY_VERIFY_WITH_TIMEOUT(doc.result() && doc.result()->modelName == "fake-bert", 20000);
    QTRY_VERIFY(!pairCheck->isHidden());
    pairCheck->setChecked(true);
    QTest::keyClicks(pairEdit, QStringLiteral("it was tired"));
    QTRY_VERIFY_WITH_TIMEOUT(bert->lastPair() == "it was tired", 20000);

    auto gpt = std::make_shared<FakeEncoder>(false, "fake-gpt");
    doc.setModel(QStringLiteral("fake-gpt"), gpt);
    QTRY_VERIFY_WITH_TIMEOUT(doc.result() && doc.result()->modelName == "fake-gpt", 20000);
    QTRY_VERIFY(pairCheck->isHidden());
    QVERIFY(gpt->lastPair().empty());
    QVERIFY(!doc.runOptions().usePair);
    QVERIFY(!doc.session().run.usePair);
    QVERIFY2(!window.bannerMessage().contains(QStringLiteral("pair")),
             qPrintable(window.bannerMessage()));

    doc.setModel(QStringLiteral("fake-bert"), bert);
    QTRY_VERIFY_WITH_TIMEOUT(doc.result() && doc.result()->modelName == "fake-bert", 20000);
    QVERIFY(doc.runOptions().usePair);
    QCOMPARE(doc.runOptions().pair, QStringLiteral("it was tired"));
    QTRY_VERIFY(!pairCheck->isHidden() && pairCheck->isChecked());

    // A session that carries a pair for a model that reads one sentence: turned off, no notice.
    attnscope::gui::Session session = doc.session();
    session.model.source = "toy";
    const int before = results.count();
    doc.loadSession(session);
    QTRY_VERIFY_WITH_TIMEOUT(results.count() > before, 20000);
    QVERIFY(!doc.runOptions().usePair);
    QVERIFY2(!window.bannerMessage().contains(QStringLiteral("pair")),
             qPrintable(window.bannerMessage()));
  }

  // Issue #32 (9): the window's messages name its own settings, never a CLI flag.
  void messagesNameTheWindowsSettings() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);
    doc.setText(QString(5000, QLatin1Char('a')));  // over the 4096-token limit
    QTRY_VERIFY_WITH_TIMEOUT(!doc.error().isEmpty(), 20000);
    QVERIFY2(!window.bannerMessage().contains(QStringLiteral("--")),
             qPrintable(window.bannerMessage()));
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("shorten the text")),
             qPrintable(window.bannerMessage()));
    for (const char* core :
         {"needs 9 GB, more than the memory limit of 8 GB (raise --memory-limit, or the limit in "
          "Settings)",
          "disk again. Close other programs, or raise the memory limit (--memory-limit, or the "
          "limit in Settings) above 9 GB",
          "needs 9 GB (use fewer tokens, heads or batch items, or raise --memory-limit)",
          "x: out of memory; use smaller sizes or a lower --memory-limit"}) {
      const QString shown = attnscope::gui::CoreMessage::forWindow(QString::fromUtf8(core));
      QVERIFY2(!shown.contains(QStringLiteral("--")) && !shown.contains(QStringLiteral("Settings")),
               qPrintable(shown));
      QVERIFY2(shown.contains(QStringLiteral("Edit › Memory Limit…")), qPrintable(shown));
    }
  }

  // Issue #32 (13): every one of the first ten views has its Ctrl+digit (Ablation the tenth,
  // Ctrl+0; the views added later, Step among them, have none), and no two of the window's
  // actions share a shortcut.
  void everyViewHasItsCtrlDigit() {
    Document doc;
    MainWindow window(&doc, nullptr);
    auto* tabs = window.findChild<QTabWidget*>();
    QVERIFY(tabs);
    QVERIFY(tabs->count() > 10);
    QHash<QString, QString> owners;
    for (QAction* a : window.actions()) {
      for (const QKeySequence& key : a->shortcuts()) {
        const QString name = key.toString();
        QVERIFY2(!owners.contains(name), qPrintable(name + QStringLiteral(": ") + owners[name] +
                                                    QStringLiteral(" and ") + a->text()));
        owners.insert(name, a->text());
      }
    }
    for (int i = 0; i < 10; ++i) {
      const QString key = QStringLiteral("Ctrl+%1").arg((i + 1) % 10);
      QAction* found = nullptr;
      for (QAction* a : window.actions())
        if (a->shortcut() == QKeySequence(key)) found = a;
      QVERIFY2(found, qPrintable(key));
      found->trigger();
      QCOMPARE(tabs->currentIndex(), i);
    }
    QCOMPARE(window.currentView(), window.view(ViewKind::Ablation));
  }

  // Issue 29: a model file (GGUF included) or folder opens from the File menu too, not only from
  // the model selector's last items.
  void fileMenuOpensModels() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QStringList texts;
    for (QAction* a : window.actions()) texts << a->text();
    QVERIFY2(texts.contains(QStringLiteral("Open &Model File…")), qPrintable(texts.join(", ")));
    QVERIFY(texts.contains(QStringLiteral("Open Model &Folder…")));
  }

  // Issue #32 (10): each view's export title names what it shows: the grid all heads, the
  // statistics every head, compare both of its heads.
  void exportTitlesNameWhatEachViewShows() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, 20000);
    doc.setCurrentView(ViewKind::Heatmap);
    QVERIFY2(window.defaultTitle().contains(QStringLiteral("layer 0, head 0")),
             qPrintable(window.defaultTitle()));
    doc.setCurrentView(ViewKind::Grid);
    QVERIFY2(window.defaultTitle().contains(QStringLiteral("all heads")) &&
                 !window.defaultTitle().contains(QStringLiteral("head 0")),
             qPrintable(window.defaultTitle()));
    doc.setCurrentView(ViewKind::Stats);
    QVERIFY2(window.defaultTitle().contains(QStringLiteral("head statistics")) &&
                 !window.defaultTitle().contains(QStringLiteral("head 0")),
             qPrintable(window.defaultTitle()));
    attnscope::render::ViewState s = doc.viewState();
    s.vsLayer = 0;
    s.vsHead = 3;
    doc.setViewState(s);
    doc.setCurrentView(ViewKind::Compare);
    QVERIFY2(window.defaultTitle().contains(QStringLiteral("L0 H0 vs L0 H3")),
             qPrintable(window.defaultTitle()));
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

  // Issue #32 (4): Compare of a 16-layer, 32-head model in a 1024×700 window. Each panel keeps a
  // readable height (the view scrolls instead) and A's and B's titles do not overlap.
  void compareIsReadableOnASmallScreen() {
    Document doc;
    MainWindow window(&doc, nullptr);
    doc.setCurrentView(ViewKind::Compare);
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QApplication::processEvents();
    auto* view = qobject_cast<attnscope::render::CompareView*>(window.view(ViewKind::Compare));
    QVERIFY(view);
    QVERIFY(view->isVisible());
    view->setResult(attnscope::test::gpt2Like(16, 32, 40));
    attnscope::render::ViewState s;
    s.layer = 15;
    s.head = 31;
    s.vsLayer = 14;
    s.vsHead = 30;
    view->setViewState(s);
    QApplication::processEvents();
    const QString shots = qEnvironmentVariable("ATTNSCOPE_SCREENSHOTS");
    if (!shots.isEmpty()) window.grab().save(shots + QStringLiteral("/compare_1024x700.png"));
    for (int i = 0; i < 3; ++i) {
      const QRectF panel = view->panelRect(i);
      QVERIFY2(panel.height() >= attnscope::render::CompareView::kMinPanelHeight - 0.5,
               qPrintable(QStringLiteral("panel %1 is %2 px high in a %3×%4 view")
                              .arg(i)
                              .arg(panel.height())
                              .arg(view->width())
                              .arg(view->height())));
      QVERIFY(!view->titleRect(i).intersects(view->panelRect(i)));
      for (int j = i + 1; j < 3; ++j) {
        QVERIFY2(!view->titleRect(i).intersects(view->titleRect(j)),
                 qPrintable(QStringLiteral("titles %1 and %2 overlap").arg(i).arg(j)));
        QVERIFY(!view->panelRect(i).intersects(view->panelRect(j)));
        QVERIFY(!view->titleRect(i).intersects(view->panelRect(j)));
      }
    }
  }

  // Issue #32 (8): the Train panel fits its side of the window at 1024×700 and 1600×1000:
  // every button lies inside the visible part, and a long corpus path neither widens the panel
  // nor scrolls it sideways.
  void trainPanelFitsItsSide() {
    Document doc;
    MainWindow window(&doc, nullptr);
    auto* panel = window.findChild<attnscope::gui::TrainingPanel*>();
    QVERIFY(panel);
    auto* scroll = qobject_cast<QScrollArea*>(panel->parentWidget()->parentWidget());
    QVERIFY(scroll);
    QTabWidget* tabs = nullptr;
    for (auto* t : window.findChildren<QTabWidget*>())
      if (t->indexOf(scroll) >= 0) tabs = t;
    QVERIFY(tabs);
    tabs->setCurrentWidget(scroll);
    const auto buttonsInside = [&](const QString& when) {
      QApplication::processEvents();
      const QRect visible = scroll->viewport()->rect();
      QVERIFY2(panel->width() <= visible.width(),
               qPrintable(QStringLiteral("%1: panel %2 wide in %3")
                              .arg(when)
                              .arg(panel->width())
                              .arg(visible.width())));
      QCOMPARE(scroll->horizontalScrollBar()->value(), 0);
      QCOMPARE(panel->x(), 0);
      for (QPushButton* b : panel->findChildren<QPushButton*>()) {
        if (!b->isVisibleTo(panel)) continue;
        const QRect r(b->mapTo(scroll->viewport(), QPoint(0, 0)), b->size());
        QVERIFY2(r.left() >= 0 && r.right() <= visible.right(),
                 qPrintable(QStringLiteral("%1: '%2' spans %3..%4 of %5")
                                .arg(when, b->text())
                                .arg(r.left())
                                .arg(r.right())
                                .arg(visible.right())));
      }
    };
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    buttonsInside(QStringLiteral("1024x700"));
    window.resize(1600, 1000);
    buttonsInside(QStringLiteral("1600x1000"));
    window.resize(1024, 700);
    buttonsInside(QStringLiteral("1024x700 again"));
    const int minimum = panel->minimumSizeHint().width();
    auto* path = panel->findChild<QLineEdit*>(QStringLiteral("corpusPath"));
    QVERIFY(path);
    QTemporaryDir dir;
    const QString longPath = dir.path() + QStringLiteral("/") +
                             QStringLiteral("a_rather_long_folder_name_").repeated(8) +
                             QStringLiteral("/corpus_that_does_not_exist.txt");
    path->setFocus();
    path->setText(longPath);
    Q_EMIT path->editingFinished();  // refused: the banner names the path
    QApplication::processEvents();
    buttonsInside(QStringLiteral("long path"));
    QVERIFY2(
        panel->minimumSizeHint().width() <= minimum,
        qPrintable(QStringLiteral("%1 > %2").arg(panel->minimumSizeHint().width()).arg(minimum)));
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

ATTNSCOPE_QTEST(MainWindowTest)
#include "main_window_test.moc"
