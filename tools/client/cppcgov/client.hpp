// SPDX-License-Identifier: Apache-2.0
// A C++17 RAII wrapper over libcppcgov-client (cppcgov/client.h), header
// only: cppcgov::client::Hint owns one hint and its bus connection and is
// move-only; destroying it (or reset()) releases the hint and closes the
// connection. Failures throw cppcgov::client::Error, a std::system_error
// whose code() is the errno (std::generic_category) and whose what() is
// the C API's description ("org.cppcgov.Error.NotPermitted: ..."); name()
// and busMessage() give the D-Bus error's parts. Threads and fork(2) as
// in cppcgov/client.h.
#pragma once

#include <cppcgov/client.h>

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace cppcgov::client
{

// A failed call of the C API.
class Error : public std::system_error
{
  public:
    explicit Error(const cppcgov_error& e) :
        std::system_error(-e.code, std::generic_category(), e.description),
        name_(e.name), message_(e.message)
    {}

    // The D-Bus error name ("org.cppcgov.Error.NoSuchTask"), empty when the
    // error did not come from the bus.
    [[nodiscard]] const std::string& name() const noexcept
    {
        return name_;
    }

    // The error's own text, without the name.
    [[nodiscard]] const std::string& busMessage() const noexcept
    {
        return message_;
    }

  private:
    std::string name_;
    std::string message_;
};

class Hint
{
  public:
    // No hint (operator bool is false).
    Hint() noexcept = default;

    // Takes over `hint` from the C API.
    explicit Hint(cppcgov_hint* hint) noexcept : hint_(hint) {}

    ~Hint()
    {
        reset();
    }

    Hint(Hint&& other) noexcept : hint_(std::exchange(other.hint_, nullptr)) {}

    Hint& operator=(Hint&& other) noexcept
    {
        if (this != &other)
        {
            reset();
            hint_ = std::exchange(other.hint_, nullptr);
        }
        return *this;
    }

    Hint(const Hint&) = delete;
    Hint& operator=(const Hint&) = delete;

    // The general request (cppcgov_hint_request). Throws Error.
    [[nodiscard]] static Hint request(const cppcgov_request& request)
    {
        return make([&request](cppcgov_hint** h, cppcgov_error* e) {
            return cppcgov_hint_request(&request, h, e);
        });
    }

    // Clamps the calling thread.
    [[nodiscard]] static Hint clampThread(std::uint16_t utilMin,
                                          std::uint16_t utilMax)
    {
        return clampTask(0, true, utilMin, utilMax);
    }

    // Clamps the calling process.
    [[nodiscard]] static Hint clampProcess(std::uint16_t utilMin,
                                           std::uint16_t utilMax)
    {
        return clampTask(0, false, utilMin, utilMax);
    }

    // Clamps process `pid` or, with `thread`, thread `pid`.
    [[nodiscard]] static Hint clampTask(
        pid_t pid, bool thread, std::uint16_t utilMin, std::uint16_t utilMax)
    {
        return make([&](cppcgov_hint** h, cppcgov_error* e) {
            return cppcgov_clamp_task(pid, thread ? 1 : 0, utilMin, utilMax, h,
                                      e);
        });
    }

    // Clamps the task `pidfd` refers to (the caller keeps the fd).
    [[nodiscard]] static Hint clampPidfd(int pidfd, std::uint16_t utilMin,
                                         std::uint16_t utilMax)
    {
        return make([&](cppcgov_hint** h, cppcgov_error* e) {
            return cppcgov_clamp_pidfd(pidfd, utilMin, utilMax, h, e);
        });
    }

    // Bounds the resume latency of process `pid`'s CPUs (0: the caller's).
    [[nodiscard]] static Hint latencyTask(pid_t pid, std::uint32_t latencyUs)
    {
        return make([&](cppcgov_hint** h, cppcgov_error* e) {
            return cppcgov_latency_task(pid, latencyUs, h, e);
        });
    }

    // Bounds the resume latency of `cpus`.
    [[nodiscard]] static Hint latencyCpus(
        const std::vector<std::uint32_t>& cpus, std::uint32_t latencyUs)
    {
        return make([&](cppcgov_hint** h, cppcgov_error* e) {
            return cppcgov_latency_cpus(cpus.data(), cpus.size(), latencyUs, h,
                                        e);
        });
    }

    explicit operator bool() const noexcept
    {
        return hint_ != nullptr;
    }

    // The C object, still owned by this Hint.
    [[nodiscard]] cppcgov_hint* get() const noexcept
    {
        return hint_;
    }

    // Releases the hint, closes its connection, and holds none.
    void reset() noexcept
    {
        hint_ = cppcgov_hint_free(hint_);
    }

    // Ends the hint, keeping the object. Throws Error.
    void release()
    {
        cppcgov_error e{};
        if (cppcgov_hint_release(hint_, &e) < 0)
        {
            throw Error(e);
        }
    }

    // The handle number, 0 without a hint.
    [[nodiscard]] std::uint64_t handle() const noexcept
    {
        return cppcgov_hint_get_handle(hint_);
    }

    // The connection's unique bus name, the hint's owner.
    [[nodiscard]] std::string owner() const
    {
        const char* o = cppcgov_hint_get_owner(hint_);
        return o ? o : "";
    }

    // Live, as far as processed messages tell (process() reads new ones).
    [[nodiscard]] bool live() const noexcept
    {
        return cppcgov_hint_is_live(hint_) > 0;
    }

    // Why it ended (cppcgov_hint_get_end_reason); nothing while live.
    [[nodiscard]] std::optional<std::string> endReason() const
    {
        const char* r = cppcgov_hint_get_end_reason(hint_);
        return r ? std::optional<std::string>(r) : std::nullopt;
    }

    // For an event loop: the fd, its poll(2) events, and the absolute
    // CLOCK_MONOTONIC deadline in microseconds (nothing: none).
    [[nodiscard]] int fd() const noexcept
    {
        return cppcgov_hint_get_fd(hint_);
    }

    [[nodiscard]] short events() const noexcept
    {
        const int e = cppcgov_hint_get_events(hint_);
        return static_cast<short>(e < 0 ? 0 : e);
    }

    [[nodiscard]] std::optional<std::uint64_t> timeoutUs() const noexcept
    {
        std::uint64_t usec = UINT64_MAX;
        if (cppcgov_hint_get_timeout(hint_, &usec) < 0 || usec == UINT64_MAX)
        {
            return std::nullopt;
        }
        return usec;
    }

    // Handles what arrived without blocking; returns live(). Throws
    // std::system_error (ECHILD in a forked child).
    bool process()
    {
        return check(cppcgov_hint_process(hint_));
    }

    // Processes until the hint ends or `timeoutUs` passes (UINT64_MAX: no
    // limit); returns live(). Throws std::system_error (EINTR on a signal).
    bool wait(std::uint64_t timeoutUs = UINT64_MAX)
    {
        return check(cppcgov_hint_wait(hint_, timeoutUs));
    }

  private:
    template <class Call>
    static Hint make(const Call& call)
    {
        cppcgov_hint* h = nullptr;
        cppcgov_error e{};
        if (call(&h, &e) < 0)
        {
            throw Error(e);
        }
        return Hint(h);
    }

    static bool check(int r)
    {
        if (r < 0)
        {
            throw std::system_error(-r, std::generic_category());
        }
        return r > 0;
    }

    cppcgov_hint* hint_ = nullptr;
};

} // namespace cppcgov::client
