// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

#include "attnscope/run_request.h"

namespace attnscope::gui {

/// How to run the model, apart from which model it is: the cross-attention context, the second
/// sentence of a pair and the device.
struct RunOptions {
  bool useContext = false;
  QString context;  // keys and values come from this text when useContext is set
  bool usePair = false;
  QString pair;  // encoders: joined to each sentence as [CLS] A [SEP] B [SEP] when usePair is set
  DeviceKind device = DeviceKind::Auto;
  /// Encoder-decoders: the decoder reads its start token and this target text (teacher forcing)
  /// when useTarget is set, then `generate` greedy tokens (0: none).
  bool useTarget = false;
  QString target;
  int generate = 0;

  bool operator==(const RunOptions& o) const {
    return useContext == o.useContext && context == o.context && usePair == o.usePair &&
           pair == o.pair && device == o.device && useTarget == o.useTarget && target == o.target &&
           generate == o.generate;
  }
  bool operator!=(const RunOptions& o) const { return !(*this == o); }
};

}  // namespace attnscope::gui
