// SPDX-License-Identifier: Apache-2.0
// cppcgovd's configuration files: drop-ins merged in name order, errors
// that name the file, only regular files read (a FIFO, a socket or a
// device is refused without waiting), symlinks followed, and a reload that
// keeps the running configuration on a bad file.
#include "config_test_support.hpp"
#include "daemon/config.hpp"
#include "daemon/yaml_reader.hpp"
#include "temp_tree.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

namespace fs = std::filesystem;
using cppc::test::TempTree;
using policies::Floor;
using policies::PolicyKind;
using test::cpus;
using test::defaultsFrom;
using test::topKeyList;

// ---- Drop-ins ----

TEST(LoadConfigTest, MergesDropInsInNameOrder)
{
    const TempTree dir;
    const fs::path main = dir.write(
        "policy.yaml",
        "policy: schedutil\n"
        "schedutil:\n"
        "  headroom: 1.5\n"
        "  boost: true\n"
        "overrides:\n"
        "  - cpus: \"0\"\n"
        "    policy: performance\n");
    const fs::path second = dir.write(
        "policy.d/20-rack.yaml",
        "schedutil:\n"
        "  headroom: 3.0\n"
        "overrides:\n"
        "  - domain: 2\n"
        "    policy: powersave\n");
    const fs::path first = dir.write(
        "policy.d/10-site.yaml",
        "schedutil:\n"
        "  headroom: 2.0\n"
        "  floor: lowest\n"
        "sampling:\n"
        "  period_us: 2000\n"
        "overrides:\n"
        "  - cpus: \"1\"\n"
        "    policy: powersave\n");
    // Not drop-ins: hidden, another extension.
    dir.write("policy.d/.hidden.yaml", "policy: nonsense\n");
    dir.write("policy.d/30-notes.txt", "policy: nonsense\n");

    const GovernorConfig config = loadConfig(main, dir.path() / "policy.d");

    GovernorConfig expected;
    expected.defaults.schedutil.headroom = 3.0; // the last file wins
    expected.defaults.schedutil.boost = true;   // set by the first only
    expected.defaults.schedutil.floor = Floor::lowest;
    expected.samplingPeriodUs = 2000;
    Override o0;
    o0.selector = cpus({0});
    o0.kind = PolicyKind::performance;
    o0.origin = main.string() + ":6";
    Override o1;
    o1.selector = cpus({1});
    o1.kind = PolicyKind::powersave;
    o1.origin = first.string() + ":7";
    Override o2;
    o2.selector = PsdDomain{2};
    o2.kind = PolicyKind::powersave;
    o2.origin = second.string() + ":4";
    expected.overrides = {o0, o1, o2};
    expected.sources = {main.string(), first.string(), second.string()};
    EXPECT_EQ(config, expected);
}

TEST(LoadConfigTest, DropInsSetBackendKeysOneByOne)
{
    const TempTree dir;
    const fs::path main = dir.write(
        "policy.yaml",
        "backend:\n"
        "  type: simulator\n"
        "  simulator:\n"
        "    layout: packed\n"
        "    cpus: 64\n");
    const fs::path dropIn =
        dir.write("policy.d/10-cpus.yaml", "backend:\n"
                                           "  simulator:\n"
                                           "    cpus: 128\n");
    GovernorConfig expected;
    expected.backend.type = BackendKind::simulator;
    expected.backend.simulator.layout = "packed";
    expected.backend.simulator.cpus = 128;
    expected.sources = {main.string(), dropIn.string()};
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"), expected);
}

TEST(LoadConfigTest, AMissingDropInDirIsFine)
{
    const TempTree dir;
    const fs::path main = dir.write("policy.yaml", "policy: powersave\n");
    GovernorConfig expected = defaultsFrom(main.string());
    expected.defaults.kind = PolicyKind::powersave;
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"), expected);
}

struct LoadErrorCase
{
    std::string name;
    // Writes the files; returns the error expected, with "@" for the
    // directory.
    std::function<std::string(const TempTree&)> setUp;
};

void PrintTo(const LoadErrorCase& c, std::ostream* out)
{
    *out << c.name;
}

class LoadErrorTest : public ::testing::TestWithParam<LoadErrorCase>
{};

TEST_P(LoadErrorTest, NamesTheFile)
{
    const TempTree dir;
    std::string expected = GetParam().setUp(dir);
    expected.replace(expected.find('@'), 1, dir.path().string());
    try
    {
        (void)loadConfig(dir.path() / "policy.yaml", dir.path() / "policy.d");
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        EXPECT_EQ(e.what(), expected);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, LoadErrorTest,
    ::testing::Values(LoadErrorCase{"MissingMainFile",
                                    [](const TempTree&) {
    return std::string("'@/policy.yaml': cannot open: "
                       "No such file or directory");
                                    }},
                      LoadErrorCase{"MainFileIsADirectory",
                                    [](const TempTree& d) {
    fs::create_directory(d.path() / "policy.yaml");
    return std::string("'@/policy.yaml': a directory, not a regular "
                       "file");
                                    }},
    LoadErrorCase{"BadDropIn",
                  [](const TempTree& d) {
    d.write("policy.yaml", "policy: schedutil\n");
    d.write("policy.d/10-ok.yaml", "policy: powersave\n");
    d.write("policy.d/20-bad.yaml", "\nclients:\n  max_handles: lots\n");
    return std::string("'@/policy.d/20-bad.yaml':3:16: "
                       "clients.max_handles: expected a whole number "
                       "from 1 to 4096, got 'lots'");
                  }},
    LoadErrorCase{"DropInFixesTheLayoutUnderAnEarlierCpuCount",
                  [](const TempTree& d) {
    d.write("policy.yaml", "backend:\n  simulator:\n    cpus: 64\n");
    d.write("policy.d/10-orion.yaml",
            "backend:\n  simulator:\n    layout: altra\n");
    return std::string("'@/policy.d/10-orion.yaml':3:13: "
                       "backend.simulator.layout: layout 'altra' has a fixed "
                       "number of CPUs and cannot have the 64 that "
                       "backend.simulator.cpus sets; the layouts that scale: "
                       "rd-n2, packed, neoverse");
                  }},
    LoadErrorCase{"DropInDirIsAFile",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.write("policy.d", "");
    return std::string("'@/policy.d': not a directory");
                  }},
    LoadErrorCase{"TooManyOverridesOverAllFiles",
                  [](const TempTree& d) {
    std::string many = "overrides:\n- &o {domain: 1}\n";
    for (std::size_t i = 1; i < maxOverrides; ++i)
    {
        many += "- *o\n";
    }
    d.write("policy.yaml", many);
    d.write("policy.d/a.yaml", "overrides: [{cpus: \"1\"}]\n");
    return std::string("'@/policy.d/a.yaml':1:13: overrides[0]: more "
                       "than 4096 overrides");
                  }}),
    [](const ::testing::TestParamInfo<LoadErrorCase>& param) {
    return param.param.name;
    });

// ---- Only regular files ----

// A FIFO, a socket or a device opened like a file would block (a FIFO
// with no writer), fail with a bare errno (a socket) or run the device's
// open; each is refused by its kind, without waiting for anything.
void makeFifo(const fs::path& path)
{
    fs::create_directories(path.parent_path());
    if (::mkfifo(path.c_str(), 0600) != 0)
    {
        throw std::system_error(errno, std::system_category(), path);
    }
}

void makeSocket(const fs::path& path)
{
    fs::create_directories(path.parent_path());
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = path.string();
    if (name.size() >= sizeof(address.sun_path))
    {
        throw std::runtime_error("socket path too long: " + name);
    }
    std::copy(name.begin(), name.end(), address.sun_path);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        throw std::system_error(errno, std::system_category(), "socket");
    }
    // The socket file stays once bound, listening or not.
    const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&address),
                          sizeof(address));
    const int err = errno;
    ::close(fd);
    if (rc != 0)
    {
        throw std::system_error(err, std::system_category(), name);
    }
}

INSTANTIATE_TEST_SUITE_P(
    NotARegularFile, LoadErrorTest,
    ::testing::Values(LoadErrorCase{"FifoDropIn",
                                    [](const TempTree& d) {
    d.write("policy.yaml", "policy: schedutil\n");
    d.write("policy.d/50-ok.yaml", "policy: powersave\n");
    makeFifo(d.path() / "policy.d/60-x.yaml");
    return std::string("'@/policy.d/60-x.yaml': a FIFO, not a regular file");
                                    }},
                      LoadErrorCase{"FifoMainFile",
                                    [](const TempTree& d) {
    makeFifo(d.path() / "policy.yaml");
    return std::string("'@/policy.yaml': a FIFO, not a regular file");
                                    }},
    LoadErrorCase{"SocketDropIn",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    makeSocket(d.path() / "policy.d/60-s.yaml");
    return std::string("'@/policy.d/60-s.yaml': a socket, not a regular file");
                  }},
    LoadErrorCase{"DeviceBehindASymlink",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.symlink("policy.d/60-null.yaml", "/dev/null");
    return std::string(
        "'@/policy.d/60-null.yaml': a character device, not a regular file");
                  }},
    LoadErrorCase{"DirectoryNamedLikeADropIn",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.write("policy.d/40-dir.yaml/x.yaml", "policy: powersave\n");
    return std::string("'@/policy.d/40-dir.yaml': a directory, not a "
                       "regular file");
                  }},
    LoadErrorCase{"DanglingSymlink",
                  [](const TempTree& d) {
    d.write("policy.yaml", "");
    d.symlink("policy.d/60-gone.yaml", d.path() / "gone.yaml");
    return std::string("'@/policy.d/60-gone.yaml': cannot open: No such "
                       "file or directory");
                  }}),
    [](const ::testing::TestParamInfo<LoadErrorCase>& param) {
    return param.param.name;
    });

TEST(LoadConfigTest, ThrowsTheFirstOfSeveralErrors)
{
    const TempTree dir;
    const fs::path main = dir.write("policy.yaml", "policy: fast\n"
                                                   "bogus: 1\n");
    const fs::path dropIn =
        dir.write("policy.d/10-x.yaml", "sampling:\n  period_us: 1\n");
    const ConfigReport report = checkConfigFiles(main, dir.path() / "policy.d");
    ASSERT_EQ(report.errors.size(), 3U);
    EXPECT_EQ(report.errors[1].keyPath(), "bogus");
    EXPECT_EQ(report.errors[2].file(), dropIn.string());
    try
    {
        (void)loadConfig(main, dir.path() / "policy.d");
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        EXPECT_EQ(std::string(e.what()), report.errors[0].what());
        EXPECT_EQ(e.line(), 1U);
        EXPECT_EQ(e.keyPath(), "policy");
    }
    // A reload reports them all, one per line.
    const ReloadResult r =
        tryReload(GovernorConfig{}, main, dir.path() / "policy.d");
    EXPECT_EQ(r.error,
              std::string(report.errors[0].what()) + "\n" +
                  report.errors[1].what() + "\n" + report.errors[2].what());
}

TEST(LoadConfigTest, ReadsNoMoreThanItAccepts)
{
    const TempTree dir;
    const fs::path big =
        dir.write("big.yaml", std::string(2 * maxConfigBytes, '#'));
    // One byte more than readYaml() takes, so that it can say so.
    EXPECT_EQ(readConfigFile(big, "big.yaml").size(), maxConfigBytes + 1);
    const fs::path main =
        dir.write("policy.yaml", std::string(maxConfigBytes + 1, '#'));
    try
    {
        (void)loadConfig(main, dir.path() / "policy.d");
        ADD_FAILURE() << "no error";
    }
    catch (const ConfigError& e)
    {
        EXPECT_EQ(e.what(),
                  "'" + main.string() + "': larger than 1048576 bytes");
    }
    dir.write("policy.yaml", std::string(maxConfigBytes, '#'));
    EXPECT_NO_THROW((void)loadConfig(main, dir.path() / "policy.d"));
}

TEST(LoadConfigTest, FollowsSymlinksToRegularFiles)
{
    // /etc often links its files elsewhere: what counts is what they name.
    const TempTree dir;
    const fs::path target =
        dir.write("shared/site.yaml", "policy: powersave\n");
    dir.symlink("policy.yaml", target);
    dir.symlink("policy.d/10-site.yaml", target);
    const fs::path main = dir.path() / "policy.yaml";
    const fs::path dropIn = dir.path() / "policy.d/10-site.yaml";
    GovernorConfig expected;
    expected.defaults.kind = PolicyKind::powersave;
    expected.sources = {main.string(), dropIn.string()};
    EXPECT_EQ(loadConfig(main, dir.path() / "policy.d"), expected);
}

// ---- Reload ----

TEST(TryReloadTest, KeepsTheRunningConfigOnABadFile)
{
    const TempTree dir;
    const fs::path main = dir.write("policy.yaml", "policy: performance\n");
    const fs::path dropIns = dir.path() / "policy.d";
    const GovernorConfig running = loadConfig(main, dropIns);

    dir.write("policy.yaml", "policy: powersave\n");
    const ReloadResult good = tryReload(running, main, dropIns);
    EXPECT_EQ(good.error, "");
    EXPECT_EQ(good.config.defaults.kind, PolicyKind::powersave);

    dir.write("policy.d/50-typo.yaml", "polcy: schedutil\n");
    const ReloadResult bad = tryReload(good.config, main, dropIns);
    EXPECT_EQ(bad.error,
              "'" + (dropIns / "50-typo.yaml").string() +
                  "':1:1: polcy: unknown key; expected one of " + topKeyList);
    EXPECT_EQ(bad.config, good.config);

    fs::remove(main);
    const ReloadResult missing = tryReload(good.config, main, dropIns);
    EXPECT_THAT(missing.error, ::testing::HasSubstr("cannot open"));
    EXPECT_EQ(missing.config, good.config);
}

} // namespace
} // namespace cppcgov::daemon
