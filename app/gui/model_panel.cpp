// SPDX-License-Identifier: GPL-3.0-or-later
#include "model_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "attnscope/model_catalog.h"
#include "attnscope/model_registry.h"
#include "attnscope/runtime.h"
#include "document.h"
#include "model_spec_equal.h"

namespace attnscope::gui {

namespace {

const QString kOpenFile = QStringLiteral("\x01open-file");
const QString kOpenFolder = QStringLiteral("\x01open-folder");
// Wider layers are possible in the CLI, but a 4096-wide toy layer already holds 200 MB of weights.
constexpr int kMaxWidth = 4096;

template <typename Enum>
void addEnumItem(QComboBox* box, const QString& text, Enum value) {
  box->addItem(text, static_cast<int>(value));
}

template <typename Enum>
Enum enumOf(const QComboBox* box) {
  return static_cast<Enum>(box->currentData().toInt());
}

template <typename Enum>
void selectEnum(QComboBox* box, Enum value) {
  box->setCurrentIndex(std::max(0, box->findData(static_cast<int>(value))));
}

QSpinBox* widthBox(QWidget* parent) {
  auto* box = new QSpinBox(parent);
  box->setRange(1, kMaxWidth);
  box->setKeyboardTracking(false);  // "512" is one edit, not 5, 51 and 512
  box->setAccelerated(true);
  return box;
}

}  // namespace

QList<QPair<QString, ToyConfig>> ModelPanel::presets() {
  ToyConfig chapter5;
  chapter5.variant = Variant::PerHead;
  chapter5.inputDim = 64;
  chapter5.dModel = 64;
  chapter5.heads = 4;
  chapter5.mask = MaskKind::Causal;
  ToyConfig tutorial;
  tutorial.variant = Variant::Fused;
  tutorial.inputDim = 1024;
  tutorial.dModel = 512;
  tutorial.heads = 8;
  tutorial.mask = MaskKind::None;
  return {{tr("Chapter 5: 64 wide, 4 heads of 16, separate heads, causal"), chapter5},
          {tr("Tutorial: 1024 → 512, 8 heads, fused"), tutorial}};
}

ModelPanel::ModelPanel(QWidget* parent)
    : QWidget(parent),
      m_model(new QComboBox(this)),
      m_preset(new QComboBox(this)),
      m_toyBox(new QGroupBox(tr("Toy attention layer"), this)),
      m_variant(new QComboBox(this)),
      m_inputDim(widthBox(this)),
      m_dModel(widthBox(this)),
      m_heads(new QComboBox(this)),
      m_mask(new QComboBox(this)),
      m_scale(new QComboBox(this)),
      m_tokenizer(new QComboBox(this)),
      m_seed(new QSpinBox(this)),
      m_useContext(new QCheckBox(tr("Cross-attention context:"), this)),
      m_context(new QLineEdit(this)),
      m_usePair(new QCheckBox(tr("Sentence pair, second sentence:"), this)),
      m_pair(new QLineEdit(this)),
      m_useTarget(new QCheckBox(tr("Target (decoder input):"), this)),
      m_target(new QLineEdit(this)),
      m_generate(new QSpinBox(this)),
      m_generateRow(new QWidget(this)),
      m_device(new QComboBox(this)),
      m_info(new QLabel(this)) {
  fillModelMenu();
  setUpToyFields();
  setUpRunFields();
  layOutGroups();
  connectFields();
  showSpec();
}

// The bundled model, the toy layer, the cached models a family opens (folders and GGUF files),
// and the open entries.
void ModelPanel::fillModelMenu() {
  m_model->addItem(tr("Bundled: Tiny Shakespeare (trained)"), QStringLiteral("default"));
  m_model->setItemData(
      0, tr("The character-level GPT trained on Shakespeare that ships with attnscope"),
      Qt::ToolTipRole);
  m_model->addItem(tr("Toy layer (configurable)"), QStringLiteral("toy"));
  // Only cached models whose model_type a family opens: a menu entry that can only fail is noise.
  for (const CachedModel& cached : findCachedModels()) {
    const Architecture* architecture =
        findArchitecture(cached.modelType.empty() ? "gpt2" : cached.modelType);
    if (!architecture) continue;
    const QString name = QString::fromStdString(cached.name);
    m_model->addItem(
        tr("%1 (%2, Hugging Face cache)").arg(name, QString::fromStdString(architecture->family)),
        name);
    m_model->setItemData(
        m_model->count() - 1,
        QStringLiteral("%1\n%2").arg(QString::fromStdString(architecture->description),
                                     QString::fromStdString(cached.path)),
        Qt::ToolTipRole);
  }
  // GGUF models of Ollama, LM Studio, llama.cpp and the Hugging Face cache, by their readable
  // names ("ollama: llama3.2:1b (Q4_K_M)"); the id opens them (resolveCachedModel). Files no
  // family maps, or whose header is broken, are left out as above.
  for (const CachedModel& gguf : findGgufModels()) {
    if (!gguf.supported || !gguf.error.empty()) continue;
    m_model->addItem(QString::fromStdString(gguf.name), QString::fromStdString(gguf.id));
    m_model->setItemData(
        m_model->count() - 1,
        tr("GGUF %1, %2\n%3")
            .arg(QString::fromStdString(gguf.modelType), QString::fromStdString(gguf.fileType),
                 QString::fromStdString(gguf.path)),
        Qt::ToolTipRole);
  }
  m_model->insertSeparator(m_model->count());
  m_model->addItem(tr("Open checkpoint file…"), kOpenFile);
  m_model->addItem(tr("Open model folder…"), kOpenFolder);
  m_model->setToolTip(tr("The model whose attention is shown"));
  m_model->setObjectName(QStringLiteral("modelMenu"));
  // Long model names and cache paths must not widen the window (1024 px screens, classroom mode):
  // the combo elides, the popup shows them whole.
  m_model->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_model->setMinimumContentsLength(18);
  for (QComboBox* box : {m_preset, m_variant, m_heads, m_mask, m_scale, m_tokenizer, m_device}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(12);
  }
}

void ModelPanel::setUpToyFields() {
  m_preset->addItem(tr("Custom"));
  for (const auto& preset : presets()) m_preset->addItem(preset.first);
  m_preset->setToolTip(tr("Set-ups from the textbook and the tutorial"));

  addEnumItem(m_variant, tr("Fused (one qkv projection)"), Variant::Fused);
  addEnumItem(m_variant, tr("Per-head (separate heads)"), Variant::PerHead);
  addEnumItem(m_mask, tr("None (encoder)"), MaskKind::None);
  addEnumItem(m_mask, tr("Causal (decoder)"), MaskKind::Causal);
  addEnumItem(m_scale, tr("1/√head_size"), ScaleKind::HeadSize);
  addEnumItem(m_scale, tr("1/√d_model"), ScaleKind::Embedding);
  addEnumItem(m_tokenizer, tr("Characters"), TokenizerKind::Char);
  addEnumItem(m_tokenizer, tr("Words"), TokenizerKind::Word);
  m_seed->setRange(0, std::numeric_limits<int>::max());
  m_seed->setKeyboardTracking(false);
  m_inputDim->setToolTip(tr("Width of the token embeddings fed into the layer (--input-dim)"));
  m_dModel->setToolTip(tr("n_embd: width of q, k, v and the output (--d-model)"));
  m_heads->setToolTip(tr("Number of heads; only divisors of d_model are offered (--heads)"));
  m_seed->setToolTip(tr("Seed of the random weights and embeddings (--seed)"));
}

// The device and the inputs only some models take (context, pair, target), hidden until then.
void ModelPanel::setUpRunFields() {
  addEnumItem(m_device, tr("Automatic"), DeviceKind::Auto);
  addEnumItem(m_device, tr("CPU"), DeviceKind::Cpu);
  addEnumItem(m_device, tr("CUDA GPU"), DeviceKind::Cuda);
  if (!cudaAvailable()) {
    auto* items = qobject_cast<QStandardItemModel*>(m_device->model());
    QStandardItem* cuda = items->item(m_device->findData(static_cast<int>(DeviceKind::Cuda)));
    cuda->setEnabled(false);
    cuda->setToolTip(tr("No CUDA device: this LibTorch build or this machine has no usable GPU"));
  }

  m_context->setPlaceholderText(tr("keys and values come from this text"));
  m_context->setEnabled(false);
  m_usePair->setObjectName(QStringLiteral("pairCheck"));
  m_usePair->setToolTip(
      tr("Encoders: each sentence is joined to this one as [CLS] A [SEP] B [SEP] (--pair)"));
  m_pair->setObjectName(QStringLiteral("pairEdit"));
  m_pair->setPlaceholderText(tr("the second sentence (B)"));
  m_pair->setEnabled(false);
  // Shown for models that take pairs (setModelInfo): elsewhere it could only be ignored.
  m_usePair->hide();
  m_pair->hide();
  m_useTarget->setObjectName(QStringLiteral("targetCheck"));
  m_useTarget->setToolTip(
      tr("Encoder-decoders: the decoder reads its start token and this text (teacher forcing, "
         "--target); off: only the start token"));
  m_target->setObjectName(QStringLiteral("targetEdit"));
  m_target->setPlaceholderText(tr("the translation, or any text in the target language"));
  m_target->setEnabled(false);
  m_generate->setObjectName(QStringLiteral("generateSpin"));
  m_generate->setRange(0, 256);
  m_generate->setToolTip(
      tr("Greedy tokens the model appends to the decoder's input before its attention is shown "
         "(--generate): type only the source sentence and let the model translate it"));
  auto* generateLayout = new QHBoxLayout(m_generateRow);
  generateLayout->setContentsMargins(0, 0, 0, 0);
  generateLayout->addWidget(new QLabel(tr("Generate"), m_generateRow));
  generateLayout->addWidget(m_generate);
  generateLayout->addWidget(new QLabel(tr("tokens"), m_generateRow));
  generateLayout->addStretch(1);
  // Shown for encoder-decoders only (setModelInfo).
  m_useTarget->hide();
  m_target->hide();
  m_generateRow->hide();
  m_info->setWordWrap(true);
  m_info->setTextInteractionFlags(Qt::TextSelectableByMouse);
}

void ModelPanel::layOutGroups() {
  auto* modelBox = new QGroupBox(tr("Model"), this);
  auto* modelForm = new QFormLayout(modelBox);
  modelForm->addRow(tr("Model:"), m_model);
  modelForm->addRow(m_info);

  auto* toyForm = new QFormLayout(m_toyBox);
  toyForm->addRow(tr("Preset:"), m_preset);
  toyForm->addRow(tr("Variant:"), m_variant);
  toyForm->addRow(tr("Input width:"), m_inputDim);
  toyForm->addRow(tr("d_model:"), m_dModel);
  toyForm->addRow(tr("Heads:"), m_heads);
  toyForm->addRow(tr("Mask:"), m_mask);
  toyForm->addRow(tr("Scale:"), m_scale);
  toyForm->addRow(tr("Tokenizer:"), m_tokenizer);
  toyForm->addRow(tr("Seed:"), m_seed);

  auto* runBox = new QGroupBox(tr("Run"), this);
  auto* runForm = new QFormLayout(runBox);
  runForm->addRow(m_useContext);
  runForm->addRow(m_context);
  runForm->addRow(m_usePair);
  runForm->addRow(m_pair);
  runForm->addRow(m_useTarget);
  runForm->addRow(m_target);
  runForm->addRow(m_generateRow);
  runForm->addRow(tr("Device:"), m_device);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(modelBox);
  layout->addWidget(m_toyBox);
  layout->addWidget(runBox);
  layout->addStretch(1);
}

// Every edit becomes a new model spec or new run options.
void ModelPanel::connectFields() {
  connect(m_model, &QComboBox::activated, this, &ModelPanel::onModelChosen);
  connect(m_preset, &QComboBox::activated, this, &ModelPanel::onPresetChosen);
  for (QComboBox* box : {m_variant, m_heads, m_mask, m_scale, m_tokenizer}) {
    connect(box, &QComboBox::currentIndexChanged, this, &ModelPanel::onToyEdited);
  }
  for (QSpinBox* box : {m_inputDim, m_dModel, m_seed}) {
    connect(box, &QSpinBox::valueChanged, this, &ModelPanel::onToyEdited);
  }
  connect(m_useContext, &QCheckBox::toggled, this, &ModelPanel::onRunEdited);
  connect(m_context, &QLineEdit::textEdited, this, &ModelPanel::onRunEdited);
  connect(m_usePair, &QCheckBox::toggled, this, &ModelPanel::onRunEdited);
  connect(m_pair, &QLineEdit::textEdited, this, &ModelPanel::onRunEdited);
  connect(m_useTarget, &QCheckBox::toggled, this, &ModelPanel::onRunEdited);
  connect(m_target, &QLineEdit::textEdited, this, &ModelPanel::onRunEdited);
  connect(m_generate, &QSpinBox::valueChanged, this, &ModelPanel::onRunEdited);
  connect(m_device, &QComboBox::currentIndexChanged, this, &ModelPanel::onRunEdited);
}

void ModelPanel::setModelSpec(const ModelSpec& spec) {
  if (sameModelSpec(spec, m_spec) && sameToyConfig(spec.toy, m_spec.toy)) return;
  m_spec = spec;
  showSpec();
}

void ModelPanel::setRunOptions(const RunOptions& options) {
  m_run = options;
  const QSignalBlocker b1(m_useContext), b2(m_context), b3(m_device), b4(m_usePair), b5(m_pair),
      b6(m_useTarget), b7(m_target), b8(m_generate);
  m_useTarget->setChecked(options.useTarget);
  m_target->setEnabled(options.useTarget);
  if (m_target->text() != options.target) m_target->setText(options.target);
  m_generate->setValue(options.generate);
  m_useContext->setChecked(options.useContext);
  m_context->setEnabled(options.useContext);
  if (m_context->text() != options.context) m_context->setText(options.context);
  m_usePair->setChecked(options.usePair);
  m_pair->setEnabled(options.usePair);
  if (m_pair->text() != options.pair) m_pair->setText(options.pair);
  selectEnum(m_device, options.device);
}

void ModelPanel::setModelInfo(const ModelInfo& info) {
  const int headSize = info.heads > 0 ? info.dModel / info.heads : 0;
  QString text = QStringLiteral("%1 · %2 · %3 · d_model %4")
                     .arg(QString::fromStdString(info.name),
                          info.layers == 1 ? tr("1 layer") : tr("%1 layers").arg(info.layers),
                          (info.heads == 1 ? tr("1 head of %1 dims")
                                           : tr("%1 heads of %2 dims").arg(info.heads))
                              .arg(headSize))
                     .arg(info.dModel);
  if (info.kvHeadsOrHeads() < info.heads)
    text += tr(" · %1 key/value heads (grouped-query)").arg(info.kvHeadsOrHeads());
  if (info.slidingWindow > 0) text += tr(" · sliding window %1").arg(info.slidingWindow);
  // Local and global layers (Gemma 2/3): how many layers see only their window.
  int windowed = 0, window = 0;
  for (int w : info.layerWindows) {
    if (w > 0) ++windowed, window = w;
  }
  // An encoder's window is two-sided (ModernBERT): keys within window / 2 on either side.
  if (windowed > 0 && !info.causal)
    text +=
        tr(" · local window ±%1 on %2 of %3 layers").arg(window / 2).arg(windowed).arg(info.layers);
  else if (windowed > 0)
    text +=
        tr(" · sliding window %1 on %2 of %3 layers").arg(window).arg(windowed).arg(info.layers);
  if (info.attentionSoftcap > 0)
    text +=
        tr(" · scores soft-capped at %1 before softmax (shown capped)").arg(info.attentionSoftcap);
  if (info.causal) text += tr(" · causal");
  if (info.parameterBytes > 0)
    text += tr(" · %1 MB").arg(double(info.parameterBytes) / 1e6, 0, 'f', 1);
  if (!info.weightDtype.empty())
    text += QStringLiteral(" ") + QString::fromStdString(info.weightDtype);
  // Compact weights are widened to float32 as the layers use them; linear layers read them a
  // block at a time, the rest keep float32 copies between edits while memory allows.
  if (info.widenedBytes > 0) text += tr(" · widened to float32 as used");
  // A GGUF file's quantized types: the float32 parameters above do not show them.
  if (!info.fileSummary.empty())
    text += QStringLiteral(" · ") + QString::fromStdString(info.fileSummary);
  m_info->setText(text);
  m_opened.insert(QString::fromStdString(m_spec.source));
  m_usePair->setVisible(info.supportsPair);
  m_pair->setVisible(info.supportsPair);
  m_useTarget->setVisible(info.encoderDecoder());
  m_target->setVisible(info.encoderDecoder());
  m_generateRow->setVisible(info.encoderDecoder());
}

void ModelPanel::addSourceItem(const QString& source) {
  if (m_model->findData(source) >= 0) return;
  const QString memoryPrefix = Document::memorySourcePrefix();
  if (source.startsWith(memoryPrefix)) {
    // One training snapshot at a time: the document keeps only the latest in-memory model.
    for (int i = m_model->count() - 1; i >= 0; --i) {
      if (m_model->itemData(i).toString().startsWith(memoryPrefix)) m_model->removeItem(i);
    }
  }
  m_added.insert(source);
  // Paths go above the separator, so the "Open…" entries stay last.
  const int at = m_model->findData(kOpenFile) - 1;
  const QString name = source.startsWith(memoryPrefix)
                           ? tr("Training: %1").arg(source.mid(memoryPrefix.size()))
                       : QFileInfo(source).fileName().isEmpty() ? source
                                                                : QFileInfo(source).fileName();
  m_model->insertItem(at, name, source);
  m_model->setItemData(
      at, source.startsWith(memoryPrefix) ? tr("The model being trained in the Train tab") : source,
      Qt::ToolTipRole);
}

void ModelPanel::dropUnopenedSources() {
  const QString current = QString::fromStdString(m_spec.source);
  for (int i = m_model->count() - 1; i >= 0; --i) {
    const QString source = m_model->itemData(i).toString();
    if (source == current || !m_added.contains(source) || m_opened.contains(source)) continue;
    m_model->removeItem(i);
    m_added.remove(source);
  }
}

void ModelPanel::showSpec() {
  const QString source = QString::fromStdString(m_spec.source);
  addSourceItem(source);
  dropUnopenedSources();
  const ToyConfig& c = m_spec.toy;
  {
    const QSignalBlocker b0(m_model), b1(m_variant), b2(m_inputDim), b3(m_dModel), b4(m_mask),
        b5(m_scale), b6(m_tokenizer), b7(m_seed), b8(m_preset);
    m_model->setCurrentIndex(m_model->findData(source));
    selectEnum(m_variant, c.variant);
    m_inputDim->setValue(c.inputDim);
    m_dModel->setValue(c.dModel);
    selectEnum(m_mask, c.mask);
    selectEnum(m_scale, c.scale);
    selectEnum(m_tokenizer, c.tokenizer);
    m_seed->setValue(static_cast<int>(std::min<uint64_t>(c.seed, std::numeric_limits<int>::max())));
    int preset = 0;
    const auto all = presets();
    for (int i = 0; i < all.size(); ++i) {
      ToyConfig p = all[i].second;
      p.seed = c.seed;
      p.scale = c.scale;
      p.tokenizer = c.tokenizer;
      if (sameToyConfig(p, c)) preset = i + 1;
    }
    m_preset->setCurrentIndex(preset);
  }
  fillHeads(c.dModel, c.heads);
  const bool toy = m_spec.source == "toy";
  m_toyBox->setEnabled(toy);
  // Disabled widgets still show tool tips, so the reason is one hover away.
  const QString why =
      toy ? QString()
          : tr("Only the toy layer is configurable: %1 has the shape its weights were "
               "trained with. Choose \"Toy layer\" in the model menu to edit these.")
                .arg(m_model->currentText());
  m_toyBox->setToolTip(why);
  if (m_toyTips.isEmpty()) {
    for (QWidget* w : m_toyBox->findChildren<QWidget*>()) m_toyTips.insert(w, w->toolTip());
  }
  for (auto it = m_toyTips.cbegin(); it != m_toyTips.cend(); ++it)
    it.key()->setToolTip(toy ? it.value() : why);
}

void ModelPanel::fillHeads(int dModel, int heads) {
  const QSignalBlocker blocker(m_heads);
  m_heads->clear();
  for (int h = 1; h <= dModel; ++h) {
    if (dModel % h == 0)
      m_heads->addItem(h == 1 ? tr("1 head (%1 dims)").arg(dModel)
                              : tr("%1 heads (%2 dims each)").arg(h).arg(dModel / h),
                       h);
  }
  m_heads->setCurrentIndex(std::max(0, m_heads->findData(heads)));
}

void ModelPanel::onModelChosen(int index) {
  const QString data = m_model->itemData(index).toString();
  if (data == kOpenFile)
    openModelFileDialog();
  else if (data == kOpenFolder)
    openModelFolderDialog();
  else
    chooseSource(data);
}

void ModelPanel::openModelFileDialog() {
  // GGUF files are recognised by content: Ollama's blobs have no extension.
  const QString source = QFileDialog::getOpenFileName(
      this, tr("Open model file"), QString(),
      tr("Model files (*.gguf *.safetensors *.bin);;GGUF files (*.gguf);;Tiny-GPT checkpoints "
         "(*.safetensors);;All files (*)"));
  if (source.isEmpty())  // cancelled: back to the model in use
    showSpec();
  else
    chooseSource(source);
}

void ModelPanel::openModelFolderDialog() {
  const QString source =
      QFileDialog::getExistingDirectory(this, tr("Open model folder (Hugging Face layout)"));
  if (source.isEmpty())
    showSpec();
  else
    chooseSource(source);
}

void ModelPanel::chooseSource(const QString& source) {
  ModelSpec spec = m_spec;
  spec.source = source.toStdString();
  m_spec = spec;
  showSpec();
  Q_EMIT modelSpecEdited(spec);
}

void ModelPanel::onPresetChosen(int index) {
  const auto all = presets();
  if (index < 1 || index > all.size()) return;
  ModelSpec spec = m_spec;
  const uint64_t seed = spec.toy.seed;
  const TokenizerKind tokenizer = spec.toy.tokenizer;
  spec.source = "toy";
  spec.toy = all[index - 1].second;
  spec.toy.seed = seed;  // a preset is a shape, not a particular set of random weights
  spec.toy.tokenizer = tokenizer;
  m_spec = spec;
  showSpec();
  Q_EMIT modelSpecEdited(spec);
}

void ModelPanel::onToyEdited() {
  ModelSpec spec = m_spec;
  ToyConfig& c = spec.toy;
  c.variant = enumOf<Variant>(m_variant);
  c.inputDim = m_inputDim->value();
  c.dModel = m_dModel->value();
  c.mask = enumOf<MaskKind>(m_mask);
  c.scale = enumOf<ScaleKind>(m_scale);
  c.tokenizer = enumOf<TokenizerKind>(m_tokenizer);
  c.seed = static_cast<uint64_t>(m_seed->value());
  c.heads = m_heads->currentData().toInt();
  if (c.heads <= 0 || c.dModel % c.heads != 0) {
    // d_model changed under the heads: keep the largest valid count not above the old one.
    int h = std::max(1, std::min(c.heads, c.dModel));
    while (c.dModel % h != 0) --h;
    c.heads = h;
  }
  m_spec = spec;
  showSpec();
  Q_EMIT modelSpecEdited(spec);
}

void ModelPanel::onRunEdited() {
  RunOptions o;
  o.useContext = m_useContext->isChecked();
  o.context = m_context->text();
  o.usePair = m_usePair->isChecked();
  o.pair = m_pair->text();
  o.useTarget = m_useTarget->isChecked();
  o.target = m_target->text();
  o.generate = m_generate->value();
  o.device = enumOf<DeviceKind>(m_device);
  m_context->setEnabled(o.useContext);
  m_pair->setEnabled(o.usePair);
  m_target->setEnabled(o.useTarget);
  if (o == m_run) return;
  m_run = o;
  Q_EMIT runOptionsEdited(o);
}

}  // namespace attnscope::gui
