// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

namespace attnscope::hub {

/// The speed of a transfer over its last few seconds and the time left at that speed: what the
/// CLI's progress line and the window's progress bar show. A window rather than the average
/// since the start, so that a resumed download (most bytes already there) or a stall shows the
/// speed the user has now.
class TransferRate final {
 public:
  using Clock = std::chrono::steady_clock;

  /// Records that `bytes` bytes have been received in all, at `now`.
  void add(std::uint64_t bytes, Clock::time_point now = Clock::now());
  /// Bytes per second over the window; 0 until two samples half a second apart exist.
  double bytesPerSecond() const;
  /// Seconds until `remaining` more bytes arrive at the current speed; negative when unknown.
  double secondsLeft(std::uint64_t remaining) const;

  /// "523 MB", "12.3 kB", "512 B": decimal units, as the Hub shows sizes; three digits.
  static std::string formatBytes(std::uint64_t bytes);
  /// "4 s", "1 min 52 s", "2 h 05 min"; "" for a negative (unknown) time.
  static std::string formatDuration(double seconds);
  /// "12.3 MB of 523 MB, 4.5 MB/s, 1 min 52 s left" (parts unknown yet left out).
  static std::string describe(std::uint64_t done, std::uint64_t total, double bytesPerSecond,
                              double secondsLeft);

 private:
  std::deque<std::pair<Clock::time_point, std::uint64_t>> m_samples;
};

}  // namespace attnscope::hub
