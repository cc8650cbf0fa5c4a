// SPDX-License-Identifier: GPL-3.0-or-later
// File › Download Model… against the Hub stand-in (tests/app/hub/hub_stand_in.py on 127.0.0.1,
// never the internet): the model downloads off the UI thread with a moving progress bar, joins
// the model selector and opens; Cancel stops a slow download with nothing linked into the
// snapshot; a gated model shows the Hub's advice.
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "document.h"
#include "download_dialog.h"
#include "main_window.h"

using attnscope::gui::Document;
using attnscope::gui::DownloadDialog;
using attnscope::gui::MainWindow;

namespace {

constexpr int kWaitMs = 20000;

}  // namespace

class DownloadDialogTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_cache.isValid());
    m_hub.setProgram(QStringLiteral("/usr/bin/python3"));
    m_hub.setArguments({QStringLiteral(ATTNSCOPE_HUB_STAND_IN)});
    m_hub.start();
    QVERIFY2(m_hub.waitForStarted(5000), "python3 did not start");
    QVERIFY2(m_hub.waitForReadyRead(10000), qPrintable(m_hub.readAllStandardError()));
    const QJsonObject ports = QJsonDocument::fromJson(m_hub.readLine()).object();
    QVERIFY(ports.value(QStringLiteral("hub")).toInt() > 0);
    qputenv("HF_ENDPOINT", "http://127.0.0.1:" + QByteArray::number(ports.value("hub").toInt()));
    qputenv("HF_HUB_CACHE", QFile::encodeName(m_cache.path()));
    qputenv("HOME", QFile::encodeName(m_cache.path()));  // no other cache, no stored token
    for (const char* name : {"HF_TOKEN", "HF_HOME", "HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN",
                             "http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"})
      qunsetenv(name);
  }

  void cleanupTestCase() {
    m_hub.closeWriteChannel();  // the stand-in serves until its stdin closes
    if (!m_hub.waitForFinished(3000)) m_hub.kill();
  }

  // The whole path a new user takes: the menu, the id, Download; the model opens.
  void downloadedModelJoinsTheSelectorAndOpens() {
    Document doc;
    MainWindow window(&doc, nullptr);
    doc.setText(QStringLiteral("hehe he"));
    QAction* menuItem = nullptr;
    for (QAction* a : window.findChildren<QAction*>()) {
      if (a->text() == QStringLiteral("&Download Model…")) menuItem = a;
    }
    QVERIFY2(menuItem, "no File › Download Model…");
    menuItem->trigger();
    auto* dialog = window.findChild<DownloadDialog*>();
    QVERIFY(dialog);
    QVERIFY(dialog->findChild<QLabel*>("familiesLabel")->text().contains("gpt2"));
    auto* bar = dialog->findChild<QProgressBar*>("progressBar");
    int highest = -1;
    connect(bar, &QProgressBar::valueChanged, this, [&](int v) { highest = std::max(highest, v); });
    dialog->findChild<QLineEdit*>("repoEdit")->setText(QStringLiteral("org/tiny-gpt2"));
    QSignalSpy downloaded(dialog, &DownloadDialog::modelDownloaded);
    QSignalSpy opened(&doc, &Document::modelInfoChanged);
    QTest::mouseClick(dialog->findChild<QPushButton*>("downloadButton"), Qt::LeftButton);
    QVERIFY(dialog->isDownloading());  // on its thread: the click returned at once
    QVERIFY(downloaded.wait(kWaitMs));
    QCOMPARE(downloaded.first().first().toString(), QStringLiteral("org/tiny-gpt2"));
    QCOMPARE(highest, 1000);
    auto* models = window.findChild<QComboBox*>("modelMenu");
    QCOMPARE(models->currentData().toString(), QStringLiteral("org/tiny-gpt2"));
    QTRY_VERIFY2_WITH_TIMEOUT(doc.modelInfo() && doc.modelInfo()->kind == "gpt2",
                              qPrintable(doc.error()), kWaitMs);
    QCOMPARE(doc.modelInfo()->layers, 1);
    QCOMPARE(doc.modelSpec().source, std::string("org/tiny-gpt2"));
  }

  void cancelLeavesNothingInTheSnapshot() {
    DownloadDialog dialog;
    dialog.findChild<QLineEdit*>("repoEdit")->setText(QStringLiteral("org/slow"));
    auto* file = dialog.findChild<QLabel*>("fileLabel");
    auto* status = dialog.findChild<QLabel*>("statusLabel");
    dialog.startDownload();
    QTRY_VERIFY_WITH_TIMEOUT(file->text().contains("model.safetensors") &&
                                 dialog.findChild<QProgressBar*>("progressBar")->value() > 0,
                             kWaitMs);
    QTest::mouseClick(dialog.findChild<QPushButton*>("cancelButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.isDownloading(), 2000);
    QVERIFY2(status->text().startsWith("Cancelled"), qPrintable(status->text()));
    const QDir repo(m_cache.filePath("models--org--slow"));
    QVERIFY(repo.exists("blobs"));
    QVERIFY2(!repo.exists("snapshots") || QDir(repo.filePath("snapshots")).isEmpty(),
             "a cancelled download linked files into the snapshot");
    QVERIFY(!repo.exists("refs/main"));
  }

  void gatedModelShowsTheAdvice() {
    DownloadDialog dialog;
    dialog.findChild<QLineEdit*>("repoEdit")->setText(QStringLiteral("org/gated"));
    dialog.startDownload();
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.isDownloading(), kWaitMs);
    const QString status = dialog.findChild<QLabel*>("statusLabel")->text();
    QVERIFY2(status.contains("this model is gated: accept its licence on the Hub and set HF_TOKEN"),
             qPrintable(status));
  }

 private:
  QTemporaryDir m_cache;
  QProcess m_hub;
};

QTEST_MAIN(DownloadDialogTest)
#include "download_dialog_test.moc"
