// SPDX-License-Identifier: Apache-2.0
// Every signal blocked on the calling thread for the life of a scope, so
// that the threads started inside it inherit a mask that takes no signal:
// the daemon handles its signals on the loop thread, and a worker blocked
// in the kernel must not be the one the kernel picks to deliver them to.
#pragma once

#include <signal.h>

namespace cppc::backend
{

class AllSignalsBlocked
{
  public:
    AllSignalsBlocked() noexcept;
    // Puts the caller's mask back.
    ~AllSignalsBlocked();

    AllSignalsBlocked(const AllSignalsBlocked&) = delete;
    AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

  private:
    sigset_t old_{};
};

} // namespace cppc::backend
