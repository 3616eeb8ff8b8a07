// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/guest_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace cppcgov::platform
{

namespace
{

template <typename T>
std::atomic_ref<T> unit(std::byte* where)
{
    // The layout checked the alignment; the mapping is page aligned.
    return std::atomic_ref<T>(*reinterpret_cast<T*>(where)); // NOLINT
}

template <typename T>
std::uint64_t merge(std::byte* where, std::uint64_t mask, std::uint64_t value)
{
    auto u = unit<T>(where);
    T old = u.load(std::memory_order_relaxed);
    T next{};
    do
    {
        next = static_cast<T>((old & ~mask) | (value & mask));
    } while (!u.compare_exchange_weak(old, next, std::memory_order_relaxed));
    return next;
}

} // namespace

std::uint64_t loadUnit(const std::byte* where, unsigned width)
{
    auto* w = const_cast<std::byte*>(where); // atomic_ref needs non-const
    switch (width)
    {
        case 8:
            return unit<std::uint8_t>(w).load(std::memory_order_relaxed);
        case 16:
            return unit<std::uint16_t>(w).load(std::memory_order_relaxed);
        case 32:
            return unit<std::uint32_t>(w).load(std::memory_order_relaxed);
        default:
            return unit<std::uint64_t>(w).load(std::memory_order_relaxed);
    }
}

void storeUnit(std::byte* where, unsigned width, std::uint64_t value)
{
    switch (width)
    {
        case 8:
            unit<std::uint8_t>(where).store(static_cast<std::uint8_t>(value),
                                            std::memory_order_relaxed);
            break;
        case 16:
            unit<std::uint16_t>(where).store(static_cast<std::uint16_t>(value),
                                             std::memory_order_relaxed);
            break;
        case 32:
            unit<std::uint32_t>(where).store(static_cast<std::uint32_t>(value),
                                             std::memory_order_relaxed);
            break;
        default:
            unit<std::uint64_t>(where).store(value, std::memory_order_relaxed);
            break;
    }
}

std::uint64_t mergeUnit(std::byte* where, unsigned width, std::uint64_t mask,
                        std::uint64_t value)
{
    switch (width)
    {
        case 8:
            return merge<std::uint8_t>(where, mask, value);
        case 16:
            return merge<std::uint16_t>(where, mask, value);
        case 32:
            return merge<std::uint32_t>(where, mask, value);
        default:
            return merge<std::uint64_t>(where, mask, value);
    }
}

GuestMemory::GuestMemory(const std::string& path, std::uint64_t ramBase,
                         const std::vector<Window>& windows)
{
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
    {
        throw std::system_error(errno, std::generic_category(),
                                "'" + path + "'");
    }
    struct stat st
    {};
    if (::fstat(fd, &st) != 0)
    {
        const int e = errno;
        ::close(fd);
        throw std::system_error(e, std::generic_category(), "'" + path + "'");
    }
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    try
    {
        for (const Window& w : windows)
        {
            if (w.address < ramBase)
            {
                throw std::invalid_argument("a register window below the "
                                            "guest's RAM");
            }
            const std::uint64_t offset = w.address - ramBase;
            const std::uint64_t start = offset - offset % page;
            const std::uint64_t length =
                (offset + w.size - start + page - 1) / page * page;
            if (start + length > static_cast<std::uint64_t>(st.st_size))
            {
                throw std::system_error(
                    EINVAL, std::generic_category(),
                    "'" + path + "' is shorter than the register window");
            }
            void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE,
                             MAP_SHARED, fd, static_cast<off_t>(start));
            if (p == MAP_FAILED)
            {
                throw std::system_error(errno, std::generic_category(),
                                        "mmap '" + path + "'");
            }
            maps_.push_back({w.address, w.size, static_cast<std::byte*>(p),
                             length, offset - start});
        }
    }
    catch (...)
    {
        ::close(fd);
        for (const Mapping& m : maps_)
        {
            ::munmap(m.bytes, m.length);
        }
        throw;
    }
    ::close(fd);
}

GuestMemory::~GuestMemory()
{
    for (const Mapping& m : maps_)
    {
        ::munmap(m.bytes, m.length);
    }
}

std::byte* GuestMemory::at(std::uint64_t address, std::size_t size) const
{
    for (const Mapping& m : maps_)
    {
        if (address >= m.address && address + size <= m.address + m.size)
        {
            return m.bytes + m.skew + (address - m.address);
        }
    }
    throw std::out_of_range("guest-physical address outside every window");
}

std::uint64_t loadField(const std::byte* unit, const Field& field)
{
    return (loadUnit(unit, field.width) >> field.bit) & field.mask();
}

void storeField(std::byte* unit, const Field& field, std::uint64_t value)
{
    if (field.bit == 0)
    {
        storeUnit(unit, field.width, value);
        return;
    }
    mergeUnit(unit, field.width, field.mask() << field.bit,
              (value & field.mask()) << field.bit);
}

void setFieldBits(std::byte* unit, const Field& field, std::uint64_t bits)
{
    const std::uint64_t mask = (bits & field.mask()) << field.bit;
    if (mask == 0 || (loadUnit(unit, field.width) & mask) == mask)
    {
        return;
    }
    mergeUnit(unit, field.width, mask, mask);
}

std::uint64_t GuestMemory::load(const Field& field) const
{
    return loadField(at(field.address, field.width / 8), field);
}

void GuestMemory::store(const Field& field, std::uint64_t value) const
{
    storeField(at(field.address, field.width / 8), field, value);
}

void GuestMemory::setBits(const Field& field, std::uint64_t bits) const
{
    setFieldBits(at(field.address, field.width / 8), field, bits);
}

} // namespace cppcgov::platform
