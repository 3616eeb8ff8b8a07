// SPDX-License-Identifier: Apache-2.0
// Where every read and write of a pccfs file goes: the engine answers it
// at once (files the kernel caches), schedules it on the PCC mailbox and
// answers it from its timer thread when the doorbell completes, holds it
// unanswered (hang), or answers it with EIO (fail). The FUSE session
// thread only submits: it never waits on a latency. Replies go out with
// no lock held.
#pragma once

#include "control.hpp"
#include "kernel_model.hpp"
#include "mailbox.hpp"
#include "options.hpp"
#include "tree.hpp"

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace pccfs
{

// One open file: what its last read at offset 0 showed, for reads further
// on (as sysfs shows one snapshot per read from the start).
struct OpenFile
{
    std::string shown;
};

// One read or write, with the request to answer.
struct Access
{
    fuse_req_t req = nullptr;
    Role role = Role::control;
    unsigned index = 0;
    bool write = false;
    std::string data;     // writes
    std::size_t size = 0; // reads
    off_t offset = 0;     // reads
    OpenFile* file = nullptr;
    bool fail = false; // set when scheduled for a failing CPU
};

class AccessEngine
{
  public:
    explicit AccessEngine(const Options& options);
    ~AccessEngine();
    AccessEngine(const AccessEngine&) = delete;
    AccessEngine& operator=(const AccessEngine&) = delete;

    // Takes one access (FUSE session thread).
    void submit(Access access);

    // Answers every access still held or scheduled with EIO and stops the
    // timer thread; later submissions are answered EIO at once.
    void stop();

  private:
    struct Reply
    {
        fuse_req_t req = nullptr;
        int error = 0;
        bool write = false;
        std::size_t written = 0;
        std::string data;

        static Reply failure(fuse_req_t req, int error)
        {
            return {req, error, false, 0, {}};
        }
        static Reply success(fuse_req_t req, std::size_t bytes)
        {
            return {req, 0, true, bytes, {}};
        }
    };
    using Replies = std::vector<Reply>;
    enum class Outcome
    {
        answered,
        scheduled,
        held,
    };
    struct Doorbell
    {
        Mailbox::Clock::time_point done;
        bool write = false;
        std::vector<Access> members;
    };

    Outcome process(Access access, Mailbox::Clock::time_point now,
                    Replies& replies);
    void complete(Access& access, Mailbox::Clock::time_point now,
                  Replies& replies);
    void command(const Access& access, Replies& replies);
    void releaseCpu(unsigned cpu, Mailbox::Clock::time_point now,
                    Replies& replies);
    std::string stats() const;
    bool touches(const std::set<unsigned>& cpus, const Access& access) const;
    void interrupt(fuse_req_t req);
    static void interrupted(fuse_req_t req, void* engine);
    void runTimer();
    static void send(Replies& replies);

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    KernelModel model_;
    Mailbox mailbox_;
    std::set<unsigned> hung_;
    std::set<unsigned> failing_;
    std::list<Access> held_;
    std::map<std::uint64_t, Doorbell> scheduled_; // by doorbell number
    std::uint64_t writeDoorbells_ = 0;
    std::uint64_t readDoorbells_ = 0;
    std::uint64_t writes_ = 0;
    std::uint64_t failed_ = 0;
    std::uint64_t interrupted_ = 0;
    bool stopping_ = false;
    std::thread timer_;
};

} // namespace pccfs
