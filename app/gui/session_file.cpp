// SPDX-License-Identifier: GPL-3.0-or-later
#include "session_file.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>

#include <algorithm>
#include <cmath>

#include "attnscope/error.h"
#include "attnscope/file_io.h"
#include "attnscope/json_check.h"
#include "attnscope/toy_config.h"

namespace attnscope::gui {

namespace {

constexpr auto kFormat = "attnscope-session";
// Integers in JSON are doubles; seeds beyond 2^53 would silently change.
constexpr double kMaxExactInteger = 9007199254740992.0;

/// Thrown inside the parser only; fromJson turns it into the error string.
struct ParseError {
  QString message;
};

[[noreturn]] void fail(const QString& message) { throw ParseError{message}; }

void requireKeys(const QJsonObject& object, const QString& where, const QStringList& allowed,
                 const QStringList& required) {
  const QSet<QString> known(allowed.begin(), allowed.end());
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (!known.contains(it.key()))
      fail(QStringLiteral("unknown key \"%1\" in %2").arg(it.key(), where));
  }
  for (const QString& key : required) {
    if (!object.contains(key)) fail(QStringLiteral("missing \"%1\" in %2").arg(key, where));
  }
}

QJsonObject objectAt(const QJsonObject& parent, const QString& key, const QString& where) {
  const QJsonValue v = parent.value(key);
  if (!v.isObject()) fail(QStringLiteral("\"%1\" in %2 must be an object").arg(key, where));
  return v.toObject();
}

QString stringAt(const QJsonObject& o, const QString& key, const QString& where) {
  const QJsonValue v = o.value(key);
  if (!v.isString()) fail(QStringLiteral("\"%1\" in %2 must be a string").arg(key, where));
  return v.toString();
}

bool boolAt(const QJsonObject& o, const QString& key, const QString& where, bool fallback) {
  if (!o.contains(key)) return fallback;
  const QJsonValue v = o.value(key);
  if (!v.isBool()) fail(QStringLiteral("\"%1\" in %2 must be true or false").arg(key, where));
  return v.toBool();
}

double integerAt(const QJsonObject& o, const QString& key, const QString& where, double min,
                 double max, double fallback) {
  if (!o.contains(key)) return fallback;
  const QJsonValue v = o.value(key);
  const double d = v.toDouble();
  if (!v.isDouble() || !std::isfinite(d) || std::floor(d) != d) {
    fail(QStringLiteral("\"%1\" in %2 must be an integer").arg(key, where));
  }
  if (d < min || d > max) {
    fail(QStringLiteral("\"%1\" in %2 must be between %3 and %4 (got %5)")
             .arg(key, where)
             .arg(min, 0, 'f', 0)
             .arg(max, 0, 'f', 0)
             .arg(d, 0, 'f', 0));
  }
  return d;
}

int intAt(const QJsonObject& o, const QString& key, const QString& where, int min, int max,
          int fallback) {
  return static_cast<int>(integerAt(o, key, where, min, max, fallback));
}

/// Runs one of the core's parseXxx functions, turning its Error into a message naming the field.
template <typename Parse>
auto parseEnum(const QJsonObject& o, const QString& key, const QString& where, Parse parse) {
  const QString value = stringAt(o, key, where);
  try {
    return parse(value.toStdString());
  } catch (const Error& e) {
    fail(QStringLiteral("%1 in %2: %3").arg(key, where, QString::fromStdString(e.what())));
  }
}

ToyConfig parseToy(const QJsonObject& o) {
  const QString where = QStringLiteral("model.toy");
  requireKeys(o, where,
              {"variant", "input_dim", "d_model", "heads", "mask", "scale", "tokenizer", "seed"},
              {"variant", "input_dim", "d_model", "heads"});
  ToyConfig c;
  c.variant = parseEnum(o, "variant", where, parseVariant);
  c.inputDim = intAt(o, "input_dim", where, 1, 65536, c.inputDim);
  c.dModel = intAt(o, "d_model", where, 1, 65536, c.dModel);
  c.heads = intAt(o, "heads", where, 1, 65536, c.heads);
  if (o.contains("mask")) c.mask = parseEnum(o, "mask", where, parseMask);
  if (o.contains("scale")) c.scale = parseEnum(o, "scale", where, parseScale);
  if (o.contains("tokenizer")) c.tokenizer = parseEnum(o, "tokenizer", where, parseTokenizer);
  c.seed = static_cast<uint64_t>(integerAt(o, "seed", where, 0, kMaxExactInteger, 0));
  try {
    c.validate();
  } catch (const Error& e) {
    fail(QStringLiteral("%1: %2").arg(where, QString::fromStdString(e.what())));
  }
  return c;
}

/// The view's array `key` of whole numbers in [0, max] ("must hold <what>" otherwise).
std::vector<int> indicesAt(const QJsonObject& o, const char* key, const char* what, int max) {
  const QJsonValue value = o.value(QLatin1String(key));
  if (!value.isArray()) fail(QStringLiteral("\"%1\" in view must be an array").arg(key));
  std::vector<int> out;
  for (const QJsonValue v : value.toArray()) {
    if (!v.isDouble() || v.toDouble() != std::floor(v.toDouble()) || v.toDouble() < 0 ||
        v.toDouble() > max)
      fail(QStringLiteral("\"%1\" in view must hold %2").arg(key, what));
    out.push_back(v.toInt());
  }
  return out;
}

render::ViewState parseView(const QJsonObject& o, render::ViewKind* current) {
  const QString where = QStringLiteral("view");
  requireKeys(o, where,
              {"tab",          "layer",          "head",         "item",        "vs_layer",
               "vs_head",      "vs_item",        "palette",      "show_scores", "per_head_scale",
               "pinned_query", "classroom",      "hide_special", "attention",   "pinned_key",
               "line_heads",   "line_threshold", "text_source",  "query_group", "aggregate",
               "merge_words",  "score_term",     "log_scale",    "drop_sink",   "statistic"},
              {});
  constexpr int kMax = 1 << 20;
  render::ViewState s;
  if (o.contains("tab") && !render::parseViewKind(stringAt(o, "tab", where), current)) {
    fail(QStringLiteral(
             "unknown view \"%1\" in view.tab (choose heatmap, grid, compare, stats, pipeline, "
             "lines, text, qk, alignment, ablation, step or logit-lens)")
             .arg(o.value("tab").toString()));
  }
  s.layer = intAt(o, "layer", where, 0, kMax, s.layer);
  s.head = intAt(o, "head", where, 0, kMax, s.head);
  s.item = intAt(o, "item", where, 0, kMax, s.item);
  s.vsLayer = intAt(o, "vs_layer", where, 0, kMax, s.vsLayer);
  s.vsHead = intAt(o, "vs_head", where, 0, kMax, s.vsHead);
  s.vsItem = intAt(o, "vs_item", where, 0, kMax, s.vsItem);
  if (o.contains("palette")) {
    s.palette = stringAt(o, "palette", where);
    const QStringList palettes = {"viridis", "magma", "cividis", "greyscale"};
    if (!palettes.contains(s.palette)) {
      fail(QStringLiteral("unknown palette \"%1\" in view (choose %2)")
               .arg(s.palette, palettes.join(", ")));
    }
  }
  s.showScores = boolAt(o, "show_scores", where, s.showScores);
  if (o.contains("score_term")) s.scoreTerm = stringAt(o, "score_term", where);
  s.perHeadScale = boolAt(o, "per_head_scale", where, s.perHeadScale);
  s.pinnedQuery = intAt(o, "pinned_query", where, -1, kMax, s.pinnedQuery);
  s.classroom = boolAt(o, "classroom", where, s.classroom);
  s.hideSpecial = boolAt(o, "hide_special", where, s.hideSpecial);
  s.mergeWords = boolAt(o, "merge_words", where, s.mergeWords);
  s.logScale = boolAt(o, "log_scale", where, s.logScale);
  s.dropSink = intAt(o, "drop_sink", where, 0, kMax, s.dropSink);
  if (o.contains("statistic")) {
    s.statistic = stringAt(o, "statistic", where);
    const int index = render::statisticIndex(s.statistic);
    if (index < 0)
      fail(QStringLiteral("unknown statistic \"%1\" in view (choose %2)")
               .arg(s.statistic, render::statisticKeys().join(", ")));
    if (index == 0) s.statistic.clear();  // entropy, the default
  }
  if (o.contains("aggregate") &&
      !render::parseQueryAggregate(stringAt(o, "aggregate", where), &s.aggregate)) {
    fail(QStringLiteral("unknown aggregate \"%1\" in view (choose mean or sum)")
             .arg(o.value("aggregate").toString()));
  }
  if (o.contains("query_group")) {
    s.queryGroup = indicesAt(o, "query_group", "token positions", kMax);
    std::sort(s.queryGroup.begin(), s.queryGroup.end());
    s.queryGroup.erase(std::unique(s.queryGroup.begin(), s.queryGroup.end()), s.queryGroup.end());
    if (s.queryGroup.size() < 2) s.queryGroup.clear();  // one token is pinned_query's job
  }
  if (o.contains("attention")) {
    s.group = stringAt(o, "attention", where).toStdString();
    if (s.group != "self" && s.group != "cross" && s.group != "decoder_self" &&
        s.group != "value_norm")
      fail(QStringLiteral("unknown attention \"%1\" in view (choose self, decoder_self, cross or "
                          "value_norm)")
               .arg(QString::fromStdString(s.group)));
  }
  s.pinnedKey = intAt(o, "pinned_key", where, -1, kMax, s.pinnedKey);
  if (o.contains("line_heads")) s.lineHeads = indicesAt(o, "line_heads", "head numbers", kMax);
  if (o.contains("line_threshold")) {
    const QJsonValue t = o.value("line_threshold");
    if (!t.isDouble() || !(t.toDouble() >= 0 && t.toDouble() <= 1))
      fail(QStringLiteral("\"line_threshold\" in view must be a number in [0, 1]"));
    s.lineThreshold = t.toDouble();
  }
  if (o.contains("text_source") &&
      !render::parseTextSource(stringAt(o, "text_source", where), &s.textSource))
    fail(QStringLiteral("unknown text_source \"%1\" in view (choose head, mean or rollout)")
             .arg(o.value("text_source").toString()));
  return s;
}

Session parseSession(const QJsonObject& root) {
  requireKeys(root, QStringLiteral("the file"),
              {"format", "version", "text", "model", "run", "view"},
              {"format", "version", "text", "model"});
  if (root.value("format") != QJsonValue(QString::fromLatin1(kFormat))) {
    fail(QStringLiteral("not an attnscope session (\"format\" must be \"%1\")").arg(kFormat));
  }
  const QJsonValue version = root.value("version");
  if (!version.isDouble()) fail(QStringLiteral("\"version\" must be a number"));
  // Exactly a supported integer; all 17 digits in the message, so 1.0000000001 is not "1".
  const double v = version.toDouble();
  if (!std::isfinite(v) || std::floor(v) != v) {
    fail(QStringLiteral("\"version\" must be a whole number, got %1")
             .arg(QString::number(v, 'g', 17)));
  }
  if (v != SessionFile::kVersion) {
    fail(QStringLiteral("version %1 is not supported (this attnscope reads version %2)")
             .arg(QString::number(v, 'g', 17))
             .arg(SessionFile::kVersion));
  }

  Session s;
  s.text = stringAt(root, "text", QStringLiteral("the file"));

  const QJsonObject model = objectAt(root, "model", QStringLiteral("the file"));
  requireKeys(model, QStringLiteral("model"), {"source", "toy"}, {"source"});
  s.model.source = stringAt(model, "source", QStringLiteral("model")).toStdString();
  if (s.model.source.empty()) fail(QStringLiteral("\"source\" in model must not be empty"));
  if (model.contains("toy"))
    s.model.toy = parseToy(objectAt(model, "toy", QStringLiteral("model")));
  else if (s.model.source == "toy")
    fail(QStringLiteral("missing \"toy\" in model (source is toy)"));

  if (root.contains("run")) {
    const QJsonObject run = objectAt(root, "run", QStringLiteral("the file"));
    requireKeys(run, QStringLiteral("run"), {"context", "pair", "device", "target", "generate"},
                {});
    const QJsonValue context = run.value("context");
    if (!context.isUndefined() && !context.isNull()) {
      if (!context.isString()) fail(QStringLiteral("\"context\" in run must be a string or null"));
      s.run.useContext = true;
      s.run.context = context.toString();
    }
    const QJsonValue pair = run.value("pair");
    if (!pair.isUndefined() && !pair.isNull()) {
      if (!pair.isString()) fail(QStringLiteral("\"pair\" in run must be a string or null"));
      s.run.usePair = true;
      s.run.pair = pair.toString();
    }
    const QJsonValue target = run.value("target");
    if (!target.isUndefined() && !target.isNull()) {
      if (!target.isString()) fail(QStringLiteral("\"target\" in run must be a string or null"));
      s.run.useTarget = true;
      s.run.target = target.toString();
    }
    s.run.generate = intAt(run, "generate", QStringLiteral("run"), 0, 256, 0);
    if (run.contains("device"))
      s.run.device = parseEnum(run, "device", QStringLiteral("run"), parseDevice);
  }
  if (root.contains("view")) {
    s.view = parseView(objectAt(root, "view", QStringLiteral("the file")), &s.currentView);
  }
  return s;
}

}  // namespace

QByteArray SessionFile::toJson(const Session& s) {
  const ToyConfig& c = s.model.toy;
  QJsonObject toy{{"variant", toString(c.variant)},
                  {"input_dim", c.inputDim},
                  {"d_model", c.dModel},
                  {"heads", c.heads},
                  {"mask", toString(c.mask)},
                  {"scale", toString(c.scale)},
                  {"tokenizer", toString(c.tokenizer)},
                  {"seed", static_cast<double>(c.seed)}};
  QJsonObject model{{"source", QString::fromStdString(s.model.source)}, {"toy", toy}};
  QJsonObject run{{"context", s.run.useContext ? QJsonValue(s.run.context) : QJsonValue()},
                  {"pair", s.run.usePair ? QJsonValue(s.run.pair) : QJsonValue()},
                  {"target", s.run.useTarget ? QJsonValue(s.run.target) : QJsonValue()},
                  {"generate", s.run.generate},
                  {"device", toString(s.run.device)}};
  const render::ViewState& v = s.view;
  QJsonObject view{{"tab", render::toString(s.currentView)},
                   {"layer", v.layer},
                   {"head", v.head},
                   {"item", v.item},
                   {"vs_layer", v.vsLayer},
                   {"vs_head", v.vsHead},
                   {"vs_item", v.vsItem},
                   {"palette", v.palette},
                   {"show_scores", v.showScores},
                   {"score_term", v.scoreTerm},
                   {"per_head_scale", v.perHeadScale},
                   {"pinned_query", v.pinnedQuery},
                   {"classroom", v.classroom},
                   {"hide_special", v.hideSpecial},
                   {"pinned_key", v.pinnedKey},
                   {"line_threshold", v.lineThreshold},
                   {"text_source", render::toString(v.textSource)},
                   {"merge_words", v.mergeWords},
                   {"log_scale", v.logScale},
                   {"drop_sink", v.dropSink},
                   {"statistic", v.statistic.isEmpty() ? QStringLiteral("entropy") : v.statistic},
                   {"aggregate", render::toString(v.aggregate)}};
  if (!v.group.empty()) view["attention"] = QString::fromStdString(v.group);
  QJsonArray lineHeads;
  for (int h : v.lineHeads) lineHeads.append(h);
  view["line_heads"] = lineHeads;
  QJsonArray queryGroup;
  for (int t : v.queryGroup) queryGroup.append(t);
  view["query_group"] = queryGroup;
  QJsonObject root{{"format", kFormat}, {"version", kVersion}, {"text", s.text},
                   {"model", model},    {"run", run},          {"view", view}};
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

bool SessionFile::fromJson(const QByteArray& bytes, Session* session, QString* error) {
  QJsonParseError parseError{};
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &parseError);
  try {
    if (parseError.error != QJsonParseError::NoError) {
      fail(QStringLiteral("not valid JSON at byte %1: %2")
               .arg(parseError.offset)
               .arg(parseError.errorString()));
    }
    if (!doc.isObject()) fail(QStringLiteral("the top level must be a JSON object"));
    // QJsonDocument keeps the last of duplicate keys: a hand-edited session with two "text"
    // entries would open one of them silently.
    if (const auto key = findDuplicateJsonKey(std::string_view(bytes.constData(), bytes.size())))
      fail(QStringLiteral("duplicate key \"%1\"").arg(QString::fromStdString(*key)));
    *session = parseSession(doc.object());
    return true;
  } catch (const ParseError& e) {
    if (error) *error = e.message;
    return false;
  }
}

QString SessionFile::save(const QString& path, const Session& session) {
  // Through the core's one writer: atomic for files, symlinks followed, devices written directly.
  try {
    const QByteArray bytes = toJson(session);
    writeOutputFile(path.toStdString(), std::string(bytes.constData(), bytes.size()));
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

QString SessionFile::load(const QString& path, Session* session) {
  const QString name = QFileInfo(path).fileName();
  // Before opening: QFile would block forever on a FIFO, and read a device without end.
  if (QFileInfo::exists(path) && !QFileInfo(path).isFile())
    return QStringLiteral("cannot open %1: not a regular file").arg(name);
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    return QStringLiteral("cannot open %1: %2").arg(name, file.errorString());
  }
  if (file.size() > kMaxFileBytes) {
    return QStringLiteral("%1 is too large for a session (%2 MiB; the limit is %3 MiB)")
        .arg(name)
        .arg(file.size() / (1024 * 1024))
        .arg(kMaxFileBytes / (1024 * 1024));
  }
  QString error;
  if (!fromJson(file.readAll(), session, &error)) return QStringLiteral("%1: %2").arg(name, error);
  return {};
}

}  // namespace attnscope::gui
