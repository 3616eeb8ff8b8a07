// SPDX-License-Identifier: Apache-2.0
// A reader for the part of ACPI Machine Language that describes processors.
//
// It loads DSDT and SSDT tables into one namespace the way an OS does at
// table-load time, but without running methods: it records every named
// object, keeps data objects (integers, strings, buffers, packages) with
// their values, evaluates module-level `If` predicates that are simple
// comparisons of named integers, and can evaluate a method statically when
// its body is a single `Return` of a constant or a named data object (the
// `Method (_CPC) { Return (PCPC) }` idiom). Whatever it cannot evaluate is
// recorded as a note against the scope it belongs to, never guessed.
//
// Every read is bounds-checked: truncated or hostile AML yields AcpiError
// (structural damage of the table) or notes, never an out-of-range read.
#pragma once

#include "lib/acpi/table.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cppc::acpi
{

// A value as AML data objects hold it.
struct AmlValue
{
    enum class Type : std::uint8_t
    {
        uninitialized, // a package element with no initializer
        integer,
        string,
        buffer,
        package,
        reference, // a NameString element of a package, unresolved
    };

    Type type = Type::uninitialized;
    std::uint64_t integer = 0;
    // The text of a string, or the NameString of a reference.
    std::string text;
    std::vector<std::uint8_t> buffer;
    std::vector<AmlValue> elements;
    // For references: the scope the name is resolved from.
    std::string scope;

    static AmlValue ofInteger(std::uint64_t v);
    static AmlValue ofString(std::string s);
};

// The name of a value's type, as ACPI names object types ("Integer",
// "Buffer", ...).
std::string_view typeName(AmlValue::Type type) noexcept;

struct AmlObject
{
    enum class Kind : std::uint8_t
    {
        data, // Name (X, <data>)
        method,
        device,
        processor, // legacy Processor () object
        scope,     // created by Scope () for a name defined elsewhere
        fieldUnit, // from Field, IndexField, BankField
        external,  // declared, not (yet) defined
        other,     // OperationRegion, Mutex, Event, PowerResource, ...
    };

    Kind kind = Kind::other;
    std::string path; // absolute, e.g. "\\_SB.CPU0"
    AmlValue value;   // data objects
    // Methods: argument count and where the body is.
    std::uint8_t argCount = 0;
    std::size_t table = 0; // index in load order
    std::size_t bodyBegin = 0;
    std::size_t bodyEnd = 0;
    // Legacy Processor objects: the processor id.
    std::uint8_t processorId = 0;
    // Aliases: the object this name stands for.
    std::string aliasOf;
    // Data objects whose value is not known statically (a Buffer of a
    // computed size, or written by module-level code with an unknown
    // value): why. Empty when `value` holds.
    std::string unknownWhy;
};

// Something the reader could not evaluate or understand.
struct AmlNote
{
    std::string scope; // the object path it concerns, e.g. a device
    std::string table; // the table source
    std::size_t offset = 0;
    std::string message;
    // Definitions were skipped because of it (a part of a scope, the body
    // of an If whose predicate is unknown, ...), so objects may be missing.
    bool lost = false;
};

// The outcome of evaluating an object statically.
struct Evaluation
{
    enum class Status : std::uint8_t
    {
        ok,
        absent,      // no such object
        unevaluable, // exists, but its value is not known statically
    };

    Status status = Status::absent;
    AmlValue value;
    std::string why; // for unevaluable
};

class Namespace
{
  public:
    Namespace();

    // Loads one DSDT or SSDT. Throws AcpiError when the table is not an
    // AML table; damage inside it is recorded in notes() and the rest of
    // the enclosing scope is skipped.
    void load(const Table& table);

    // The object at an absolute path in the padded form the namespace
    // keeps ("\\_SB_.CPU0", see paddedPath()), or nullptr.
    const AmlObject* find(std::string_view path) const;

    // Resolves `name` (an AML NameString in text form: "\\_SB.X", "^X",
    // "X.Y", "X"; segments may omit their '_' padding) from `scope` (a
    // padded absolute path) with the ACPI search rules: a single segment
    // without prefix is looked for in the scope and then in each parent up
    // to the root. Returns nullptr when nothing matches.
    const AmlObject* resolve(std::string_view name,
                             std::string_view scope) const;

    // Evaluates the object at `path` statically: data objects yield their
    // value; methods whose body is a single Return of a constant or a
    // named data object yield that; aliases are followed.
    Evaluation evaluate(std::string_view path) const;

    // Every object in definition order.
    const std::vector<AmlObject>& objects() const noexcept
    {
        return objects_;
    }

    const std::vector<AmlNote>& notes() const noexcept
    {
        return notes_;
    }

    // The tables loaded, in order (method bodies refer to them).
    const std::vector<Table>& tables() const noexcept
    {
        return tables_;
    }

    // Follows alias chains (at most 8 hops); nullptr for a loop or a
    // dangling alias, `o` itself when it is no alias.
    const AmlObject* followAlias(const AmlObject* o) const;

    // The most value elements one namespace (or one evaluation) may
    // create or copy: a guard against tables built to amplify memory.
    static constexpr std::size_t elementBudget = std::size_t{1} << 19;

  private:
    friend class AmlParser;

    AmlObject* findMutable(std::string_view path);

    // Adds an object; returns it and whether this definition took effect.
    std::pair<AmlObject&, bool> define(AmlObject object);

    std::vector<Table> tables_;
    std::vector<AmlObject> objects_;
    std::map<std::string, std::size_t, std::less<>> byPath_;
    std::vector<AmlNote> notes_;
    bool narrow_ = false; // 32-bit integers: the DSDT's revision is below 2
    std::size_t budget_ = elementBudget;
};

// "\\_SB.CPU0" joined with "_CPC" gives "\\_SB.CPU0._CPC".
std::string childPath(std::string_view parent, std::string_view segment);

// A path as ACPI tools print it: each segment without its '_' padding,
// "\\_SB_.CPU0" as "\\_SB.CPU0".
std::string displayPath(std::string_view path);

// The form the namespace keeps paths in: every segment padded to four
// characters with '_' ("\\_SB.CPU0" becomes "\\_SB_.CPU0").
std::string paddedPath(std::string_view path);

// The parent of an absolute path ("\\" for top-level names).
std::string parentPath(std::string_view path);

} // namespace cppc::acpi
