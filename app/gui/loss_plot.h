// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

class QCustomPlot;

namespace attnscope::gui {

/// The training curves: train and validation loss in nats per character against the step, and
/// optionally the loss of guessing uniformly, log(vocabulary size), as a dashed line.
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

  int trainPointCount() const;
  int validationPointCount() const;

 private:
  void rescale();

  QCustomPlot* m_plot;
  double m_baseline = 0;
  int m_steps = 1;
};

}  // namespace attnscope::gui
