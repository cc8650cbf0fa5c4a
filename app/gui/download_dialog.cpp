// SPDX-License-Identifier: GPL-3.0-or-later
#include "download_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "attnscope/model_registry.h"
#include "download_worker.h"

namespace attnscope::gui {

namespace {

/// The families by the names people know them, from the registry (so a new family shows here).
QString familiesText() {
  QStringList families;
  for (const Architecture& a : supportedArchitectures()) {
    const QString family = QString::fromStdString(a.family);
    if (!families.contains(family)) families << family;
  }
  return DownloadDialog::tr(
             "attnscope opens these families: %1 (config.json's model_type: %2), and GGUF files "
             "of %3. Examples: gpt2, bert-base-uncased, HuggingFaceTB/SmolLM2-135M.")
      .arg(families.join(QStringLiteral(", ")), QString::fromStdString(supportedModelTypes()),
           QString::fromStdString(ggufArchitectures()));
}

}  // namespace

DownloadDialog::DownloadDialog(QWidget* parent)
    : QDialog(parent),
      m_repo(new QLineEdit(this)),
      m_include(new QLineEdit(this)),
      m_bar(new QProgressBar(this)),
      m_file(new QLabel(this)),
      m_status(new QLabel(this)),
      m_download(new QPushButton(tr("&Download"), this)),
      m_cancel(new QPushButton(tr("Cancel"), this)),
      m_cancelFlag(std::make_shared<std::atomic<bool>>(false)),
      m_worker(new DownloadWorker(m_cancelFlag)) {
  setWindowTitle(tr("Download Model from the Hugging Face Hub"));
  m_repo->setObjectName(QStringLiteral("repoEdit"));
  m_repo->setPlaceholderText(tr("gpt2 or ORG/NAME"));
  m_repo->setToolTip(
      tr("The model's id on huggingface.co (HF_ENDPOINT for a mirror; HF_TOKEN for "
         "gated models)"));
  m_include->setObjectName(QStringLiteral("includeEdit"));
  m_include->setPlaceholderText(tr("optional: GGUF repositories: the file, e.g. *Q8_0.gguf"));
  m_include->setToolTip(
      tr("Glob patterns of extra files, separated by spaces; in a GGUF "
         "repository, the one .gguf file to fetch"));
  auto* families = new QLabel(familiesText(), this);
  families->setObjectName(QStringLiteral("familiesLabel"));
  families->setWordWrap(true);
  auto* where = new QLabel(
      tr("Files go into the Hugging Face cache that Python's transformers also uses, and only "
         "those attnscope needs: the configuration, the tokenizer and the weights."),
      this);
  where->setWordWrap(true);
  m_bar->setObjectName(QStringLiteral("progressBar"));
  m_bar->setRange(0, 1000);
  m_bar->setValue(0);
  m_bar->setTextVisible(false);
  m_file->setObjectName(QStringLiteral("fileLabel"));
  m_status->setObjectName(QStringLiteral("statusLabel"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_download->setObjectName(QStringLiteral("downloadButton"));
  m_download->setDefault(true);
  m_download->setEnabled(false);
  m_cancel->setObjectName(QStringLiteral("cancelButton"));

  auto* form = new QFormLayout;
  form->addRow(tr("Model &id:"), m_repo);
  form->addRow(tr("&Files:"), m_include);
  auto* buttons = new QDialogButtonBox(this);
  buttons->addButton(m_download, QDialogButtonBox::AcceptRole);
  buttons->addButton(m_cancel, QDialogButtonBox::RejectRole);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(families);
  layout->addWidget(where);
  layout->addWidget(m_bar);
  layout->addWidget(m_file);
  layout->addWidget(m_status);
  layout->addWidget(buttons);
  resize(560, sizeHint().height());

  connect(m_repo, &QLineEdit::textChanged, this, [this](const QString& text) {
    m_download->setEnabled(!m_running && !text.trimmed().isEmpty());
  });
  connect(m_download, &QPushButton::clicked, this, &DownloadDialog::startDownload);
  connect(m_cancel, &QPushButton::clicked, this, &DownloadDialog::reject);

  m_worker->moveToThread(&m_thread);
  connect(this, &DownloadDialog::downloadRequested, m_worker, &DownloadWorker::download);
  connect(m_worker, &DownloadWorker::progress, this, &DownloadDialog::onProgress);
  connect(m_worker, &DownloadWorker::finished, this, &DownloadDialog::onFinished);
  m_thread.setObjectName(QStringLiteral("attnscope-download"));
  m_thread.start();
}

DownloadDialog::~DownloadDialog() {
  m_cancelFlag->store(true);
  m_thread.quit();
  m_thread.wait();
  delete m_worker;  // its thread has ended
}

void DownloadDialog::startDownload() {
  const QString repo = m_repo->text().trimmed();
  if (m_running || repo.isEmpty()) return;
  m_cancelFlag->store(false);
  setRunning(true);
  m_bar->setRange(0, 0);  // busy until the sizes are known
  m_file->clear();
  m_status->setText(tr("Asking the Hub for %1…").arg(repo));
  Q_EMIT downloadRequested(repo, QStringLiteral("main"),
                           m_include->text().split(QLatin1Char(' '), Qt::SkipEmptyParts));
}

void DownloadDialog::reject() {
  if (!m_running) {
    QDialog::reject();
    return;
  }
  m_cancelFlag->store(true);
  m_cancel->setEnabled(false);
  m_status->setText(tr("Cancelling…"));
}

void DownloadDialog::onProgress(int permille, const QString& text, const QString& file) {
  if (!m_running) return;
  if (permille >= 0) {
    m_bar->setRange(0, 1000);
    m_bar->setValue(permille);
  }
  m_file->setText(file);
  if (!text.isEmpty()) m_status->setText(text);
}

void DownloadDialog::onFinished(bool ok, const QString& source, const QString& message) {
  setRunning(false);
  m_bar->setRange(0, 1000);
  if (ok) {
    m_bar->setValue(1000);
    m_status->setText(tr("Downloaded: %1").arg(source));
    Q_EMIT modelDownloaded(source);
    accept();
    return;
  }
  m_bar->setValue(0);
  m_file->clear();
  m_status->setText(message.isEmpty()
                        ? tr("Cancelled. The files already complete stay in the cache; Download "
                             "resumes the rest.")
                        : message);
}

void DownloadDialog::setRunning(bool running) {
  m_running = running;
  m_repo->setEnabled(!running);
  m_include->setEnabled(!running);
  m_download->setEnabled(!running && !m_repo->text().trimmed().isEmpty());
  m_cancel->setEnabled(true);
  m_cancel->setText(running ? tr("Cancel") : tr("Close"));
}

}  // namespace attnscope::gui
