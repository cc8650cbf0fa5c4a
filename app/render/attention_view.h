// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include "view_state.h"

class QPainter;

namespace attnscope::render {

struct RenderStyle;

/// Base of the ten views. A view draws the current result under the current view state; it
/// never computes attention and never talks to another view. The base owns the result and the
/// state and decides when a view rebuilds: after every result and every change of any state
/// field, through the one hook rebuild(), so a new ViewState field cannot be missed by a view.
/// The same renderTo() draws the widget on screen (through an offscreen pass where needed),
/// exports PNG/SVG/PDF and serves the CLI, so the GUI and the CLI cannot drift apart; its
/// preamble (colours, background, title) is the base's, and each view only draws the rest.
class AttentionView : public QWidget {
  Q_OBJECT
 public:
  explicit AttentionView(QWidget* parent = nullptr) : QWidget(parent) {}

  virtual ViewKind kind() const = 0;
  /// nullptr clears the view. The same result again rebuilds too: a new theme redraws so.
  void setResult(ResultPtr result);
  /// Rebuilds when any field differs from the current state (ViewState::operator==).
  void setViewState(const ViewState& state);
  const ResultPtr& result() const { return m_result; }
  const ViewState& viewState() const { return m_state; }
  /// How many times rebuild() has run (tests check that every state change reaches it).
  int rebuildCount() const { return m_rebuilds; }
  /// Draws the whole view, with title, token labels and colour bar, into rect of any paint device:
  /// in the screen's colours on this widget itself, in the export's (dark on white) everywhere
  /// else unless `themed` asks for the window's colours (its theme, a dark one included).
  void renderTo(QPainter& painter, const QRect& rect, const QString& title, bool themed = false);
  /// The size to export at when `requested` is asked for: the same, or larger where the view would
  /// otherwise shrink its text below a readable size to fit (the pipeline's whole layer).
  QSize legibleExportSize(const QSize& requested, const QString& title, bool themed = false) const;

 protected:
  /// What a rebuild follows: a result (perhaps the same one again) or a new view state.
  enum class Change { Result, State };
  /// Recomputes what the view derives from the result and the state, and schedules a repaint.
  /// A view may keep costly parts when `change` cannot affect them, as long as what decides that
  /// is all the parts depend on (their inputs compared whole, not fields picked by hand).
  virtual void rebuild(Change change) = 0;
  /// Draws what lies below the title into `area`. The painter is saved around it and the
  /// background filled; `onScreen` asks for the hover and selection feedback of the widget.
  virtual void draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                    bool onScreen) = 0;
  /// The smallest area below the title in which an export of this view keeps its text readable
  /// (`width`: the area the export offers); empty when any size will do.
  virtual QSize minimumDrawingSize(const RenderStyle& style, int width) const;
  /// The preamble every drawing shares, then draw(): the screen's or the export's style.
  void paintView(QPainter& painter, const QRect& rect, const QString& title, bool onScreen,
                 bool themed = false);
  /// Draws the view on canvas(), without a title. Views whose screen is a child widget (the
  /// heatmap's plot, the statistics table) override it.
  void paintEvent(QPaintEvent* event) override;

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
  void runRebuild(Change change);

  ResultPtr m_result;
  ViewState m_state;
  int m_rebuilds = 0;
  QWidget* m_controlBar = nullptr;
};

}  // namespace attnscope::render
