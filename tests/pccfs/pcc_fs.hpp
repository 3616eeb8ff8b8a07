// SPDX-License-Identifier: Apache-2.0
// pccfs's FUSE low-level operations: the static tree (tree.hpp) answered
// from the session thread, every read and write of a file handed to the
// access engine (access_engine.hpp), which answers it now or later from
// its own thread. Files are opened direct_io, so that every read, a pread
// at offset 0 on a file kept open included, reaches the rig.
#pragma once

#include "access_engine.hpp"
#include "options.hpp"
#include "tree.hpp"

#include <cstdint>
#include <memory>
#include <unordered_map>

namespace pccfs
{

class PccFs
{
  public:
    explicit PccFs(const Options& options);

    // The operations; each takes the PccFs from the session's user data.
    static const fuse_lowlevel_ops& operations() noexcept;

    // Answers what is still outstanding (see AccessEngine::stop).
    void stop()
    {
        engine_.stop();
    }

  private:
    static PccFs& of(fuse_req_t req) noexcept;
    struct stat attributes(std::uint64_t ino, const Node& node) const noexcept;

    static void lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
    static void getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
    static void setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr,
                        int toSet, fuse_file_info* fi);
    static void readlink(fuse_req_t req, fuse_ino_t ino);
    static void opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
    static void readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        fuse_file_info* fi);
    static void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
    static void read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     fuse_file_info* fi);
    static void write(fuse_req_t req, fuse_ino_t ino, const char* buf,
                      size_t size, off_t off, fuse_file_info* fi);
    static void flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
    static void release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);

    Tree tree_;
    // The open files by handle. Only the session thread opens, reads and
    // releases; the engine keeps an OpenFile only while a read of it is
    // in flight, which the kernel does not release under it.
    std::unordered_map<std::uint64_t, std::unique_ptr<OpenFile>> files_;
    std::uint64_t lastHandle_ = 0;
    AccessEngine engine_;
    timespec started_{};
};

} // namespace pccfs
