// SPDX-License-Identifier: Apache-2.0
// The AML reader: namespace loading, module-level If, static evaluation of
// _CPC methods, name resolution, and robustness against damaged AML.
#include "aml_builder.hpp"
#include "lib/acpi/aml.hpp"
#include "lib/acpi/processors.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::acpi
{
namespace
{

using namespace testing; // the AML builder
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Namespace loaded(std::initializer_list<Table> tables)
{
    Namespace ns;
    for (const Table& t : tables)
    {
        ns.load(t);
    }
    return ns;
}

std::string notesOf(const Namespace& ns)
{
    std::string s;
    for (const AmlNote& n : ns.notes())
    {
        s += n.scope + ": " + n.message + "\n";
    }
    return s;
}

TEST(AmlTest, LoadsNamedDataObjectsOfEveryKind)
{
    const Namespace ns = loaded({table(
        "DSDT",
        scope("\\_SB",
              cat({nameOp("INT1", integer(0x1234'5678'9A)),
                   nameOp("STR1", string("hi")),
                   nameOp("BUF1", buffer({1, 2, 3})),
                   nameOp("PKG1", package({integer(7), string("x")}))})))});
    EXPECT_THAT(ns.notes(), IsEmpty()) << notesOf(ns);
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\_SB_.INT1")), "int:0x123456789a");
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\_SB_.STR1")), "str:\"hi\"");
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\_SB_.BUF1")), "buf:010203");
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\_SB_.PKG1")),
              "pkg[int:0x7,str:\"x\"]");
    EXPECT_EQ(ns.evaluate("\\_SB_.NONE").status, Evaluation::Status::absent);
}

TEST(AmlTest, OnesIs32BitsInRevision1Tables)
{
    const Namespace narrow = loaded({table("DSDT", nameOp("ONES", {0xFF}), 1)});
    const Namespace wide = loaded({table("DSDT", nameOp("ONES", {0xFF}), 2)});
    EXPECT_EQ(narrow.evaluate("\\ONES").value.integer, 0xFFFF'FFFFU);
    EXPECT_EQ(wide.evaluate("\\ONES").value.integer, ~std::uint64_t{0});
}

TEST(AmlTest, BufferSizeLargerThanInitializerIsZeroPadded)
{
    const Namespace ns = loaded({table(
        "DSDT", nameOp("BUF", cat({{0x11}, pkg(cat({integer(4), {9}}))})))});
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\BUF_")), "buf:09000000");
}

TEST(AmlTest, PackageShorterThanItsCountIsPaddedWithUninitialized)
{
    const Namespace ns =
        loaded({table("DSDT", nameOp("PKG", cat({{0x12}, pkg({3, 0x01})})))});
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\PKG_")),
              "pkg[int:0x1,other:Uninitialized,other:Uninitialized]");
}

TEST(AmlTest, FindsProcessorDevicesWithTheirObjects)
{
    const Namespace ns = loaded({table(
        "DSDT",
        scope("\\_SB",
              cat({cpuDevice("CPU0", 0x100,
                             cat({nameOp("_CPC",
                                         cpcPackage(reg(0, 32, 0, 3, 0x1000))),
                                  nameOp("_PSD", psdPackage(1, 0xFD, 1))})),
                   device("UART", nameOp("_HID", string("ARMH0011")))})))});
    const std::vector<ProcessorDevice> cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_EQ(cpus[0].path, "\\_SB.CPU0");
    EXPECT_EQ(cpus[0].uid, 0x100U);
    EXPECT_EQ(cpus[0].cpc.status, Evaluation::Status::ok);
    EXPECT_EQ(cpus[0].cpc.value.elements.size(), 23U);
    EXPECT_EQ(formatEvaluation(cpus[0].psd),
              "pkg[pkg[int:0x5,int:0x0,int:0x1,int:0xfd,int:0x1]]");
    EXPECT_THAT(cpus[0].problems, IsEmpty());
}

TEST(AmlTest, CpcMethodReturningANamedPackageUnderAnIfIsEvaluated)
{
    // The Ampere idiom: Name (PCPC, ...) and, under If ((CPCE == One)),
    // Method (_CPC) { Return (PCPC) }, with CPCE defined further up.
    const Bytes cpu =
        cpuDevice("C000", 0,
                  cat({nameOp("PCPC", cpcPackage(reg(0x0A, 32, 0, 2, 0x14))),
                       ifOp(lequal(name("CPCE"), integer(1)),
                            method("_CPC", 0, ret(name("PCPC"))))}));
    const Namespace ns =
        loaded({table("DSDT", scope("\\_SB", cat({nameOp("CPCE", integer(1)),
                                                  device("SYST", cpu)})))});
    EXPECT_THAT(ns.notes(), IsEmpty()) << notesOf(ns);
    const auto cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_EQ(cpus[0].path, "\\_SB.SYST.C000");
    ASSERT_EQ(cpus[0].cpc.status, Evaluation::Status::ok);
    EXPECT_EQ(cpus[0].cpc.value.elements[7].buffer[3], 0x0A); // PCC
}

TEST(AmlTest, FalsePredicateLeavesTheDefinitionOutAndElseIsTaken)
{
    const Bytes body = cat(
        {ifOp(lequal(name("\\FLAG"), integer(1)), nameOp("_CPC", integer(1))),
         elseOp(nameOp("ALT", integer(2)))});
    const Namespace ns = loaded(
        {table("DSDT",
               cat({nameOp("FLAG", integer(0)), cpuDevice("CPU0", 0, body)}))});
    EXPECT_EQ(ns.evaluate("\\CPU0._CPC").status, Evaluation::Status::absent);
    EXPECT_EQ(ns.evaluate("\\CPU0.ALT_").value.integer, 2U);
    EXPECT_THAT(ns.notes(), IsEmpty()) << notesOf(ns);
}

TEST(AmlTest, UnknownPredicateIsReportedAgainstTheDevice)
{
    const Bytes body = ifOp(lequal(name("CPCE"), integer(1)),
                            method("_CPC", 0, ret(name("PCPC"))));
    const Namespace ns =
        loaded({table("DSDT", cat({regionField("GNVS", "CPCE"),
                                   cpuDevice("CPU0", 0, body)}))});
    const auto cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_EQ(cpus[0].cpc.status, Evaluation::Status::absent);
    ASSERT_EQ(cpus[0].problems.size(), 1U);
    EXPECT_THAT(cpus[0].problems[0],
                AllOf(HasSubstr("predicate is not known statically"),
                      HasSubstr("CPCE is a field unit"),
                      HasSubstr("were not loaded")));
}

TEST(AmlTest, MethodBodiesOtherThanAReturnAreNotGuessed)
{
    const Bytes store = cat({{0x70}, integer(5), {0x60}}); // Store (5, Local0)
    const Namespace ns = loaded({table(
        "DSDT", cpuDevice("CPU0", 0,
                          cat({method("_CPC", 0, cat({store, ret({0x60})})),
                               method("_PSD", 0, ret({0x60})),
                               method("_UID", 0, ret(integer(0x42)))})))});
    const auto cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_EQ(cpus[0].cpc.status, Evaluation::Status::unevaluable);
    EXPECT_THAT(cpus[0].cpc.why, HasSubstr("starts with Store, not Return"));
    EXPECT_EQ(cpus[0].psd.status, Evaluation::Status::unevaluable);
    EXPECT_THAT(cpus[0].psd.why, HasSubstr("Local0 has no static value"));
    // A method returning a constant is evaluated (this one shadows the
    // Name (_UID) cpuDevice adds, which stays the first definition).
    EXPECT_EQ(cpus[0].uid, 0U);
}

TEST(AmlTest, ExternalIsReplacedByTheDefinitionInALaterTable)
{
    const Table dsdt = table("DSDT", external("\\_SB.PCPC", 4));
    const Table ssdt =
        table("SSDT", scope("\\_SB", nameOp("PCPC", package({integer(9)}))));
    const Namespace ns = loaded({dsdt, ssdt});
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\_SB_.PCPC")), "pkg[int:0x9]");
    const Namespace only = loaded({dsdt});
    EXPECT_EQ(only.evaluate("\\_SB_.PCPC").status,
              Evaluation::Status::unevaluable);
}

TEST(AmlTest, LegacyProcessorObjectsUseTheirIdAsUid)
{
    const Namespace ns = loaded({table(
        "DSDT",
        scope("\\_PR", processor("CPU1", 7,
                                 nameOp("_CPC", cpcPackage(reg(0, 32, 0, 3,
                                                               0x2000))))))});
    const auto cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_TRUE(cpus[0].legacyProcessor);
    EXPECT_EQ(cpus[0].uid, 7U);
    EXPECT_EQ(cpus[0].path, "\\_PR.CPU1");
}

TEST(AmlTest, NameResolutionSearchesParentsOnlyForSingleSegments)
{
    const Namespace ns = loaded(
        {table("DSDT",
               cat({nameOp("TOP", integer(1)),
                    scope("\\_SB", cat({device("DEV", nameOp("IN", integer(2))),
                                        device("OTH", {})}))}))});
    EXPECT_NE(ns.resolve("TOP", "\\_SB_.OTH_"), nullptr);
    EXPECT_EQ(ns.resolve("IN", "\\_SB_.OTH_"), nullptr);
    EXPECT_NE(ns.resolve("DEV.IN", "\\_SB_"), nullptr);
    EXPECT_EQ(ns.resolve("DEV.IN", "\\_SB_.OTH_"), nullptr);
    EXPECT_NE(ns.resolve("^DEV.IN", "\\_SB_.OTH_"), nullptr);
    EXPECT_NE(ns.resolve("\\_SB_.DEV_.IN__", "\\"), nullptr);
}

TEST(AmlTest, DisplayPathsDropSegmentPadding)
{
    EXPECT_EQ(displayPath("\\_SB_.C000.PCPC"), "\\_SB.C000.PCPC");
    EXPECT_EQ(displayPath("\\_PR_.CP__"), "\\_PR.CP");
    EXPECT_EQ(displayPath("\\"), "\\");
}

TEST(AmlTest, ALengthRunningPastItsScopeSkipsOnlyThatScope)
{
    // Device A claims more bytes than the Scope holding it has; device B
    // after the Scope must still load.
    Bytes broken = device("A", nameOp("X", integer(1)));
    broken[2] = 0x3F; // PkgLength far beyond the enclosing Scope
    const Namespace ns =
        loaded({table("DSDT", cat({scope("\\_SB", broken), device("B", {})}))});
    EXPECT_NE(ns.find("\\B___"), nullptr);
    ASSERT_EQ(ns.notes().size(), 1U);
    EXPECT_THAT(ns.notes()[0].message, HasSubstr("runs past its enclosing"));
    EXPECT_EQ(ns.notes()[0].scope, "\\_SB_");
}

TEST(AmlTest, EveryTruncationIsHandledWithoutCrashing)
{
    const Bytes body = scope(
        "\\_SB",
        cat({nameOp("CPCE", integer(1)),
             cpuDevice("C000", 0,
                       cat({nameOp("PCPC", cpcPackage(reg(0x0A, 32, 0, 2, 4))),
                            ifOp(lequal(name("CPCE"), integer(1)),
                                 method("_CPC", 0, ret(name("PCPC")))),
                            elseOp(nameOp("NOPE", integer(0)))}))}));
    const Table whole = table("DSDT", body);
    for (std::size_t n = 36; n < whole.bytes.size(); ++n)
    {
        Table t = whole;
        t.bytes.resize(n);
        Namespace ns;
        ns.load(t); // damage becomes notes, never a crash
        (void)findProcessors(ns);
    }
}

TEST(AmlTest, RejectsTablesThatAreNotAml)
{
    Namespace ns;
    EXPECT_THROW(ns.load(table("APIC", {0, 0, 0, 0, 0, 0, 0, 0})), AcpiError);
}

TEST(AmlTest, DuplicateDefinitionsKeepTheFirstAndSaySo)
{
    const Namespace ns = loaded({table(
        "DSDT", cat({nameOp("DUP", integer(1)), nameOp("DUP", integer(2))}))});
    EXPECT_EQ(ns.evaluate("\\DUP_").value.integer, 1U);
    ASSERT_EQ(ns.notes().size(), 1U);
    EXPECT_THAT(ns.notes()[0].message, HasSubstr("defined twice"));
}

} // namespace
} // namespace cppc::acpi

namespace cppc::acpi
{
namespace
{

using namespace testing;
using ::testing::HasSubstr;

TEST(AmlHostileTest, DeepNestingIsRefusedNotAStackOverflow)
{
    Bytes expr(100000, 0x92); // LNot (LNot (... Zero))
    expr.push_back(0x00);
    Namespace ns;
    ns.load(table("DSDT", cat({nameOp("X", integer(1)), expr})));
    ASSERT_FALSE(ns.notes().empty());
    EXPECT_THAT(ns.notes()[0].message, HasSubstr("nest deeper than 256"));
    EXPECT_EQ(ns.evaluate("\\X___").value.integer, 1U);
}

TEST(AmlHostileTest, NestedIncrementsAreParsedOnce)
{
    // Increment (Increment (... Local0)): parsing each operand twice would
    // take 2^200 steps.
    Bytes expr(200, 0x75);
    expr.push_back(0x60);
    Namespace ns;
    ns.load(table("DSDT", cat({expr, nameOp("X", integer(1))})));
    EXPECT_EQ(ns.evaluate("\\X___").value.integer, 1U);
}

TEST(AmlHostileTest, AmplifyingPackagesHitTheElementBudget)
{
    // Each level is a package of 255 references to the previous one.
    Bytes body = nameOp("P000", package({integer(7)}));
    for (int level = 1; level <= 4; ++level)
    {
        Bytes elems{255};
        const std::string prev = "P00" + std::to_string(level - 1);
        for (int i = 0; i < 255; ++i)
        {
            elems = cat({elems, name(prev)});
        }
        body = cat({body, nameOp("P00" + std::to_string(level),
                                 cat({{0x12}, pkg(elems)}))});
    }
    Namespace ns;
    ns.load(table("DSDT", body));
    ASSERT_FALSE(ns.notes().empty());
    EXPECT_THAT(ns.notes().back().message, HasSubstr("reader's limit"));
}

TEST(AmlHostileTest, AliasesResolveThroughChainsAndTableGrowth)
{
    const Namespace ns = loaded(
        {table("DSDT", cat({nameOp("AAAA", integer(5)),
                            nameOp("BBBB", integer(6)),
                            {0x06},
                            name("AAAA"),
                            name("CCCC"), // Alias
                            {0x06},
                            name("CCCC"),
                            name("DDDD"),
                            nameOp("EEEE", package({name("DDDD")}))}))});
    EXPECT_EQ(ns.evaluate("\\DDDD").value.integer, 5U);
    EXPECT_EQ(formatEvaluation(ns.evaluate("\\EEEE")), "pkg[int:0x5]");
}

TEST(AmlLoadTimeTest, ModuleLevelStoresRunInOrder)
{
    const Bytes store = cat({{0x70}, integer(1), name("CPCE")});
    const Namespace ns = loaded(
        {table("DSDT",
               cat({nameOp("CPCE", integer(0)), store,
                    cpuDevice("CPU0", 0,
                              ifOp(lequal(name("CPCE"), integer(1)),
                                   nameOp("_CPC", package({integer(1)}))))}))});
    EXPECT_EQ(ns.evaluate("\\CPU0._CPC").status, Evaluation::Status::ok);
    EXPECT_TRUE(ns.notes().empty()) << notesOf(ns);
}

TEST(AmlLoadTimeTest, AStoreOfAnUnknownValueMakesTheTargetUnknown)
{
    const Bytes store = cat({{0x70}, name("FLD0"), name("CPCE")});
    const Namespace ns = loaded({table(
        "DSDT",
        cat({regionField("OPR0", "FLD0"), nameOp("CPCE", integer(1)), store,
             cpuDevice("CPU0", 0,
                       ifOp(lequal(name("CPCE"), integer(1)),
                            nameOp("_CPC", package({integer(1)}))))}))});
    const auto cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_EQ(cpus[0].cpc.status, Evaluation::Status::absent);
    ASSERT_EQ(cpus[0].problems.size(), 1U);
    EXPECT_THAT(cpus[0].problems[0],
                AllOf(HasSubstr("CPCE is not known statically"),
                      HasSubstr("written by AML while the tables load")));
}

TEST(AmlLoadTimeTest, ABufferOfUnknownSizeIsUnknownAndLoadingGoesOn)
{
    const Bytes buf = cat({{0x11}, pkg(cat({name("FLD0"), Bytes{1, 2}}))});
    const Namespace ns = loaded(
        {table("DSDT", cat({regionField("OPR0", "FLD0"), nameOp("BUF0", buf),
                            nameOp("NEXT", integer(3))}))});
    EXPECT_EQ(ns.evaluate("\\BUF0").status, Evaluation::Status::unevaluable);
    EXPECT_THAT(ns.evaluate("\\BUF0").why, HasSubstr("Buffer size"));
    EXPECT_EQ(ns.evaluate("\\NEXT").value.integer, 3U);
}

TEST(AmlLoadTimeTest, ScopeFindsItsTargetWithTheSearchRules)
{
    const Namespace ns = loaded({table(
        "DSDT",
        scope("\\_SB",
              cat({cpuDevice("CPU0", 0, {}),
                   device("PCI0",
                          cat({scope("CPU0", nameOp("_PSD", integer(1))),
                               scope("NONE", nameOp("X", integer(1)))}))})))});
    EXPECT_EQ(ns.evaluate("\\_SB_.CPU0._PSD").status, Evaluation::Status::ok);
    ASSERT_EQ(ns.notes().size(), 1U);
    EXPECT_THAT(ns.notes()[0].message, HasSubstr("Scope (NONE): no such"));
    EXPECT_TRUE(ns.notes()[0].lost);
}

TEST(AmlLoadTimeTest, ADuplicateDeviceBodyIsSkipped)
{
    const Namespace ns =
        loaded({table("DSDT", cpuDevice("CPU0", 0, {})),
                table("SSDT", device("\\CPU0", nameOp("_PSD", integer(1))))});
    EXPECT_EQ(ns.evaluate("\\CPU0._PSD").status, Evaluation::Status::absent);
}

TEST(AmlLoadTimeTest, IntegerWidthComesFromTheDsdt)
{
    const Namespace ns = loaded(
        {table("DSDT", {}, 2), table("SSDT", nameOp("ONES", {0xFF}), 1)});
    EXPECT_EQ(ns.evaluate("\\ONES").value.integer, ~std::uint64_t{0});
}

TEST(AmlLoadTimeTest, ForwardReferencesInPackagesResolveWhenEvaluated)
{
    const Namespace ns = loaded({table(
        "DSDT",
        cat({cpuDevice("CPU0", 0,
                       nameOp("_PSD", package({package(
                                          {integer(5), integer(0), name("DOM1"),
                                           integer(0xFC), integer(1)})}))),
             nameOp("DOM1", integer(1))}))});
    const auto cpus = findProcessors(ns);
    EXPECT_EQ(formatEvaluation(cpus[0].psd),
              "pkg[pkg[int:0x5,int:0x0,int:0x1,int:0xfc,int:0x1]]");
}

TEST(AmlLoadTimeTest, LegacyProcessorsAreIdentifiedByTheirProcessorId)
{
    const Namespace ns = loaded(
        {table("DSDT", processor("CPU1", 7, nameOp("_UID", integer(9))))});
    const auto cpus = findProcessors(ns);
    ASSERT_EQ(cpus.size(), 1U);
    EXPECT_EQ(cpus[0].uid, 7U);
    ASSERT_EQ(cpus[0].problems.size(), 1U);
    EXPECT_THAT(cpus[0].problems[0], HasSubstr("differs from the ProcessorId"));
}

} // namespace
} // namespace cppc::acpi
