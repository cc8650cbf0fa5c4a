// SPDX-License-Identifier: GPL-3.0-or-later
#include "view_tabs.h"

#include <QElapsedTimer>

#include "view_factory.h"

namespace attnscope::gui {
namespace {

struct TabText {
  render::ViewKind kind;
  const char* title;
  const char* tip;
};

const TabText kTabs[] = {
    {render::ViewKind::Heatmap, QT_TRANSLATE_NOOP("ViewTabs", "Heatmap"),
     QT_TRANSLATE_NOOP("ViewTabs", "One head: how much each query token attends to each key")},
    {render::ViewKind::Grid, QT_TRANSLATE_NOOP("ViewTabs", "All heads"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "Every head of every layer; click one to open it in the heatmap")},
    {render::ViewKind::Compare, QT_TRANSLATE_NOOP("ViewTabs", "Compare"),
     QT_TRANSLATE_NOOP("ViewTabs", "Two heads side by side and their difference")},
    {render::ViewKind::Stats, QT_TRANSLATE_NOOP("ViewTabs", "Statistics"),
     QT_TRANSLATE_NOOP("ViewTabs", "Entropy and focus of every head")},
    {render::ViewKind::Pipeline, QT_TRANSLATE_NOOP("ViewTabs", "Pipeline"),
     QT_TRANSLATE_NOOP("ViewTabs", "The tensor shapes of each step of the layer")},
    {render::ViewKind::Lines, QT_TRANSLATE_NOOP("ViewTabs", "Lines"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "Queries left, keys right, a line per weight; several heads in colours")},
    {render::ViewKind::Text, QT_TRANSLATE_NOOP("ViewTabs", "Text"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "The text coloured by the attention one token pays to every other")},
    {render::ViewKind::QueryKey, QT_TRANSLATE_NOOP("ViewTabs", "Q · K"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "A query and a key vector and the per-dimension products behind a score")},
    {render::ViewKind::Alignment, QT_TRANSLATE_NOOP("ViewTabs", "Alignment"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "Encoder-decoders: the source tokens each target token looks at")},
    {render::ViewKind::Ablation, QT_TRANSLATE_NOOP("ViewTabs", "Ablation"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "How the top prediction changes when each head is zeroed; click a head to "
                       "open it")},
    {render::ViewKind::Step, QT_TRANSLATE_NOOP("ViewTabs", "Step"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "Generation: the new token's attention over every earlier token, per layer "
                       "and head, at the selected step")},
    {render::ViewKind::LogitLens, QT_TRANSLATE_NOOP("ViewTabs", "Logit lens"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "Causal language models: the token each layer would predict at each "
                       "position, coloured by its probability")},
    {render::ViewKind::Experts, QT_TRANSLATE_NOOP("ViewTabs", "Experts"),
     QT_TRANSLATE_NOOP("ViewTabs",
                       "Mixture-of-experts models: the experts the router chose for each token at "
                       "each layer, as wide as their weight")},
};

}  // namespace

ViewTabs::ViewTabs(QWidget* parent) : QTabWidget(parent) {
  setDocumentMode(true);
  for (const TabText& tab : kTabs) {
    render::AttentionView* view = render::createView(tab.kind, this);
    view->setObjectName(render::toString(tab.kind) + QStringLiteral("View"));
    const int index = addTab(view, tr(tab.title));
    setTabToolTip(index, tr(tab.tip));
    m_slots.push_back({tab.kind, view});
    connect(view, &render::AttentionView::viewStateEdited, this, &ViewTabs::viewStateEdited);
    connect(view, &render::AttentionView::headActivated, this, &ViewTabs::headActivated);
  }
  connect(this, &QTabWidget::currentChanged, this, [this](int index) {
    if (index < 0 || index >= static_cast<int>(m_slots.size())) return;
    sync(m_slots[static_cast<std::size_t>(index)]);
    Q_EMIT currentKindChanged(m_slots[static_cast<std::size_t>(index)].kind);
  });
}

render::AttentionView* ViewTabs::currentView() const {
  return qobject_cast<render::AttentionView*>(currentWidget());
}

render::AttentionView* ViewTabs::view(render::ViewKind kind) const {
  for (const Slot& slot : m_slots) {
    if (slot.kind == kind) return slot.view;
  }
  return nullptr;
}

render::ViewKind ViewTabs::currentKind() const {
  const int index = currentIndex();
  return index >= 0 && index < static_cast<int>(m_slots.size())
             ? m_slots[static_cast<std::size_t>(index)].kind
             : render::ViewKind::Heatmap;
}

void ViewTabs::showKind(render::ViewKind kind) {
  for (int i = 0; i < static_cast<int>(m_slots.size()); ++i) {
    if (m_slots[static_cast<std::size_t>(i)].kind == kind) setCurrentIndex(i);
  }
}

void ViewTabs::setResult(const render::ResultPtr& result) {
  m_result = result;
  QElapsedTimer timer;
  timer.start();
  markStale(true);
  if (render::AttentionView* v = currentView(); v && v->isVisible()) v->repaint();
  m_renderMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

void ViewTabs::setViewState(const render::ViewState& state) {
  m_state = state;
  markStale(false);
}

void ViewTabs::refresh() { markStale(true); }

void ViewTabs::markStale(bool result) {
  const int current = currentIndex();
  for (int i = 0; i < static_cast<int>(m_slots.size()); ++i) {
    Slot& slot = m_slots[static_cast<std::size_t>(i)];
    slot.stateStale = true;
    if (result) slot.resultStale = true;
    if (i == current) sync(slot);
  }
}

void ViewTabs::sync(Slot& slot) {
  if (slot.stateStale) {
    slot.view->setViewState(m_state);
    slot.stateStale = false;
  }
  if (slot.resultStale) {
    slot.view->setResult(m_result);
    slot.resultStale = false;
  }
}

}  // namespace attnscope::gui
