// SPDX-License-Identifier: GPL-3.0-or-later
#include "probabilities_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "document.h"

namespace attnscope::gui {

namespace {

QString candidateLabel(const Token& t) {
  return QString::fromStdString(t.label.empty() ? t.text : t.label);
}

QString candidatePercent(double p) {
  return p <= 0 ? QStringLiteral("0")
                : QStringLiteral("%1%").arg(100 * p, 0, 'f', p < 0.001 ? 3 : 1);
}

}  // namespace

ProbabilitiesPanel::ProbabilitiesPanel(Document* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_heading(new QLabel(this)),
      m_table(new QTableWidget(0, 4, this)) {
  setObjectName(QStringLiteral("probabilitiesPanel"));
  m_heading->setWordWrap(true);
  m_heading->setTextFormat(Qt::PlainText);
  m_table->setObjectName(QStringLiteral("candidateTable"));
  m_table->setHorizontalHeaderLabels({QString(), tr("Token"), tr("p model"), tr("p sampled")});
  m_table->horizontalHeaderItem(2)->setToolTip(tr("The model's own softmax, before any setting"));
  m_table->horizontalHeaderItem(3)->setToolTip(
      tr("After the repetition penalty, temperature, top-k and top-p: what the token was drawn "
         "from (greedy: the penalty only)"));
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionMode(QAbstractItemView::NoSelection);
  m_table->setFocusPolicy(Qt::NoFocus);
  m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(3, QHeaderView::ResizeToContents);
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
  // Room for the close calls without scrolling: the header and six candidates.
  m_table->setMinimumHeight((m_table->fontMetrics().height() + 4) * 7 + 6);
  m_table->setToolTip(tr("Click a token to make the model write it here instead, and go on"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_heading);
  layout->addWidget(m_table, 1);

  GenerationController* g = m_document->generator();
  connect(m_table, &QTableWidget::cellClicked, this, [this, g](int row, int) {
    const QTableWidgetItem* item = m_table->item(row, 1);
    if (!item || g->selectedStep() < 0) return;
    g->force(g->selectedStep(), item->data(Qt::UserRole).toLongLong());
  });
  connect(g, &GenerationController::selectedStepChanged, this, &ProbabilitiesPanel::refresh);
  connect(g, &GenerationController::stepsChanged, this, &ProbabilitiesPanel::refresh);
  refresh();
}

void ProbabilitiesPanel::refresh() {
  const GenerationController* g = m_document->generator();
  const int k = g->selectedStep();
  m_table->setRowCount(0);
  if (k < 0) {
    m_heading->setText(tr("Probabilities: no generation step yet."));
    return;
  }
  const GenerationStep& s = *g->steps()[static_cast<std::size_t>(k)];
  bool chosenListed = false;
  for (const GenerationCandidate& c : s.candidates) chosenListed |= c.token.id == s.token.id;
  m_heading->setText(
      tr("Step %1: wrote '%2'%3%4. Entropy %5 nats (model), %6 after the settings. Click a "
         "token to force it.")
          .arg(k + 1)
          .arg(candidateLabel(s.token), s.forced ? tr(" (forced)") : QString(),
               chosenListed ? QString() : tr(", not among the top %1").arg(s.candidates.size()))
          .arg(s.entropy, 0, 'f', 3)
          .arg(s.entropyAfter, 0, 'f', 3));
  m_table->setRowCount(static_cast<int>(s.candidates.size()));
  for (int row = 0; row < static_cast<int>(s.candidates.size()); ++row) {
    const GenerationCandidate& c = s.candidates[static_cast<std::size_t>(row)];
    const bool chosen = c.token.id == s.token.id;
    auto* mark = new QTableWidgetItem(chosen ? QStringLiteral("▶") : QString());
    auto* token = new QTableWidgetItem(candidateLabel(c.token));
    token->setData(Qt::UserRole, static_cast<qlonglong>(c.token.id));
    auto* model = new QTableWidgetItem(candidatePercent(c.pModel));
    auto* after = new QTableWidgetItem(candidatePercent(c.p));
    model->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    after->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (chosen) {
      QFont bold = token->font();
      bold.setBold(true);
      for (QTableWidgetItem* i : {mark, token, model, after}) i->setFont(bold);
    }
    m_table->setItem(row, 0, mark);
    m_table->setItem(row, 1, token);
    m_table->setItem(row, 2, model);
    m_table->setItem(row, 3, after);
  }
}

}  // namespace attnscope::gui
