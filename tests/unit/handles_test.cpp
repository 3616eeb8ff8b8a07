// SPDX-License-Identifier: Apache-2.0
// The handle table with real tasks, without a bus: child processes whose
// exit the test controls through a pipe, and a thread of the test itself.
// Handles end on release by their owner, when their connection leaves, and
// when their task exits; the limits per connection, per user and of the
// table (with its privileged reserve) refuse extra handles and fast
// callers; a process that gets an exited task's PID does not inherit its
// handle.
#include "daemon/handles.hpp"
#include "daemon/task_info.hpp"
#include "lib/backend/pidfd.hpp"
#include "tests/unit/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::backend::Fd;
using cppc::backend::PidfdOf;
using policies::Clamp;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

using test::Child;

constexpr Clamp boost{512, 1024};
constexpr Clamp cap{0, 256};

HintTarget process(const Child& child)
{
    return {child.pid(), true};
}

// The test's own user: it owns the children, so it may clamp them without
// privilege.
Credentials ownUser(bool privileged = false)
{
    return {::geteuid(), ::getpid(), privileged};
}

// A user that owns none of the test's tasks.
constexpr uid_t stranger = 54321;

// Limits out of the way, unless a test sets them.
ClientLimits roomy()
{
    return {4096, 0, 16384, 0};
}

// A table whose connections `names` are known as `creds`.
std::unique_ptr<HandleTable> tableOf(
    std::initializer_list<const char*> names, const Credentials& creds,
    ClientLimits limits = roomy(), std::size_t maxTotal = maxTotalHandles)
{
    auto table = std::make_unique<HandleTable>(maxTotal, limits);
    for (const char* name : names)
    {
        table->setCredentials(name, creds);
    }
    return table;
}

// What an Ended says, without its pidfd.
struct Seen
{
    std::uint64_t handle = 0;
    HandleKind kind = HandleKind::clamp;
    std::string owner;
    EndReason reason = EndReason::released;
    std::vector<unsigned> cpus;

    bool operator==(const Seen&) const = default;
};

Seen seen(const Ended& e)
{
    return {e.handle, e.kind, e.owner, e.reason, e.cpus};
}

std::vector<Seen> seen(const std::vector<Ended>& ended)
{
    std::vector<Seen> out;
    out.reserve(ended.size());
    for (const Ended& e : ended)
    {
        out.push_back(seen(e));
    }
    return out;
}

std::vector<ClampHint> clamps(const HandleTable& table)
{
    const std::span<const ClampHint> live = table.liveClamps();
    return {live.begin(), live.end()};
}

TEST(HandleTable, AddsAndReleasesClamps)
{
    Child child;
    auto t = tableOf({":1.1"}, ownUser());
    const AddResult a = t->addClamp(":1.1", process(child), boost);
    ASSERT_FALSE(a.error) << a.error.message();
    EXPECT_NE(a.handle, 0U);
    EXPECT_EQ(t->size(), 1U);
    EXPECT_EQ(t->countOf(":1.1"), 1U);
    EXPECT_EQ(t->countOfUser(::geteuid()), 1U);
    EXPECT_THAT(clamps(*t),
                ElementsAre(ClampHint{a.handle, {child.pid(), true}, boost}));
    const Handle* h = t->find(a.handle);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->kind, HandleKind::clamp);
    EXPECT_EQ(h->owner, ":1.1");
    EXPECT_TRUE(h->pidfd);
    EXPECT_FALSE(cppc::backend::pidfdExited(h->pidfd.get()));

    Ended ended;
    EXPECT_FALSE(t->release(":1.1", a.handle, ended));
    EXPECT_EQ(
        seen(ended),
        (Seen{a.handle, HandleKind::clamp, ":1.1", EndReason::released, {}}));
    EXPECT_TRUE(ended.pidfd); // closed with `ended`
    EXPECT_EQ(t->find(a.handle), nullptr);
    EXPECT_EQ(t->size(), 0U);
    EXPECT_EQ(t->countOf(":1.1"), 0U);
    EXPECT_THAT(clamps(*t), IsEmpty());
    EXPECT_EQ(t->release(":1.1", a.handle, ended), HandleErrc::noSuchHandle);

    // Handles are never reused.
    const AddResult b = t->addClamp(":1.1", process(child), cap);
    ASSERT_FALSE(b.error);
    EXPECT_GT(b.handle, a.handle);
}

TEST(HandleTable, OnlyTheOwnerReleases)
{
    Child child;
    auto t = tableOf({":1.1", ":1.2"}, ownUser());
    const AddResult a = t->addClamp(":1.1", process(child), boost);
    ASSERT_FALSE(a.error);
    Ended ended;
    EXPECT_EQ(t->release(":1.2", a.handle, ended), HandleErrc::noSuchHandle);
    EXPECT_NE(t->find(a.handle), nullptr);
    EXPECT_FALSE(t->release(":1.1", a.handle, ended));
}

TEST(HandleTable, RefusesBadClamps)
{
    Child child;
    auto t = tableOf({":1.1"}, ownUser());
    for (const Clamp bad :
         {Clamp{1025, 1025}, Clamp{0, 1025}, Clamp{600, 500}, Clamp{1024, 0}})
    {
        const AddResult r = t->addClamp(":1.1", process(child), bad);
        EXPECT_EQ(r.error, HandleErrc::invalidClamp)
            << bad.min << " " << bad.max;
        EXPECT_EQ(r.handle, 0U);
    }
    EXPECT_EQ(t->size(), 0U);
    for (const Clamp good :
         {Clamp{0, 0}, Clamp{1024, 1024}, Clamp{500, 500}, Clamp{0, 1024}})
    {
        EXPECT_FALSE(t->addClamp(":1.1", process(child), good).error)
            << good.min << " " << good.max;
    }
}

TEST(HandleTable, RefusesTasksThatDoNotExist)
{
    auto t = tableOf({":1.1"}, ownUser());
    pid_t gone = 0;
    {
        Child child;
        gone = child.pid();
    }
    EXPECT_EQ(t->addClamp(":1.1", {gone, true}, boost).error,
              HandleErrc::noSuchTask);
    EXPECT_EQ(t->addClamp(":1.1", {gone, false}, boost).error,
              HandleErrc::noSuchTask);
    EXPECT_EQ(t->addClamp(":1.1", {0, true}, boost).error,
              HandleErrc::noSuchTask);
    EXPECT_EQ(t->addClamp(":1.1", {-1, true}, boost).error,
              HandleErrc::noSuchTask);
    EXPECT_EQ(t->addLatency(":1.1", gone, 10, {}).error,
              HandleErrc::notPermitted);

    // A zombie has exited: no handle either.
    Child zombie;
    zombie.exitUnreaped();
    EXPECT_EQ(t->addClamp(":1.1", process(zombie), boost).error,
              HandleErrc::noSuchTask);
    t->setCredentials(":1.1", ownUser(true));
    EXPECT_EQ(t->addLatency(":1.1", zombie.pid(), 10, {}).error,
              HandleErrc::noSuchTask);
    EXPECT_EQ(t->addLatency(":1.1", gone, 10, {}).error,
              HandleErrc::noSuchTask);
    EXPECT_EQ(t->size(), 0U);
    EXPECT_EQ(t->countOf(":1.1"), 0U);
}

TEST(HandleTable, AddsOnlyForCallersItKnows)
{
    Child child;
    HandleTable t(maxTotalHandles, roomy());
    EXPECT_EQ(t.takeCall("", 0), HandleErrc::unknownCaller);
    EXPECT_FALSE(t.takeCall(":1.1", 0));
    EXPECT_TRUE(t.connected(":1.1"));
    EXPECT_EQ(t.credentials(":1.1"), nullptr);
    EXPECT_EQ(t.addClamp(":1.1", process(child), boost).error,
              HandleErrc::unknownCaller);
    t.setCredentials(":1.1", ownUser());
    ASSERT_NE(t.credentials(":1.1"), nullptr);
    EXPECT_EQ(*t.credentials(":1.1"), ownUser());
    const AddResult a = t.addClamp(":1.1", process(child), boost);
    ASSERT_FALSE(a.error);
    // After a reload the caller is asked again; its handles stay.
    t.forgetCredentials();
    EXPECT_EQ(t.credentials(":1.1"), nullptr);
    EXPECT_EQ(t.addClamp(":1.1", process(child), boost).error,
              HandleErrc::unknownCaller);
    EXPECT_NE(t.find(a.handle), nullptr);
}

TEST(HandleTable, ClampsOtherUsersTasksOnlyWithPrivilege)
{
    Child child; // the test's user's
    auto t = tableOf({":1.1"}, {stranger, 1, false});
    EXPECT_EQ(t->addClamp(":1.1", process(child), boost).error,
              HandleErrc::notPermitted);
    EXPECT_EQ(t->addLatency(":1.1", 0, 10, {0}).error,
              HandleErrc::notPermitted);
    EXPECT_EQ(t->size(), 0U);
    t->setCredentials(":1.1", {stranger, 1, true});
    EXPECT_FALSE(t->addClamp(":1.1", process(child), boost).error);
    EXPECT_FALSE(t->addLatency(":1.1", 0, 10, {0}).error);
}

TEST(HandleTable, EnergyPreferencesFollowTheClampRuleAndEndWithTheTask)
{
    using policies::EnergyPreference;
    auto child = std::make_unique<Child>(); // the test's user's
    auto t = tableOf({":1.1", ":1.2"}, {stranger, 1, false});
    // Another user's task, or a CPU set, needs privilege.
    EXPECT_EQ(
        t->addEnergy(":1.1", child->pid(), EnergyPreference::performance, {})
            .error,
        HandleErrc::notPermitted);
    EXPECT_EQ(t->addEnergy(":1.1", 0, EnergyPreference::efficiency, {0}).error,
              HandleErrc::notPermitted);
    EXPECT_EQ(t->size(), 0U);
    // Its owner may, without privilege: the CPUs are the task's affinity.
    t->setCredentials(":1.2", ownUser());
    const AddResult own =
        t->addEnergy(":1.2", child->pid(), EnergyPreference::performance, {});
    ASSERT_FALSE(own.error) << own.error.message();
    const Handle* h = t->find(own.handle);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->kind, HandleKind::energy);
    EXPECT_EQ(handleName(*h), "energy-performance");
    EXPECT_EQ(h->target.pid, child->pid());
    std::vector<unsigned> affinity;
    ASSERT_FALSE(taskAffinity(child->pid(), affinity));
    EXPECT_EQ(h->cpus, affinity);
    EXPECT_TRUE(h->pidfd);
    EXPECT_EQ(t->energyCount(), 1U);
    EXPECT_EQ(t->clampCount(), 0U);
    // A task that is gone is refused.
    const pid_t gone = child->pid();
    child.reset();
    EXPECT_EQ(
        t->addEnergy(":1.2", gone, EnergyPreference::efficiency, {}).error,
        HandleErrc::noSuchTask);
    const std::optional<Ended> ended =
        t->end(own.handle, EndReason::taskExited);
    ASSERT_TRUE(ended.has_value());
    EXPECT_EQ(ended->kind, HandleKind::energy);
    EXPECT_EQ(t->energyCount(), 0U);
    // Privileged: a CPU set.
    t->setCredentials(":1.1", {stranger, 1, true});
    const AddResult set =
        t->addEnergy(":1.1", 0, EnergyPreference::efficiency, {4, 5});
    ASSERT_FALSE(set.error);
    EXPECT_EQ(handleName(*t->find(set.handle)), "energy-efficiency");
    EXPECT_THAT(t->find(set.handle)->cpus, ElementsAre(4, 5));
    EXPECT_EQ(t->connectionGone(":1.1").size(), 1U);
    EXPECT_EQ(t->energyCount(), 0U);
}

TEST(HandleTable, AddsLatencyRequests)
{
    Child child;
    auto t = tableOf({":1.1"}, ownUser(true));
    const AddResult set = t->addLatency(":1.1", 0, 50, {2, 3});
    ASSERT_FALSE(set.error) << set.error.message();
    const Handle* h = t->find(set.handle);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->kind, HandleKind::latency);
    EXPECT_EQ(h->latencyUs, 50U);
    EXPECT_THAT(h->cpus, ElementsAre(2U, 3U));
    EXPECT_EQ(h->target.pid, 0);
    EXPECT_FALSE(h->pidfd);
    // A latency request clamps nothing: it reports 0/0.
    EXPECT_EQ(h->clamp, (Clamp{0, 0}));
    EXPECT_THAT(clamps(*t), IsEmpty());

    // For a task: on the CPUs it may run on, held by its pidfd.
    const AddResult task = t->addLatency(":1.1", child.pid(), 0, {});
    ASSERT_FALSE(task.error) << task.error.message();
    h = t->find(task.handle);
    EXPECT_EQ(h->target, (HintTarget{child.pid(), true}));
    EXPECT_FALSE(h->cpus.empty());
    EXPECT_TRUE(h->pidfd);
    EXPECT_EQ(t->clampCount(), 0U);
    EXPECT_EQ(t->size(), 2U);

    child.exit();
    EXPECT_TRUE(cppc::backend::pidfdExited(h->pidfd.get()));
    const std::optional<Ended> ended =
        t->end(task.handle, EndReason::taskExited);
    ASSERT_TRUE(ended);
    EXPECT_EQ(ended->kind, HandleKind::latency);
    EXPECT_EQ(endReasonName(ended->reason), "task-exited");
}

TEST(HandleTable, LimitsHandlesPerConnection)
{
    Child child;
    ClientLimits limits = roomy();
    limits.maxHandles = 2;
    auto t = tableOf({":1.1", ":1.2"}, ownUser(true), limits);
    const AddResult a = t->addClamp(":1.1", process(child), boost);
    ASSERT_FALSE(a.error);
    ASSERT_FALSE(t->addLatency(":1.1", 0, 5, {0}).error);
    EXPECT_EQ(t->addClamp(":1.1", process(child), cap).error,
              HandleErrc::connectionFull);
    EXPECT_EQ(t->addLatency(":1.1", 0, 5, {0}).error,
              HandleErrc::connectionFull);
    EXPECT_EQ(t->countOf(":1.1"), 2U);
    // Another connection has its own limit.
    EXPECT_FALSE(t->addClamp(":1.2", process(child), cap).error);
    // Releasing makes room.
    Ended ended;
    ASSERT_FALSE(t->release(":1.1", a.handle, ended));
    EXPECT_FALSE(t->addClamp(":1.1", process(child), cap).error);

    // A lower limit keeps the live handles but refuses new ones.
    limits.maxHandles = 1;
    t->setLimits(limits);
    EXPECT_EQ(t->countOf(":1.1"), 2U);
    EXPECT_EQ(t->addClamp(":1.1", process(child), cap).error,
              HandleErrc::connectionFull);
}

TEST(HandleTable, LimitsHandlesPerUserOverItsConnections)
{
    Child child;
    ClientLimits limits = roomy();
    limits.maxHandles = 2;
    limits.maxHandlesPerUser = 3;
    // Privileged callers have their user's limit too.
    auto t = tableOf({":1.1", ":1.2", ":1.3"}, ownUser(true), limits);
    t->setCredentials(":1.9", {stranger, 1, true});
    ASSERT_FALSE(t->addClamp(":1.1", process(child), boost).error);
    ASSERT_FALSE(t->addClamp(":1.1", process(child), boost).error);
    ASSERT_FALSE(t->addLatency(":1.2", 0, 5, {0}).error);
    EXPECT_EQ(t->addClamp(":1.2", process(child), cap).error,
              HandleErrc::userFull);
    EXPECT_EQ(t->addClamp(":1.3", process(child), cap).error,
              HandleErrc::userFull);
    EXPECT_EQ(t->countOfUser(::geteuid()), 3U);
    // Another user is not starved.
    EXPECT_FALSE(t->addClamp(":1.9", process(child), cap).error);
    // A connection leaving gives its user's room back.
    EXPECT_EQ(t->connectionGone(":1.1").size(), 2U);
    EXPECT_EQ(t->countOfUser(::geteuid()), 1U);
    EXPECT_FALSE(t->addClamp(":1.3", process(child), cap).error);
}

TEST(HandleTable, KeepsAReserveForPrivilegedCallers)
{
    Child child;
    // 8 handles in all, 2 of them only for privileged callers.
    auto t = tableOf({":1.1", ":1.2"}, ownUser(false), roomy(), 8);
    t->setCredentials(":1.7", {stranger, 1, true});
    EXPECT_EQ(t->privilegedReserve(), 2U);
    for (int i = 0; i < 6; ++i)
    {
        ASSERT_FALSE(
            t->addClamp(i < 3 ? ":1.1" : ":1.2", process(child), cap).error);
    }
    EXPECT_EQ(t->addClamp(":1.1", process(child), cap).error,
              HandleErrc::tableFull);
    EXPECT_EQ(t->addClamp(":1.2", process(child), cap).error,
              HandleErrc::tableFull);
    // Root and the group still have room, up to the whole table.
    const AddResult root = t->addClamp(":1.7", process(child), boost);
    ASSERT_FALSE(root.error);
    ASSERT_FALSE(t->addLatency(":1.7", 0, 5, {0}).error);
    EXPECT_EQ(t->addClamp(":1.7", process(child), cap).error,
              HandleErrc::tableFull);
    // Privileged handles do not use up the unprivileged share...
    Ended ended;
    ASSERT_FALSE(t->release(":1.7", root.handle, ended));
    EXPECT_EQ(t->addClamp(":1.1", process(child), cap).error,
              HandleErrc::tableFull);
    // ... and an unprivileged handle's end gives its room back.
    EXPECT_EQ(t->connectionGone(":1.2").size(), 3U);
    EXPECT_FALSE(t->addClamp(":1.1", process(child), cap).error);
}

TEST(HandleTable, LimitsCallsPerConnectionAndPerUser)
{
    ClientLimits limits = roomy();
    limits.maxCallsPerSecond = 2;        // burst 2
    limits.maxCallsPerSecondPerUser = 3; // over all of a user's connections
    HandleTable t(maxTotalHandles, limits);
    const std::uint64_t now = 1'000'000;
    EXPECT_FALSE(t.takeCall(":1.1", now));
    EXPECT_FALSE(t.takeCall(":1.1", now));
    EXPECT_EQ(t.takeCall(":1.1", now), HandleErrc::connectionRate);
    // Half a second gives one call back; time going backwards nothing.
    EXPECT_EQ(t.takeCall(":1.1", now + 499'999), HandleErrc::connectionRate);
    EXPECT_FALSE(t.takeCall(":1.1", now + 500'000));
    EXPECT_EQ(t.takeCall(":1.1", now), HandleErrc::connectionRate);

    // Once the user is known, its connections share its bucket.
    t.setCredentials(":1.2", ownUser());
    t.setCredentials(":1.3", ownUser());
    t.setCredentials(":1.4", {stranger, 1, false});
    EXPECT_FALSE(t.takeCall(":1.2", now));
    EXPECT_FALSE(t.takeCall(":1.2", now));
    EXPECT_FALSE(t.takeCall(":1.3", now));
    EXPECT_EQ(t.takeCall(":1.3", now), HandleErrc::userRate);
    // Other users have their own.
    EXPECT_FALSE(t.takeCall(":1.4", now));
    // A long pause refills only up to the burst.
    EXPECT_FALSE(t.takeCall(":1.2", now + 100'000'000));
    EXPECT_FALSE(t.takeCall(":1.3", now + 100'000'000));
    EXPECT_FALSE(t.takeCall(":1.3", now + 100'000'000));
    EXPECT_EQ(t.takeCall(":1.2", now + 100'000'000), HandleErrc::userRate);
}

TEST(HandleTable, ConnectionGoneEndsItsHandles)
{
    Child child;
    auto t = tableOf({":1.1", ":1.2"}, ownUser(true));
    const AddResult a = t->addClamp(":1.1", process(child), boost);
    const AddResult b = t->addClamp(":1.2", process(child), cap);
    const AddResult c = t->addLatency(":1.1", 0, 7, {1});
    ASSERT_FALSE(a.error || b.error || c.error);

    const std::vector<Ended> ended = t->connectionGone(":1.1");
    EXPECT_THAT(
        seen(ended),
        ElementsAre(
            Seen{
                a.handle, HandleKind::clamp, ":1.1", EndReason::clientLeft, {}},
            Seen{c.handle,
                 HandleKind::latency,
                 ":1.1",
                 EndReason::clientLeft,
                 {1}}));
    EXPECT_EQ(endReasonName(ended[0].reason), "client-left");
    EXPECT_EQ(t->countOf(":1.1"), 0U);
    EXPECT_FALSE(t->connected(":1.1"));
    EXPECT_EQ(t->credentials(":1.1"), nullptr);
    EXPECT_THAT(clamps(*t),
                ElementsAre(ClampHint{b.handle, {child.pid(), true}, cap}));
    EXPECT_THAT(t->connectionGone(":1.1"), IsEmpty());
    EXPECT_THAT(t->connectionGone(":1.9"), IsEmpty());
}

TEST(HandleTable, EndAllEndsEverything)
{
    Child child;
    auto t = tableOf({":1.1", ":1.2"}, ownUser(true));
    ASSERT_FALSE(t->addClamp(":1.1", process(child), boost).error);
    ASSERT_FALSE(t->addLatency(":1.2", 0, 7, {1}).error);
    const std::vector<Ended> ended = t->endAll();
    ASSERT_EQ(ended.size(), 2U);
    EXPECT_EQ(endReasonName(ended[1].reason), "daemon-stopped");
    EXPECT_EQ(t->size(), 0U);
    EXPECT_THAT(clamps(*t), IsEmpty());
    EXPECT_EQ(t->countOfUser(::geteuid()), 0U);
}

TEST(HandleTable, PidfdsReportTheirTasksExit)
{
    Child stays;
    Child leaves;
    auto t = tableOf({":1.1", ":1.2"}, ownUser());
    const AddResult a = t->addClamp(":1.1", process(leaves), boost);
    const AddResult b = t->addClamp(":1.2", process(leaves), cap);
    const AddResult c = t->addClamp(":1.1", process(stays), cap);
    ASSERT_FALSE(a.error || b.error || c.error);

    leaves.exitUnreaped();
    // The event loop sees the pidfds become readable and ends those.
    for (const auto& [handle, h] : t->handles())
    {
        pollfd p{h.pidfd.get(), POLLIN, 0};
        EXPECT_EQ(::poll(&p, 1, 0), handle == c.handle ? 0 : 1);
    }
    EXPECT_EQ(t->end(a.handle, EndReason::taskExited)->owner, ":1.1");
    EXPECT_EQ(t->end(b.handle, EndReason::taskExited)->owner, ":1.2");
    EXPECT_FALSE(t->end(b.handle, EndReason::taskExited));
    EXPECT_THAT(clamps(*t),
                ElementsAre(ClampHint{c.handle, {stays.pid(), true}, cap}));
    EXPECT_EQ(t->countOf(":1.1"), 1U);
    EXPECT_EQ(t->countOf(":1.2"), 0U);
}

TEST(HandleTable, ReusedPidDoesNotInheritAHandle)
{
    auto t = tableOf({":1.1"}, ownUser());
    auto first = std::make_unique<Child>();
    const pid_t pid = first->pid();
    const AddResult a = t->addClamp(":1.1", process(*first), boost);
    ASSERT_FALSE(a.error);
    const int pidfd = t->find(a.handle)->pidfd.get();
    first.reset(); // exits and is reaped: the PID is free

    // A new process, possibly with the same PID (the test does not force
    // it: that would change the machine's PID allocation). What keeps a
    // handle from passing to a reused PID is the pidfd, which follows the
    // exited task, not the number.
    const auto second = std::make_unique<Child>();
    ::testing::Test::RecordProperty("samePid", second->pid() == pid ? 1 : 0);
    EXPECT_TRUE(cppc::backend::pidfdExited(pidfd));
    ASSERT_TRUE(t->end(a.handle, EndReason::taskExited));
    EXPECT_THAT(clamps(*t), IsEmpty());

    // The new process can get its own.
    const AddResult b = t->addClamp(":1.1", process(*second), cap);
    ASSERT_FALSE(b.error);
    EXPECT_NE(b.handle, a.handle);
    EXPECT_FALSE(cppc::backend::pidfdExited(t->find(b.handle)->pidfd.get()));
    EXPECT_THAT(clamps(*t),
                ElementsAre(ClampHint{b.handle, {second->pid(), true}, cap}));
}

TEST(HandleTable, ClampsAThreadOrSaysWhyNot)
{
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    pid_t tid = 0;
    int ready[2];
    ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    std::thread worker([&] {
        const auto self = static_cast<pid_t>(::syscall(SYS_gettid));
        EXPECT_EQ(::write(ready[1], &self, sizeof self),
                  static_cast<ssize_t>(sizeof self));
        char c = 0;
        while (::read(fds[0], &c, 1) < 0 && errno == EINTR)
        {}
    });
    ASSERT_EQ(::read(ready[0], &tid, sizeof tid),
              static_cast<ssize_t>(sizeof tid));

    auto t = tableOf({":1.1"}, ownUser());
    // The thread is not a process.
    EXPECT_EQ(t->addClamp(":1.1", {tid, true}, boost).error,
              HandleErrc::notAProcess);
    const AddResult a = t->addClamp(":1.1", {tid, false}, boost);
    ::close(fds[1]);
    worker.join();
    if (a.error == HandleErrc::threadUnsupported)
    {
        EXPECT_EQ(t->size(), 0U); // a kernel before 6.9
    }
    else
    {
        ASSERT_FALSE(a.error) << a.error.message();
        // join() can return a moment before the kernel has released the
        // thread: wait for its pidfd as the event loop would.
        pollfd p{t->find(a.handle)->pidfd.get(), POLLIN, 0};
        ASSERT_EQ(::poll(&p, 1, 10'000), 1);
        // The thread's exit ends its handle; the process lives on.
        EXPECT_TRUE(cppc::backend::pidfdExited(p.fd));
    }
    for (const int fd : {fds[0], ready[0], ready[1]})
    {
        ::close(fd);
    }
}

TEST(HandleTable, TakesAPidfdFromTheCaller)
{
    Child child;
    auto t = tableOf({":1.1"}, ownUser());
    {
        Fd pidfd;
        ASSERT_FALSE(
            cppc::backend::openPidfd(child.pid(), PidfdOf::process, pidfd));
        const AddResult a = t->addClampPidfd(":1.1", pidfd.get(), boost);
        ASSERT_FALSE(a.error) << a.error.message();
        EXPECT_NE(t->find(a.handle)->pidfd.get(), pidfd.get()); // its own
        // Not a duplicate either: a file status flag set on the caller's
        // open file does not show on the table's, so closing the table's
        // descriptor ends whatever watches it.
        ASSERT_EQ(::fcntl(pidfd.get(), F_SETFL, O_NONBLOCK), 0);
        EXPECT_EQ(::fcntl(t->find(a.handle)->pidfd.get(), F_GETFL) & O_NONBLOCK,
                  0);
        EXPECT_THAT(
            clamps(*t),
            ElementsAre(ClampHint{a.handle, {child.pid(), true}, boost}));
    }

    // A pidfd of a process that exited and was not reaped yet.
    {
        Child zombie;
        Fd fd;
        ASSERT_FALSE(
            cppc::backend::openPidfd(zombie.pid(), PidfdOf::process, fd));
        zombie.exitUnreaped();
        EXPECT_EQ(t->addClampPidfd(":1.1", fd.get(), boost).error,
                  HandleErrc::noSuchTask);
    }

    // A pidfd of a process that already exited.
    {
        Child gone;
        Fd fd;
        ASSERT_FALSE(
            cppc::backend::openPidfd(gone.pid(), PidfdOf::process, fd));
        gone.exit();
        EXPECT_EQ(t->addClampPidfd(":1.1", fd.get(), boost).error,
                  HandleErrc::noSuchTask);
    }

    int pipeFds[2];
    ASSERT_EQ(::pipe2(pipeFds, O_CLOEXEC), 0);
    EXPECT_EQ(t->addClampPidfd(":1.1", pipeFds[0], boost).error,
              HandleErrc::notAPidfd);
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    EXPECT_EQ(t->addClampPidfd(":1.1", pipeFds[0], boost).error,
              HandleErrc::notAPidfd);
    EXPECT_EQ(t->addClampPidfd(":1.1", -1, boost).error, HandleErrc::notAPidfd);
    EXPECT_EQ(t->size(), 1U);
}

TEST(PidfdTaskCreds, AsksThePidfdsOwnTask)
{
    Child child;
    Fd pidfd;
    ASSERT_FALSE(
        cppc::backend::openPidfd(child.pid(), PidfdOf::process, pidfd));
    TaskCreds fromPidfd{};
    TaskCreds fromProc{};
    ASSERT_FALSE(pidfdTaskCreds(pidfd.get(), child.pid(), fromPidfd));
    ASSERT_FALSE(taskCreds(child.pid(), fromProc));
    EXPECT_EQ(fromPidfd, fromProc);
    EXPECT_EQ(fromPidfd.euid, ::geteuid());

    // Reaped: nothing to ask, whatever now has the number.
    child.exit();
    EXPECT_EQ(pidfdTaskCreds(pidfd.get(), child.pid(), fromPidfd),
              std::errc::no_such_process);
}

TEST(HandleTable, NamesItsErrors)
{
    EXPECT_STREQ(handleErrorCategory().name(), "cppcgov-handles");
    for (int e = 1; e <= static_cast<int>(HandleErrc::unknownCaller); ++e)
    {
        const std::string text =
            make_error_code(static_cast<HandleErrc>(e)).message();
        EXPECT_FALSE(text.empty());
        EXPECT_EQ(text.find("unknown handle error"), std::string::npos) << e;
    }
    EXPECT_EQ(endReasonName(EndReason::released), "released");
}

} // namespace
} // namespace cppcgov::daemon
