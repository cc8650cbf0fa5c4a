// SPDX-License-Identifier: GPL-3.0-or-later
#include "transfer_rate.h"

#include <cmath>
#include <cstdio>

namespace attnscope::hub {
namespace {

constexpr auto kWindow = std::chrono::seconds(5);
constexpr double kMinSpan = 0.5;  // seconds: shorter spans give wild speeds

}  // namespace

void TransferRate::add(std::uint64_t bytes, Clock::time_point now) {
  m_samples.emplace_back(now, bytes);
  // Keep one sample older than the window, so the window is always spanned.
  while (m_samples.size() > 2 && now - m_samples[1].first > kWindow) m_samples.pop_front();
}

double TransferRate::bytesPerSecond() const {
  if (m_samples.size() < 2) return 0;
  const double span =
      std::chrono::duration<double>(m_samples.back().first - m_samples.front().first).count();
  if (span < kMinSpan || m_samples.back().second < m_samples.front().second) return 0;
  return double(m_samples.back().second - m_samples.front().second) / span;
}

double TransferRate::secondsLeft(std::uint64_t remaining) const {
  const double speed = bytesPerSecond();
  if (remaining == 0) return 0;
  return speed > 0 ? double(remaining) / speed : -1;
}

std::string TransferRate::formatBytes(std::uint64_t bytes) {
  char text[32];
  if (bytes < 1000) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
    return text;
  }
  const char* units[] = {"kB", "MB", "GB", "TB", "PB"};
  double value = double(bytes) / 1000;
  int unit = 0;
  while (value >= 999.95 && unit < 4) value /= 1000, ++unit;
  std::snprintf(text, sizeof text, value < 100 ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

std::string TransferRate::formatDuration(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) return {};
  const long long s = std::llround(seconds);
  char text[48];
  if (s < 60)
    std::snprintf(text, sizeof text, "%lld s", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lld min %02lld s", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lld h %02lld min", s / 3600, (s % 3600) / 60);
  return text;
}

std::string TransferRate::describe(std::uint64_t done, std::uint64_t total, double bytesPerSecond,
                                   double secondsLeft) {
  std::string text = formatBytes(done);
  if (total > 0) text += " of " + formatBytes(total);
  if (bytesPerSecond > 0) text += ", " + formatBytes(std::uint64_t(bytesPerSecond)) + "/s";
  if (const std::string left = formatDuration(secondsLeft); !left.empty() && done < total)
    text += ", " + left + " left";
  return text;
}

}  // namespace attnscope::hub
