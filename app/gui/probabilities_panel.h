// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

class QLabel;
class QTableWidget;

namespace attnscope::gui {

class Document;

/// The selected generation step's candidates: each token with the model's own probability and
/// the one after the sampling settings (what it was drawn from), the chosen one marked, and the
/// entropy of both distributions. Clicking a candidate forces it: the document cuts the
/// generation back to that step and goes on from the candidate ("what if it had written X?").
class ProbabilitiesPanel final : public QWidget {
  Q_OBJECT
 public:
  explicit ProbabilitiesPanel(Document* document, QWidget* parent = nullptr);

  QTableWidget* table() const { return m_table; }
  QLabel* heading() const { return m_heading; }

 private:
  void refresh();

  Document* m_document;
  QLabel* m_heading;
  QTableWidget* m_table;
};

}  // namespace attnscope::gui
