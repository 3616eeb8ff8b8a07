// SPDX-License-Identifier: Apache-2.0
// bus_fuzz's calls: each one made (a Governor1 method, a property, Peer
// or Introspectable, or a made-up member, on the right or a wrong path and
// interface, with the right or random arguments), sent, and its answer
// handed to the checks; and the whole run.
#include "tests/integration/fuzzer.hpp"

#include <algorithm>
#include <thread>

namespace cppcgov::test::fuzz
{
namespace
{

constexpr auto replyLimit = std::chrono::seconds(5);

constexpr std::array<const char*, 5> wrongInterfaces{
    "org.cppcgov.Governor2", "org.cppcgov.governor1",
    "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Peer", "a.b"};

// What a call is, for checking its answer.
enum class Kind
{
    governorRight, // a Governor1 method with its own signature
    mustFail,      // a call the daemon must refuse
    anything,      // any answer will do
};

// Whether an error name means the call got no answer from the daemon.
bool transportError(const sdbus::Error& e)
{
    static constexpr std::array<std::string_view, 9> names{
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.Timeout",
        "org.freedesktop.DBus.Error.TimedOut",
        "org.freedesktop.DBus.Error.Disconnected",
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.NoServer",
        "org.freedesktop.DBus.Error.NoNetwork",
        "org.freedesktop.DBus.Error.IOError"};
    for (const auto name : names)
    {
        if (e.getName() == name)
        {
            return true;
        }
    }
    // sdbus-c++'s own error when sd_bus_call failed without a reply.
    return e.getName() == "org.sdbuscpp.Error" &&
           e.getMessage().starts_with("Failed to call method");
}

} // namespace

sdbus::IProxy& Fuzzer::proxyFor(const std::string& path)
{
    auto& proxy = proxies_[path];
    if (!proxy)
    {
        proxy = sdbus::createProxy(*connection_, busName, path);
    }
    return *proxy;
}

bool Fuzzer::send(const sdbus::MethodCall& call, Answer& answer,
                  const std::string& desc)
{
    const auto start = Clock::now();
    try
    {
        answer.reply = call.send(replyTimeoutUs);
        answer.ok = true;
    }
    catch (const sdbus::Error& e)
    {
        if (transportError(e))
        {
            return failed(desc,
                          "no answer: " + e.getName() + ": " + e.getMessage());
        }
        answer.errorName = e.getName();
        answer.errorMessage = e.getMessage();
    }
    const auto took = Clock::now() - start;
    if (took > replyLimit)
    {
        return failed(
            desc,
            "answered after " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took)
                        .count()) +
                " ms");
    }
    return true;
}

bool Fuzzer::fuzzOne(std::uint64_t index)
{
    index_ = index;
    std::string path = objectPath;
    std::string iface;
    std::string member;
    Kind kind = Kind::anything;
    const std::uint64_t what = below(100);
    const MethodShape* method = nullptr;
    if (what < 60)
    {
        method = &methods_[below(methods_.size())];
        iface = governorInterface;
        member = method->name;
        kind = Kind::governorRight;
        if (chance(8))
        {
            path = pick(wrongPaths);
            kind = Kind::mustFail;
        }
        else if (chance(8))
        {
            iface = pick(wrongInterfaces);
            kind = Kind::mustFail;
        }
    }
    else if (what < 80)
    {
        iface = propertiesInterface;
        static constexpr std::array<const char*, 3> members{"Get", "GetAll",
                                                            "Set"};
        member = pick(members);
        if (chance(5))
        {
            path = pick(wrongPaths);
        }
    }
    else if (what < 87)
    {
        iface = chance(50) ? introspectableInterface : peerInterface;
        member = iface == peerInterface ? "Ping" : "Introspect";
        if (chance(20))
        {
            path = pick(wrongPaths);
        }
    }
    else
    {
        iface = chance(80) ? std::string(governorInterface)
                           : std::string(pick(wrongInterfaces));
        member = memberName();
        kind = iface.starts_with("org.freedesktop.") ? Kind::anything
                                                     : Kind::mustFail;
        for (const auto& m : methods_)
        {
            if (member == m.name)
            {
                kind = Kind::anything;
            }
        }
    }

    sdbus::MethodCall call;
    std::string desc = path + " " + iface + "." + member + "(";
    std::string signature;
    std::vector<std::uint64_t> values;
    std::vector<std::uint32_t> cpus;
    FdChoice* fd = nullptr;
    const std::uint64_t argMode = below(100);
    fdsPlanned_ = 0;
    randomHandles_.clear();
    inArray_ = 0;
    elementsLeft_ = 20000;
    try
    {
        call = proxyFor(path).createMethodCall(iface, member);
        if (argMode < 65 && method != nullptr)
        {
            // The right signature, with random and boundary values.
            signature = method->signature;
            ++rightCalls_[member];
            for (std::size_t p = 0; p < signature.size(); ++p)
            {
                const char c = signature[p];
                p += c == 'a' ? 1 : 0; // "au": one argument
                if (!desc.ends_with("("))
                {
                    desc += ", ";
                }
                switch (c)
                {
                    case 'a':
                        cpus = cpusValue();
                        call << cpus;
                        desc += "au[" + std::to_string(cpus.size()) + "]";
                        if (cpus.size() <= 4)
                        {
                            for (const auto cpu : cpus)
                            {
                                desc += " " + std::to_string(cpu);
                            }
                        }
                        break;
                    case 'u':
                    {
                        const std::uint32_t v =
                            (values.empty() && member != "SetLatencyCpus")
                                ? pidValue()
                                : latencyValue();
                        values.push_back(v);
                        put(call, desc, 'u', v);
                        break;
                    }
                    case 'b':
                    {
                        const bool v = chance(30);
                        call << v;
                        values.push_back(v ? 1 : 0);
                        desc += v ? "b:true" : "b:false";
                        break;
                    }
                    case 'q':
                    {
                        const std::uint16_t v = utilValue();
                        values.push_back(v);
                        put(call, desc, 'q', v);
                        break;
                    }
                    case 't':
                    {
                        const std::uint64_t v = handleValue();
                        values.push_back(v);
                        put(call, desc, 't', v);
                        break;
                    }
                    case 's':
                    {
                        // The headroom calculations, and anything else.
                        const std::uint64_t which = below(3);
                        const std::string v = which == 0   ? "min"
                                              : which == 1 ? "average"
                                                           : stringValue();
                        call << v;
                        desc += "s:" + v;
                        break;
                    }
                    case 'h':
                        fd = &pickFd();
                        call << sdbus::UnixFd(fd->fd.get());
                        values.push_back(0);
                        desc += "h:" + fd->what;
                        break;
                    default:
                        break;
                }
            }
        }
        else if (argMode < 70 && iface == propertiesInterface)
        {
            // Properties with plausible arguments.
            const std::string propIface =
                chance(80) ? governorInterface : stringValue();
            const std::string prop =
                chance(80) ? pick(properties_) : stringValue();
            call << propIface;
            desc += "s:" + propIface;
            if (member != "GetAll")
            {
                call << prop;
                desc += ", s:" + prop;
            }
            if (member == "Set")
            {
                desc += ", ";
                appendOf(call, "v", desc);
                kind = Kind::mustFail;
            }
            else if (member == "Get" &&
                     (propIface != governorInterface ||
                      std::find(properties_.begin(), properties_.end(), prop) ==
                          properties_.end()))
            {
                kind = Kind::mustFail;
            }
        }
        else if (argMode < 90)
        {
            // Random types and counts.
            for (std::uint64_t n = below(6) + 1; n > 0; --n)
            {
                const std::string type = randomType(0, true);
                if (!desc.ends_with("("))
                {
                    desc += ", ";
                }
                appendOf(call, type, desc);
                signature += type;
            }
        }
        // else: no arguments.
    }
    catch (const sdbus::Error& e)
    {
        return failed(desc, "building the call failed: " + e.getName() + ": " +
                                e.getMessage());
    }
    desc += ")";
    if (method != nullptr && signature != method->signature)
    {
        kind = Kind::mustFail;
    }
    if (iface == propertiesInterface && member == "Set")
    {
        kind = Kind::mustFail;
    }
    if (method != nullptr && kind == Kind::governorRight && argMode >= 65)
    {
        // Random types that happened to form the right signature: the
        // values are not tracked, so any answer will do.
        kind = Kind::anything;
    }
    if (options_.verbose)
    {
        std::cerr << "#" << index << " " << desc << '\n';
    }

    Answer answer;
    if (!send(call, answer, desc))
    {
        return false;
    }
    ++histogram_[answer.ok ? std::string("(method return)") : answer.errorName];
    switch (kind)
    {
        case Kind::mustFail:
            if (answer.ok)
            {
                return failed(desc, "succeeded but must be refused");
            }
            return true;
        case Kind::governorRight:
            return checkGovernorReply(member, values, cpus, fd, answer, desc);
        case Kind::anything:
            if (method != nullptr && signature == method->signature &&
                answer.ok)
            {
                return trackUntyped(member, answer, desc);
            }
            return true;
    }
    return true;
}

bool Fuzzer::run()
{
    std::cout << "bus_fuzz: seed " << options_.seed << '\n' << std::flush;
    try
    {
        connection_ =
            sdbus::createSessionBusConnectionWithAddress(options_.address);
        monitor_ =
            sdbus::createSessionBusConnectionWithAddress(options_.address);
        uniqueName_ = connection_->getUniqueName();
        auto proxy = sdbus::createProxy(*monitor_, busName, objectPath);
        cpuCount_ = countProperty(*proxy, "CpuCount");
        std::string xml;
        proxy->callMethod("Introspect")
            .onInterface(introspectableInterface)
            .storeResultsTo(xml);
        cppcgov::test::InterfaceShape shape =
            cppcgov::test::parseInterface(xml, governorInterface);
        methods_ = std::move(shape.methods);
        properties_ = std::move(shape.properties);
    }
    catch (const sdbus::Error& e)
    {
        std::cerr << "bus_fuzz: cannot reach cppcgovd: " << e.what() << '\n';
        return false;
    }
    catch (const std::runtime_error& e)
    {
        std::cerr << "bus_fuzz: reading the daemon's interface: " << e.what()
                  << '\n';
        return false;
    }
    std::cout << "bus_fuzz: connection " << uniqueName_ << ", " << cpuCount_
              << " CPUs, pid " << self_ << ", child " << child_ << '\n';
    if (methods_.empty() || properties_.empty())
    {
        std::cerr << "bus_fuzz: the daemon's " << governorInterface
                  << " has no methods or no properties\n";
        return false;
    }
    for (const MethodShape& m : methods_)
    {
        if (!canGenerate(m.signature))
        {
            std::cerr << "bus_fuzz: " << m.name << " takes '" << m.signature
                      << "', arguments bus_fuzz cannot make: teach it\n";
            return false;
        }
    }
    std::cout << "bus_fuzz: " << methods_.size() << " methods, "
              << properties_.size() << " properties\n";

    const auto start = Clock::now();
    const auto end =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(options_.seconds));
    std::uint64_t n = 0;
    bool ok = true;
    while (ok && (options_.calls ? n < *options_.calls : Clock::now() < end))
    {
        ++n;
        ok = fuzzOne(n);
        if (ok && n % options_.checkEvery == 0)
        {
            ok = alive(*monitor_, "after call #" + std::to_string(n));
        }
    }
    const double took =
        std::chrono::duration<double>(Clock::now() - start).count();
    std::cout << "bus_fuzz: " << n << " calls in " << took << " s\n";
    std::cout << "bus_fuzz: answers:\n";
    for (const auto& [name, count] : histogram_)
    {
        std::cout << "  " << name << " " << count << '\n';
    }
    std::cout << "bus_fuzz: " << seen_.size() << " handles given, "
              << live_.size() << " not released\n"
              << std::flush;
    if (ok)
    {
        ok = finalChecks();
    }
    // Every method was called with its own signature (a short run may
    // miss one by chance: only checked over enough calls).
    for (const MethodShape& m : methods_)
    {
        if (ok && n >= 100 * methods_.size() && rightCalls_[m.name] == 0)
        {
            std::cerr << "bus_fuzz: " << m.name
                      << " was never called with its signature\n";
            ok = false;
        }
    }
    if (ok)
    {
        std::cout << "bus_fuzz: OK\n";
    }
    else
    {
        std::cerr << "bus_fuzz: FAILED (rerun with --seed " << options_.seed
                  << ")\n";
    }
    return ok;
}

} // namespace cppcgov::test::fuzz
