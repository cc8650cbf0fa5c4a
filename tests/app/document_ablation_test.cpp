// SPDX-License-Identifier: GPL-3.0-or-later
// Head ablation through the document and its worker, on the bundled tiny GPT: the map equals
// Model::ablateHeads called directly, progress comes in order up to L·H, cancel ends it without a
// map, a new text clears it, the toy model's refusal is shown, and in the window a click on a
// cell opens that head. Step-by-step generation, the document's other long job, is tested here
// too (one process fewer): the window's tokens and Step view equal Model::startGeneration driven
// directly, a forced candidate continues from it, Stop stops, an edit discards, a refusal is shown.
// And the logit lens, which the document asks for only while its view is open.
#include <QElapsedTimer>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "ablation_view.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "document.h"
#include "generate_bar.h"
#include "main_window.h"
#include "probabilities_panel.h"
#include "step_view.h"

using attnscope::gui::Document;
using attnscope::gui::GenerationController;
using attnscope::gui::GenerationSettings;
using attnscope::gui::MainWindow;
using attnscope::render::AblationStatus;
using attnscope::render::AblationView;
using attnscope::render::ViewKind;
using Phase = attnscope::render::AblationStatus::Phase;

namespace {

constexpr int kWaitMs = 30000;
const QString kText = QStringLiteral("To be, or not to be, that is the question");

attnscope::ModelSpec bundled() {
  attnscope::ModelSpec spec;
  spec.source = "default";
  return spec;
}

/// A document showing the result for `text` on `spec`.
void primeWith(Document& doc, const attnscope::ModelSpec& spec, const QString& text) {
  QSignalSpy results(&doc, &Document::resultChanged);
  doc.setModelSpec(spec);
  doc.setText(text);
  doc.recompute();
  QVERIFY(results.wait(kWaitMs));
}

bool finished(const Document& doc) {
  const Phase p = doc.ablation().phase;
  return p != Phase::Running && p != Phase::Idle;
}

/// What the core gives for the same request, opened and called here, off the document.
attnscope::HeadAblation direct(const QString& text, bool estimate) {
  const auto model = attnscope::openModel(bundled());
  attnscope::AblationRequest request;
  request.run.texts = {text.toStdString()};
  request.estimate = estimate;
  return model->ablateHeads(request);
}

void compareWithDirect(const Document& doc, bool estimate) {
  QCOMPARE(doc.ablation().phase, Phase::Done);
  QVERIFY(doc.ablation().ablation);
  const attnscope::HeadAblation& got = *doc.ablation().ablation;
  const attnscope::HeadAblation want = direct(kText, estimate);
  QCOMPARE(got.estimate, estimate);
  QCOMPARE(got.layers, want.layers);
  QCOMPARE(got.heads, want.heads);
  QCOMPARE(got.target.id, want.target.id);
  QCOMPARE(got.position, want.position);
  QVERIFY(got.baseline == want.baseline);
  QCOMPARE(got.probabilities.data.size(), want.probabilities.data.size());
  for (std::size_t i = 0; i < want.probabilities.data.size(); ++i) {
    // The same model, request and code path: the same numbers, not merely close ones.
    QVERIFY2(got.probabilities.data[i] == want.probabilities.data[i],
             qPrintable(QStringLiteral("head %1: %2 vs %3")
                            .arg(i)
                            .arg(got.probabilities.data[i], 0, 'g', 9)
                            .arg(want.probabilities.data[i], 0, 'g', 9)));
    QVERIFY(got.logProbChange.data[i] == want.logProbChange.data[i]);
  }
}

/// The core's own steps for `text`, greedy, `count` of them, with the forced id at `forcedAt`.
std::vector<attnscope::GenerationStep> directSteps(const QString& text, int count,
                                                   int forcedAt = -1, int64_t forcedId = 0) {
  const auto model = attnscope::openModel(bundled());
  attnscope::GenerationRequest request;
  request.text = text.toStdString();
  request.maxNewTokens = count;
  request.candidates = 10;
  const std::unique_ptr<attnscope::Generation> g = model->startGeneration(request);
  std::vector<attnscope::GenerationStep> steps;
  for (int i = 0; i < count; ++i) {
    attnscope::StepOptions options;
    if (i == forcedAt) options.forcedId = forcedId;
    steps.push_back(g->step(options));
  }
  return steps;
}

/// Steps the document's generation once and waits for the token.
bool stepOnce(GenerationController* g) {
  const int before = g->stepCount();
  g->step();
  return QTest::qWaitFor([&] { return g->stepCount() == before + 1 && !g->isRunning(); }, kWaitMs);
}

GenerationSettings greedy(int count) {
  GenerationSettings s;
  s.maxNewTokens = count;
  return s;
}

}  // namespace

class DocumentAblationTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { qRegisterMetaType<AblationStatus>(); }

  // The logit lens costs a vocabulary softmax per layer and position: runs keep it only while its
  // view is open, opening the view runs again with it, and its last layer at the last token is the
  // result's own next-token candidates.
  void theLogitLensIsComputedOnlyWhileItsViewIsOpen() {
    Document doc;
    primeWith(doc, bundled(), kText);
    QVERIFY(doc.result()->logitLensIds.empty());
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.setCurrentView(ViewKind::LogitLens);
    QTRY_VERIFY_WITH_TIMEOUT(doc.result() && !doc.result()->logitLensIds.empty(), kWaitMs);
    const attnscope::AttentionResult& r = *doc.result();
    const auto& shape = r.logitLensIds.shape;
    const int64_t L = shape[0], T = shape[2], k = shape[3];
    QCOMPARE(L, int64_t{r.group().layers()});
    QCOMPARE(T, int64_t(r.group().tokens[0].size()));
    const std::size_t last = static_cast<std::size_t>(((L - 1) * T + T - 1) * k);
    for (std::size_t i = 0; i < r.nextToken.size(); ++i) {
      QCOMPARE(int64_t(r.logitLensIds.data[last + i]), r.nextToken[i].token.id);
      QVERIFY(std::abs(r.logitLensProbs.data[last + i] - r.nextToken[i].probability) < 1e-6);
    }
    doc.setCurrentView(ViewKind::Heatmap);
    doc.setText(kText + QStringLiteral("!"));
    doc.recompute();
    QTRY_VERIFY_WITH_TIMEOUT(
        doc.result() && doc.result()->group().tokens[0].size() == static_cast<std::size_t>(T + 1),
        kWaitMs);
    QVERIFY(doc.result()->logitLensIds.empty());
  }

  void exactAblationMatchesTheModelAndReportsProgressInOrder() {
    Document doc;
    primeWith(doc, bundled(), kText);
    QCOMPARE(doc.ablation().phase, Phase::Idle);
    const int heads = doc.result()->group().layers() * doc.result()->group().heads();
    QVERIFY(heads > 1);
    QSignalSpy progress(&doc, &Document::ablationProgress);
    doc.runAblation(false);
    QCOMPARE(doc.ablation().phase, Phase::Running);
    QCOMPARE(doc.ablation().total, heads);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QVERIFY2(doc.ablation().phase == Phase::Done, qPrintable(doc.ablation().message));
    QCOMPARE(progress.count(), heads);
    for (int i = 0; i < progress.count(); ++i) {
      QCOMPARE(progress.at(i).at(0).toInt(), i + 1);
      QCOMPARE(progress.at(i).at(1).toInt(), heads);
    }
    QCOMPARE(doc.ablation().done, heads);
    compareWithDirect(doc, false);
  }

  void estimateMatchesTheModel() {
    Document doc;
    primeWith(doc, bundled(), kText);
    doc.runAblation(true);
    QVERIFY(doc.ablation().estimate);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    compareWithDirect(doc, true);
  }

  void cancelEndsWithoutAMap() {
    Document doc;
    primeWith(doc, bundled(), kText);
    QSignalSpy changes(&doc, &Document::ablationChanged);
    doc.runAblation(false);
    doc.cancelAblation();  // before the worker gets to it: the core stops at its first layer
    QVERIFY(doc.ablation().cancelling);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Cancelled);
    QVERIFY(!doc.ablation().ablation);
    QVERIFY(doc.ablation().done < doc.ablation().total);
    AblationView view;
    view.setResult(doc.result());
    view.setAblation(changes.last().at(0).value<AblationStatus>());
    QVERIFY2(view.message().contains(QStringLiteral("cancelled")), qPrintable(view.message()));
    // It can run again afterwards.
    doc.runAblation(true);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Done);
  }

  void aNewTextClearsTheAblation() {
    Document doc;
    primeWith(doc, bundled(), kText);
    doc.runAblation(true);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Done);
    // The same text computed again (another layer opened, say) keeps the map.
    doc.recompute();
    QCOMPARE(doc.ablation().phase, Phase::Done);
    doc.setText(kText + QStringLiteral(" now"));
    doc.recompute();
    QCOMPARE(doc.ablation().phase, Phase::Idle);
    QVERIFY(!doc.ablation().ablation);

    // A running one is cancelled, and what it still sends back is dropped.
    QSignalSpy results(&doc, &Document::resultChanged);
    QVERIFY(results.wait(kWaitMs));
    doc.runAblation(false);
    QCOMPARE(doc.ablation().phase, Phase::Running);
    doc.setText(kText);
    doc.recompute();
    QCOMPARE(doc.ablation().phase, Phase::Idle);
    QVERIFY(results.wait(kWaitMs));
    QTest::qWait(200);
    QCOMPARE(doc.ablation().phase, Phase::Idle);
  }

  void aRefusalIsShown() {
    Document doc;
    attnscope::ModelSpec toy;
    toy.source = "toy";
    primeWith(doc, toy, QStringLiteral("abc"));
    doc.runAblation(false);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Failed);
    QVERIFY2(doc.ablation().message.contains(QStringLiteral("predicts no token")),
             qPrintable(doc.ablation().message));
    AblationView view;
    view.setAblation(doc.ablation());
    QVERIFY2(view.message().contains(doc.ablation().message), qPrintable(view.message()));
  }

  void theWindowRunsItAndAClickOpensTheHead() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), kText, QStringLiteral("default"), std::nullopt});
    window.resize(1400, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kWaitMs);
    auto* tabs = window.findChild<QTabWidget*>();
    auto* view = qobject_cast<AblationView*>(window.view(ViewKind::Ablation));
    QVERIFY(view);
    tabs->setCurrentWidget(view);
    QVERIFY(doc.currentView() == ViewKind::Ablation);
    auto* exact = view->findChild<QPushButton*>(QStringLiteral("ablateExact"));
    auto* cancel = view->findChild<QPushButton*>(QStringLiteral("ablationCancel"));
    QVERIFY(exact && cancel);
    QVERIFY(exact->isEnabled());
    QVERIFY(!cancel->isEnabled());
    QTest::mouseClick(exact, Qt::LeftButton);
    QCOMPARE(doc.ablation().phase, Phase::Running);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Done);
    QVERIFY(view->ablation().ablation);
    view->repaint();
    // For the README: run under xvfb-run with QT_QPA_PLATFORM=xcb to see the real window.
    if (const QByteArray shot = qgetenv("ATTNSCOPE_ABLATION_SCREENSHOT"); !shot.isEmpty())
      QVERIFY(window.grab().save(QString::fromLocal8Bit(shot)));
    const QRectF cell = view->cellRect(1, 2);
    QVERIFY(!cell.isEmpty());
    QTest::mouseClick(view, Qt::LeftButton, {}, cell.center().toPoint());
    QCOMPARE(doc.viewState().layer, 1);
    QCOMPARE(doc.viewState().head, 2);
    QVERIFY(doc.currentView() == ViewKind::Heatmap);
  }
  void generationStepsEqualTheCoreAndTheStepViewShowsThem() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), kText, QStringLiteral("default"), std::nullopt});
    window.resize(1400, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kWaitMs);
    QVERIFY(doc.canGenerate());
    auto* bar = window.findChild<attnscope::gui::GenerateBar*>();
    QVERIFY(bar && bar->isVisible());
    GenerationController* g = doc.generator();
    g->setSettings(greedy(3));
    QTest::mouseClick(bar->stepButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(g->stepCount() == 1 && !g->isRunning(), kWaitMs);
    QVERIFY(stepOnce(g));
    QVERIFY(stepOnce(g));
    QVERIFY(!g->canContinue());  // N reached
    const std::vector<attnscope::GenerationStep> want = directSteps(kText, 3);
    QString text;
    for (int k = 0; k < 3; ++k) {
      QCOMPARE(g->steps()[static_cast<std::size_t>(k)]->token.id,
               want[static_cast<std::size_t>(k)].token.id);
      text += QString::fromStdString(want[static_cast<std::size_t>(k)].token.text);
    }
    QCOMPARE(g->generatedText(), text);
    // A generated line break shows as ⏎ before it, so it is seen.
    QCOMPARE(bar->shownText(),
             kText + QString(text).replace(QLatin1Char('\n'), QStringLiteral("⏎\n")));

    // Step 1 selected: the Step view draws that step's attention, the mean over heads per layer,
    // and the probabilities panel its candidates.
    g->selectStep(1);
    QVERIFY(doc.currentView() == ViewKind::Step);
    auto* view = qobject_cast<attnscope::render::StepView*>(window.view(ViewKind::Step));
    QVERIFY(view);
    QCOMPARE(view->frame().index, 1);
    const attnscope::GenerationStep& s1 = want[1];
    QCOMPARE(s1.attention.shape.size(), std::size_t{3});
    const int L = static_cast<int>(s1.attention.shape[0]),
              H = static_cast<int>(s1.attention.shape[1]),
              T = static_cast<int>(s1.attention.shape[2]);
    QCOMPARE(view->layers(), L);
    QCOMPARE(view->heads(), H);
    QCOMPARE(view->keys(), T);
    QCOMPARE(T, static_cast<int>(g->promptTokens().size()) + 1);  // the prompt and token 0
    for (int l = 0; l < L; ++l) {
      for (int t = 0; t < T; ++t) {
        double sum = 0;
        for (int h = 0; h < H; ++h) {
          const double w = s1.attention.data[static_cast<std::size_t>((l * H + h) * T + t)];
          sum += w;
          QVERIFY2(view->weight(l, h, t) == w,
                   qPrintable(QStringLiteral("L%1 H%2 key %3").arg(l).arg(h).arg(t)));
        }
        QVERIFY(std::abs(view->weight(l, H, t) - sum / H) <= 1e-6 * std::max(1.0, sum / H));
      }
    }
    view->repaint();
    QVERIFY(!view->stripRect(L - 1, H).isEmpty());
    auto* panel = window.findChild<attnscope::gui::ProbabilitiesPanel*>();
    QVERIFY(panel && panel->isVisible());
    QCOMPARE(panel->table()->rowCount(), static_cast<int>(s1.candidates.size()));
    for (int row = 0; row < panel->table()->rowCount(); ++row)
      QCOMPARE(panel->table()->item(row, 1)->data(Qt::UserRole).toLongLong(),
               static_cast<qlonglong>(s1.candidates[static_cast<std::size_t>(row)].token.id));

    // Clicking the second candidate of step 1 writes it there and goes on to N from it.
    const int64_t forced = s1.candidates[1].token.id;
    const QRect cell = panel->table()->visualItemRect(panel->table()->item(1, 1));
    QTest::mouseClick(panel->table()->viewport(), Qt::LeftButton, {}, cell.center());
    QTRY_VERIFY_WITH_TIMEOUT(g->stepCount() == 3 && !g->isRunning() && !g->isPlaying(), kWaitMs);
    const std::vector<attnscope::GenerationStep> after = directSteps(kText, 3, 1, forced);
    QCOMPARE(g->steps()[0]->token.id, want[0].token.id);
    QCOMPARE(g->steps()[1]->token.id, forced);
    QVERIFY(g->steps()[1]->forced);
    QCOMPARE(g->steps()[2]->token.id, after[2].token.id);
    QCOMPARE(g->steps()[2]->attention.data.size(), after[2].attention.data.size());
    for (std::size_t i = 0; i < after[2].attention.data.size(); ++i)
      QVERIFY(g->steps()[2]->attention.data[i] == after[2].attention.data[i]);

    // Keep as text: the continuation joins the prompt, and the generation is gone.
    const QString continuation = g->generatedText();
    doc.keepGeneratedText();
    QCOMPARE(doc.text(), kText + continuation);
    QCOMPARE(g->stepCount(), 0);
  }

  void stopStopsAndStepGoesOnFromThere() {
    Document doc;
    primeWith(doc, bundled(), kText);
    GenerationController* g = doc.generator();
    g->setSettings(greedy(200));
    g->setPlayInterval(0);
    g->play();
    QTRY_VERIFY_WITH_TIMEOUT(g->stepCount() >= 2, kWaitMs);
    g->stop();
    QVERIFY(!g->isPlaying());
    QVERIFY(!g->isRunning());
    const int count = g->stepCount();
    QTest::qWait(200);
    QCOMPARE(g->stepCount(), count);
    // The worker starts the cache again (the stopped step may have been half way) and goes on.
    QVERIFY(stepOnce(g));
    const std::vector<attnscope::GenerationStep> want = directSteps(kText, count + 1);
    for (int k = 0; k <= count; ++k)
      QCOMPARE(g->steps()[static_cast<std::size_t>(k)]->token.id,
               want[static_cast<std::size_t>(k)].token.id);
    // An edit of the prompt discards the generation; the text stays what was typed.
    doc.setText(kText + QStringLiteral(" Aye"));
    QCOMPARE(g->stepCount(), 0);
    QCOMPARE(doc.text(), kText + QStringLiteral(" Aye"));
  }

  void aGenerationRefusalIsShown() {
    Document doc;
    primeWith(doc, bundled(), kText);
    doc.setDebounceInterval(60000);  // the new limit's rerun stays out of the way
    doc.setMemoryLimitBytes(1024);
    GenerationController* g = doc.generator();
    QSignalSpy failures(g, &GenerationController::failed);
    g->setSettings(greedy(5));
    g->step();
    QTRY_VERIFY_WITH_TIMEOUT(!g->isRunning(), kWaitMs);
    QCOMPARE(failures.count(), 1);
    QCOMPARE(g->stepCount(), 0);
    const QString message = failures.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("memory")), qPrintable(message));
    QCOMPARE(doc.error(), message);
  }
  /// For the docs: ATTNSCOPE_GENERATION_SCREENSHOT=out.png under xvfb-run with QT_QPA_PLATFORM=xcb
  /// saves the window after 20 generated tokens; skipped otherwise.
  void screenshotOfAGeneration() {
    const QByteArray shot = qgetenv("ATTNSCOPE_GENERATION_SCREENSHOT");
    if (shot.isEmpty()) QSKIP("set ATTNSCOPE_GENERATION_SCREENSHOT to save the picture");
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("ROMEO: But soft, what light through yonder window"),
                  QStringLiteral("default"), std::nullopt});
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kWaitMs);
    GenerationController* g = doc.generator();
    g->setSettings(greedy(20));
    g->setPlayInterval(0);  // as fast as the model allows, to measure it
    QElapsedTimer wall;
    wall.start();
    g->play();
    QTRY_VERIFY_WITH_TIMEOUT(g->stepCount() == 20 && !g->isPlaying(), kWaitMs);
    const double ms = static_cast<double>(wall.elapsed());
    double core = 0;
    for (int i = 1; i < 20; ++i) core += g->steps()[static_cast<std::size_t>(i)]->milliseconds;
    qInfo(
        "20 tokens in %.0f ms in the window (%.1f ms each, polling included); the core's step "
        "%.2f ms after the first (%.1f ms, with the prompt)",
        ms, ms / 20, core / 19, g->steps()[0]->milliseconds);
    g->selectStep(13);
    QTest::qWait(300);
    QVERIFY(window.grab().save(QString::fromLocal8Bit(shot)));
  }
};

QTEST_MAIN(DocumentAblationTest)
#include "document_ablation_test.moc"
