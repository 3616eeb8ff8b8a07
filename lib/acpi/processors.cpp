// SPDX-License-Identifier: Apache-2.0
#include "processors.hpp"

#include "lib/text.hpp"

namespace cppc::acpi
{
namespace
{

bool within(std::string_view path, std::string_view scope)
{
    return path == scope ||
           (path.size() > scope.size() &&
            path.substr(0, scope.size()) == scope && path[scope.size()] == '.');
}

bool isProcessorDevice(const Namespace& ns, const AmlObject& o)
{
    if (o.kind != AmlObject::Kind::device)
    {
        return false;
    }
    const Evaluation hid = ns.evaluate(childPath(o.path, "_HID"));
    return hid.status == Evaluation::Status::ok &&
           hid.value.type == AmlValue::Type::string &&
           hid.value.text == "ACPI0007";
}

// A string as ACPICA's acpiexec prints it: quoted, '"' and '\\' escaped,
// other bytes outside printable ASCII as \xhh, and no more than 255
// characters before "..." marks a cut.
std::string quotedString(std::string_view text)
{
    constexpr std::size_t shown = 255;
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "\"";
    for (char c : text.substr(0, shown))
    {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\')
        {
            s += '\\';
            s += c;
        }
        else if (u < 0x20 || u > 0x7E)
        {
            s += "\\x";
            s += digits[u >> 4];
            s += digits[u & 0xF];
        }
        else
        {
            s += c;
        }
    }
    s += '"';
    if (text.size() > shown)
    {
        s += "...";
    }
    return s;
}

// A package element naming a data object stands for that object's value
// when the package is evaluated, as ACPICA resolves it (also for names
// defined after the package). Names of anything else stay references.
void resolveElements(const Namespace& ns, AmlValue& v, int depth)
{
    for (AmlValue& e : v.elements)
    {
        if (e.type == AmlValue::Type::reference)
        {
            const AmlObject* o = ns.followAlias(ns.resolve(e.text, e.scope));
            if (o != nullptr && o->kind == AmlObject::Kind::data &&
                o->unknownWhy.empty())
            {
                e = o->value;
            }
        }
        else if (e.type == AmlValue::Type::package && depth < 8)
        {
            resolveElements(ns, e, depth + 1);
        }
    }
}

void resolveReferences(const Namespace& ns, Evaluation& e)
{
    if (e.status == Evaluation::Status::ok)
    {
        resolveElements(ns, e.value, 0);
    }
}

} // namespace

std::vector<ProcessorDevice> findProcessors(const Namespace& ns)
{
    std::vector<ProcessorDevice> found;
    for (const AmlObject& o : ns.objects())
    {
        const bool legacy = o.kind == AmlObject::Kind::processor;
        if (!legacy && !isProcessorDevice(ns, o))
        {
            continue;
        }
        ProcessorDevice d;
        d.internalPath = o.path;
        d.path = displayPath(o.path);
        d.legacyProcessor = legacy;
        d.uidObject = ns.evaluate(childPath(o.path, "_UID"));
        d.cpc = ns.evaluate(childPath(o.path, "_CPC"));
        d.psd = ns.evaluate(childPath(o.path, "_PSD"));
        if (d.uidObject.status == Evaluation::Status::ok)
        {
            if (d.uidObject.value.type == AmlValue::Type::integer)
            {
                d.uid = d.uidObject.value.integer;
            }
            else
            {
                d.problems.push_back(
                    "_UID is a " +
                    std::string(typeName(d.uidObject.value.type)) +
                    ", not an Integer");
            }
        }
        if (legacy)
        {
            // Linux numbers Processor () objects by their ProcessorId.
            if (d.uid && *d.uid != o.processorId)
            {
                d.problems.push_back(
                    "_UID " + hex(*d.uid) + " differs from the ProcessorId " +
                    hex(o.processorId) + ", which is what identifies it");
            }
            d.uid = o.processorId;
        }
        resolveReferences(ns, d.cpc);
        resolveReferences(ns, d.psd);
        // (_CPC and _PSD failures are in their Evaluation; whoever converts
        // them reports them.)
        if (d.uidObject.status == Evaluation::Status::unevaluable)
        {
            d.problems.push_back(
                "_UID cannot be evaluated: " + d.uidObject.why);
        }
        for (const AmlNote& n : ns.notes())
        {
            if (within(n.scope, o.path))
            {
                d.problems.push_back(
                    n.table + ": offset " + hex(n.offset) + ": " + n.message);
            }
        }
        found.push_back(std::move(d));
    }
    return found;
}

std::string formatValue(const AmlValue& value)
{
    switch (value.type)
    {
        case AmlValue::Type::integer:
            return "int:" + hex(value.integer);
        case AmlValue::Type::string:
            return "str:" + quotedString(value.text);
        case AmlValue::Type::buffer:
        {
            static constexpr char digits[] = "0123456789abcdef";
            std::string s = "buf:";
            for (std::uint8_t b : value.buffer)
            {
                s += digits[b >> 4];
                s += digits[b & 0xF];
            }
            return s;
        }
        case AmlValue::Type::package:
        {
            std::string s = "pkg[";
            for (std::size_t i = 0; i < value.elements.size(); ++i)
            {
                s += (i == 0 ? "" : ",") + formatValue(value.elements[i]);
            }
            return s + "]";
        }
        case AmlValue::Type::reference:
            return "other:Reference";
        case AmlValue::Type::uninitialized:
            return "other:Uninitialized";
    }
    return "other:Unknown";
}

std::string formatEvaluation(const Evaluation& e)
{
    switch (e.status)
    {
        case Evaluation::Status::ok:
            return formatValue(e.value);
        case Evaluation::Status::absent:
            return "absent";
        case Evaluation::Status::unevaluable:
            return "error:" + e.why;
    }
    return "absent";
}

} // namespace cppc::acpi
