// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;
class QTextBrowser;

namespace attnscope::gui {

class Document;
struct GenerationSettings;

/// Under the text box: Step, Play/Pause, Stop, the number of new tokens and the sampling
/// settings; below them the step slider and the prompt followed by the generated tokens (on a
/// coloured background, the selected step's outlined; clicking one selects its step). It sends
/// intents to the document's GenerationController and follows its signals. Shown for models
/// that can generate step by step.
class GenerateBar final : public QWidget {
  Q_OBJECT
 public:
  explicit GenerateBar(Document* document, QWidget* parent = nullptr);

  QPushButton* stepButton() const { return m_step; }
  QPushButton* playButton() const { return m_play; }
  QPushButton* stopButton() const { return m_stop; }
  QSlider* slider() const { return m_slider; }
  /// The prompt and the generated text as shown (plain text).
  QString shownText() const;

 private:
  void updateState();
  void updateSteps();
  void updateSelection();
  void sendSettings();
  QString html() const;

  Document* m_document;
  QPushButton* m_step;
  QPushButton* m_play;
  QPushButton* m_stop;
  QPushButton* m_keep;
  QSpinBox* m_count;
  QDoubleSpinBox* m_temperature;
  QSpinBox* m_topK;
  QDoubleSpinBox* m_topP;
  QDoubleSpinBox* m_penalty;
  QSpinBox* m_seed;
  QSlider* m_slider;
  QLabel* m_stepLabel;
  QTextBrowser* m_output;
};

}  // namespace attnscope::gui
