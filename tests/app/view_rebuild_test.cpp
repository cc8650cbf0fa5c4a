// SPDX-License-Identifier: GPL-3.0-or-later
// Every field of ViewState reaches every view's rebuild hook: AttentionView compares whole
// states, so no view can miss a field by listing the ones it rebuilds for. A new field fails
// this file's build (the field count below) until it is flipped here, and this test fails until
// ViewState::operator== compares it.
#include <QtTest>

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "fake_result.h"
#include "qtest_main.h"
#include "view_factory.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

// Aggregate initialisation from N values compiles exactly when N is at most the field count.
struct AnyField {
  template <typename T>
  operator T() const;
};
template <typename T, typename Indices, typename = void>
struct TakesValues : std::false_type {};
template <typename T, std::size_t... I>
struct TakesValues<T, std::index_sequence<I...>, std::void_t<decltype(T{(void(I), AnyField{})...})>>
    : std::true_type {};
template <typename T, std::size_t N>
constexpr bool hasFields = TakesValues<T, std::make_index_sequence<N>>::value &&
                           !TakesValues<T, std::make_index_sequence<N + 1>>::value;

static_assert(hasFields<ViewState, 24>,
              "ViewState gained or lost a field: flip it in flips() below (and compare it in "
              "ViewState::operator==)");

// One edit per field of ViewState, each changing that field alone.
std::vector<std::pair<const char*, std::function<void(ViewState&)>>> flips() {
  return {
      {"group", [](ViewState& s) { s.group = "cross"; }},
      {"layer", [](ViewState& s) { s.layer = 1; }},
      {"head", [](ViewState& s) { s.head = 2; }},
      {"item", [](ViewState& s) { s.item = 1; }},
      {"vsLayer", [](ViewState& s) { s.vsLayer = 1; }},
      {"vsHead", [](ViewState& s) { s.vsHead = 3; }},
      {"vsItem", [](ViewState& s) { s.vsItem = 1; }},
      {"palette", [](ViewState& s) { s.palette = QStringLiteral("magma"); }},
      {"showScores", [](ViewState& s) { s.showScores = true; }},
      {"scoreTerm", [](ViewState& s) { s.scoreTerm = QStringLiteral("c2p"); }},
      {"perHeadScale", [](ViewState& s) { s.perHeadScale = true; }},
      {"pinnedQuery", [](ViewState& s) { s.pinnedQuery = 2; }},
      {"queryGroup",
       [](ViewState& s) {
         s.queryGroup = {1, 2};
       }},
      {"aggregate", [](ViewState& s) { s.aggregate = QueryAggregate::Sum; }},
      {"pinnedKey", [](ViewState& s) { s.pinnedKey = 1; }},
      {"lineHeads",
       [](ViewState& s) {
         s.lineHeads = {0, 1};
       }},
      {"lineThreshold", [](ViewState& s) { s.lineThreshold = 0.5; }},
      {"textSource", [](ViewState& s) { s.textSource = TextSource::Rollout; }},
      {"hideSpecial", [](ViewState& s) { s.hideSpecial = true; }},
      {"mergeWords", [](ViewState& s) { s.mergeWords = true; }},
      {"classroom", [](ViewState& s) { s.classroom = true; }},
      {"logScale", [](ViewState& s) { s.logScale = true; }},
      {"dropSink", [](ViewState& s) { s.dropSink = 1; }},
      {"statistic", [](ViewState& s) { s.statistic = QStringLiteral("sink"); }},
  };
}

const ViewKind kKinds[] = {ViewKind::Heatmap,  ViewKind::Grid,     ViewKind::Compare,
                           ViewKind::Stats,    ViewKind::Pipeline, ViewKind::Lines,
                           ViewKind::Text,     ViewKind::QueryKey, ViewKind::Alignment,
                           ViewKind::Ablation, ViewKind::LogitLens};

}  // namespace

class ViewRebuildTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void flipsCoverEveryFieldOnce() {
    // Each flip changes the state as operator== sees it, and no two flips change the same thing.
    const auto all = flips();
    QCOMPARE(all.size(), std::size_t(24));
    for (std::size_t i = 0; i < all.size(); ++i) {
      ViewState a;
      all[i].second(a);
      QVERIFY2(a != ViewState(), all[i].first);
      for (std::size_t j = 0; j < i; ++j) {
        ViewState b;
        all[j].second(b);
        ViewState both = a;
        all[j].second(both);
        QVERIFY2(both != a && both != b, all[i].first);
      }
    }
  }

  void everyFieldReachesEveryView() {
    const ResultPtr result = test::gpt2Like(2, 4, 6);
    for (ViewKind kind : kKinds) {
      std::unique_ptr<AttentionView> view(createView(kind));
      view->resize(640, 480);
      view->setResult(result);
      for (const auto& [field, flip] : flips()) {
        const QByteArray where = toString(kind).toLatin1() + " · " + field;
        ViewState changed;
        flip(changed);
        const int before = view->rebuildCount();
        view->setViewState(changed);
        QVERIFY2(view->rebuildCount() == before + 1, where.constData());
        QVERIFY(view->viewState() == changed);
        // The same state again is no change, and going back is one.
        view->setViewState(changed);
        QVERIFY2(view->rebuildCount() == before + 1, where.constData());
        view->setViewState(ViewState());
        QVERIFY2(view->rebuildCount() == before + 2, where.constData());
      }
    }
  }

  void everyResultReachesEveryView() {
    // The same result again rebuilds too: that is how a new theme redraws the views.
    const ResultPtr result = test::gpt2Like(2, 4, 6);
    for (ViewKind kind : kKinds) {
      std::unique_ptr<AttentionView> view(createView(kind));
      const int before = view->rebuildCount();
      view->setResult(result);
      view->setResult(result);
      view->setResult(nullptr);
      QCOMPARE(view->rebuildCount(), before + 3);
      QVERIFY(!view->result());
    }
  }
};

ATTNSCOPE_QTEST(ViewRebuildTest)
#include "view_rebuild_test.moc"
