// SPDX-License-Identifier: Apache-2.0
// Perf control: executes an AccessPlan to request performance.
//
// BasicPerfControl is the hot path. Everything that cannot change after
// start-up (which store width, whether a read or a lock is needed, whether
// the CPU is in PCC, the field masks) was decided by the plan and is bound
// here once; setPerf() only range-checks the value and performs the
// accesses the plan prescribes. It never allocates.
//
// BasicConservativePerfControl is the baseline the optimised path is
// measured against: what Linux's cppc_set_perf() did before the 2026 CPPC
// series. It re-decodes each register from its descriptor, asks "is this in
// PCC?" at every phase, and reads, merges and writes every SystemMemory
// register under a per-CPU lock.
#pragma once

#include "access_plan.hpp"
#include "error.hpp"
#include "pcc_port.hpp"
#include "register_io.hpp"

#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <vector>

namespace cppc
{

namespace internal
{

inline constexpr std::array<CpcEntry, 3> controlEntries = {
    CpcEntry::desiredPerf, CpcEntry::minPerf, CpcEntry::maxPerf};

// The registers reached one at a time (writeControl, readControl,
// takePerfLimited), in the order BasicPerfControl keeps them.
inline constexpr std::array<CpcEntry, 6> singleEntries = {
    CpcEntry::minPerf,
    CpcEntry::maxPerf,
    CpcEntry::energyPerfPreference,
    CpcEntry::autonomousSelectionEnable,
    CpcEntry::autonomousActivityWindow,
    CpcEntry::perfLimited,
};

constexpr int singleIndex(CpcEntry e) noexcept
{
    for (std::size_t i = 0; i < singleEntries.size(); ++i)
    {
        if (singleEntries[i] == e)
        {
            return static_cast<int>(i);
        }
    }
    return -1;
}

// An Io whose units take an atomic compare-and-exchange (ordinary memory,
// as the simulator's register file): bool compareExchange(Ref, bytes,
// expected, desired) noexcept.
template <class Io>
concept HasCompareExchange = requires(Io& io, const typename Io::Ref& ref,
                                      std::uint64_t v)
{
    {
        io.compareExchange(ref, std::uint8_t{4}, v, v)
        } -> std::same_as<bool>;
};

} // namespace internal

// PerformanceLimited's bits (ACPI 6.5, 8.4.6.1, "Performance Limited
// Register"): bit 0, Desired Excursion, and bit 1, Minimum Excursion.
inline constexpr std::uint8_t perfLimitedDesiredExcursion = 1U << 0;
inline constexpr std::uint8_t perfLimitedMinimumExcursion = 1U << 1;
inline constexpr std::uint8_t perfLimitedBits =
    perfLimitedDesiredExcursion | perfLimitedMinimumExcursion;

// The value of `cpu`'s `entry` register, loaded through `map` as the plan
// says (one load of its access unit, the field taken out of it): for
// SystemMemory and SystemIO registers the plan did not refuse. Nothing for
// any other (an Integer, absent, PCC, FFH, refused) or for a CPU beyond the
// plan. Throws what map.map() throws when the unit cannot be mapped.
[[nodiscard]] std::optional<std::uint64_t> readRegister(
    const AccessPlan& plan, unsigned cpu, CpcEntry entry, RegisterMap& map);

template <class Io>
class BasicPerfControl
{
  public:
    // Binds every writable control register through `io`. `pcc` may be
    // null: CPUs controlled through PCC then get Errc::pccUnavailable.
    // Throws what Io::bind throws when a register cannot be mapped.
    BasicPerfControl(const AccessPlan& plan, Io io, PccPort* pcc = nullptr);

    BasicPerfControl(const BasicPerfControl&) = delete;
    BasicPerfControl& operator=(const BasicPerfControl&) = delete;

    // Requests `desired` performance on `cpu`.
    [[nodiscard]] std::error_code setPerf(unsigned cpu,
                                          std::uint64_t desired) noexcept;

    // Requests desired, minimum and maximum performance. Like Linux, the
    // minimum and maximum are written only where the CPU has those
    // registers (see hasMinMax); fields sharing one unit are merged into a
    // single read-modify-write. Nothing is written if any value is out of
    // range for its field.
    [[nodiscard]] std::error_code setPerf(unsigned cpu, std::uint64_t desired,
                                          std::uint64_t min,
                                          std::uint64_t max) noexcept;

    // Whether `cpu` has writable Minimum and Maximum registers.
    bool hasMinMax(unsigned cpu) const noexcept
    {
        return cpu < cpus_.size() && cpus_[cpu].hasMinMax;
    }

    // Whether `cpu`'s `entry` is a register writeControl(), readControl()
    // and takePerfLimited() reach: one of Minimum, Maximum,
    // EnergyPerformancePreference, AutonomousSelectionEnable,
    // AutonomousActivityWindow and PerformanceLimited that is a
    // SystemMemory or SystemIO register the plan found writable, or in
    // PCC. False for an Integer, the NULL register, FFH, a refused CPU.
    bool hasRegister(unsigned cpu, CpcEntry entry) const noexcept
    {
        const int k = internal::singleIndex(entry);
        return k >= 0 && cpu < singles_.size() &&
               singles_[cpu][static_cast<std::size_t>(k)].mode != Mode::noCpu;
    }

    // Writes `value` into `cpu`'s `entry` register alone: a store where it
    // fills its unit, else a read-modify-write (under the unit's lock where
    // the plan gives one: where two written fields share the unit); in PCC
    // one write command on its subspace. PerformanceLimited is written only
    // by takePerfLimited(). Errc::notWritable where hasRegister() is false
    // (and for PerformanceLimited), Errc::valueOutOfRange when `value` does
    // not fit the field, Errc::noSuchCpu beyond the plan,
    // Errc::pccUnavailable for a PCC register without a port.
    [[nodiscard]] std::error_code writeControl(unsigned cpu, CpcEntry entry,
                                               std::uint64_t value) noexcept;

    // Reads `cpu`'s `entry` register (one load of its unit, under its lock
    // where it has one; in PCC a read command). Errors as writeControl().
    [[nodiscard]] std::error_code readControl(unsigned cpu, CpcEntry entry,
                                              std::uint64_t& value) noexcept;

    // Reads PerformanceLimited's two bits into `bits` and clears the ones
    // it read. ACPI 6.5, 8.4.6.1 ("Performance Limited Register"): the
    // platform sets the bits, they are sticky, and OSPM clears a bit by
    // writing 0 to it; so the register is written back as read with the
    // bits read set to 0, and not written at all when none was set. The
    // other bits of the field are written back as read.
    //
    // A bit the platform sets between the read and the write must not be
    // lost. Where the Io can compare-and-exchange (ordinary memory, the
    // simulator) the write is a compare-and-exchange against what was read,
    // retried (reporting what the platform added) while the platform changed
    // the unit in between. On hardware (/dev/mem is mapped uncached, where
    // atomics are not architecturally guaranteed) it is a load and an
    // immediately following store: a bit set in the nanoseconds between
    // them, and not set again by the platform while the excursion lasts,
    // can be lost. In PCC it is a read command and a write command.
    // Errors as readControl(); Errc::notWritable without the register.
    [[nodiscard]] std::error_code takePerfLimited(unsigned cpu,
                                                  std::uint8_t& bits) noexcept;

    const Io& io() const noexcept
    {
        return io_;
    }

  private:
    using Ref = typename Io::Ref;

    enum class OpKind : std::uint8_t
    {
        none,
        store8,
        store16,
        store32,
        store64,
        rmw,
        lockedRmw,
        notDirect, // PCC, refused or no CPU: leave the fast path
    };

    struct Field
    {
        std::uint8_t source = 0; // 0 desired, 1 min, 2 max
        std::uint8_t shift = 0;
        std::uint64_t limit = 0;
    };

    // The Desired write of one CPU, all setPerf(cpu, desired) reads: kept
    // apart from Cpu so the hot path touches one small record.
    struct DesiredOp
    {
        OpKind kind = OpKind::notDirect;
        std::uint8_t bytes = 0;
        std::uint8_t shift = 0;
        std::uint64_t limit = ~std::uint64_t{0};
        Ref ref{};
        std::mutex* lock = nullptr;
    };

    // One access unit and the control fields written through it.
    struct Group
    {
        OpKind kind = OpKind::none;
        std::uint8_t bytes = 0;
        std::uint8_t fieldCount = 0;
        std::array<Field, 3> fields{};
        Ref ref{};
        std::mutex* lock = nullptr;
        std::uint64_t address = 0; // to merge fields of one unit at bind
    };

    enum class Mode : std::uint8_t
    {
        noCpu,
        refused,
        direct,
        pcc,
    };

    struct PccTarget
    {
        std::uint8_t subspace = 0;
        std::uint8_t count = 0;
        std::array<std::uint8_t, 3> source{};
        std::array<PccRegister, 3> regs{};
        std::array<std::uint64_t, 3> limit{};
    };

    struct Cpu
    {
        Mode mode = Mode::noCpu;
        bool hasMinMax = false;
        std::uint8_t groupCount = 0;
        std::array<Group, 3> groups{};
        PccTarget pcc;
    };

    // One register reached alone (singleEntries): mode noCpu when absent.
    struct Single
    {
        Mode mode = Mode::noCpu; // direct, pcc or noCpu
        OpKind kind = OpKind::none;
        std::uint8_t bytes = 0;
        std::uint8_t shift = 0;
        std::uint8_t subspace = 0;
        std::uint64_t limit = 0;
        Ref ref{};
        std::mutex* lock = nullptr;
        PccRegister reg;
    };

    Group bindGroup(const CpcDescriptor& d, const CpuPlan& cpu, CpcEntry e,
                    std::uint8_t source);
    void bindCpu(const AccessPlan& plan, unsigned index);
    void bindSingles(const AccessPlan& plan, unsigned index);
    const Single* single(unsigned cpu, CpcEntry entry,
                         std::error_code& ec) const noexcept;
    std::uint64_t lockedLoad(const Single& s) noexcept;
    // The success value, without a call into the C++ runtime per request.
    std::error_code ok() const noexcept
    {
        return {0, *success_};
    }
    [[gnu::noinline]] std::error_code slowDesired(
        const DesiredOp& op, unsigned cpu, std::uint64_t desired) noexcept;
    void mergeStore(const Ref& ref, std::uint8_t bytes, std::mutex* lock,
                    std::uint64_t clear, std::uint64_t bits) noexcept;
    std::error_code execute(const Group& g,
                            const std::array<std::uint64_t, 3>& v) noexcept;
    std::error_code notDirect(const Cpu& c,
                              const std::array<std::uint64_t, 3>& v,
                              std::uint8_t count) noexcept;

    Io io_;
    PccPort* pcc_;
    const std::error_category* success_;
    std::unique_ptr<std::mutex[]> locks_;
    std::vector<Cpu> cpus_;
    std::vector<DesiredOp> desired_;
    std::vector<std::array<Single, internal::singleEntries.size()>> singles_;
    unsigned cpuCount_;
};

template <class Io>
class BasicConservativePerfControl
{
  public:
    BasicConservativePerfControl(const AccessPlan& plan, Io io,
                                 PccPort* pcc = nullptr);

    [[nodiscard]] std::error_code setPerf(unsigned cpu,
                                          std::uint64_t desired) noexcept;
    [[nodiscard]] std::error_code setPerf(unsigned cpu, std::uint64_t desired,
                                          std::uint64_t min,
                                          std::uint64_t max) noexcept;

    const Io& io() const noexcept
    {
        return io_;
    }

  private:
    using Ref = typename Io::Ref;

    std::error_code apply(unsigned cpu, const std::array<std::uint64_t, 3>& v,
                          std::uint8_t count) noexcept;
    std::error_code writeRegister(unsigned cpu, std::size_t which,
                                  std::uint64_t value) noexcept;

    const AccessPlan* plan_;
    Io io_;
    PccPort* pcc_;
    std::unique_ptr<std::mutex[]> cpuLocks_;
    std::vector<std::array<Ref, 3>> refs_;
};

// ---------------------------------------------------------------------------
// Implementation.

template <class Io>
BasicPerfControl<Io>::BasicPerfControl(const AccessPlan& plan, Io io,
                                       PccPort* pcc) :
    io_(std::move(io)),
    pcc_(pcc), success_(&std::system_category()),
    locks_(std::make_unique<std::mutex[]>(plan.locks().size())),
    cpus_(plan.cpuCount()), desired_(plan.cpuCount()),
    singles_(plan.cpuCount()), cpuCount_(static_cast<unsigned>(plan.cpuCount()))
{
    for (unsigned i = 0; i < cpus_.size(); ++i)
    {
        bindCpu(plan, i);
        bindSingles(plan, i);
    }
}

template <class Io>
void BasicPerfControl<Io>::bindSingles(const AccessPlan& plan, unsigned index)
{
    const CpcDescriptor* d = plan.descriptor(index);
    const CpuPlan& cpu = plan.cpu(index);
    if (d == nullptr || !cpu.usable)
    {
        return;
    }
    for (std::size_t k = 0; k < internal::singleEntries.size(); ++k)
    {
        const CpcEntry e = internal::singleEntries[k];
        const RegisterPlan& rp = cpu.reg(e);
        Single& s = singles_[index][k];
        if (rp.access == AccessClass::pcc)
        {
            const RegisterDesc& r = d->entry(e).reg;
            s.mode = Mode::pcc;
            s.subspace = r.accessSize;
            s.reg = {r.address, r.bitOffset, r.bitWidth};
            s.limit = fieldMask(r.bitWidth);
            continue;
        }
        if (!isWritable(rp.access))
        {
            continue;
        }
        const Group g = bindGroup(*d, cpu, e, 0);
        s.mode = Mode::direct;
        s.kind = g.kind;
        s.bytes = g.bytes;
        s.shift = g.fields[0].shift;
        s.limit = g.fields[0].limit;
        s.ref = g.ref;
        s.lock = g.lock;
    }
}

template <class Io>
auto BasicPerfControl<Io>::single(unsigned cpu, CpcEntry entry,
                                  std::error_code& ec) const noexcept
    -> const Single*
{
    const int k = internal::singleIndex(entry);
    if (cpu >= cpuCount_)
    {
        ec = Errc::noSuchCpu;
        return nullptr;
    }
    if (cpus_[cpu].mode == Mode::refused)
    {
        ec = Errc::cpuRefused;
        return nullptr;
    }
    if (k < 0 || singles_[cpu][static_cast<std::size_t>(k)].mode == Mode::noCpu)
    {
        ec = Errc::notWritable;
        return nullptr;
    }
    const Single& s = singles_[cpu][static_cast<std::size_t>(k)];
    if (s.mode == Mode::pcc && pcc_ == nullptr)
    {
        ec = Errc::pccUnavailable;
        return nullptr;
    }
    ec = {};
    return &s;
}

template <class Io>
std::uint64_t BasicPerfControl<Io>::lockedLoad(const Single& s) noexcept
{
    if (s.lock != nullptr)
    {
        io_.lock(*s.lock, s.ref);
    }
    const std::uint64_t unit = io_.load(s.ref, s.bytes);
    if (s.lock != nullptr)
    {
        io_.unlock(*s.lock, s.ref);
    }
    return unit;
}

template <class Io>
std::error_code BasicPerfControl<Io>::writeControl(unsigned cpu, CpcEntry entry,
                                                   std::uint64_t value) noexcept
{
    std::error_code ec;
    const Single* s = single(cpu, entry, ec);
    if (s == nullptr)
    {
        return ec;
    }
    if (entry == CpcEntry::perfLimited)
    {
        return Errc::notWritable;
    }
    if ((value & ~s->limit) != 0)
    {
        return Errc::valueOutOfRange;
    }
    if (s->mode == Mode::pcc)
    {
        const PccWrite w{s->reg, value};
        return pcc_->write(s->subspace, std::span(&w, 1));
    }
    switch (s->kind)
    {
        case OpKind::store8:
        case OpKind::store16:
        case OpKind::store32:
        case OpKind::store64:
            io_.store(s->ref, s->bytes, value);
            return ok();
        case OpKind::rmw:
        case OpKind::lockedRmw:
            mergeStore(s->ref, s->bytes, s->lock, s->limit << s->shift,
                       value << s->shift);
            return ok();
        default:
            return Errc::notWritable;
    }
}

template <class Io>
std::error_code BasicPerfControl<Io>::readControl(unsigned cpu, CpcEntry entry,
                                                  std::uint64_t& value) noexcept
{
    std::error_code ec;
    const Single* s = single(cpu, entry, ec);
    if (s == nullptr)
    {
        return ec;
    }
    if (s->mode == Mode::pcc)
    {
        return pcc_->read(s->subspace, std::span(&s->reg, 1),
                          std::span(&value, 1));
    }
    value = (lockedLoad(*s) >> s->shift) & s->limit;
    return ok();
}

template <class Io>
std::error_code BasicPerfControl<Io>::takePerfLimited(
    unsigned cpu, std::uint8_t& bits) noexcept
{
    bits = 0;
    std::error_code ec;
    const Single* s = single(cpu, CpcEntry::perfLimited, ec);
    if (s == nullptr)
    {
        return ec;
    }
    if (s->mode == Mode::pcc)
    {
        std::uint64_t value = 0;
        if (auto rc = pcc_->read(s->subspace, std::span(&s->reg, 1),
                                 std::span(&value, 1)))
        {
            return rc;
        }
        const auto seen =
            static_cast<std::uint8_t>(value & perfLimitedBits & s->limit);
        if (seen == 0)
        {
            return ok();
        }
        const PccWrite w{s->reg, value & ~std::uint64_t{seen}};
        if (auto wc = pcc_->write(s->subspace, std::span(&w, 1)))
        {
            return wc; // not cleared: reported again next time
        }
        bits = seen;
        return ok();
    }
    const std::uint64_t mask = (perfLimitedBits & s->limit) << s->shift;
    if (s->lock != nullptr)
    {
        io_.lock(*s->lock, s->ref);
    }
    std::uint64_t unit = io_.load(s->ref, s->bytes);
    if constexpr (internal::HasCompareExchange<Io>)
    {
        // Bounded: after that many changes under our feet, the plain store.
        constexpr int attempts = 16;
        int left = attempts;
        while ((unit & mask) != 0 && --left > 0 &&
               !io_.compareExchange(s->ref, s->bytes, unit, unit & ~mask))
        {
            unit = io_.load(s->ref, s->bytes);
        }
        if ((unit & mask) != 0 && left == 0)
        {
            io_.store(s->ref, s->bytes, unit & ~mask);
        }
    }
    else if ((unit & mask) != 0)
    {
        io_.store(s->ref, s->bytes, unit & ~mask);
    }
    if (s->lock != nullptr)
    {
        io_.unlock(*s->lock, s->ref);
    }
    bits = static_cast<std::uint8_t>((unit & mask) >> s->shift);
    return ok();
}

template <class Io>
auto BasicPerfControl<Io>::bindGroup(const CpcDescriptor& d, const CpuPlan& cpu,
                                     CpcEntry e, std::uint8_t source) -> Group
{
    const RegisterPlan& rp = cpu.reg(e);
    const RegisterDesc& reg = d.entry(e).reg;
    Group g;
    g.bytes = rp.unitBytes;
    g.address = reg.address;
    g.fieldCount = 1;
    g.fields[0] = {source, rp.shift, fieldMask(rp.width)};
    switch (rp.access)
    {
        case AccessClass::fullWidthStandalone:
        case AccessClass::fullWidthAliased:
            g.kind = rp.unitBytes == 1   ? OpKind::store8
                     : rp.unitBytes == 2 ? OpKind::store16
                     : rp.unitBytes == 4 ? OpKind::store32
                                         : OpKind::store64;
            break;
        case AccessClass::partialField:
            g.kind = OpKind::rmw;
            break;
        case AccessClass::sharedUnit:
        case AccessClass::overlappingUnits:
            // Without a lock only one field written here shares the unit.
            g.kind = rp.lock ? OpKind::lockedRmw : OpKind::rmw;
            g.lock = rp.lock ? &locks_[*rp.lock] : nullptr;
            break;
        default:
            g.kind = OpKind::none;
            g.fieldCount = 0;
            return g;
    }
    g.ref = io_.bind(reg, rp.unitBytes, d.cpu(), e);
    return g;
}

template <class Io>
void BasicPerfControl<Io>::bindCpu(const AccessPlan& plan, unsigned index)
{
    Cpu& c = cpus_[index];
    const CpcDescriptor* d = plan.descriptor(index);
    const CpuPlan& cpu = plan.cpu(index);
    if (d == nullptr)
    {
        c.mode = Mode::noCpu;
        return;
    }
    if (!cpu.usable)
    {
        c.mode = Mode::refused;
        return;
    }
    c.hasMinMax = isWritable(cpu.reg(CpcEntry::minPerf).access) &&
                  isWritable(cpu.reg(CpcEntry::maxPerf).access);
    if (cpu.pccControl)
    {
        c.mode = Mode::pcc;
        c.pcc.subspace = *cpu.pccSubspace;
        for (std::uint8_t s = 0; s < 3; ++s)
        {
            const CpcEntry e = internal::controlEntries[s];
            if (cpu.reg(e).access != AccessClass::pcc)
            {
                continue;
            }
            const RegisterDesc& r = d->entry(e).reg;
            c.pcc.source[c.pcc.count] = s;
            c.pcc.regs[c.pcc.count] = {r.address, r.bitOffset, r.bitWidth};
            c.pcc.limit[c.pcc.count] = fieldMask(r.bitWidth);
            ++c.pcc.count;
        }
        return;
    }
    c.mode = Mode::direct;
    for (std::uint8_t s = 0; s < 3; ++s)
    {
        Group g = bindGroup(*d, cpu, internal::controlEntries[s], s);
        if (s == 0)
        {
            desired_[index] = {
                g.kind, g.bytes, g.fields[0].shift, g.fields[0].limit,
                g.ref,  g.lock};
        }
        if (g.kind == OpKind::none)
        {
            continue;
        }
        Group* same = nullptr;
        for (std::uint8_t k = 0; k < c.groupCount; ++k)
        {
            if (c.groups[k].address == g.address &&
                c.groups[k].bytes == g.bytes && c.groups[k].lock == g.lock &&
                g.lock != nullptr)
            {
                same = &c.groups[k];
            }
        }
        if (same != nullptr)
        {
            same->fields[same->fieldCount++] = g.fields[0];
        }
        else
        {
            c.groups[c.groupCount++] = g;
        }
    }
}

template <class Io>
std::error_code BasicPerfControl<Io>::execute(
    const Group& g, const std::array<std::uint64_t, 3>& v) noexcept
{
    const std::uint64_t first = v[g.fields[0].source];
    switch (g.kind)
    {
        case OpKind::store8:
            io_.template store<std::uint8_t>(g.ref,
                                             static_cast<std::uint8_t>(first));
            return ok();
        case OpKind::store16:
            io_.template store<std::uint16_t>(
                g.ref, static_cast<std::uint16_t>(first));
            return ok();
        case OpKind::store32:
            io_.template store<std::uint32_t>(
                g.ref, static_cast<std::uint32_t>(first));
            return ok();
        case OpKind::store64:
            io_.template store<std::uint64_t>(g.ref, first);
            return ok();
        case OpKind::rmw:
        case OpKind::lockedRmw:
            break;
        case OpKind::none:
        case OpKind::notDirect:
            return Errc::notWritable;
    }
    std::uint64_t clear = 0;
    std::uint64_t bits = 0;
    for (std::uint8_t k = 0; k < g.fieldCount; ++k)
    {
        const Field& f = g.fields[k];
        clear |= f.limit << f.shift;
        bits |= v[f.source] << f.shift;
    }
    mergeStore(g.ref, g.bytes, g.lock, clear, bits);
    return ok();
}

// Read-modify-write of one unit: clear the fields, insert the new bits, so
// the old field bits never survive into the result.
template <class Io>
void BasicPerfControl<Io>::mergeStore(const Ref& ref, std::uint8_t bytes,
                                      std::mutex* lock, std::uint64_t clear,
                                      std::uint64_t bits) noexcept
{
    if (lock != nullptr)
    {
        io_.lock(*lock, ref);
    }
    const std::uint64_t old = io_.load(ref, bytes);
    io_.store(ref, bytes, (old & ~clear) | bits);
    if (lock != nullptr)
    {
        io_.unlock(*lock, ref);
    }
}

template <class Io>
std::error_code BasicPerfControl<Io>::setPerf(unsigned cpu,
                                              std::uint64_t desired) noexcept
{
    if (cpu >= cpuCount_) [[unlikely]]
    {
        return Errc::noSuchCpu;
    }
    const DesiredOp& op = desired_[cpu];
    if ((desired & ~op.limit) != 0) [[unlikely]]
    {
        return Errc::valueOutOfRange;
    }
    switch (op.kind)
    {
        case OpKind::store8:
            io_.template store<std::uint8_t>(
                op.ref, static_cast<std::uint8_t>(desired));
            return ok();
        case OpKind::store16:
            io_.template store<std::uint16_t>(
                op.ref, static_cast<std::uint16_t>(desired));
            return ok();
        case OpKind::store32:
            io_.template store<std::uint32_t>(
                op.ref, static_cast<std::uint32_t>(desired));
            return ok();
        case OpKind::store64:
            io_.template store<std::uint64_t>(op.ref, desired);
            return ok();
        default:
            return slowDesired(op, cpu, desired);
    }
}

// Kept out of line so that the full-width stores above need no stack frame.
template <class Io>
std::error_code BasicPerfControl<Io>::slowDesired(
    const DesiredOp& op, unsigned cpu, std::uint64_t desired) noexcept
{
    if (op.kind == OpKind::rmw || op.kind == OpKind::lockedRmw)
    {
        mergeStore(op.ref, op.bytes, op.lock, op.limit << op.shift,
                   desired << op.shift);
        return ok();
    }
    return notDirect(cpus_[cpu], {desired, 0, 0}, 1);
}

template <class Io>
std::error_code BasicPerfControl<Io>::setPerf(
    unsigned cpu, std::uint64_t desired, std::uint64_t min,
    std::uint64_t max) noexcept
{
    if (cpu >= cpuCount_) [[unlikely]]
    {
        return Errc::noSuchCpu;
    }
    const Cpu& c = cpus_[cpu];
    const std::array<std::uint64_t, 3> v{desired, min, max};
    if (c.mode != Mode::direct) [[unlikely]]
    {
        return notDirect(c, v, 3);
    }
    for (std::uint8_t k = 0; k < c.groupCount; ++k)
    {
        const Group& g = c.groups[k];
        for (std::uint8_t f = 0; f < g.fieldCount; ++f)
        {
            if ((v[g.fields[f].source] & ~g.fields[f].limit) != 0)
            {
                return Errc::valueOutOfRange;
            }
        }
    }
    for (std::uint8_t k = 0; k < c.groupCount; ++k)
    {
        if (auto ec = execute(c.groups[k], v))
        {
            return ec;
        }
    }
    return ok();
}

// PCC CPUs, refused CPUs and holes: `count` is how many of desired, min and
// max the caller gave.
template <class Io>
std::error_code BasicPerfControl<Io>::notDirect(
    const Cpu& c, const std::array<std::uint64_t, 3>& v,
    std::uint8_t count) noexcept
{
    switch (c.mode)
    {
        case Mode::noCpu:
            return Errc::noSuchCpu;
        case Mode::refused:
            return Errc::cpuRefused;
        case Mode::direct:
        case Mode::pcc:
            break;
    }
    if (pcc_ == nullptr)
    {
        return Errc::pccUnavailable;
    }
    std::array<PccWrite, 3> writes{};
    std::uint8_t n = 0;
    for (std::uint8_t k = 0; k < c.pcc.count; ++k)
    {
        const std::uint8_t s = c.pcc.source[k];
        if (s >= count)
        {
            continue;
        }
        if ((v[s] & ~c.pcc.limit[k]) != 0)
        {
            return Errc::valueOutOfRange;
        }
        writes[n++] = {c.pcc.regs[k], v[s]};
    }
    return pcc_->write(c.pcc.subspace, std::span(writes.data(), n));
}

template <class Io>
BasicConservativePerfControl<Io>::BasicConservativePerfControl(
    const AccessPlan& plan, Io io, PccPort* pcc) :
    plan_(&plan),
    io_(std::move(io)), pcc_(pcc),
    cpuLocks_(std::make_unique<std::mutex[]>(plan.cpuCount())),
    refs_(plan.cpuCount())
{
    // Like Linux at probe time: map every SystemMemory control register.
    for (unsigned i = 0; i < plan.cpuCount(); ++i)
    {
        const CpcDescriptor* d = plan.descriptor(i);
        if (d == nullptr || !plan.cpu(i).usable)
        {
            continue;
        }
        for (std::size_t s = 0; s < 3; ++s)
        {
            const CpcEntry e = internal::controlEntries[s];
            const RegisterPlan& rp = plan.cpu(i).reg(e);
            if (rp.unitBytes != 0)
            {
                refs_[i][s] = io_.bind(d->entry(e).reg, rp.unitBytes, i, e);
            }
        }
    }
}

template <class Io>
std::error_code BasicConservativePerfControl<Io>::setPerf(
    unsigned cpu, std::uint64_t desired) noexcept
{
    return apply(cpu, {desired, 0, 0}, 1);
}

template <class Io>
std::error_code BasicConservativePerfControl<Io>::setPerf(
    unsigned cpu, std::uint64_t desired, std::uint64_t min,
    std::uint64_t max) noexcept
{
    return apply(cpu, {desired, min, max}, 3);
}

namespace internal
{

inline bool inPcc(const CpcValue& v) noexcept
{
    return v.isRegister() && v.reg.inSpace(AddressSpace::pcc);
}

inline bool supported(const CpcValue& v) noexcept
{
    return v.isLiveRegister();
}

} // namespace internal

template <class Io>
std::error_code BasicConservativePerfControl<Io>::apply(
    unsigned cpu, const std::array<std::uint64_t, 3>& v,
    std::uint8_t count) noexcept
{
    using internal::inPcc;
    const CpcDescriptor* d =
        cpu < plan_->cpuCount() ? plan_->descriptor(cpu) : nullptr;
    if (d == nullptr)
    {
        return Errc::noSuchCpu;
    }
    if (!plan_->cpu(cpu).usable)
    {
        return Errc::cpuRefused;
    }
    const CpcValue& desired = d->entry(CpcEntry::desiredPerf);
    const CpcValue& min = d->entry(CpcEntry::minPerf);
    const CpcValue& max = d->entry(CpcEntry::maxPerf);
    // Phase 1: is any control in PCC? (Then the subspace must be usable.)
    if (inPcc(desired) || inPcc(min) || inPcc(max))
    {
        if (pcc_ == nullptr)
        {
            return Errc::pccUnavailable;
        }
    }
    if (!internal::supported(desired))
    {
        return Errc::notWritable;
    }
    std::array<PccWrite, 3> pccWrites{};
    std::uint8_t pccCount = 0;
    for (std::size_t s = 0; s < count; ++s)
    {
        const CpcValue& r = d->entry(internal::controlEntries[s]);
        if (!internal::supported(r))
        {
            continue;
        }
        if (inPcc(r))
        {
            pccWrites[pccCount++] = {
                {r.reg.address, r.reg.bitOffset, r.reg.bitWidth}, v[s]};
            continue;
        }
        if (!r.reg.inSpace(AddressSpace::systemMemory) &&
            !r.reg.inSpace(AddressSpace::systemIo))
        {
            continue; // FFH: nothing user space can write
        }
        if (auto ec = writeRegister(cpu, s, v[s]))
        {
            return ec;
        }
    }
    // Phase 2: is any control in PCC? Then ring the doorbell.
    if (inPcc(desired) || inPcc(min) || inPcc(max))
    {
        return pcc_->write(d->pccSubspace().value_or(0),
                           std::span(pccWrites.data(), pccCount));
    }
    return {};
}

// cpc_write() for SystemMemory/SystemIO: decode the register again, then
// read, mask, merge and write under the CPU's lock.
template <class Io>
std::error_code BasicConservativePerfControl<Io>::writeRegister(
    unsigned cpu, std::size_t which, std::uint64_t value) noexcept
{
    const RegisterDesc& r =
        plan_->descriptor(cpu)->entry(internal::controlEntries[which]).reg;
    const unsigned size =
        r.accessSize != 0 ? 8U << (r.accessSize - 1) : r.bitWidth;
    if (size != 8 && size != 16 && size != 32 && size != 64)
    {
        return Errc::notWritable;
    }
    const std::uint64_t mask = fieldMask(r.bitWidth) << r.bitOffset;
    const Ref ref = refs_[cpu][which];
    io_.lock(cpuLocks_[cpu], ref);
    std::uint64_t old = io_.load(ref, static_cast<std::uint8_t>(size / 8));
    old &= ~mask;
    io_.store(ref, static_cast<std::uint8_t>(size / 8),
              old | ((value << r.bitOffset) & mask));
    io_.unlock(cpuLocks_[cpu], ref);
    return {};
}

extern template class BasicPerfControl<MappedIo>;
extern template class BasicConservativePerfControl<MappedIo>;

// The production types: registers reached through a RegisterMap.
using PerfControl = BasicPerfControl<MappedIo>;
using ConservativePerfControl = BasicConservativePerfControl<MappedIo>;

} // namespace cppc
