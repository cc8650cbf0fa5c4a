// SPDX-License-Identifier: GPL-3.0-or-later
#include "status_panel.h"

#include <QLabel>
#include <QStatusBar>

#include "compute_worker.h"

namespace attnscope::gui {

StatusPanel::StatusPanel(QStatusBar* bar)
    : QObject(bar),
      m_busy(new QLabel(bar)),
      m_tokens(new QLabel(bar)),
      m_device(new QLabel(bar)),
      m_compute(new QLabel(bar)),
      m_render(new QLabel(bar)),
      m_memory(new QLabel(bar)) {
  m_memory->setObjectName(QStringLiteral("statusMemory"));
  m_tokens->setObjectName(QStringLiteral("statusTokens"));
  m_device->setToolTip(tr("Where the last computation ran"));
  m_compute->setToolTip(tr("Time to open the model (when it changed) and run it"));
  m_render->setToolTip(tr("Time to draw the current view"));
  bar->addWidget(m_busy, 1);
  for (QLabel* label : {m_tokens, m_memory, m_device, m_compute, m_render})
    bar->addPermanentWidget(label);
  m_memory->hide();
  showResult(nullptr, 0, 0);
}

void StatusPanel::showResult(const render::ResultPtr& r, double computeMs, double renderMs) {
  if (!r) {
    m_tokens->setText(tr("No result yet"));
    m_device->clear();
    m_compute->clear();
    m_render->clear();
    return;
  }
  int tokens = 0;
  for (int n : r->group().queryLengths) tokens += n;
  m_tokens->setText(
      (tokens == 1 ? tr("1 token") : tr("%1 tokens").arg(tokens)) + QStringLiteral(" · ") +
      (r->group().batch() == 1 ? tr("1 sentence") : tr("%1 sentences").arg(r->group().batch())));
  m_device->setText(tr("Device: %1").arg(QString::fromStdString(r->device)));
  m_compute->setText(tr("Compute %1 ms").arg(computeMs, 0, 'f', 1));
  m_render->setText(tr("Render %1 ms").arg(renderMs, 0, 'f', 1));
}

void StatusPanel::showMemory(const MemoryEstimate& e, uint64_t limit) {
  if (e.total == 0) {
    m_memory->hide();
    return;
  }
  const auto bytes = [](uint64_t b) { return ComputeWorker::formatBytes(b); };
  m_memory->setText(tr("Memory ≈ %1 of %2").arg(bytes(e.total), bytes(limit)));
  QString layers = e.layersKept == e.layers
                       ? tr("all %1 layers").arg(e.layers)
                       : tr("%1 of %2 layers (memory limit)").arg(e.layersKept).arg(e.layers);
  m_memory->setToolTip(tr("Estimated peak of the last run, checked before anything was allocated "
                          "(limit: Edit › Memory Limit)\nweights %1\nattention kept %2 (%3)\n"
                          "scores kept %4\nactivations and temporaries %5")
                           .arg(e.mappedWeights > 0
                                    ? tr("%1, mapped from the files (paged in as used, not "
                                         "counted)")
                                          .arg(bytes(e.weights))
                                    : bytes(e.weights),
                                bytes(e.attention), layers, e.scores ? bytes(e.scores) : tr("none"),
                                bytes(e.working)));
  m_memory->show();
}

QString StatusPanel::memoryText() const {
  return m_memory->isHidden() ? QString() : m_memory->text();
}

void StatusPanel::setBusy(bool busy) {
  m_busy->setText(busy ? tr("Computing…") : QString());
  if (busy) m_busySince.start();
}

void StatusPanel::setProgress(int done, int total) {
  if (!m_busy->text().isEmpty() && done < total)
    m_busy->setText(progressText(done, total, static_cast<double>(m_busySince.elapsed())));
}

QString StatusPanel::progressText(int done, int total, double elapsedMs) {
  QString text = tr("Computing… %1 of %2 layers done").arg(done).arg(total);
  // From the pace so far: every layer of a stack costs about the same. Only once the wait is
  // worth announcing, and never from the first second, which also holds tokenizing and setup.
  if (done <= 0 || elapsedMs < 1000) return text;
  const double leftMs = elapsedMs / done * (total - done);
  if (leftMs < 1000) return text;
  const int seconds = static_cast<int>(leftMs / 1000 + 0.5);
  const QString left = seconds < 60
                           ? tr("about %1 s left").arg(seconds)
                           : tr("about %1 min %2 s left").arg(seconds / 60).arg(seconds % 60);
  return text + QStringLiteral(", ") + left;
}

QString StatusPanel::tokensText() const { return m_tokens->text(); }

}  // namespace attnscope::gui
