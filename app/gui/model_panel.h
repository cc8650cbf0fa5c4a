// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QHash>
#include <QSet>
#include <QWidget>

#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "run_options.h"

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace attnscope::gui {

/// Chooses the model and how it runs: the model source, the toy layer's configuration (every
/// option the CLI has for it, with presets), cross-attention context and device. It offers only
/// valid choices (heads are divisors of d_model) and reports each edit as a whole spec.
class ModelPanel final : public QWidget {
  Q_OBJECT
 public:
  explicit ModelPanel(QWidget* parent = nullptr);

  void setModelSpec(const ModelSpec& spec);
  void setRunOptions(const RunOptions& options);
  void setModelInfo(const ModelInfo& info);

  /// Chooses a model by its source (what "Open model folder…" and "Open checkpoint file…" end
  /// with). The menu keeps it only once it has opened (setModelInfo).
  void chooseSource(const QString& source);
  /// The dialogs behind "Open checkpoint file…" and "Open model folder…" (also File menu items).
  void openModelFileDialog();
  void openModelFolderDialog();

  /// The two textbook set-ups, by name; used by the presets box and by tests.
  static QList<QPair<QString, ToyConfig>> presets();

 Q_SIGNALS:
  void modelSpecEdited(const attnscope::ModelSpec& spec);
  void runOptionsEdited(const attnscope::gui::RunOptions& options);

 private:
  // The constructor's steps, in order.
  void fillModelMenu();
  void setUpToyFields();
  void setUpRunFields();
  /// The Model, Toy attention layer and Run groups, top to bottom.
  void layOutGroups();
  void connectFields();
  void onModelChosen(int index);
  void onPresetChosen(int index);
  void onToyEdited();
  void onRunEdited();
  void fillHeads(int dModel, int heads);
  void showSpec();
  void addSourceItem(const QString& source);
  /// Removes the opened paths that never opened, except the one in use.
  void dropUnopenedSources();

  ModelSpec m_spec;
  RunOptions m_run;

  QComboBox* m_model;
  QComboBox* m_preset;
  QGroupBox* m_toyBox;
  QComboBox* m_variant;
  QSpinBox* m_inputDim;
  QSpinBox* m_dModel;
  QComboBox* m_heads;
  QComboBox* m_mask;
  QComboBox* m_scale;
  QComboBox* m_tokenizer;
  QSpinBox* m_seed;
  QCheckBox* m_useContext;
  QLineEdit* m_context;
  QCheckBox* m_usePair;
  QLineEdit* m_pair;
  QCheckBox* m_useTarget;  // encoder-decoders: the decoder's input (teacher forcing)
  QLineEdit* m_target;
  QSpinBox* m_generate;  // greedy tokens appended to the decoder's input
  QWidget* m_generateRow;
  QComboBox* m_device;
  QLabel* m_info;
  QSet<QString> m_added;   // sources added to the menu as they were chosen (paths, snapshots)
  QSet<QString> m_opened;  // sources whose model opened (setModelInfo came while in use)
  QHash<QWidget*, QString> m_toyTips;  // the fields' own tips, shown again for the toy layer
};

}  // namespace attnscope::gui
