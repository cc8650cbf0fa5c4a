// SPDX-License-Identifier: GPL-3.0-or-later
#include <QTemporaryDir>
#include <QTest>

#include "qtest_main.h"
#include "text_file_loader.h"

using attnscope::gui::TextFileLoader;

class TextFileLoaderTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void acceptsUtf8TextAndNormalisesLineEnds() {
    QString text;
    QCOMPARE(TextFileLoader::decode("\xEF\xBB\xBFGr\xC3\xBC\xC3\x9F"
                                    "e\r\nzwei\n",
                                    "a.txt", &text),
             QString());
    QCOMPARE(text, QStringLiteral("Grüße\nzwei\n"));
  }

  void refusesBinaryInvalidAndHugeFiles() {
    QString text = QStringLiteral("unchanged");
    QVERIFY(TextFileLoader::decode(QByteArray("PNG\0\x01", 5), "x.png", &text)
                .contains(QStringLiteral("binary")));
    const QString invalid = TextFileLoader::decode("caf\xE9", "latin1.txt", &text);
    QVERIFY2(invalid.contains(QStringLiteral("not UTF-8")) &&
                 invalid.contains(QStringLiteral("offset 3")),
             qPrintable(invalid));
    QVERIFY(TextFileLoader::decode(QByteArray(TextFileLoader::kMaxBytes + 1, 'a'), "big.txt", &text)
                .contains(QStringLiteral("too large")));
    QCOMPARE(text, QStringLiteral("unchanged"));
  }

  void readsFilesAndNamesThemInErrors() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("in.txt"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("hello\nworld");
    f.close();
    QString text;
    QCOMPARE(TextFileLoader::load(path, &text), QString());
    QCOMPARE(text, QStringLiteral("hello\nworld"));
    QVERIFY(TextFileLoader::load(dir.filePath(QStringLiteral("nope.txt")), &text)
                .contains(QStringLiteral("nope.txt")));
  }
};

ATTNSCOPE_QTEST(TextFileLoaderTest)
#include "text_file_loader_test.moc"
