// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/layout.hpp"

#include "tests/vm/platform/text.hpp"

#include <fstream>
#include <map>
#include <sstream>

namespace cppcgov::platform
{

namespace
{

struct Where
{
    std::string_view file;
    unsigned line = 0;

    [[noreturn]] void fail(std::string_view word, std::string_view why) const
    {
        std::ostringstream out;
        out << file << ':' << line << ": '" << word << "': " << why;
        throw LayoutError(out.str());
    }
};

std::uint64_t number(std::string_view text, const Where& where,
                     std::string_view word)
{
    const auto value = parseNumber(text);
    if (!value)
    {
        where.fail(word, "not a whole number");
    }
    return *value;
}

std::uint32_t number32(std::string_view text, const Where& where,
                       std::string_view word)
{
    const std::uint64_t value = number(text, where, word);
    if (value > UINT32_MAX)
    {
        where.fail(word, "more than 32 bits");
    }
    return static_cast<std::uint32_t>(value);
}

std::vector<std::string_view> split(std::string_view text, char by)
{
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true)
    {
        const std::size_t at = text.find(by, start);
        parts.push_back(text.substr(start, at - start));
        if (at == std::string_view::npos)
        {
            return parts;
        }
        start = at + 1;
    }
}

Field field(std::string_view text, const Where& where, std::string_view word)
{
    const auto parts = split(text, ':');
    Field f;
    std::size_t next = 1;
    if (parts[0] == "mem" && (parts.size() == 3 || parts.size() == 4))
    {
        f.space = Space::memory;
    }
    else if (parts[0] == "pcc" && (parts.size() == 4 || parts.size() == 5))
    {
        f.space = Space::pcc;
        f.subspace = number32(parts[next++], where, word);
    }
    else
    {
        where.fail(word, "a register is mem:ADDRESS:WIDTH[:BIT] or "
                         "pcc:SUBSPACE:OFFSET:WIDTH[:BIT]");
    }
    f.address = number(parts[next++], where, word);
    f.width = number32(parts[next++], where, word);
    if (next < parts.size())
    {
        f.bit = number32(parts[next], where, word);
    }
    if (f.width != 8 && f.width != 16 && f.width != 32 && f.width != 64)
    {
        where.fail(word, "the width is not 8, 16, 32 or 64");
    }
    if (f.bit >= f.width)
    {
        where.fail(word, "the field starts beyond its access");
    }
    if (f.address % (f.width / 8) != 0)
    {
        where.fail(word, "the access is not aligned to its width");
    }
    return f;
}

// The key=value words after "cpu N" or "pcc N", each key once.
std::map<std::string_view, std::string_view> pairs(
    const std::vector<std::string_view>& words, const Where& where)
{
    std::map<std::string_view, std::string_view> result;
    for (std::size_t i = 2; i < words.size(); ++i)
    {
        const std::size_t eq = words[i].find('=');
        if (eq == std::string_view::npos || eq == 0)
        {
            where.fail(words[i], "not key=value");
        }
        if (!result.emplace(words[i].substr(0, eq), words[i].substr(eq + 1))
                 .second)
        {
            where.fail(words[i], "given twice");
        }
    }
    return result;
}

class Line
{
  public:
    Line(std::map<std::string_view, std::string_view> pairs, const Where& at) :
        values_(std::move(pairs)), where_(at)
    {}

    std::optional<std::string_view> take(std::string_view key)
    {
        const auto it = values_.find(key);
        if (it == values_.end())
        {
            return std::nullopt;
        }
        const std::string_view value = it->second;
        values_.erase(it);
        return value;
    }

    std::string_view need(std::string_view key)
    {
        const auto value = take(key);
        if (!value)
        {
            where_.fail(key, "missing");
        }
        return *value;
    }

    std::uint32_t need32(std::string_view key)
    {
        return number32(need(key), where_, key);
    }

    Field needField(std::string_view key)
    {
        return field(need(key), where_, key);
    }

    std::optional<Field> optionalField(std::string_view key)
    {
        const auto value = take(key);
        if (!value)
        {
            return std::nullopt;
        }
        return field(*value, where_, key);
    }

    // Every key taken: anything left is unknown.
    void done() const
    {
        if (!values_.empty())
        {
            where_.fail(values_.begin()->first, "unknown key");
        }
    }

  private:
    std::map<std::string_view, std::string_view> values_;
    const Where& where_;
};

CpuLayout cpuLine(Line& line, unsigned id, const Where& where)
{
    CpuLayout cpu;
    cpu.cpu = id;
    Scale& s = cpu.scale;
    s.highest = line.need32("highest");
    s.nominal = line.need32("nominal");
    s.lowestNonlinear = line.need32("lowest_nonlinear");
    s.lowest = line.need32("lowest");
    s.reference = line.need32("reference");
    s.lowestMhz = line.need32("lowest_mhz");
    s.nominalMhz = line.need32("nominal_mhz");
    if (!(s.lowest <= s.lowestNonlinear && s.lowestNonlinear <= s.nominal &&
          s.nominal <= s.highest && s.lowest > 0))
    {
        where.fail("cpu", "the scale is not 0 < lowest <= lowest_nonlinear "
                          "<= nominal <= highest");
    }
    if (s.nominalMhz == 0)
    {
        where.fail("nominal_mhz", "0: the counters need a frequency");
    }
    cpu.desired = line.needField("desired");
    cpu.referenceCounter = line.needField("reference_counter");
    cpu.deliveredCounter = line.needField("delivered_counter");
    cpu.minimum = line.optionalField("minimum");
    cpu.maximum = line.optionalField("maximum");
    cpu.epp = line.optionalField("epp");
    cpu.autoSelect = line.optionalField("auto_select");
    cpu.window = line.optionalField("window");
    cpu.limited = line.optionalField("limited");
    cpu.mark = line.optionalField("mark");
    if (cpu.mark && cpu.mark->space != Space::memory)
    {
        where.fail("mark", "not in memory");
    }
    line.done();
    return cpu;
}

SubspaceLayout pccLine(Line& line, unsigned id, const Where& where)
{
    SubspaceLayout pcc;
    pcc.id = id;
    pcc.base = number(line.need("base"), where, "base");
    pcc.size = number(line.need("size"), where, "size");
    pcc.doorbell = line.needField("doorbell");
    if (const auto bits = line.take("doorbell_write"))
    {
        pcc.doorbellWrite = number(*bits, where, "doorbell_write");
    }
    if (pcc.doorbell.space != Space::memory)
    {
        where.fail("doorbell", "not in memory");
    }
    if (pcc.size < 16)
    {
        where.fail("size", "too small for the header and a payload");
    }
    line.done();
    return pcc;
}

} // namespace

std::vector<const Field*> registers(const CpuLayout& cpu)
{
    std::vector<const Field*> result{&cpu.desired, &cpu.referenceCounter,
                                     &cpu.deliveredCounter};
    for (const auto* f : {&cpu.minimum, &cpu.maximum, &cpu.epp, &cpu.autoSelect,
                          &cpu.window, &cpu.limited, &cpu.mark})
    {
        if (*f)
        {
            result.push_back(&**f);
        }
    }
    return result;
}

Layout parseLayout(std::string_view text, std::string_view name)
{
    Layout layout;
    Where where{name, 0};
    for (std::string_view rest = text; !rest.empty();)
    {
        const std::size_t eol = rest.find('\n');
        std::string_view line = rest.substr(0, eol);
        rest = eol == std::string_view::npos ? std::string_view{}
                                             : rest.substr(eol + 1);
        ++where.line;
        line = line.substr(0, line.find('#'));
        const auto w = words(line);
        if (w.empty())
        {
            continue;
        }
        if ((w[0] != "cpu" && w[0] != "pcc") || w.size() < 2)
        {
            where.fail(w[0], "a line is 'cpu N key=value...' or "
                             "'pcc N key=value...'");
        }
        const unsigned n = number32(w[1], where, w[1]);
        Line values(pairs(w, where), where);
        if (w[0] == "cpu")
        {
            if (n != layout.cpus.size())
            {
                where.fail(w[1], "CPUs must come in order from 0");
            }
            layout.cpus.push_back(cpuLine(values, n, where));
        }
        else
        {
            if (n != layout.subspaces.size())
            {
                where.fail(w[1], "subspaces must come in order from 0");
            }
            layout.subspaces.push_back(pccLine(values, n, where));
        }
    }
    if (layout.cpus.empty())
    {
        throw LayoutError(std::string(name) + ": no CPU");
    }
    for (const CpuLayout& cpu : layout.cpus)
    {
        for (const Field* f : registers(cpu))
        {
            if (f->space == Space::pcc &&
                f->subspace >= layout.subspaces.size())
            {
                throw LayoutError(
                    std::string(name) + ": cpu " + std::to_string(cpu.cpu) +
                    ": a register names PCC subspace " +
                    std::to_string(f->subspace) +
                    ", which the file does not describe");
            }
        }
    }
    return layout;
}

Layout readLayout(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw LayoutError("'" + path + "': cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parseLayout(text.str(), path);
}

} // namespace cppcgov::platform
