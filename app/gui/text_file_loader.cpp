// SPDX-License-Identifier: GPL-3.0-or-later
#include "text_file_loader.h"

#include <QFile>
#include <QFileInfo>

#include <string_view>

#include "attnscope/utf8.h"

namespace attnscope::gui {

QString TextFileLoader::load(const QString& path, QString* text, qint64 maxBytes) {
  const QString name = QFileInfo(path).fileName();
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly))
    return QStringLiteral("cannot open %1: %2").arg(name, file.errorString());
  if (file.size() > maxBytes) {
    return QStringLiteral("%1 is too large (%2 KiB; text files up to %3 KiB can be loaded)")
        .arg(name)
        .arg(file.size() / 1024)
        .arg(maxBytes / 1024);
  }
  // Read one byte past the limit: size() is 0 for some special files.
  return decode(file.read(maxBytes + 1), name, text, maxBytes);
}

QString TextFileLoader::decode(const QByteArray& bytes, const QString& name, QString* text,
                               qint64 maxBytes) {
  if (bytes.size() > maxBytes) {
    return QStringLiteral("%1 is too large (text files up to %2 KiB can be loaded)")
        .arg(name)
        .arg(maxBytes / 1024);
  }
  if (bytes.contains('\0'))
    return QStringLiteral("%1 looks like a binary file, not text").arg(name);
  std::size_t bad = 0;
  if (!isValidUtf8(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())),
                   &bad)) {
    return QStringLiteral("%1 is not UTF-8 text (invalid byte at offset %2)").arg(name).arg(bad);
  }
  QString decoded = QString::fromUtf8(bytes);
  if (decoded.startsWith(QChar(0xFEFF))) decoded.remove(0, 1);  // a BOM is not part of the text
  decoded.replace(QStringLiteral("\r\n"), QStringLiteral("\n"));
  *text = decoded;
  return {};
}

}  // namespace attnscope::gui
