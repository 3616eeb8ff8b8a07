// SPDX-License-Identifier: Apache-2.0
// Counting the current thread's allocations, to show that a path makes
// none: replaces the global operator new and delete. Include it in one
// translation unit of a test program only.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace
{
// Allocations made by the current thread since it started.
thread_local std::size_t allocations = 0;
} // namespace

// Out of line, so the compiler does not pair operator new with free().
[[gnu::noinline]] void* operator new(std::size_t bytes)
{
    ++allocations;
    if (void* p = std::malloc(bytes != 0 ? bytes : 1))
    {
        return p;
    }
    throw std::bad_alloc();
}

[[gnu::noinline]] void operator delete(void* p) noexcept
{
    std::free(p);
}

[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
