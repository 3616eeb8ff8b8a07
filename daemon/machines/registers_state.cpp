// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/registers_state.hpp"

#include "lib/backend/state_file.hpp"
#include "lib/cpu_list.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

constexpr std::string_view stateHeader = "cppcgov-registers-state 2";
constexpr std::string_view cpuPrefix = "cpu";
constexpr std::string_view hexPrefix = "0x";
constexpr std::size_t fieldCount = 6;

std::string hex(std::uint64_t value)
{
    std::array<char, 16> digits{};
    const auto end =
        std::to_chars(digits.data(), digits.data() + digits.size(), value, 16)
            .ptr;
    return std::string(hexPrefix) + std::string(digits.data(), end);
}

// A number spelled exactly as formatRegistersState() spells it: digits of
// `base` (lower case), no sign, no leading zero (but "0" itself).
std::optional<std::uint64_t> canonical(std::string_view text, int base) noexcept
{
    if (text.empty() || (text.size() > 1 && text.front() == '0') ||
        !std::all_of(text.begin(), text.end(), [base](char c) {
            return (c >= '0' && c <= '9') ||
                   (base == 16 && c >= 'a' && c <= 'f');
        }))
    {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (ec != std::errc() || end != text.data() + text.size())
    {
        return std::nullopt;
    }
    return value;
}

std::optional<cppc::CpcEntry> savedEntryNamed(std::string_view name) noexcept
{
    const auto* it = std::find_if(savedEntries.begin(), savedEntries.end(),
                                  [name](cppc::CpcEntry e) {
        return cppc::entryName(e) == name;
    });
    return it == savedEntries.end() ? std::nullopt
                                    : std::optional<cppc::CpcEntry>(*it);
}

// The line's space-separated fields, when it has exactly fieldCount.
std::optional<std::array<std::string_view, fieldCount>> fieldsOf(
    std::string_view line)
{
    std::array<std::string_view, fieldCount> fields;
    for (std::size_t i = 0; i < fields.size(); ++i)
    {
        const std::size_t sp = line.find(' ');
        const bool last = i + 1 == fields.size();
        if (last != (sp == std::string_view::npos))
        {
            return std::nullopt;
        }
        fields[i] = line.substr(0, sp);
        if (fields[i].empty())
        {
            return std::nullopt;
        }
        line = last ? std::string_view() : line.substr(sp + 1);
    }
    return fields;
}

} // namespace

bool SavedRegister::fits() const noexcept
{
    return bitWidth >= 64 || value < (std::uint64_t{1} << bitWidth);
}

std::filesystem::path registersStateFile(const std::filesystem::path& stateDir)
{
    return stateDir / "registers.state";
}

std::string registersRecord(std::uint32_t cpu)
{
    return std::string(cpuPrefix) + std::to_string(cpu);
}

std::string formatRegistersState(const std::vector<SavedRegister>& saved)
{
    std::string out(stateHeader);
    out += '\n';
    for (const SavedRegister& s : saved)
    {
        out += registersRecord(s.cpu) + ' ' +
               std::string(cppc::entryName(s.entry)) + ' ' + hex(s.address) +
               ' ' + std::to_string(s.bitOffset) + ' ' +
               std::to_string(s.bitWidth) + ' ' + std::to_string(s.value) +
               '\n';
    }
    return out;
}

std::vector<SavedRegister> parseRegistersState(
    std::string_view text, const std::filesystem::path& file)
{
    std::vector<SavedRegister> saved;
    std::set<std::pair<std::uint32_t, cppc::CpcEntry>> seen;
    for (const std::string_view line :
         cppc::backend::stateLines(text, stateHeader, file))
    {
        const auto bad = [&file, line](std::string_view why) {
            cppc::backend::badStateFile(file, "line '" + std::string(line) +
                                                  "': " + std::string(why));
        };
        const auto fields = fieldsOf(line);
        if (!fields)
        {
            bad("not 'cpu<N> <entry> <address> <bit offset> <bit width> "
                "<value>'");
        }
        const auto& [cpuText, entryText, addressText, offsetText, widthText,
                     valueText] = *fields;
        const auto cpu = cpuText.starts_with(cpuPrefix)
                             ? canonical(cpuText.substr(cpuPrefix.size()), 10)
                             : std::nullopt;
        if (!cpu || *cpu >= cppc::maxCpus)
        {
            bad("no CPU number below " + std::to_string(cppc::maxCpus));
        }
        const auto entry = savedEntryNamed(entryText);
        if (!entry)
        {
            bad("not a control register the backend saves");
        }
        const auto address =
            addressText.starts_with(hexPrefix)
                ? canonical(addressText.substr(hexPrefix.size()), 16)
                : std::nullopt;
        if (!address)
        {
            bad("the address is not 0x and lower-case hexadecimal digits");
        }
        const auto offset = canonical(offsetText, 10);
        const auto width = canonical(widthText, 10);
        if (!offset || !width || *width == 0 || *width > 64 ||
            *offset + *width > 64)
        {
            bad("the bit offset and width are not a field of 64 bits");
        }
        const auto value = canonical(valueText, 10);
        if (!value)
        {
            bad("the value is not a decimal number");
        }
        const SavedRegister s{static_cast<std::uint32_t>(*cpu),
                              *entry,
                              *address,
                              static_cast<std::uint8_t>(*offset),
                              static_cast<std::uint8_t>(*width),
                              *value};
        if (!s.fits())
        {
            bad("the value does not fit the register's bit width");
        }
        if (!seen.emplace(s.cpu, s.entry).second)
        {
            bad("the register appears twice");
        }
        saved.push_back(s);
    }
    return saved;
}

} // namespace cppcgov::daemon
