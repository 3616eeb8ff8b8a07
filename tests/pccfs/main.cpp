// SPDX-License-Identifier: Apache-2.0
// pccfs: a FUSE file system that serves the cpufreq and acpi_cppc tree of
// a machine whose CPPC registers sit behind one PCC mailbox, with the
// mailbox's latency, batching and failures (README.md). Runs in the
// foreground until SIGTERM or SIGINT, then answers what it still holds and
// unmounts.
#include "options.hpp"
#include "pcc_fs.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

namespace
{

// The session, unmounted and destroyed however main leaves.
struct SessionDeleter
{
    void operator()(fuse_session* se) const noexcept
    {
        fuse_remove_signal_handlers(se);
        fuse_session_destroy(se);
    }
};
using Session = std::unique_ptr<fuse_session, SessionDeleter>;

int run(const pccfs::Options& options)
{
    pccfs::PccFs fs(options);
    std::string program = "pccfs";
    std::string dashO = "-o";
    // allow_other: the tests' unprivileged children may read the tree too.
    std::string mountOptions = "allow_other,fsname=pccfs,subtype=pccfs";
    std::array<char*, 3> argv{program.data(), dashO.data(),
                              mountOptions.data()};
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
    Session se(fuse_session_new(&args, &pccfs::PccFs::operations(),
                                sizeof(fuse_lowlevel_ops), &fs));
    if (!se)
    {
        throw std::runtime_error("cannot create the FUSE session");
    }
    if (fuse_set_signal_handlers(se.get()) != 0)
    {
        throw std::runtime_error("cannot install the signal handlers");
    }
    if (fuse_session_mount(se.get(), options.mountpoint.c_str()) != 0)
    {
        throw std::runtime_error(
            "cannot mount on '" + options.mountpoint + "'");
    }
    if (options.readyFd >= 0)
    {
        constexpr std::string_view ready = "ready\n";
        if (::write(options.readyFd, ready.data(), ready.size()) < 0)
        {
            std::fprintf(stderr, "pccfs: --ready-fd %d: %s, ignoring\n",
                         options.readyFd, std::strerror(errno));
        }
        ::close(options.readyFd);
    }
    const int loop = fuse_session_loop(se.get());
    // Nothing reads requests any more: answer those held or scheduled, so
    // that no process stays blocked on the mount, then leave it.
    fs.stop();
    fuse_session_unmount(se.get());
    return loop < 0 ? 1 : 0;
}

} // namespace

int main(int argc, char** argv)
{
    pccfs::Options options;
    try
    {
        options = pccfs::parseOptions(argc, argv);
    }
    catch (const std::invalid_argument& e)
    {
        std::fprintf(stderr, "pccfs: %s\n%s", e.what(), pccfs::usage().c_str());
        return 2;
    }
    try
    {
        return run(options);
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "pccfs: %s\n", e.what());
        return 1;
    }
}
