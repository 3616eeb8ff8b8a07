// SPDX-License-Identifier: Apache-2.0
// pccfs's command line: how many CPUs, how they group into policies, the
// PCC mailbox's timing, and where to mount.
#pragma once

#include <chrono>
#include <string>

namespace pccfs
{

struct Options
{
    unsigned cpus = 0;
    unsigned cpusPerPolicy = 1;
    // The PCCT's nominal latency and minimum turnaround of the subspace
    // every register lives in (Ampere Altra's by default).
    std::chrono::microseconds latency{100};
    std::chrono::microseconds turnaround{110};
    // Written "ready\n" and closed once the file system is mounted; -1:
    // none.
    int readyFd = -1;
    std::string mountpoint;
};

// The usage text, for --help and for errors.
std::string usage();

// Parses argv; throws std::invalid_argument naming the bad argument.
Options parseOptions(int argc, char** argv);

} // namespace pccfs
