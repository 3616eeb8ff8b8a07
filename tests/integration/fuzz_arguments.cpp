// SPDX-License-Identifier: Apache-2.0
// The arguments of bus_fuzz's calls: random and boundary values of the
// types the daemon's methods take, and arguments of random types (for the
// calls that must be refused).
#include "tests/integration/fuzzer.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace cppcgov::test::fuzz
{

bool canGenerate(std::string_view signature)
{
    for (std::size_t p = 0; p < signature.size(); ++p)
    {
        const char c = signature[p];
        if (c == 'a' && p + 1 < signature.size() && signature[p + 1] == 'u')
        {
            ++p;
        }
        else if (std::string_view("ubqths").find(c) == std::string_view::npos)
        {
            return false;
        }
    }
    return true;
}

std::uint32_t Fuzzer::pidValue()
{
    static constexpr std::array<std::uint32_t, 7> fixed{
        0,          1,     1024,
        1025,       65535, std::numeric_limits<std::uint32_t>::max(),
        999'999'999};
    switch (below(6))
    {
        case 0:
            return static_cast<std::uint32_t>(self_);
        case 1:
            return static_cast<std::uint32_t>(child_);
        case 2:
            return static_cast<std::uint32_t>(deadChild_);
        case 3:
            return randomOf<std::uint32_t>();
        default:
            return pick(fixed);
    }
}

std::uint16_t Fuzzer::utilValue()
{
    static constexpr std::array<std::uint16_t, 8> fixed{
        0, 1, 512, 1023, 1024, 1025, 2000, 65535};
    if (chance(30))
    {
        return static_cast<std::uint16_t>(below(utilScale + 1));
    }
    if (chance(10))
    {
        return randomOf<std::uint16_t>();
    }
    return pick(fixed);
}

std::uint32_t Fuzzer::latencyValue()
{
    static constexpr std::array<std::uint32_t, 9> fixed{
        0,
        1,
        1024,
        1025,
        65535,
        100'000'000,
        100'000'001,
        4'000'000'000,
        std::numeric_limits<std::uint32_t>::max()};
    if (chance(20))
    {
        return randomOf<std::uint32_t>();
    }
    return pick(fixed);
}

std::vector<std::uint32_t> Fuzzer::cpusValue()
{
    std::vector<std::uint32_t> cpus;
    const std::uint32_t count = std::max<std::uint32_t>(cpuCount_, 1);
    switch (below(7))
    {
        case 0:
            break; // empty
        case 1:
            cpus.push_back(static_cast<std::uint32_t>(below(count)));
            break;
        case 2:
            for (std::uint64_t i = below(8) + 1; i > 0; --i)
            {
                cpus.push_back(static_cast<std::uint32_t>(below(count)));
            }
            break;
        case 3:
            cpus = {static_cast<std::uint32_t>(below(count)), count};
            break;
        case 4:
            cpus = {4095, 4096, std::numeric_limits<std::uint32_t>::max()};
            cpus.resize(below(3) + 1);
            break;
        case 5:
            // 5000 CPUs, all of them valid numbers (repeated).
            for (std::uint32_t i = 0; i < 5000; ++i)
            {
                cpus.push_back(i % count);
            }
            break;
        default:
            for (std::uint32_t i = 0; i < 5000; ++i)
            {
                cpus.push_back(i);
            }
            break;
    }
    return cpus;
}

std::uint64_t Fuzzer::handleValue()
{
    if (!live_.empty() && chance(40))
    {
        auto it = live_.begin();
        std::advance(it, static_cast<long>(below(live_.size())));
        return it->first;
    }
    if (!seen_.empty() && chance(30))
    {
        auto it = seen_.begin();
        std::advance(it, static_cast<long>(below(seen_.size())));
        return *it + below(3); // maybe released, maybe never given
    }
    static constexpr std::array<std::uint64_t, 3> fixed{
        0, 1, std::numeric_limits<std::uint64_t>::max()};
    return chance(50) ? pick(fixed) : randomOf<std::uint64_t>();
}

std::string Fuzzer::stringValue()
{
    switch (below(5))
    {
        case 0:
            return "";
        case 1:
            return pick(properties_);
        case 2:
            return governorInterface;
        case 3:
            return std::string(below(5000) + 1, 'x');
        default:
        {
            std::string s(below(40), ' ');
            for (char& c : s)
            {
                c = static_cast<char>(' ' + below(95));
            }
            return s;
        }
    }
}

std::string Fuzzer::memberName()
{
    static constexpr std::array<const char*, 6> names{
        "SetClamp2", "setclamp", "Get", "Ping", "Set_Clamp", "X"};
    if (chance(50))
    {
        return pick(names);
    }
    static constexpr std::string_view letters =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
    std::string name(below(60) + 1, 'A');
    for (char& c : name)
    {
        c = letters[below(letters.size())];
    }
    return name;
}

std::string Fuzzer::randomType(unsigned depth, bool allowFd)
{
    static constexpr std::string_view basics = "ybnqiuxtdsogh";
    const std::uint64_t r = below(depth < 2 ? 17 : 13);
    if (r < 13)
    {
        if (basics[r] == 'h')
        {
            if (!allowFd || fdsPlanned_ >= maxFds)
            {
                return "u";
            }
            ++fdsPlanned_;
        }
        return std::string(1, basics[r]);
    }
    switch (r)
    {
        case 13:
            return "a" + randomType(depth + 1, false);
        case 14:
        {
            std::string s = "(";
            for (std::uint64_t i = below(4) + 1; i > 0; --i)
            {
                s += randomType(depth + 1, allowFd);
            }
            return s + ")";
        }
        case 15:
            return "a{" + std::string(1, basics[below(12)]) +
                   randomType(depth + 1, false) + "}";
        default:
            return "v";
    }
}

namespace
{

// The end of the single complete type starting at `pos` of `sig`.
std::size_t completeTypeEnd(const std::string& sig, std::size_t pos)
{
    if (sig[pos] == 'a')
    {
        return completeTypeEnd(sig, pos + 1);
    }
    if (sig[pos] == '(' || sig[pos] == '{')
    {
        const char close = sig[pos] == '(' ? ')' : '}';
        std::size_t p = pos + 1;
        while (sig[p] != close)
        {
            p = completeTypeEnd(sig, p);
        }
        return p + 1;
    }
    return pos + 1;
}

} // namespace

void Fuzzer::appendBasic(sdbus::Message& msg, char code, std::string& desc)
{
    switch (code)
    {
        case 'y':
            put(msg, desc, 'y', randomOf<std::uint8_t>());
            break;
        case 'b':
        {
            const bool v = chance(50);
            msg << v;
            desc += v ? "b:true" : "b:false";
            break;
        }
        case 'n':
            put(msg, desc, 'n', randomOf<std::int16_t>());
            break;
        case 'q':
            put(msg, desc, 'q', utilValue());
            break;
        case 'i':
            put(msg, desc, 'i',
                chance(50) ? std::int32_t{-1} : randomOf<std::int32_t>());
            break;
        case 'u':
            put(msg, desc, 'u', chance(50) ? pidValue() : latencyValue());
            break;
        case 'x':
            put(msg, desc, 'x', randomOf<std::int64_t>());
            break;
        case 't':
        {
            const auto v = handleValue();
            randomHandles_.push_back(v);
            put(msg, desc, 't', v);
            break;
        }
        case 'd':
        {
            static constexpr std::array<double, 5> fixed{
                0.0, -1.5, 1e300, std::numeric_limits<double>::quiet_NaN(),
                std::numeric_limits<double>::infinity()};
            const double v = pick(fixed);
            msg << v;
            desc += "d:" + std::to_string(v);
            break;
        }
        case 's':
        {
            const auto v = stringValue();
            msg << v;
            desc += "s:\"" + v.substr(0, 40) + (v.size() > 40 ? "...\"" : "\"");
            break;
        }
        case 'o':
        {
            const std::string v =
                chance(50) ? std::string(objectPath) : pick(wrongPaths);
            msg << sdbus::ObjectPath(v);
            desc += "o:" + v;
            break;
        }
        case 'g':
        {
            const std::string v = chance(50) ? "a{sv}" : "ubqq";
            msg << sdbus::Signature(v);
            desc += "g:" + v;
            break;
        }
        case 'h':
        {
            FdChoice& fd = pickFd();
            msg << sdbus::UnixFd(fd.fd.get());
            desc += "h:" + fd.what;
            break;
        }
        default:
            break;
    }
}

void Fuzzer::appendOf(sdbus::Message& msg, const std::string& type,
                      std::string& desc)
{
    if (type.size() == 1 && type[0] != 'v')
    {
        appendBasic(msg, type[0], desc);
        return;
    }
    if (type == "v")
    {
        const std::string inner = randomType(2, inArray_ == 0);
        msg.openVariant(inner);
        desc += "v:<";
        appendOf(msg, inner, desc);
        desc += ">";
        msg.closeVariant();
        return;
    }
    if (type[0] == '(')
    {
        const std::string inner = type.substr(1, type.size() - 2);
        msg.openStruct(inner);
        desc += "(";
        for (std::size_t p = 0; p < inner.size();)
        {
            const std::size_t end = completeTypeEnd(inner, p);
            appendOf(msg, inner.substr(p, end - p), desc);
            desc += p + (end - p) < inner.size() ? ", " : "";
            p = end;
        }
        desc += ")";
        msg.closeStruct();
        return;
    }
    // An array.
    const std::string element = type.substr(1);
    std::uint64_t n =
        chance(10) ? below(2000) : (chance(40) ? 0 : below(5) + 1);
    n = std::min(n, elementsLeft_);
    elementsLeft_ -= n;
    ++inArray_;
    msg.openContainer(element);
    desc += "a" + element + "[" + std::to_string(n) + "]";
    std::string ignored;
    for (std::uint64_t i = 0; i < n; ++i)
    {
        if (element[0] == '{')
        {
            const std::string inner = element.substr(1, element.size() - 2);
            msg.openDictEntry(inner);
            appendBasic(msg, inner[0], ignored);
            appendOf(msg, inner.substr(1), ignored);
            msg.closeDictEntry();
        }
        else
        {
            appendOf(msg, element, ignored);
        }
        ignored.clear();
    }
    --inArray_;
    msg.closeContainer();
}

} // namespace cppcgov::test::fuzz
