// SPDX-License-Identifier: Apache-2.0
#include "aml.hpp"

#include "lib/text.hpp"

#include <algorithm>
#include <utility>

namespace cppc::acpi
{
namespace
{

// AML opcodes (ACPI 6.5, section 20.3).
enum : std::uint8_t
{
    zeroOp = 0x00,
    oneOp = 0x01,
    aliasOp = 0x06,
    nameOp = 0x08,
    bytePrefix = 0x0A,
    wordPrefix = 0x0B,
    dwordPrefix = 0x0C,
    stringPrefix = 0x0D,
    qwordPrefix = 0x0E,
    scopeOp = 0x10,
    bufferOp = 0x11,
    packageOp = 0x12,
    varPackageOp = 0x13,
    methodOp = 0x14,
    externalOp = 0x15,
    dualNamePrefix = 0x2E,
    multiNamePrefix = 0x2F,
    extOpPrefix = 0x5B,
    rootChar = 0x5C,
    parentPrefixChar = 0x5E,
    local0Op = 0x60,
    local7Op = 0x67,
    arg0Op = 0x68,
    arg6Op = 0x6E,
    storeOp = 0x70,
    refOfOp = 0x71,
    addOp = 0x72,
    concatOp = 0x73,
    subtractOp = 0x74,
    incrementOp = 0x75,
    decrementOp = 0x76,
    multiplyOp = 0x77,
    divideOp = 0x78,
    shiftLeftOp = 0x79,
    shiftRightOp = 0x7A,
    andOp = 0x7B,
    nandOp = 0x7C,
    orOp = 0x7D,
    norOp = 0x7E,
    xorOp = 0x7F,
    notOp = 0x80,
    findSetLeftBitOp = 0x81,
    findSetRightBitOp = 0x82,
    derefOfOp = 0x83,
    concatResOp = 0x84,
    modOp = 0x85,
    notifyOp = 0x86,
    sizeOfOp = 0x87,
    indexOp = 0x88,
    matchOp = 0x89,
    createDWordFieldOp = 0x8A,
    createWordFieldOp = 0x8B,
    createByteFieldOp = 0x8C,
    createBitFieldOp = 0x8D,
    objectTypeOp = 0x8E,
    createQWordFieldOp = 0x8F,
    landOp = 0x90,
    lorOp = 0x91,
    lnotOp = 0x92,
    lequalOp = 0x93,
    lgreaterOp = 0x94,
    llessOp = 0x95,
    toBufferOp = 0x96,
    toDecimalStringOp = 0x97,
    toHexStringOp = 0x98,
    toIntegerOp = 0x99,
    toStringOp = 0x9C,
    copyObjectOp = 0x9D,
    midOp = 0x9E,
    continueOp = 0x9F,
    ifOp = 0xA0,
    elseOp = 0xA1,
    whileOp = 0xA2,
    noopOp = 0xA3,
    returnOp = 0xA4,
    breakOp = 0xA5,
    breakPointOp = 0xCC,
    onesOp = 0xFF,
};

// Second bytes after extOpPrefix.
enum : std::uint8_t
{
    mutexOp = 0x01,
    eventOp = 0x02,
    condRefOfOp = 0x12,
    createFieldOp = 0x13,
    loadTableOp = 0x1F,
    loadOp = 0x20,
    stallOp = 0x21,
    sleepOp = 0x22,
    acquireOp = 0x23,
    signalOp = 0x24,
    waitOp = 0x25,
    resetOp = 0x26,
    releaseOp = 0x27,
    fromBcdOp = 0x28,
    toBcdOp = 0x29,
    revisionOp = 0x30,
    debugOp = 0x31,
    fatalOp = 0x32,
    timerOp = 0x33,
    opRegionOp = 0x80,
    fieldOp = 0x81,
    deviceOp = 0x82,
    processorOp = 0x83,
    powerResOp = 0x84,
    thermalZoneOp = 0x85,
    indexFieldOp = 0x86,
    bankFieldOp = 0x87,
    dataRegionOp = 0x88,
};

constexpr std::size_t headerSize = 36;

// Raised inside the parser when the bytes of the current scope cannot be
// parsed any further; the scope's loop records it and skips to its end.
struct ParseFailure
{
    std::size_t offset;
    std::string message;
};

// Raised for a data object whose value cannot be known statically (a
// Buffer or VarPackage whose size is not a constant, Revision): its bytes
// were consumed, so the object can be defined with an unknown value.
struct UnknownValue
{
    std::string why;
};

// How deep terms, packages and scopes may nest before the reader gives up
// on the construct (ACPICA's own parse stack is far shallower in practice).
constexpr unsigned maxDepth = 256;

bool isLeadNameChar(std::uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || c == '_';
}

bool isNameChar(std::uint8_t c)
{
    return isLeadNameChar(c) || (c >= '0' && c <= '9');
}

bool startsNameString(std::uint8_t c)
{
    return isLeadNameChar(c) || c == rootChar || c == parentPrefixChar ||
           c == dualNamePrefix || c == multiNamePrefix;
}

// A NameString as written: prefixes and segments.
struct NameRef
{
    bool root = false;
    unsigned parents = 0;
    std::vector<std::string> segments;

    std::string text() const
    {
        std::string s = root ? "\\" : std::string(parents, '^');
        for (std::size_t i = 0; i < segments.size(); ++i)
        {
            s += (i == 0 ? "" : ".") + segments[i];
        }
        return s;
    }
};

// The result of parsing a TermArg: its value when known statically, or
// why it is not.
struct Term
{
    std::optional<AmlValue> value;
    std::string why;

    static Term known(AmlValue v)
    {
        return {std::move(v), {}};
    }
    static Term unknown(std::string reason)
    {
        return {std::nullopt, std::move(reason)};
    }
    std::optional<std::uint64_t> integer() const
    {
        if (value && value->type == AmlValue::Type::integer)
        {
            return value->integer;
        }
        return std::nullopt;
    }
};

// Rewrites every name segment of a path with `f`, keeping the root,
// parent prefixes and dots.
template <class F>
std::string mapSegments(std::string_view path, F f)
{
    std::string out;
    std::size_t i = 0;
    while (i < path.size())
    {
        if (path[i] == '.' || path[i] == '\\' || path[i] == '^')
        {
            out += path[i++];
            continue;
        }
        const std::size_t j =
            std::min(path.find_first_of(".\\^", i), path.size());
        out += f(path.substr(i, j - i));
        i = j;
    }
    return out;
}

// How many value nodes `v` holds, itself included.
std::size_t countElements(const AmlValue& v)
{
    std::size_t n = 1;
    for (const AmlValue& e : v.elements)
    {
        n += countElements(e);
    }
    return n;
}

} // namespace

AmlValue AmlValue::ofInteger(std::uint64_t v)
{
    AmlValue a;
    a.type = Type::integer;
    a.integer = v;
    return a;
}

AmlValue AmlValue::ofString(std::string s)
{
    AmlValue a;
    a.type = Type::string;
    a.text = std::move(s);
    return a;
}

std::string_view typeName(AmlValue::Type type) noexcept
{
    switch (type)
    {
        case AmlValue::Type::uninitialized:
            return "Uninitialized";
        case AmlValue::Type::integer:
            return "Integer";
        case AmlValue::Type::string:
            return "String";
        case AmlValue::Type::buffer:
            return "Buffer";
        case AmlValue::Type::package:
            return "Package";
        case AmlValue::Type::reference:
            return "Reference";
    }
    return "Unknown";
}

std::string childPath(std::string_view parent, std::string_view segment)
{
    std::string p(parent);
    if (p != "\\")
    {
        p += '.';
    }
    p += segment;
    return p;
}

std::string displayPath(std::string_view path)
{
    return mapSegments(path, [](std::string_view seg) {
        while (seg.size() > 1 && seg.back() == '_')
        {
            seg.remove_suffix(1);
        }
        return std::string(seg);
    });
}

std::string parentPath(std::string_view path)
{
    const std::size_t dot = path.rfind('.');
    if (dot == std::string_view::npos)
    {
        return "\\";
    }
    return std::string(path.substr(0, dot));
}

// Parses AML byte code of one table, either to load its definitions into
// the namespace or to evaluate a method body.
class AmlParser
{
  public:
    // `loading` is the namespace definitions go into (null when only
    // evaluating); `notes` receives what cannot be evaluated.
    // `budget` is how many more value elements may be created or copied
    // (a guard against tables that amplify memory).
    AmlParser(const Namespace& ns, Namespace* loading,
              std::vector<AmlNote>& notes, std::size_t& budget,
              std::size_t table, std::size_t begin, std::size_t end) :
        ns_(ns),
        loading_(loading), notes_(notes), budget_(budget), table_(table),
        bytes_(ns.tables_[table].bytes), pos_(begin), limit_(end),
        narrow_(ns.narrow_)
    {}

    // Loads every definition of [pos, limit) into `scope`.
    void loadTermList(const std::string& scope)
    {
        const std::size_t end = limit_;
        while (pos_ < end)
        {
            const std::size_t at = pos_;
            try
            {
                loadTerm(scope);
            }
            catch (const ParseFailure& f)
            {
                note(scope, f.offset,
                     f.message + "; the rest of this scope (to offset " +
                         hex(end) + ") was skipped",
                     true);
                pos_ = end;
            }
            if (pos_ <= at)
            {
                pos_ = end; // no progress: never loop
            }
        }
    }

    // Evaluates a method body statically: it must be `Return (X)` with X
    // known without running anything.
    Evaluation evaluateBody(const std::string& scope)
    {
        Evaluation e;
        try
        {
            if (pos_ >= limit_)
            {
                e.status = Evaluation::Status::unevaluable;
                e.why = "the method body is empty";
                return e;
            }
            const std::uint8_t op = peek();
            if (op != returnOp)
            {
                e.status = Evaluation::Status::unevaluable;
                e.why = "the method body starts with " + opName(pos_) +
                        ", not Return; only a single Return of a constant or "
                        "a named object is evaluated without running AML";
                return e;
            }
            ++pos_;
            Term t = termArg(scope);
            if (!t.value)
            {
                e.status = Evaluation::Status::unevaluable;
                e.why = "Return (...): " + t.why;
                return e;
            }
            e.status = Evaluation::Status::ok;
            e.value = std::move(*t.value);
            return e;
        }
        catch (const ParseFailure& f)
        {
            e.status = Evaluation::Status::unevaluable;
            e.why = f.message + " at offset " + hex(f.offset);
            return e;
        }
    }

  private:
    // --- bytes -----------------------------------------------------------

    [[noreturn]] void fail(std::size_t at, std::string message) const
    {
        throw ParseFailure{at, std::move(message)};
    }

    std::uint8_t peek() const
    {
        if (pos_ >= limit_)
        {
            fail(pos_, "unexpected end of data");
        }
        return bytes_[pos_];
    }

    std::uint8_t u8()
    {
        const std::uint8_t v = peek();
        ++pos_;
        return v;
    }

    std::uint64_t little(unsigned n)
    {
        if (limit_ - pos_ < n)
        {
            fail(pos_, "unexpected end of data in a " + std::to_string(n) +
                           "-byte value");
        }
        std::uint64_t v = 0;
        for (unsigned i = 0; i < n; ++i)
        {
            v |= std::uint64_t{bytes_[pos_ + i]} << (8 * i);
        }
        pos_ += n;
        return v;
    }

    // The value of a PkgLength encoding.
    std::uint64_t pkgLengthValue()
    {
        const std::uint8_t lead = u8();
        const unsigned follow = lead >> 6;
        if (follow == 0)
        {
            return lead & 0x3FU;
        }
        std::uint64_t length = lead & 0x0FU;
        for (unsigned i = 0; i < follow; ++i)
        {
            length |= std::uint64_t{u8()} << (4 + 8 * i);
        }
        return length;
    }

    // A PkgLength that bounds bytes: returns the end offset, checked
    // against the enclosing scope.
    std::size_t pkgEnd()
    {
        const std::size_t start = pos_;
        const std::uint64_t length = pkgLengthValue();
        if (length < pos_ - start || length > limit_ - start)
        {
            fail(start, "package length " + hex(length) +
                            " runs past its enclosing scope (ends at " +
                            hex(limit_) + ")");
        }
        return start + static_cast<std::size_t>(length);
    }

    // Runs `body` with the read limit narrowed to `end`.
    template <class F>
    auto within(std::size_t end, F&& body)
    {
        const std::size_t saved = limit_;
        limit_ = end;
        struct Restore
        {
            std::size_t& limit;
            std::size_t saved;
            ~Restore()
            {
                limit = saved;
            }
        } restore{limit_, saved};
        return body();
    }

    std::string nameSeg()
    {
        if (limit_ - pos_ < 4)
        {
            fail(pos_, "truncated name segment");
        }
        std::string s(4, ' ');
        for (std::size_t i = 0; i < 4; ++i)
        {
            const std::uint8_t c = bytes_[pos_ + i];
            if (i == 0 ? !isLeadNameChar(c) : !isNameChar(c))
            {
                fail(pos_, "invalid name segment byte " + hex(c));
            }
            s[i] = static_cast<char>(c);
        }
        pos_ += 4;
        return s;
    }

    NameRef nameString()
    {
        NameRef n;
        if (peek() == rootChar)
        {
            n.root = true;
            ++pos_;
        }
        else
        {
            while (peek() == parentPrefixChar)
            {
                ++n.parents;
                ++pos_;
            }
        }
        const std::uint8_t c = peek();
        if (c == zeroOp)
        {
            ++pos_; // NullName
        }
        else if (c == dualNamePrefix)
        {
            ++pos_;
            n.segments.push_back(nameSeg());
            n.segments.push_back(nameSeg());
        }
        else if (c == multiNamePrefix)
        {
            ++pos_;
            const std::uint8_t count = u8();
            for (unsigned i = 0; i < count; ++i)
            {
                n.segments.push_back(nameSeg());
            }
        }
        else
        {
            n.segments.push_back(nameSeg());
        }
        return n;
    }

    // The absolute path a definition of `n` in `scope` creates.
    static std::string definitionPath(const NameRef& n,
                                      const std::string& scope)
    {
        std::string base = n.root ? std::string("\\") : scope;
        for (unsigned i = 0; i < n.parents; ++i)
        {
            base = parentPath(base);
        }
        for (const std::string& s : n.segments)
        {
            base = childPath(base, s);
        }
        return base;
    }

    std::string opName(std::size_t at) const
    {
        if (at >= bytes_.size())
        {
            return "end of data";
        }
        const std::uint8_t op = bytes_[at];
        if (op == extOpPrefix && at + 1 < bytes_.size())
        {
            return "opcode 0x5b" + hex(bytes_[at + 1]).substr(2);
        }
        switch (op)
        {
            case storeOp:
                return "Store";
            case derefOfOp:
                return "DerefOf";
            case indexOp:
                return "Index";
            case refOfOp:
                return "RefOf";
            case sizeOfOp:
                return "SizeOf";
            case concatOp:
                return "Concatenate";
            case ifOp:
                return "If";
            case whileOp:
                return "While";
            case nameOp:
                return "Name";
            case methodOp:
                return "Method";
            default:
                break;
        }
        if (op >= local0Op && op <= local7Op)
        {
            return "Local" + std::to_string(op - local0Op);
        }
        if (startsNameString(op))
        {
            return "a method call or name";
        }
        return "opcode " + hex(op);
    }

    // Records what could not be understood; `lost` when definitions were
    // skipped because of it.
    void note(const std::string& scope, std::size_t offset, std::string message,
              bool lost = false)
    {
        notes_.push_back({scope, ns_.tables_[table_].label(), offset,
                          std::move(message), lost});
    }

    std::uint64_t mask(std::uint64_t v) const
    {
        return narrow_ ? (v & 0xFFFF'FFFFULL) : v;
    }

    // --- data objects ------------------------------------------------------

    AmlValue stringData()
    {
        std::string s;
        while (true)
        {
            const std::uint8_t c = u8();
            if (c == 0)
            {
                return AmlValue::ofString(std::move(s));
            }
            s += static_cast<char>(c);
        }
    }

    AmlValue bufferData(const std::string& scope)
    {
        const std::size_t at = pos_ - 1;
        const std::size_t end = pkgEnd();
        return within(end, [&] {
            const Term size = termArg(scope);
            AmlValue v;
            v.type = AmlValue::Type::buffer;
            v.buffer.assign(bytes_.begin() + static_cast<long>(pos_),
                            bytes_.begin() + static_cast<long>(end));
            pos_ = end;
            const auto n = size.integer();
            if (!n)
            {
                throw UnknownValue{"the Buffer size is not known statically (" +
                                   size.why + ")"};
            }
            if (*n > (1U << 20))
            {
                fail(at, "Buffer size " + hex(*n) + " is implausibly large");
            }
            if (*n > v.buffer.size())
            {
                v.buffer.resize(static_cast<std::size_t>(*n), 0);
            }
            return v;
        });
    }

    AmlValue packageData(const std::string& scope, bool variable)
    {
        const std::size_t at = pos_ - 1;
        const Deeper deeper(*this, at);
        const std::size_t end = pkgEnd();
        try
        {
            return within(end,
                          [&] { return packageBody(scope, variable, at); });
        }
        catch (const UnknownValue&)
        {
            pos_ = end; // the whole package is unknown; skip the rest of it
            throw;
        }
    }

    AmlValue packageBody(const std::string& scope, bool variable,
                         std::size_t at)
    {
        std::uint64_t count = 0;
        if (variable)
        {
            const Term n = termArg(scope);
            if (!n.integer())
            {
                pos_ = limit_;
                throw UnknownValue{"the VarPackage size is not known "
                                   "statically (" +
                                   n.why + ")"};
            }
            count = *n.integer();
        }
        else
        {
            count = u8();
        }
        if (count > 4096)
        {
            fail(at, "package of " + std::to_string(count) +
                         " elements is implausibly large");
        }
        charge(static_cast<std::size_t>(count) + 1, at);
        AmlValue v;
        v.type = AmlValue::Type::package;
        while (pos_ < limit_)
        {
            v.elements.push_back(startsNameString(peek()) ? namedElement(scope)
                                                          : dataObject(scope));
        }
        if (v.elements.size() > count)
        {
            note(scope, at,
                 "package declares " + std::to_string(count) +
                     " elements but lists " +
                     std::to_string(v.elements.size()) +
                     "; the extra ones were dropped");
        }
        v.elements.resize(static_cast<std::size_t>(count));
        return v;
    }

    // A package element that is a name: like ACPICA, a name of a data
    // object becomes that object's value when the package is built; any
    // other name stays a reference, resolved when it is used.
    AmlValue namedElement(const std::string& scope)
    {
        const std::size_t at = pos_;
        const std::string text = nameString().text();
        const AmlObject* o = ns_.followAlias(ns_.resolve(text, scope));
        if (o != nullptr && o->kind == AmlObject::Kind::data &&
            o->unknownWhy.empty())
        {
            charge(countElements(o->value), at);
            return o->value;
        }
        AmlValue ref;
        ref.type = AmlValue::Type::reference;
        ref.text = text;
        ref.scope = scope;
        return ref;
    }

    // DataRefObject: a constant, string, buffer or package.
    AmlValue dataObject(const std::string& scope)
    {
        const std::size_t at = pos_;
        const std::uint8_t op = u8();
        switch (op)
        {
            case zeroOp:
                return AmlValue::ofInteger(0);
            case oneOp:
                return AmlValue::ofInteger(1);
            case onesOp:
                return AmlValue::ofInteger(mask(~std::uint64_t{0}));
            case bytePrefix:
                return AmlValue::ofInteger(little(1));
            case wordPrefix:
                return AmlValue::ofInteger(little(2));
            case dwordPrefix:
                return AmlValue::ofInteger(little(4));
            case qwordPrefix:
                return AmlValue::ofInteger(mask(little(8)));
            case stringPrefix:
                return stringData();
            case bufferOp:
                return bufferData(scope);
            case packageOp:
                return packageData(scope, false);
            case varPackageOp:
                return packageData(scope, true);
            case extOpPrefix:
                if (u8() == revisionOp)
                {
                    throw UnknownValue{"Revision has no static value"};
                }
                break;
            default:
                break;
        }
        fail(at, "expected a data object, found " + opName(at));
    }

    // --- expressions -----------------------------------------------------

    // A Target: NullName or a SuperName that receives `value`.
    void target(const std::string& scope, const Term& value = {})
    {
        if (peek() == zeroOp)
        {
            ++pos_;
            return;
        }
        written(scope, value);
    }

    // A SuperName being written. While a table loads, module-level code
    // runs in order: a named data object takes the value when it is known
    // statically, and otherwise becomes unknown from here on, so that later
    // If predicates over it are reported, not guessed.
    void written(const std::string& scope, const Term& value)
    {
        const std::size_t at = pos_;
        if (!startsNameString(peek()))
        {
            (void)termArg(scope, true);
            return;
        }
        const NameRef n = nameString();
        if (loading_ == nullptr || n.segments.empty())
        {
            return;
        }
        const AmlObject* found = ns_.followAlias(ns_.resolve(n.text(), scope));
        AmlObject* o =
            found != nullptr ? loading_->findMutable(found->path) : nullptr;
        if (o == nullptr || o->kind != AmlObject::Kind::data)
        {
            return;
        }
        if (value.value)
        {
            o->value = *value.value;
            o->unknownWhy.clear();
        }
        else
        {
            o->unknownWhy = "it is written by AML while the tables load "
                            "(offset " +
                            hex(at) + ") with a value not known statically";
        }
    }

    Term logical(bool v) const
    {
        return Term::known(
            AmlValue::ofInteger(v ? mask(~std::uint64_t{0}) : 0));
    }

    // Two integer operands and an optional target.
    Term binary(const std::string& scope, std::uint8_t op, bool hasTarget)
    {
        const Term a = termArg(scope);
        const Term b = termArg(scope);
        Term result = compute(op, a, b);
        if (hasTarget)
        {
            target(scope, result);
        }
        return result;
    }

    // Why a Term is not an Integer.
    static std::string notInteger(const Term& t)
    {
        if (!t.value)
        {
            return t.why;
        }
        return "an operand is a " + std::string(typeName(t.value->type)) +
               ", not an Integer";
    }

    Term compute(std::uint8_t op, const Term& a, const Term& b) const
    {
        const auto x = a.integer();
        const auto y = b.integer();
        if (!x || !y)
        {
            return Term::unknown(notInteger(!x ? a : b));
        }
        switch (op)
        {
            case addOp:
                return Term::known(AmlValue::ofInteger(mask(*x + *y)));
            case subtractOp:
                return Term::known(AmlValue::ofInteger(mask(*x - *y)));
            case multiplyOp:
                return Term::known(AmlValue::ofInteger(mask(*x * *y)));
            case shiftLeftOp:
                return Term::known(
                    AmlValue::ofInteger(*y >= 64 ? 0 : mask(*x << *y)));
            case shiftRightOp:
                return Term::known(
                    AmlValue::ofInteger(*y >= 64 ? 0 : *x >> *y));
            case andOp:
                return Term::known(AmlValue::ofInteger(*x & *y));
            case nandOp:
                return Term::known(AmlValue::ofInteger(mask(~(*x & *y))));
            case orOp:
                return Term::known(AmlValue::ofInteger(*x | *y));
            case norOp:
                return Term::known(AmlValue::ofInteger(mask(~(*x | *y))));
            case xorOp:
                return Term::known(AmlValue::ofInteger(*x ^ *y));
            case modOp:
                if (*y == 0)
                {
                    return Term::unknown("Mod by zero");
                }
                return Term::known(AmlValue::ofInteger(*x % *y));
            case landOp:
                return logical(*x != 0 && *y != 0);
            case lorOp:
                return logical(*x != 0 || *y != 0);
            case lequalOp:
                return logical(*x == *y);
            case lgreaterOp:
                return logical(*x > *y);
            case llessOp:
                return logical(*x < *y);
            default:
                return Term::unknown(
                    "operation " + hex(op) + " is not evaluated statically");
        }
    }

    // A name used as a value: a data object's value, or unknown (with the
    // reason). Method invocations consume their arguments.
    Term nameTerm(const std::string& scope, bool superName)
    {
        const std::size_t at = pos_;
        const NameRef n = nameString();
        const std::string text = n.text();
        if (n.segments.empty())
        {
            return Term::unknown("a null name has no value");
        }
        const AmlObject* o = ns_.followAlias(ns_.resolve(text, scope));
        if (o == nullptr)
        {
            return Term::unknown(text + " is not defined");
        }
        const bool callable = o->kind == AmlObject::Kind::method ||
                              o->kind == AmlObject::Kind::external;
        if (callable && !superName)
        {
            for (unsigned i = 0; i < o->argCount; ++i)
            {
                (void)termArg(scope);
            }
        }
        switch (o->kind)
        {
            case AmlObject::Kind::data:
                if (!o->unknownWhy.empty())
                {
                    return Term::unknown(
                        text + " is not known statically: " + o->unknownWhy);
                }
                charge(countElements(o->value), at);
                return Term::known(o->value);
            case AmlObject::Kind::method:
                return Term::unknown(text + " is a method; calls are not run");
            case AmlObject::Kind::fieldUnit:
                return Term::unknown(
                    text + " is a field unit, read from hardware "
                           "at run time");
            case AmlObject::Kind::external:
                return Term::unknown(
                    text + " is declared External and not defined "
                           "in the loaded tables");
            default:
                return Term::unknown(text + " has no static value");
        }
    }

    // TermArg (and, with superName, SuperName): parses it and evaluates it
    // when that needs no run-time state.
    Term termArg(const std::string& scope, bool superName = false)
    {
        const std::size_t at = pos_;
        const Deeper deeper(*this, at);
        const std::uint8_t op = peek();
        if (startsNameString(op))
        {
            return nameTerm(scope, superName);
        }
        if (op >= local0Op && op <= local7Op)
        {
            ++pos_;
            return Term::unknown("Local" + std::to_string(op - local0Op) +
                                 " has no static value");
        }
        if (op >= arg0Op && op <= arg6Op)
        {
            ++pos_;
            return Term::unknown(
                "Arg" + std::to_string(op - arg0Op) + " has no static value");
        }
        switch (op)
        {
            case zeroOp:
            case oneOp:
            case onesOp:
            case bytePrefix:
            case wordPrefix:
            case dwordPrefix:
            case qwordPrefix:
            case stringPrefix:
            case bufferOp:
            case packageOp:
            case varPackageOp:
                try
                {
                    return Term::known(dataObject(scope));
                }
                catch (const UnknownValue& u)
                {
                    return Term::unknown(u.why);
                }
            default:
                break;
        }
        ++pos_;
        switch (op)
        {
            case storeOp:
            case copyObjectOp:
            {
                Term v = termArg(scope);
                written(scope, v);
                return v;
            }
            case incrementOp:
            case decrementOp:
            {
                // Only a named operand is evaluated: it is read, then
                // written back changed (re-reading a name is cheap, an
                // expression would be parsed twice at every level).
                const std::size_t operand = pos_;
                if (!startsNameString(peek()))
                {
                    (void)termArg(scope, true);
                    return Term::unknown(
                        opName(at) + " of an expression is not "
                                     "evaluated statically");
                }
                const Term old = nameTerm(scope, true);
                pos_ = operand;
                const Term one = Term::known(AmlValue::ofInteger(1));
                Term v =
                    compute(op == incrementOp ? addOp : subtractOp, old, one);
                written(scope, v);
                return v;
            }
            case refOfOp:
            case derefOfOp:
            case sizeOfOp:
            case objectTypeOp:
                (void)termArg(scope, op != derefOfOp);
                return Term::unknown(opName(at) + " is not evaluated "
                                                  "statically");
            case addOp:
            case subtractOp:
            case multiplyOp:
            case shiftLeftOp:
            case shiftRightOp:
            case andOp:
            case nandOp:
            case orOp:
            case norOp:
            case xorOp:
            case modOp:
                return binary(scope, op, true);
            case concatOp:
            case concatResOp:
            case indexOp:
                (void)termArg(scope);
                (void)termArg(scope);
                target(scope);
                return Term::unknown(opName(at) + " is not evaluated "
                                                  "statically");
            case divideOp:
                (void)termArg(scope);
                (void)termArg(scope);
                target(scope);
                target(scope);
                return Term::unknown("Divide is not evaluated statically");
            case notOp:
            {
                const Term a = termArg(scope);
                Term v =
                    a.integer()
                        ? Term::known(AmlValue::ofInteger(mask(~*a.integer())))
                        : Term::unknown(notInteger(a));
                target(scope, v);
                return v;
            }
            case findSetLeftBitOp:
            case findSetRightBitOp:
            case toBufferOp:
            case toDecimalStringOp:
            case toHexStringOp:
            case toIntegerOp:
                (void)termArg(scope);
                target(scope);
                return Term::unknown(opName(at) + " is not evaluated "
                                                  "statically");
            case toStringOp:
                (void)termArg(scope);
                (void)termArg(scope);
                target(scope);
                return Term::unknown("ToString is not evaluated statically");
            case midOp:
                (void)termArg(scope);
                (void)termArg(scope);
                (void)termArg(scope);
                target(scope);
                return Term::unknown("Mid is not evaluated statically");
            case matchOp:
                (void)termArg(scope);
                (void)u8();
                (void)termArg(scope);
                (void)u8();
                (void)termArg(scope);
                (void)termArg(scope);
                return Term::unknown("Match is not evaluated statically");
            case notifyOp:
                (void)termArg(scope, true);
                (void)termArg(scope);
                return Term::unknown("Notify has no value");
            case landOp:
            case lorOp:
            case lequalOp:
            case lgreaterOp:
            case llessOp:
                return binary(scope, op, false);
            case lnotOp:
            {
                const Term a = termArg(scope);
                if (!a.integer())
                {
                    return Term::unknown(notInteger(a));
                }
                return logical(*a.integer() == 0);
            }
            case extOpPrefix:
                return extendedTerm(scope, at);
            default:
                fail(at, "cannot parse " + opName(at) + " as an expression");
        }
    }

    Term extendedTerm(const std::string& scope, std::size_t at)
    {
        const std::uint8_t op = u8();
        switch (op)
        {
            case condRefOfOp:
                (void)termArg(scope, true);
                target(scope);
                return Term::unknown("CondRefOf is not evaluated statically");
            case acquireOp:
                (void)termArg(scope, true);
                (void)little(2);
                return Term::unknown("Acquire has no static value");
            case waitOp:
                (void)termArg(scope, true);
                (void)termArg(scope);
                return Term::unknown("Wait has no static value");
            case signalOp:
            case resetOp:
            case releaseOp:
                (void)termArg(scope, true);
                return Term::unknown("synchronisation has no value");
            case fromBcdOp:
            case toBcdOp:
                (void)termArg(scope);
                target(scope);
                return Term::unknown("BCD conversion is not evaluated "
                                     "statically");
            case stallOp:
            case sleepOp:
                (void)termArg(scope);
                return Term::unknown("Stall/Sleep has no value");
            case fatalOp:
                (void)little(1);
                (void)little(4);
                (void)termArg(scope);
                return Term::unknown("Fatal has no value");
            case timerOp:
                return Term::unknown("Timer has no static value");
            case debugOp:
                return Term::unknown("Debug has no value");
            case revisionOp:
                return Term::unknown("Revision has no static value");
            case loadOp:
                (void)nameString();
                target(scope);
                return Term::unknown("Load is not run");
            case loadTableOp:
                for (int i = 0; i < 6; ++i)
                {
                    (void)termArg(scope);
                }
                return Term::unknown("LoadTable is not run");
            default:
                fail(at, "cannot parse " + opName(at) + " as an expression");
        }
    }

    // --- definitions -------------------------------------------------------

    // Adds a definition; returns the new object, or nullptr when the name
    // was already defined (the first definition is kept, with a note).
    AmlObject* define(const std::string& scope, const NameRef& n,
                      AmlObject::Kind kind, std::size_t at)
    {
        if (loading_ == nullptr)
        {
            fail(at, "a definition inside a method body is not evaluated");
        }
        AmlObject o;
        o.kind = kind;
        o.path = definitionPath(n, scope);
        o.table = table_;
        auto [object, created] = loading_->define(std::move(o));
        if (!created)
        {
            note(scope, at,
                 displayPath(object.path) +
                     " is defined twice; the first definition is kept");
            return nullptr;
        }
        return &object;
    }

    void fieldList(const std::string& scope, std::size_t end)
    {
        while (pos_ < end)
        {
            const std::uint8_t c = peek();
            switch (c)
            {
                case 0x00: // ReservedField
                    ++pos_;
                    (void)pkgLengthValue();
                    break;
                case 0x01: // AccessField
                    pos_ += 1;
                    (void)little(2);
                    break;
                case 0x02: // ConnectField
                    ++pos_;
                    if (peek() == bufferOp)
                    {
                        ++pos_;
                        (void)bufferData(scope);
                    }
                    else
                    {
                        (void)nameString();
                    }
                    break;
                case 0x03: // ExtendedAccessField
                    pos_ += 1;
                    (void)little(3);
                    break;
                default:
                {
                    NameRef n;
                    n.segments.push_back(nameSeg());
                    (void)pkgLengthValue();
                    define(scope, n, AmlObject::Kind::fieldUnit, pos_);
                    break;
                }
            }
        }
    }

    void ifElse(const std::string& scope, std::size_t at)
    {
        const Deeper deeper(*this, at);
        const std::size_t end = pkgEnd();
        Term predicate;
        try
        {
            predicate = within(end, [&] { return termArg(scope); });
        }
        catch (const ParseFailure& f)
        {
            predicate =
                Term::unknown(f.message + " at offset " + hex(f.offset));
        }
        const std::size_t bodyBegin = pos_;
        std::optional<std::pair<std::size_t, std::size_t>> elseBody;
        if (end < limit_ && bytes_[end] == elseOp)
        {
            pos_ = end + 1;
            const std::size_t elseEnd = pkgEnd();
            elseBody = std::pair(pos_, elseEnd);
        }
        const std::size_t after = elseBody ? elseBody->second : end;
        const auto value = predicate.integer();
        if (!value)
        {
            note(scope, at,
                 "If at offset " + hex(at) +
                     ": the predicate is not known statically (" +
                     notInteger(predicate) +
                     "); the definitions inside were not loaded",
                 true);
            pos_ = after;
            return;
        }
        if (*value != 0)
        {
            pos_ = bodyBegin;
            within(end, [&] { loadTermList(scope); });
        }
        else if (elseBody)
        {
            pos_ = elseBody->first;
            within(elseBody->second, [&] { loadTermList(scope); });
        }
        pos_ = after;
    }

    // A scope-like object with a PkgLength and a TermList: Device,
    // Processor, PowerResource, ThermalZone, Scope.
    void scopedDefinition(const std::string& scope, std::uint8_t ext,
                          std::size_t at)
    {
        const Deeper deeper(*this, at);
        const std::size_t end = pkgEnd();
        within(end, [&] {
            const NameRef n = nameString();
            AmlObject::Kind kind = AmlObject::Kind::other;
            std::uint8_t processorId = 0;
            switch (ext)
            {
                case deviceOp:
                    kind = AmlObject::Kind::device;
                    break;
                case processorOp:
                    kind = AmlObject::Kind::processor;
                    processorId = u8();
                    (void)little(4); // PblkAddress
                    (void)little(1); // PblkLength
                    break;
                case powerResOp:
                    (void)little(1); // SystemLevel
                    (void)little(2); // ResourceOrder
                    break;
                default:
                    break;
            }
            std::string path;
            if (ext == 0)
            {
                // Scope () opens an existing object, found with the search
                // rules when it is a single name; ACPICA refuses the rest.
                const bool single = !n.root && n.parents == 0 &&
                                    n.segments.size() == 1;
                const AmlObject* target = ns_.followAlias(
                    single ? ns_.resolve(n.text(), scope)
                           : ns_.find(definitionPath(n, scope)));
                if (target == nullptr)
                {
                    note(scope, at,
                         "Scope (" + displayPath(n.text()) +
                             "): no such object; its contents were not "
                             "loaded",
                         true);
                    return;
                }
                path = target->path;
            }
            else
            {
                AmlObject* o = define(scope, n, kind, at);
                if (o == nullptr)
                {
                    return; // defined twice: ACPICA skips the second body
                }
                o->processorId = processorId;
                path = o->path;
            }
            loadTermList(path);
        });
        pos_ = end;
    }

    void loadExtended(const std::string& scope, std::size_t at)
    {
        const std::uint8_t op = u8();
        switch (op)
        {
            case deviceOp:
            case processorOp:
            case powerResOp:
            case thermalZoneOp:
                scopedDefinition(scope, op, at);
                return;
            case opRegionOp:
            {
                const NameRef n = nameString();
                (void)little(1);
                (void)termArg(scope);
                (void)termArg(scope);
                define(scope, n, AmlObject::Kind::other, at);
                return;
            }
            case fieldOp:
            case indexFieldOp:
            case bankFieldOp:
            {
                const std::size_t end = pkgEnd();
                within(end, [&] {
                    (void)nameString();
                    if (op != fieldOp)
                    {
                        (void)nameString();
                    }
                    if (op == bankFieldOp)
                    {
                        (void)termArg(scope);
                    }
                    (void)u8(); // FieldFlags
                    fieldList(scope, end);
                });
                pos_ = end;
                return;
            }
            case mutexOp:
            {
                const NameRef n = nameString();
                (void)u8();
                define(scope, n, AmlObject::Kind::other, at);
                return;
            }
            case eventOp:
                define(scope, nameString(), AmlObject::Kind::other, at);
                return;
            case createFieldOp:
            {
                (void)termArg(scope);
                (void)termArg(scope);
                (void)termArg(scope);
                define(scope, nameString(), AmlObject::Kind::other, at);
                return;
            }
            case dataRegionOp:
            {
                const NameRef n = nameString();
                (void)termArg(scope);
                (void)termArg(scope);
                (void)termArg(scope);
                define(scope, n, AmlObject::Kind::other, at);
                return;
            }
            default:
                // An executable statement at module level.
                pos_ = at;
                (void)termArg(scope);
                return;
        }
    }

    void loadTerm(const std::string& scope)
    {
        const std::size_t at = pos_;
        const std::uint8_t op = u8();
        switch (op)
        {
            case nameOp:
            {
                const NameRef n = nameString();
                AmlValue v;
                std::string unknown;
                try
                {
                    v = dataObject(scope);
                }
                catch (const UnknownValue& u)
                {
                    unknown = u.why;
                }
                if (AmlObject* o = define(scope, n, AmlObject::Kind::data, at))
                {
                    o->value = std::move(v);
                    o->unknownWhy = std::move(unknown);
                }
                return;
            }
            case scopeOp:
                scopedDefinition(scope, 0, at);
                return;
            case methodOp:
            {
                const std::size_t end = pkgEnd();
                const NameRef n = within(end, [&] { return nameString(); });
                const std::uint8_t flags = within(end, [&] { return u8(); });
                if (AmlObject* o =
                        define(scope, n, AmlObject::Kind::method, at))
                {
                    o->argCount = flags & 0x07;
                    o->bodyBegin = pos_;
                    o->bodyEnd = end;
                }
                pos_ = end;
                return;
            }
            case externalOp:
            {
                const NameRef n = nameString();
                const std::uint8_t type = u8();
                const std::uint8_t args = u8();
                AmlObject o;
                o.kind = AmlObject::Kind::external;
                o.path = definitionPath(n, scope);
                o.table = table_;
                o.argCount = type == 8 ? static_cast<std::uint8_t>(args & 7)
                                       : 0;
                if (loading_ != nullptr)
                {
                    loading_->define(std::move(o));
                }
                return;
            }
            case aliasOp:
            {
                const NameRef source = nameString();
                const NameRef alias = nameString();
                // Copy the path first: defining the alias may move objects.
                const AmlObject* target =
                    ns_.followAlias(ns_.resolve(source.text(), scope));
                const std::string targetPath =
                    target != nullptr ? target->path
                                      : definitionPath(source, scope);
                if (AmlObject* o =
                        define(scope, alias, AmlObject::Kind::other, at))
                {
                    o->aliasOf = targetPath;
                }
                return;
            }
            case ifOp:
                ifElse(scope, at);
                return;
            case elseOp:
            {
                // An Else without an If just before it: skip it.
                const std::size_t end = pkgEnd();
                note(scope, at, "Else without If; skipped");
                pos_ = end;
                return;
            }
            case whileOp:
            {
                const std::size_t end = pkgEnd();
                note(scope, at,
                     "While at module level is not run; its body was "
                     "skipped",
                     true);
                pos_ = end;
                return;
            }
            case createDWordFieldOp:
            case createWordFieldOp:
            case createByteFieldOp:
            case createBitFieldOp:
            case createQWordFieldOp:
            {
                (void)termArg(scope);
                (void)termArg(scope);
                define(scope, nameString(), AmlObject::Kind::other, at);
                return;
            }
            case extOpPrefix:
                loadExtended(scope, at);
                return;
            case noopOp:
            case breakPointOp:
                return;
            default:
                // Any other statement: parse it, run nothing.
                pos_ = at;
                (void)termArg(scope);
                return;
        }
    }

    // Counts nesting while alive; fails past maxDepth.
    class Deeper
    {
      public:
        Deeper(AmlParser& p, std::size_t at) : p_(p)
        {
            if (++p_.depth_ > maxDepth)
            {
                --p_.depth_;
                p_.fail(at, "terms nest deeper than " +
                                std::to_string(maxDepth) + " levels");
            }
        }
        ~Deeper()
        {
            --p_.depth_;
        }
        Deeper(const Deeper&) = delete;
        Deeper& operator=(const Deeper&) = delete;

      private:
        AmlParser& p_;
    };

    // Accounts for `nodes` value elements created or copied.
    void charge(std::size_t nodes, std::size_t at)
    {
        if (nodes > budget_)
        {
            budget_ = 0;
            fail(at,
                 "the values in these tables exceed the reader's limit "
                 "of " +
                     std::to_string(Namespace::elementBudget) + " elements");
        }
        budget_ -= nodes;
    }

    const Namespace& ns_;
    Namespace* loading_;
    std::vector<AmlNote>& notes_;
    std::size_t& budget_;
    unsigned depth_ = 0;
    std::size_t table_;
    const std::vector<std::uint8_t>& bytes_;
    std::size_t pos_;
    std::size_t limit_;
    bool narrow_; // 32-bit integers (table revision < 2)
};

Namespace::Namespace()
{
    AmlObject root;
    root.kind = AmlObject::Kind::scope;
    root.path = "\\";
    define(std::move(root));
    // The predefined root scopes every OS creates.
    for (const char* name : {"_GPE", "_PR_", "_SB_", "_SI_", "_TZ_"})
    {
        AmlObject o;
        o.kind = AmlObject::Kind::scope;
        o.path = childPath("\\", name);
        define(std::move(o));
    }
}

std::pair<AmlObject&, bool> Namespace::define(AmlObject object)
{
    auto it = byPath_.find(object.path);
    if (it == byPath_.end())
    {
        byPath_.emplace(object.path, objects_.size());
        objects_.push_back(std::move(object));
        return {objects_.back(), true};
    }
    AmlObject& existing = objects_[it->second];
    if (object.kind == AmlObject::Kind::external)
    {
        return {existing, true}; // a declaration never replaces anything
    }
    // A definition replaces an External declaration, or the implicit scope
    // a Scope () opened before the object was defined.
    if (existing.kind == AmlObject::Kind::external ||
        existing.kind == AmlObject::Kind::scope)
    {
        existing = std::move(object);
        return {existing, true};
    }
    return {existing, false};
}

void Namespace::load(const Table& table)
{
    const std::string& sig = table.header.signature;
    if (sig != "DSDT" && sig != "SSDT")
    {
        throw AcpiError(table.label(), "not an AML table (DSDT or SSDT)");
    }
    if (table.bytes.size() < headerSize)
    {
        throw AcpiError(table.label(), "shorter than its header");
    }
    if (sig == "DSDT" && tables_.empty())
    {
        // Integer width is the DSDT's, for every table (as ACPICA does).
        narrow_ = table.header.revision < 2;
    }
    tables_.push_back(table);
    AmlParser parser(*this, this, notes_, budget_, tables_.size() - 1,
                     headerSize, tables_.back().bytes.size());
    parser.loadTermList("\\");
}

const AmlObject* Namespace::find(std::string_view path) const
{
    auto it = byPath_.find(path);
    return it == byPath_.end() ? nullptr : &objects_[it->second];
}

std::string paddedPath(std::string_view path)
{
    return mapSegments(path, [](std::string_view seg) {
        std::string padded(seg);
        if (padded.size() < 4)
        {
            padded.resize(4, '_');
        }
        return padded;
    });
}

const AmlObject* Namespace::resolve(std::string_view text,
                                    std::string_view scope) const
{
    const std::string padded = paddedPath(text);
    std::string_view name = padded;
    if (name.empty())
    {
        return nullptr;
    }
    if (name.front() == '\\')
    {
        return find(name);
    }
    std::string base(scope);
    while (!name.empty() && name.front() == '^')
    {
        base = parentPath(base);
        name.remove_prefix(1);
    }
    const bool prefixed = base != scope;
    if (name.find('.') != std::string_view::npos || prefixed)
    {
        return find(childPath(base, name));
    }
    // A single segment: search the scope, then each parent.
    while (true)
    {
        if (const AmlObject* o = find(childPath(base, name)))
        {
            return o;
        }
        if (base == "\\")
        {
            return nullptr;
        }
        base = parentPath(base);
    }
}

const AmlObject* Namespace::followAlias(const AmlObject* o) const
{
    for (int hops = 0; o != nullptr && !o->aliasOf.empty(); ++hops)
    {
        if (hops == 8)
        {
            return nullptr; // an alias loop
        }
        o = find(o->aliasOf);
    }
    return o;
}

AmlObject* Namespace::findMutable(std::string_view path)
{
    auto it = byPath_.find(path);
    return it == byPath_.end() ? nullptr : &objects_[it->second];
}

Evaluation Namespace::evaluate(std::string_view path) const
{
    const AmlObject* o = followAlias(find(path));
    Evaluation e;
    if (o == nullptr)
    {
        return e;
    }
    switch (o->kind)
    {
        case AmlObject::Kind::data:
            if (!o->unknownWhy.empty())
            {
                e.status = Evaluation::Status::unevaluable;
                e.why = displayPath(o->path) +
                        " is not known statically: " + o->unknownWhy;
                return e;
            }
            e.status = Evaluation::Status::ok;
            e.value = o->value;
            return e;
        case AmlObject::Kind::method:
        {
            std::vector<AmlNote> ignored; // the reason is in `why`
            std::size_t budget = elementBudget;
            AmlParser parser(*this, nullptr, ignored, budget, o->table,
                             o->bodyBegin, o->bodyEnd);
            return parser.evaluateBody(o->path);
        }
        case AmlObject::Kind::external:
            e.status = Evaluation::Status::unevaluable;
            e.why = o->path + " is declared External and not defined in the "
                              "loaded tables";
            return e;
        default:
            e.status = Evaluation::Status::unevaluable;
            e.why = o->path + " is not a data object or method";
            return e;
    }
}

} // namespace cppc::acpi
