// SPDX-License-Identifier: Apache-2.0
#include "access_engine.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>

namespace pccfs
{
namespace
{

using Clock = Mailbox::Clock;

std::uint64_t transitionLatencyNs(const Options& o)
{
    // cppc_cpufreq's: the larger of the subspace's nominal latency and
    // minimum turnaround, in ns.
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::max(o.latency, o.turnaround))
            .count());
}

} // namespace

AccessEngine::AccessEngine(const Options& options) :
    model_(options.cpus, options.cpusPerPolicy, transitionLatencyNs(options),
           Clock::now()),
    mailbox_(options.latency, options.turnaround),
    timer_([this] { runTimer(); })
{}

AccessEngine::~AccessEngine()
{
    stop();
}

bool AccessEngine::touches(const std::set<unsigned>& cpus,
                           const Access& access) const
{
    if (cpus.empty())
    {
        return false;
    }
    const std::vector<unsigned> mine = model_.cpusOf(access.role, access.index);
    return std::any_of(mine.begin(), mine.end(),
                       [&cpus](unsigned c) { return cpus.contains(c); });
}

void AccessEngine::submit(Access access)
{
    Replies replies;
    fuse_req_t req = access.req;
    Outcome outcome = Outcome::answered;
    {
        const std::lock_guard lock(mutex_);
        if (stopping_)
        {
            replies.push_back(Reply::failure(req, EIO));
        }
        else
        {
            outcome = process(std::move(access), Clock::now(), replies);
        }
    }
    if (outcome == Outcome::held)
    {
        // Only this thread releases a held access (a control write), so it
        // is still held here. A process killed while waiting on it sends an
        // interrupt, which answers it.
        fuse_req_interrupt_func(req, &AccessEngine::interrupted, this);
    }
    send(replies);
}

AccessEngine::Outcome AccessEngine::process(
    Access access, Clock::time_point now, Replies& replies)
{
    if (access.role == Role::control)
    {
        command(access, replies);
        return Outcome::answered;
    }
    if (access.role == Role::stats)
    {
        complete(access, now, replies);
        return Outcome::answered;
    }
    if (touches(hung_, access))
    {
        held_.push_back(std::move(access));
        return Outcome::held;
    }
    if (access.write)
    {
        if (const std::error_code ec =
                model_.check(access.role, access.index, access.data))
        {
            replies.push_back(Reply::failure(access.req, ec.value()));
            return Outcome::answered;
        }
    }
    access.fail = touches(failing_, access);
    const bool pcc = access.write
                         ? isPccWrite(access.role)
                         : isPccRead(access.role) && access.offset == 0;
    if (!pcc || mailbox_.cost() == Clock::duration::zero())
    {
        if (pcc)
        {
            ++(access.write ? writeDoorbells_ : readDoorbells_);
        }
        complete(access, now, replies);
        return Outcome::answered;
    }
    const Mailbox::Slot slot =
        access.write ? mailbox_.write(now) : mailbox_.read(now);
    Doorbell& d = scheduled_[slot.doorbell];
    d.done = slot.done;
    d.write = access.write;
    d.members.push_back(std::move(access));
    if (slot.opened)
    {
        wake_.notify_one();
    }
    return Outcome::scheduled;
}

void AccessEngine::complete(Access& access, Clock::time_point now,
                            Replies& replies)
{
    Reply r = Reply::failure(access.req, 0);
    r.write = access.write;
    if (access.fail)
    {
        ++failed_;
        r.error = EIO;
        replies.push_back(std::move(r));
        return;
    }
    try
    {
        if (access.write)
        {
            model_.store(access.role, access.index, access.data, now);
            if (isPccWrite(access.role))
            {
                ++writes_;
                model_.countWrite(access.index);
            }
            r.written = access.data.size();
        }
        else
        {
            if (access.offset == 0)
            {
                access.file->shown =
                    access.role == Role::stats
                        ? stats()
                        : model_.show(access.role, access.index, now);
            }
            const std::string& shown = access.file->shown;
            const auto from =
                std::min(static_cast<std::size_t>(access.offset), shown.size());
            r.data = shown.substr(from, access.size);
        }
    }
    catch (const std::exception&)
    {
        r.error = EIO;
    }
    replies.push_back(std::move(r));
}

void AccessEngine::command(const Access& access, Replies& replies)
{
    const std::optional<Command> c = parseCommand(access.data);
    if (!c || (c->cpu && *c->cpu >= model_.cpuCount()))
    {
        replies.push_back(Reply::failure(access.req, EINVAL));
        return;
    }
    const Clock::time_point now = Clock::now();
    std::vector<unsigned> cpus;
    if (c->cpu)
    {
        cpus.push_back(*c->cpu);
    }
    else
    {
        cpus.assign(hung_.begin(), hung_.end());
        failing_.clear();
    }
    for (const unsigned cpu : cpus)
    {
        switch (c->kind)
        {
            case Command::Kind::hang:
                hung_.insert(cpu);
                break;
            case Command::Kind::fail:
                failing_.insert(cpu);
                break;
            case Command::Kind::clear:
                failing_.erase(cpu);
                [[fallthrough]];
            case Command::Kind::release:
                releaseCpu(cpu, now, replies);
                break;
        }
    }
    replies.push_back(Reply::success(access.req, access.data.size()));
}

void AccessEngine::releaseCpu(unsigned cpu, Clock::time_point now,
                              Replies& replies)
{
    hung_.erase(cpu);
    std::list<Access> held;
    held.swap(held_);
    for (Access& a : held)
    {
        // Those still touching a hung CPU go back to the list.
        (void)process(std::move(a), now, replies);
    }
}

std::string AccessEngine::stats() const
{
    std::size_t scheduled = 0;
    for (const auto& [number, d] : scheduled_)
    {
        scheduled += d.members.size();
    }
    return "write_doorbells " + std::to_string(writeDoorbells_) +
           "\nread_doorbells " + std::to_string(readDoorbells_) + "\nwrites " +
           std::to_string(writes_) + "\nfailed " + std::to_string(failed_) +
           "\nheld " + std::to_string(held_.size()) + "\nscheduled " +
           std::to_string(scheduled) + "\ninterrupted " +
           std::to_string(interrupted_) + '\n' + model_.policyStats();
}

void AccessEngine::interrupted(fuse_req_t req, void* engine)
{
    static_cast<AccessEngine*>(engine)->interrupt(req);
}

void AccessEngine::interrupt(fuse_req_t req)
{
    {
        const std::lock_guard lock(mutex_);
        const auto it =
            std::find_if(held_.begin(), held_.end(),
                         [req](const Access& a) { return a.req == req; });
        if (it == held_.end())
        {
            return; // scheduled or answered: its doorbell answers it soon
        }
        held_.erase(it);
        ++interrupted_;
    }
    fuse_reply_err(req, EINTR);
}

void AccessEngine::runTimer()
{
    // Wake-ups as close to the doorbells' times as the kernel allows.
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    std::unique_lock lock(mutex_);
    while (!stopping_)
    {
        if (scheduled_.empty())
        {
            wake_.wait(lock);
            continue;
        }
        // Doorbells complete in the order they were numbered.
        auto first = scheduled_.begin();
        const Clock::time_point done = first->second.done;
        if (Clock::now() < done)
        {
            wake_.wait_until(lock, done);
            continue;
        }
        Doorbell d = std::move(first->second);
        scheduled_.erase(first);
        ++(d.write ? writeDoorbells_ : readDoorbells_);
        Replies replies;
        const Clock::time_point now = Clock::now();
        for (Access& a : d.members)
        {
            complete(a, now, replies);
        }
        lock.unlock();
        send(replies);
        lock.lock();
    }
}

void AccessEngine::stop()
{
    Replies replies;
    {
        const std::lock_guard lock(mutex_);
        if (stopping_ && !timer_.joinable())
        {
            return;
        }
        stopping_ = true;
        for (const Access& a : held_)
        {
            replies.push_back(Reply::failure(a.req, EIO));
        }
        held_.clear();
        for (const auto& [number, d] : scheduled_)
        {
            for (const Access& a : d.members)
            {
                replies.push_back(Reply::failure(a.req, EIO));
            }
        }
        scheduled_.clear();
    }
    wake_.notify_all();
    if (timer_.joinable())
    {
        timer_.join();
    }
    send(replies);
}

void AccessEngine::send(Replies& replies)
{
    for (Reply& r : replies)
    {
        if (r.error != 0)
        {
            fuse_reply_err(r.req, r.error);
        }
        else if (r.write)
        {
            fuse_reply_write(r.req, r.written);
        }
        else
        {
            fuse_reply_buf(r.req, r.data.data(), r.data.size());
        }
    }
    replies.clear();
}

} // namespace pccfs
