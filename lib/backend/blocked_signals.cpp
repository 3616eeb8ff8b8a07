// SPDX-License-Identifier: Apache-2.0
#include "lib/backend/blocked_signals.hpp"

#include <pthread.h>

namespace cppc::backend
{

AllSignalsBlocked::AllSignalsBlocked() noexcept
{
    sigset_t all;
    ::sigfillset(&all);
    (void)::pthread_sigmask(SIG_SETMASK, &all, &old_);
}

AllSignalsBlocked::~AllSignalsBlocked()
{
    (void)::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

} // namespace cppc::backend
