// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI end to end: one keystroke in the text box of the real MainWindow, through the Document,
// the compute worker and the bundled tiny GPT, until the visible view has repainted.
#include <benchmark/benchmark.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QKeyEvent>
#include <QPlainTextEdit>
#include <QString>

#include <algorithm>
#include <vector>

#include "attention_view.h"
#include "attnscope/tiny_gpt.h"
#include "document.h"
#include "main_window.h"

namespace attnscope::bench {
namespace {

using gui::Document;
using gui::MainWindow;

// Hamlet, cut to 100 characters (the bundled model is character-level: 100 tokens). The
// keystroke types the 'a' of "arrows" after it, and the next one deletes it again.
const QString kSentence =
    QStringLiteral(
        "To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer The "
        "slings and arrows")
        .left(100);

constexpr qint64 kTimeoutNs = 30'000'000'000;  // a run that never finishes is an error, not a hang

/// Counts paint events of a view and every widget inside it (the heatmap paints in a QCustomPlot
/// child).
class PaintCounter final : public QObject {
 public:
  explicit PaintCounter(QWidget* view) {
    view->installEventFilter(this);
    for (QWidget* w : view->findChildren<QWidget*>()) w->installEventFilter(this);
  }
  int count() const { return m_count; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Paint) ++m_count;
    return QObject::eventFilter(watched, event);
  }

 private:
  int m_count = 0;
};

/// What a real key press does: the text box inserts or deletes at its cursor.
void pressKey(QWidget* widget, int key, const QString& text) {
  QKeyEvent press(QEvent::KeyPress, key, Qt::NoModifier, text);
  QCoreApplication::sendEvent(widget, &press);
  QKeyEvent release(QEvent::KeyRelease, key, Qt::NoModifier, text);
  QCoreApplication::sendEvent(widget, &release);
}

/// Runs the event loop until `done` or the timeout; false on timeout.
template <typename Done>
bool waitUntil(const QElapsedTimer& timer, Done done) {
  while (!done()) {
    if (timer.nsecsElapsed() > kTimeoutNs) return false;
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  }
  return true;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// Manual time: each iteration is the wall time from the key press until the result for that edit
// has been applied and the visible view (the heatmap tab, as the window opens) has repainted,
// with every other pending repaint of the window (text box, status bar) flushed too. The
// document's debounce is set to 0 for the measurement: it is a deliberate wait for typing to
// stop, reported separately as debounce_ms.
void BM_GuiKeystrokeToRepaint(benchmark::State& state) {
  Document document;
  const int debounceMs = document.debounceInterval();
  document.setDebounceInterval(0);

  // Connected before the window's own slot, so it runs first: the start of applying the result.
  QElapsedTimer timer;
  qint64 applyStartNs = -1, applyEndNs = -1;
  QObject::connect(&document, &Document::resultChanged, &document,
                   [&] { applyStartNs = timer.nsecsElapsed(); });

  MainWindow window(&document, nullptr);
  QObject::connect(&document, &Document::resultChanged, &document,
                   [&] { applyEndNs = timer.nsecsElapsed(); });
  const std::string bundled = defaultModelPath();
  if (bundled.empty()) {
    state.SkipWithError(
        "the bundled model resources/models/tiny-shakespeare.safetensors is missing");
    return;
  }
  MainWindow::StartOptions options;
  options.text = kSentence;
  options.model = QStringLiteral("default");
  options.bundledModel = QString::fromStdString(bundled);
  timer.start();
  window.start(options);
  window.show();
  if (!waitUntil(timer, [&] { return applyEndNs >= 0; })) {
    state.SkipWithError("the first result never came");
    return;
  }
  if (!window.bannerMessage().isEmpty()) {
    state.SkipWithError(window.bannerMessage().toStdString().c_str());
    return;
  }
  auto* edit = window.findChild<QPlainTextEdit*>();
  render::AttentionView* view = window.currentView();
  if (!edit || !view || !view->isVisible()) {
    state.SkipWithError("no text box or no visible view");
    return;
  }
  PaintCounter paints(view);
  edit->setFocus();
  edit->moveCursor(QTextCursor::End);

  bool typed = false;  // whether the extra character is there, to be deleted next
  const auto keystroke = [&]() -> bool {
    applyStartNs = applyEndNs = -1;
    const int paintsBefore = paints.count();
    timer.start();
    if (typed)
      pressKey(edit, Qt::Key_Backspace, QString());
    else
      pressKey(edit, Qt::Key_A, QStringLiteral("a"));
    typed = !typed;
    if (!waitUntil(timer, [&] { return applyEndNs >= 0; })) return false;
    if (!waitUntil(timer, [&] { return paints.count() > paintsBefore; })) return false;
    // Whatever else the edit and the result dirtied (text box, status bar, selectors).
    QCoreApplication::processEvents();
    return true;
  };
  for (int i = 0; i < 6; ++i) {  // warm-up: allocator, caches, fonts
    if (!keystroke()) {
      state.SkipWithError("a warm-up keystroke got no result");
      return;
    }
  }

  std::vector<double> totals;
  double computeMs = 0, applyMs = 0;
  for (auto _ : state) {
    if (!keystroke()) {
      state.SkipWithError("a keystroke got no result or no repaint within 30 s");
      return;
    }
    const double total = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    state.SetIterationTime(total / 1e3);
    totals.push_back(total);
    computeMs += document.computeMs();
    applyMs += static_cast<double>(applyEndNs - applyStartNs) / 1e6;
  }
  const double n = static_cast<double>(totals.size());
  const int tokens = document.result() ? document.result()->group().queryLengths.at(0) : 0;
  state.counters["compute_ms"] = computeMs / n;
  state.counters["apply_paint_ms"] = applyMs / n;
  state.counters["median_ms"] = percentile(totals, 0.5);
  state.counters["p90_ms"] = percentile(totals, 0.9);
  state.counters["max_ms"] = percentile(totals, 1.0);
  state.counters["debounce_ms"] = debounceMs;
  state.counters["tokens"] = tokens;
  state.SetLabel(render::toString(view->kind()).toStdString());
}
BENCHMARK(BM_GuiKeystrokeToRepaint)->Unit(benchmark::kMillisecond)->Iterations(60)->UseManualTime();

}  // namespace
}  // namespace attnscope::bench
