// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include "view_state.h"

class QPainter;

namespace attnscope::render {

/// Base of the ten views. A view draws the current result under the current view state; it
/// never computes attention and never talks to another view. The same renderTo() draws the
/// widget on screen (through an offscreen pass where needed), exports PNG/SVG/PDF and serves the
/// CLI, so the GUI and the CLI cannot drift apart.
class AttentionView : public QWidget {
  Q_OBJECT
 public:
  explicit AttentionView(QWidget* parent = nullptr) : QWidget(parent) {}

  virtual ViewKind kind() const = 0;
  virtual void setResult(ResultPtr result) = 0;  // nullptr clears the view
  virtual void setViewState(const ViewState& state) = 0;
  /// Draws the whole view, with title, token labels and colour bar, into rect of any paint device.
  virtual void renderTo(QPainter& painter, const QRect& rect, const QString& title) = 0;

 protected:
  /// Puts `bar`, a row of controls, across the top of the view; the drawing goes below it.
  void setControlBar(QWidget* bar);
  /// Where the view draws on screen: below the control bar, or all of it without one.
  QRect canvas() const;

 Q_SIGNALS:
  /// The user picked a head (grid click, compare selector): the document selects it.
  void headActivated(int layer, int head);
  /// The user changed part of the view state inside the view (pinned row, B of compare).
  void viewStateEdited(const attnscope::render::ViewState& state);

 private:
  QWidget* m_controlBar = nullptr;
};

}  // namespace attnscope::render
