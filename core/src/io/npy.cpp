// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/npy.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "attnscope/error.h"
#include "io/file_io.h"

// The data section is written and read as raw host floats; NumPy's '<f4' is little-endian.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attnscope's .npy code assumes a little-endian host"
#endif

namespace attnscope {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
// NumPy aligns the data section to 64 bytes so that memory-mapped arrays are aligned.
constexpr std::size_t kAlign = 64;

[[noreturn]] void npyError(const std::string& what) {
  throw Error(ErrorKind::Format, "npy: " + what);
}

std::string headerDict(const std::vector<int64_t>& shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) dims += ", ";
    dims += std::to_string(shape[i]);
  }
  // A one-element Python tuple needs its trailing comma: "(5,)".
  if (shape.size() == 1) dims += ",";
  return "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
}

void appendLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t readLittleEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

/// The few Python literals a .npy header dict contains: strings, True/False and int tuples.
/// NumPy writes them with ast-compatible syntax, so a tiny recursive-descent reader suffices.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : m_text(text) {}

  void parse(std::string* descr, bool* fortranOrder, std::vector<int64_t>* shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    expect('{');
    skipSpace();
    while (peek() != '}') {
      const std::string key = parseString();
      expect(':');
      if (key == "descr") {
        *descr = parseString();
        haveDescr = true;
      } else if (key == "fortran_order") {
        *fortranOrder = parseBool();
        haveOrder = true;
      } else if (key == "shape") {
        *shape = parseShape();
        haveShape = true;
      } else {
        npyError("unexpected key '" + key + "' in header");
      }
      skipSeparator('}', "header dict");
    }
    ++m_pos;
    skipSpace();
    if (m_pos != m_text.size()) npyError("trailing characters after header dict");
    if (!haveDescr || !haveOrder || !haveShape)
      npyError("header must have 'descr', 'fortran_order' and 'shape'");
  }

 private:
  char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
  void skipSpace() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
      ++m_pos;
  }
  // After an item: a comma (Python allows a trailing one) or the closing bracket, left in place.
  void skipSeparator(char close, const char* where) {
    skipSpace();
    if (peek() == ',') {
      ++m_pos;
      skipSpace();
    } else if (peek() != close) {
      npyError(std::string("expected ',' or '") + close + "' in " + where);
    }
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c) npyError(std::string("expected '") + c + "' in header dict");
    ++m_pos;
  }
  std::string parseString() {
    skipSpace();
    const char quote = peek();
    if (quote != '\'' && quote != '"') npyError("expected a quoted string in header dict");
    const std::size_t close = m_text.find(quote, m_pos + 1);
    if (close == std::string_view::npos) npyError("unterminated string in header dict");
    std::string s(m_text.substr(m_pos + 1, close - m_pos - 1));
    m_pos = close + 1;
    return s;
  }
  bool parseBool() {
    skipSpace();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t n = std::strlen(word);
      if (m_text.substr(m_pos, n) == word) {
        m_pos += n;
        return value;
      }
    }
    npyError("'fortran_order' must be True or False");
  }
  std::vector<int64_t> parseShape() {
    std::vector<int64_t> shape;
    expect('(');
    skipSpace();
    while (peek() != ')') {
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        npyError("shape entries must be non-negative integers");
      uint64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        v = v * 10 + static_cast<uint64_t>(peek() - '0');
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          npyError("shape entry too large");
        ++m_pos;
      }
      shape.push_back(static_cast<int64_t>(v));
      skipSeparator(')', "shape");
    }
    ++m_pos;
    return shape;
  }

  std::string_view m_text;
  std::size_t m_pos = 0;
};

FloatTensor parseNpy(const std::string& bytes) {
  if (bytes.size() < kMagicSize + 2 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    npyError("not a .npy file (bad magic)");
  const int major = static_cast<uint8_t>(bytes[kMagicSize]);
  const int minor = static_cast<uint8_t>(bytes[kMagicSize + 1]);
  if (major < 1 || major > 3 || minor != 0)
    npyError("unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
  // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 in 4.
  const int lengthBytes = major == 1 ? 2 : 4;
  const std::size_t lengthAt = kMagicSize + 2;
  if (bytes.size() < lengthAt + lengthBytes) npyError("truncated header");
  const uint64_t headerLength = readLittleEndian(bytes.data() + lengthAt, lengthBytes);
  const std::size_t headerAt = lengthAt + lengthBytes;
  if (headerLength > bytes.size() - headerAt) npyError("header runs past the end of the file");

  std::string descr;
  bool fortranOrder = false;
  FloatTensor tensor;
  HeaderParser(std::string_view(bytes).substr(headerAt, headerLength))
      .parse(&descr, &fortranOrder, &tensor.shape);
  if (descr != "<f4") npyError("dtype '" + descr + "' is not supported (only '<f4')");
  if (fortranOrder) npyError("Fortran-order arrays are not supported");

  uint64_t count = 1;
  for (int64_t d : tensor.shape) {
    const auto ud = static_cast<uint64_t>(d);
    if (ud != 0 && count > std::numeric_limits<uint64_t>::max() / 4 / ud)
      npyError("shape " + tensor.shapeString() + " is too large");
    count *= ud;
  }
  const std::size_t dataAt = headerAt + headerLength;
  const std::size_t dataSize = bytes.size() - dataAt;
  if (count * 4 != dataSize)
    npyError("shape " + tensor.shapeString() + " needs " + std::to_string(count * 4) +
             " data bytes but the file has " + std::to_string(dataSize));
  tensor.data.resize(count);
  if (count) std::memcpy(tensor.data.data(), bytes.data() + dataAt, count * 4);
  return tensor;
}

}  // namespace

std::string npyBytes(const FloatTensor& tensor) {
  for (int64_t d : tensor.shape)
    if (d < 0)
      throw Error(ErrorKind::InvalidArgument,
                  "npy: negative dimension in shape " + tensor.shapeString());
  if (FloatTensor::countOf(tensor.shape) != tensor.data.size())
    throw Error(ErrorKind::InvalidArgument, "npy: shape " + tensor.shapeString() +
                                                " does not match " +
                                                std::to_string(tensor.data.size()) + " values");

  std::string header = headerDict(tensor.shape);
  // Version 1.0 unless the header cannot fit its 2-byte length field.
  int lengthBytes = 2;
  std::size_t preamble = kMagicSize + 2 + lengthBytes;
  std::size_t padded = (preamble + header.size() + 1 + kAlign - 1) / kAlign * kAlign;
  if (padded - preamble > 0xffff) {
    lengthBytes = 4;
    preamble = kMagicSize + 2 + lengthBytes;
    padded = (preamble + header.size() + 1 + kAlign - 1) / kAlign * kAlign;
  }
  header.append(padded - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(lengthBytes == 2 ? 1 : 2));
  out.push_back(0);
  appendLittleEndian(&out, header.size(), lengthBytes);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size() * sizeof(float));
  return out;
}

void writeNpy(const std::string& path, const FloatTensor& tensor) {
  writeOutputFile(path, npyBytes(tensor));
}

FloatTensor readNpy(const std::string& path) {
  try {
    return parseNpy(readFile(path));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Format) throw;
    // Name the file: the parser sees only bytes.
    throw Error(ErrorKind::Format, std::string(e.what()) + " (" + path + ")");
  }
}

}  // namespace attnscope
