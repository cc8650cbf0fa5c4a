// SPDX-License-Identifier: GPL-3.0-or-later
// .attnscope files: a round trip keeps every field; malformed files give messages naming the
// problem.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include "qtest_main.h"
#include "session_file.h"

using attnscope::gui::Session;
using attnscope::gui::SessionFile;

namespace {

Session sample() {
  Session s;
  s.text = QStringLiteral("Der Hund bellt.\nThe cat sat — ünïcödé ✓");
  s.model.source = "toy";
  s.model.toy.variant = attnscope::Variant::PerHead;
  s.model.toy.inputDim = 96;
  s.model.toy.dModel = 48;
  s.model.toy.heads = 6;
  s.model.toy.mask = attnscope::MaskKind::Causal;
  s.model.toy.scale = attnscope::ScaleKind::Embedding;
  s.model.toy.tokenizer = attnscope::TokenizerKind::Word;
  s.model.toy.seed = 123456789012ull;
  s.run.useContext = true;
  s.run.context = QStringLiteral("a context");
  s.run.device = attnscope::DeviceKind::Cpu;
  s.view.layer = 0;
  s.view.head = 5;
  s.view.item = 1;
  s.view.vsHead = 2;
  s.view.palette = QStringLiteral("cividis");
  s.view.showScores = true;
  s.view.scoreTerm = QStringLiteral("p2c");
  s.view.perHeadScale = true;
  s.view.pinnedQuery = 3;
  s.view.classroom = true;
  s.view.hideSpecial = true;
  s.run.usePair = true;
  s.run.pair = QStringLiteral("the second sentence");
  s.run.useTarget = true;
  s.run.target = QStringLiteral("la traduction");
  s.run.generate = 7;
  s.view.group = "cross";
  s.view.pinnedKey = 2;
  s.view.lineHeads = {1, 3};
  s.view.lineThreshold = 0.125;
  s.view.textSource = attnscope::render::TextSource::Rollout;
  s.view.mergeWords = true;
  s.view.statistic = QStringLiteral("distance-profile");
  s.view.queryGroup = {2, 5, 6};
  s.view.aggregate = attnscope::render::QueryAggregate::Sum;
  s.currentView = attnscope::render::ViewKind::Compare;
  return s;
}

QByteArray sampleWith(const std::function<void(QJsonObject&)>& edit) {
  QJsonObject root = QJsonDocument::fromJson(SessionFile::toJson(sample())).object();
  edit(root);
  return QJsonDocument(root).toJson();
}

QJsonObject child(const QJsonObject& o, const char* key) {
  return o.value(QLatin1String(key)).toObject();
}

}  // namespace

class SessionFileTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void roundTripKeepsEveryField() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.attnscope"));
    const Session in = sample();
    QCOMPARE(SessionFile::save(path, in), QString());
    Session out;
    QCOMPARE(SessionFile::load(path, &out), QString());
    QCOMPARE(out.text, in.text);
    QCOMPARE(out.model.source, in.model.source);
    QVERIFY(out.model.toy.variant == in.model.toy.variant);
    QCOMPARE(out.model.toy.inputDim, 96);
    QCOMPARE(out.model.toy.dModel, 48);
    QCOMPARE(out.model.toy.heads, 6);
    QVERIFY(out.model.toy.mask == attnscope::MaskKind::Causal);
    QVERIFY(out.model.toy.scale == attnscope::ScaleKind::Embedding);
    QVERIFY(out.model.toy.tokenizer == attnscope::TokenizerKind::Word);
    QCOMPARE(out.model.toy.seed, in.model.toy.seed);
    QVERIFY(out.run == in.run);
    QVERIFY(out.view == in.view);
    QVERIFY(out.currentView == in.currentView);
  }

  void theFileIsReadableVersionedJson() {
    const QJsonObject root = QJsonDocument::fromJson(SessionFile::toJson(sample())).object();
    QCOMPARE(root.value("version").toInt(), 1);
    QCOMPARE(root.value("format").toString(), QStringLiteral("attnscope-session"));
    QCOMPARE(child(child(root, "model"), "toy").value("variant").toString(),
             QStringLiteral("per-head"));
    QCOMPARE(child(root, "view").value("tab").toString(), QStringLiteral("compare"));
  }

  void pathSourcesNeedNoToyBlock() {
    Session s;
    const QByteArray bytes = sampleWith([](QJsonObject& root) {
      root["model"] = QJsonObject{{"source", "/models/gpt2"}};
    });
    QString error;
    QVERIFY2(SessionFile::fromJson(bytes, &s, &error), qPrintable(error));
    QCOMPARE(s.model.source, std::string("/models/gpt2"));
  }

  void malformedFilesGiveClearErrors_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not json") << QByteArray("{\"version\": 1,") << "not valid JSON";
    QTest::newRow("array") << QByteArray("[1, 2]") << "must be a JSON object";
    QTest::newRow("empty") << QByteArray() << "not valid JSON";
    QTest::newRow("no format") << sampleWith([](QJsonObject& r) { r.remove("format"); })
                               << "missing \"format\"";
    QTest::newRow("unknown attention") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["attention"] = "encoder";
      r["view"] = v;
    }) << "unknown attention \"encoder\"";
    QTest::newRow("generate out of range") << sampleWith([](QJsonObject& r) {
      QJsonObject run = r["run"].toObject();
      run["generate"] = 100000;
      r["run"] = run;
    }) << "\"generate\" in run must be between 0 and 256";
    QTest::newRow("other format") << sampleWith([](QJsonObject& r) { r["format"] = "png"; })
                                  << "not an attnscope session";
    QTest::newRow("future version")
        << sampleWith([](QJsonObject& r) { r["version"] = 2; }) << "version 2 is not supported";
    QTest::newRow("version string")
        << sampleWith([](QJsonObject& r) { r["version"] = "1"; }) << "\"version\" must be a number";
    QTest::newRow("fractional version")
        << sampleWith([](QJsonObject& r) { r["version"] = 1.0000000001; })
        << "\"version\" must be a whole number, got 1.0000000001";
    QTest::newRow("duplicate key")
        << sampleWith([](QJsonObject&) {}).replace("\"text\":", "\"text\": \"first\", \"text\":")
        << "duplicate key \"text\"";
    QTest::newRow("text number") << sampleWith([](QJsonObject& r) { r["text"] = 5; })
                                 << "\"text\" in the file must be a string";
    QTest::newRow("unknown key") << sampleWith([](QJsonObject& r) { r["colour"] = "red"; })
                                 << "unknown key \"colour\"";
    QTest::newRow("heads do not divide") << sampleWith([](QJsonObject& r) {
      QJsonObject m = r["model"].toObject(), t = m["toy"].toObject();
      t["heads"] = 5;
      m["toy"] = t;
      r["model"] = m;
    }) << "heads (5) must divide d_model (48)";
    QTest::newRow("fractional width") << sampleWith([](QJsonObject& r) {
      QJsonObject m = r["model"].toObject(), t = m["toy"].toObject();
      t["d_model"] = 48.5;
      m["toy"] = t;
      r["model"] = m;
    }) << "\"d_model\" in model.toy must be an integer";
    QTest::newRow("negative width") << sampleWith([](QJsonObject& r) {
      QJsonObject m = r["model"].toObject(), t = m["toy"].toObject();
      t["input_dim"] = -4;
      m["toy"] = t;
      r["model"] = m;
    }) << "\"input_dim\" in model.toy must be between 1 and 65536";
    QTest::newRow("unknown variant") << sampleWith([](QJsonObject& r) {
      QJsonObject m = r["model"].toObject(), t = m["toy"].toObject();
      t["variant"] = "sparse";
      m["toy"] = t;
      r["model"] = m;
    }) << "unknown variant 'sparse'";
    QTest::newRow("toy missing") << sampleWith([](QJsonObject& r) {
      r["model"] = QJsonObject{{"source", "toy"}};
    }) << "missing \"toy\" in model";
    QTest::newRow("bad device") << sampleWith([](QJsonObject& r) {
      r["run"] = QJsonObject{{"device", "tpu"}};
    }) << "unknown device 'tpu'";
    QTest::newRow("bad palette") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["palette"] = "rainbow";
      r["view"] = v;
    }) << "unknown palette \"rainbow\"";
    QTest::newRow("bad statistic") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["statistic"] = "median";
      r["view"] = v;
    }) << "unknown statistic \"median\" in view (choose entropy, distance";
    QTest::newRow("bad tab") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["tab"] = "table";
      r["view"] = v;
    }) << "unknown view \"table\"";
    QTest::newRow("negative head") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["head"] = -1;
      r["view"] = v;
    }) << "\"head\" in view must be between 0";
    QTest::newRow("bool as string") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["classroom"] = "yes";
      r["view"] = v;
    }) << "\"classroom\" in view must be true or false";
    QTest::newRow("bad aggregate") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["aggregate"] = "max";
      r["view"] = v;
    }) << "unknown aggregate \"max\" in view (choose mean or sum)";
    QTest::newRow("query group of words") << sampleWith([](QJsonObject& r) {
      QJsonObject v = r["view"].toObject();
      v["query_group"] = QJsonArray({1, "two"});
      r["view"] = v;
    }) << "\"query_group\" in view must hold token positions";
  }

  void malformedFilesGiveClearErrors() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    Session s;
    QString error;
    QVERIFY(!SessionFile::fromJson(bytes, &s, &error));
    QVERIFY2(error.contains(expected), qPrintable(QStringLiteral("got: ") + error));
  }

  void fileErrorsNameTheFile() {
    QTemporaryDir dir;
    Session s;
    QVERIFY(SessionFile::load(dir.filePath(QStringLiteral("missing.attnscope")), &s)
                .contains(QStringLiteral("missing.attnscope")));

    const QString big = dir.filePath(QStringLiteral("big.attnscope"));
    QFile f(big);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QVERIFY(f.resize(SessionFile::kMaxFileBytes + 1));
    f.close();
    QVERIFY(SessionFile::load(big, &s).contains(QStringLiteral("too large")));

    const QString bad = dir.filePath(QStringLiteral("bad.attnscope"));
    QFile g(bad);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write("{}");
    g.close();
    QCOMPARE(SessionFile::load(bad, &s),
             QStringLiteral("bad.attnscope: missing \"format\" in the file"));
  }

  void saveToAnUnwritablePlaceFails() {
    const QString error =
        SessionFile::save(QStringLiteral("/nonexistent-dir/x.attnscope"), sample());
    QVERIFY2(error.startsWith(QStringLiteral("cannot write")), qPrintable(error));
  }
};

ATTNSCOPE_QTEST(SessionFileTest)
#include "session_file_test.moc"
