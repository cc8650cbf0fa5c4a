// SPDX-License-Identifier: GPL-3.0-or-later
#include "generate_bar.h"

#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QTextBrowser>
#include <QTextCursor>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

#include "document.h"

namespace attnscope::gui {

namespace {

QString barPiece(const Token& t) { return QString::fromStdString(t.special ? t.label : t.text); }

// Text for HTML, with line breaks kept and spaces not collapsed.
QString htmlText(const QString& s) {
  QString out = s.toHtmlEscaped();
  out.replace(QLatin1Char('\n'), QStringLiteral("⏎<br>"));
  out.replace(QStringLiteral("  "), QStringLiteral("&nbsp; "));
  return out;
}

}  // namespace

GenerateBar::GenerateBar(Document* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_step(new QPushButton(tr("Step"), this)),
      m_play(new QPushButton(tr("Play"), this)),
      m_stop(new QPushButton(tr("Stop"), this)),
      m_keep(new QPushButton(tr("Keep as text"), this)),
      m_count(new QSpinBox(this)),
      m_temperature(new QDoubleSpinBox(this)),
      m_topK(new QSpinBox(this)),
      m_topP(new QDoubleSpinBox(this)),
      m_penalty(new QDoubleSpinBox(this)),
      m_seed(new QSpinBox(this)),
      m_slider(new QSlider(Qt::Horizontal, this)),
      m_stepLabel(new QLabel(this)),
      m_output(new QTextBrowser(this)) {
  setObjectName(QStringLiteral("generateBar"));
  m_step->setToolTip(tr("Generate one more token"));
  m_play->setToolTip(tr("Generate up to N tokens, a few per second; press again to pause"));
  m_stop->setToolTip(tr("Stop now, abandoning the token being computed"));
  m_keep->setToolTip(tr("Append the generated text to the prompt in the text box"));
  m_count->setRange(1, 1024);
  m_count->setValue(20);
  m_count->setPrefix(tr("N "));
  m_count->setToolTip(tr("The most new tokens to generate"));
  m_temperature->setRange(0, 10);
  m_temperature->setDecimals(2);
  m_temperature->setSingleStep(0.1);
  m_temperature->setPrefix(tr("T "));
  m_temperature->setSpecialValueText(tr("T 0 (greedy)"));
  m_temperature->setToolTip(
      tr("Temperature: 0 takes the most likely token; above 0 samples from softmax(logits / T)"));
  m_topK->setRange(0, 1 << 20);
  m_topK->setPrefix(tr("top-k "));
  m_topK->setSpecialValueText(tr("top-k all"));
  m_topK->setToolTip(tr("Sampling: only the k most likely tokens (0: all)"));
  m_topP->setRange(0.01, 1);
  m_topP->setDecimals(2);
  m_topP->setSingleStep(0.05);
  m_topP->setValue(1);
  m_topP->setPrefix(tr("top-p "));
  m_topP->setToolTip(tr("Sampling: the most likely tokens until their probability reaches p"));
  m_penalty->setRange(0.1, 10);
  m_penalty->setDecimals(2);
  m_penalty->setSingleStep(0.1);
  m_penalty->setValue(1);
  m_penalty->setPrefix(tr("repeat "));
  m_penalty->setToolTip(
      tr("Repetition penalty: above 1 discourages tokens already in the text (1: none)"));
  m_seed->setRange(0, 1 << 30);
  m_seed->setPrefix(tr("seed "));
  m_seed->setToolTip(tr("Sampling seed: the same seed writes the same text"));
  m_slider->setRange(0, 0);
  m_slider->setPageStep(1);
  m_slider->setToolTip(
      tr("Replay the generation: the step shown in the Step view and the "
         "probabilities"));
  m_slider->setAccessibleName(tr("Generation step"));
  m_stepLabel->setMinimumWidth(
      m_stepLabel->fontMetrics().horizontalAdvance(QStringLiteral("step 000/000 · 0000 ms")));
  m_output->setObjectName(QStringLiteral("generatedText"));
  m_output->setOpenLinks(false);
  m_output->setReadOnly(true);
  m_output->setMaximumHeight(m_output->fontMetrics().lineSpacing() * 5 + 12);
  m_output->setToolTip(tr("The prompt, then the generated tokens; click one to show its step"));
  m_output->setPlaceholderText(tr("Generated tokens appear here, after the prompt."));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(3);
  // Three short rows rather than two long ones: the bar shares the left panel, which must keep
  // the window within 1024 pixels (one row of five spin boxes widened the panel by 200).
  auto* buttons = new QHBoxLayout;
  auto* heading = new QLabel(tr("<b>Generate</b>"), this);
  buttons->addWidget(heading);
  for (QWidget* w : {static_cast<QWidget*>(m_step), static_cast<QWidget*>(m_play),
                     static_cast<QWidget*>(m_stop)})
    buttons->addWidget(w);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  auto* sampling = new QGridLayout;
  sampling->addWidget(m_temperature, 0, 0);
  sampling->addWidget(m_topK, 0, 1);
  sampling->addWidget(m_topP, 0, 2);
  sampling->addWidget(m_penalty, 1, 0);
  sampling->addWidget(m_seed, 1, 1);
  sampling->addWidget(m_count, 1, 2);
  sampling->setColumnStretch(3, 1);
  layout->addLayout(sampling);
  auto* replay = new QHBoxLayout;
  replay->addWidget(m_slider, 1);
  replay->addWidget(m_stepLabel);
  replay->addWidget(m_keep);
  layout->addLayout(replay);
  layout->addWidget(m_output);

  GenerationController* g = m_document->generator();
  connect(m_step, &QPushButton::clicked, g, &GenerationController::step);
  connect(m_play, &QPushButton::clicked, this, [g] {
    if (g->isPlaying())
      g->pause();
    else
      g->play();
  });
  connect(m_stop, &QPushButton::clicked, g, &GenerationController::stop);
  connect(m_keep, &QPushButton::clicked, m_document, &Document::keepGeneratedText);
  connect(m_slider, &QSlider::valueChanged, g, &GenerationController::selectStep);
  connect(m_output, &QTextBrowser::anchorClicked, this, [g](const QUrl& url) {
    if (url.scheme() == QLatin1String("step")) g->selectStep(url.path().toInt());
  });
  for (QSpinBox* s : {m_count, m_topK, m_seed})
    connect(s, &QSpinBox::valueChanged, this, &GenerateBar::sendSettings);
  for (QDoubleSpinBox* s : {m_temperature, m_topP, m_penalty})
    connect(s, &QDoubleSpinBox::valueChanged, this, &GenerateBar::sendSettings);
  connect(g, &GenerationController::stateChanged, this, &GenerateBar::updateState);
  connect(g, &GenerationController::stepsChanged, this, &GenerateBar::updateSteps);
  connect(g, &GenerationController::selectedStepChanged, this, &GenerateBar::updateSelection);
  connect(m_document, &Document::textChanged, this, &GenerateBar::updateSteps);
  sendSettings();
  updateSteps();
}

void GenerateBar::sendSettings() {
  GenerationSettings s;
  s.maxNewTokens = m_count->value();
  s.sampling.temperature = m_temperature->value();
  s.sampling.topK = m_topK->value();
  s.sampling.topP = m_topP->value();
  s.sampling.repetitionPenalty = m_penalty->value();
  s.sampling.seed = static_cast<uint64_t>(m_seed->value());
  // Top-k, top-p and the seed act when sampling only (greedy ignores them, as the core does).
  const bool sampling = s.sampling.temperature > 0;
  m_topK->setEnabled(sampling);
  m_topP->setEnabled(sampling);
  m_seed->setEnabled(sampling);
  m_document->generator()->setSettings(s);
  updateState();
}

void GenerateBar::updateState() {
  const GenerationController* g = m_document->generator();
  m_play->setText(g->isPlaying() ? tr("Pause") : tr("Play"));
  m_step->setEnabled(!g->isRunning() && !g->isPlaying() && g->canContinue());
  m_play->setEnabled(g->isPlaying() || g->canContinue());
  m_stop->setEnabled(g->isPlaying() || g->isRunning());
  m_keep->setEnabled(!g->isPlaying() && !g->isRunning() && g->stepCount() > 0);
}

void GenerateBar::updateSteps() {
  const GenerationController* g = m_document->generator();
  {
    const QSignalBlocker block(m_slider);
    m_slider->setRange(0, std::max(0, g->stepCount() - 1));
    m_slider->setEnabled(g->stepCount() > 1);
  }
  updateSelection();
  updateState();
}

void GenerateBar::updateSelection() {
  const GenerationController* g = m_document->generator();
  const int k = g->selectedStep();
  {
    const QSignalBlocker block(m_slider);
    if (k >= 0) m_slider->setValue(k);
  }
  m_stepLabel->setText(
      g->stepCount() == 0
          ? tr("no steps")
          : tr("step %1/%2 · %3 ms")
                .arg(k + 1)
                .arg(g->stepCount())
                .arg(k >= 0 ? g->steps()[static_cast<std::size_t>(k)]->milliseconds : 0.0, 0, 'f',
                     1));
  m_output->setHtml(html());
  // Keep the newest token in sight while playing.
  if (k == g->stepCount() - 1) m_output->moveCursor(QTextCursor::End);
}

QString GenerateBar::html() const {
  const GenerationController* g = m_document->generator();
  if (g->stepCount() == 0 && g->prompt().isEmpty()) return {};
  const QPalette& pal = palette();
  const bool dark = pal.color(QPalette::Base).lightness() < 128;
  const QString generatedBg = dark ? QStringLiteral("#5a3a12") : QStringLiteral("#fde3c4");
  const QString selectedBg = dark ? QStringLiteral("#a0601a") : QStringLiteral("#f6a54c");
  QString out = QStringLiteral("<span style=\"color:%1\">%2</span>")
                    .arg(pal.color(QPalette::PlaceholderText).name(), htmlText(g->prompt()));
  for (int i = 0; i < g->stepCount(); ++i) {
    const GenerationStep& s = *g->steps()[static_cast<std::size_t>(i)];
    out += QStringLiteral(
               "<a href=\"step:%1\" style=\"text-decoration:none; color:%2; "
               "background-color:%3\">%4</a>")
               .arg(i)
               .arg(pal.color(QPalette::Text).name(),
                    i == g->selectedStep() ? selectedBg : generatedBg,
                    (s.forced ? QStringLiteral("<u>%1</u>") : QStringLiteral("%1"))
                        .arg(htmlText(barPiece(s.token))));
  }
  return out;
}

QString GenerateBar::shownText() const { return m_output->toPlainText(); }

}  // namespace attnscope::gui
