// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

class QCustomPlot;

namespace attnscope::gui {

/// The training curves: train and validation loss in nats per character against the step, and
/// optionally the loss of guessing uniformly, log(vocabulary size), as a dashed line. The x-axis
/// spans the planned steps while training and the steps done once a run stops early; colours
/// follow the widget's palette (light or dark).
class LossPlot final : public QWidget {
  Q_OBJECT
 public:
  explicit LossPlot(QWidget* parent = nullptr);

  void clear();
  void addTrainLoss(int step, double loss);
  void addValidationLoss(int step, double loss);
  /// log(V) of the corpus; the line spans the steps of the run.
  void setBaseline(double nats, int steps);
  void setBaselineVisible(bool visible);
  /// A run ended after `steps` (stopped early or not): the x-axis and the baseline end there.
  void setStepsDone(int steps);

  /// The x-axis range shown, [0, steps].
  double xAxisEnd() const;

  int trainPointCount() const;
  int validationPointCount() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void rescale();
  void applyPalette();

  QCustomPlot* m_plot;
  double m_baseline = 0;
  int m_steps = 1;
};

}  // namespace attnscope::gui
