// EnumNames: one table gives the printed names, the parser and its message.
#include "tokenbatch/core/enum_names.h"

#include <gtest/gtest.h>

#include "tokenbatch/core/scheduler_options.h"

namespace tokenbatch {
namespace {

enum class Colour { kRed, kGreen, kBlue };
constexpr EnumNames<Colour, 4> kColourNames{
    "colour",
    {{{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kGreen, "verde", /*alias=*/true},
      {Colour::kBlue, "blue"}}}};

TEST(EnumNames, PrintsTheFirstNameParsesEveryNameAndListsTheChoices) {
  static_assert(kColourNames.Name(Colour::kGreen) == "green");
  EXPECT_EQ(kColourNames.Name(static_cast<Colour>(7)), "unknown");
  EXPECT_EQ(*kColourNames.Parse("blue"), Colour::kBlue);
  EXPECT_EQ(*kColourNames.Parse("verde"), Colour::kGreen);  // an alias parses
  EXPECT_EQ(kColourNames.Choices(), "red, green, blue");     // but is never printed
  EXPECT_EQ(kColourNames.Choices("|"), "red|green|blue");
  EXPECT_EQ(kColourNames.Names(), (std::vector<std::string>{"red", "green", "blue"}));
  const absl::StatusOr<Colour> bad = kColourNames.Parse("Red");  // exact, case-sensitive
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(GetErrorKind(bad.status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown colour 'Red'; expected one of: red, green, blue");
  constexpr EnumNames<Colour, 1> kQuoted{"colour", {{{Colour::kRed, "red"}}}, '"'};
  EXPECT_EQ(kQuoted.Parse("x").status().message(), "unknown colour \"x\"; expected one of: red");
}

TEST(EnumNames, EveryOptionEnumRoundTrips) {
  for (BatchWindow w : {BatchWindow::kAdaptive, BatchWindow::kFixed}) {
    EXPECT_EQ(*kBatchWindowNames.Parse(kBatchWindowNames.Name(w)), w);
  }
  EXPECT_EQ(*ParsePackingPolicy("length-aware"), PackingPolicy::kLengthAware);  // the older spelling
  EXPECT_EQ(PackingPolicyName(PackingPolicy::kLengthAware), "length_aware");
}

}  // namespace
}  // namespace tokenbatch
