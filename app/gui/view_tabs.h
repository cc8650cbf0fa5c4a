// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QTabWidget>

#include <vector>

#include "attention_view.h"
#include "view_state.h"

namespace attnscope::gui {

/// The ten views as tabs. It holds the result and the view state the document last sent and
/// brings a view up to date only when its tab is shown: drawing ten views per keystroke would be
/// waste. The views' intents (a clicked head, an edited state) are passed on.
class ViewTabs final : public QTabWidget {
  Q_OBJECT
 public:
  explicit ViewTabs(QWidget* parent = nullptr);

  render::AttentionView* currentView() const;
  render::AttentionView* view(render::ViewKind kind) const;
  render::ViewKind currentKind() const;
  void showKind(render::ViewKind kind);

  /// Every view gets the new result when it is next shown; the visible one now, and repainted.
  void setResult(const render::ResultPtr& result);
  void setViewState(const render::ViewState& state);
  /// Redraws every view from scratch (the palette changed): the visible one now.
  void refresh();
  /// Wall time of the last repaint setResult made of the visible view.
  double lastRenderMs() const { return m_renderMs; }

 Q_SIGNALS:
  void viewStateEdited(const attnscope::render::ViewState& state);
  void headActivated(int layer, int head);
  void currentKindChanged(attnscope::render::ViewKind kind);

 private:
  struct Slot {
    render::ViewKind kind;
    render::AttentionView* view;
    bool resultStale = true;
    bool stateStale = true;
  };
  void markStale(bool result);
  void sync(Slot& slot);

  std::vector<Slot> m_slots;
  render::ResultPtr m_result;
  render::ViewState m_state;
  double m_renderMs = 0;
};

}  // namespace attnscope::gui
