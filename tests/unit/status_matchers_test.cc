// tests/lib/status_matchers.h: IsOk / StatusIs on absl::Status and absl::StatusOr<T>, their
// descriptions and explanations (a failure must show the code and the message), and the
// ASSERT_OK / EXPECT_OK / ASSERT_OK_AND_ASSIGN assertions, mismatches included.
#include "tests/lib/status_matchers.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace sarena::testing {
namespace {

using ::testing::DescribeMatcher;
using ::testing::ExplainMatchResult;
using ::testing::HasSubstr;
using ::testing::Matcher;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::StringMatchResultListener;

// Whether `m` matches `value`, with the explanation it gives in *why.
template <typename T, typename M>
bool Explain(const M& m, const T& value, std::string* why) {
  StringMatchResultListener listener;
  bool ok = ExplainMatchResult(m, value, &listener);
  *why = listener.str();
  return ok;
}

const absl::Status kNotFound = absl::NotFoundError("no pod default/web");

TEST(StatusMatchers, IsOkOnStatusAndStatusOr) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::StatusOr<int>(3), IsOk());
  EXPECT_THAT(kNotFound, Not(IsOk()));
  EXPECT_THAT(absl::StatusOr<int>(kNotFound), Not(IsOk()));

  std::string why;
  EXPECT_FALSE(Explain(IsOk(), kNotFound, &why));
  EXPECT_EQ(why, "");  // the value printed says it all
  EXPECT_FALSE(Explain(Not(IsOk()), absl::StatusOr<int>(2), &why));

  EXPECT_EQ(DescribeMatcher<absl::Status>(IsOk()), "is OK");
  EXPECT_EQ(DescribeMatcher<absl::Status>(IsOk(), /*negation=*/true), "is not OK");
}

TEST(StatusMatchers, StatusIsMatchesCodeAndMessage) {
  EXPECT_THAT(kNotFound, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(absl::StatusOr<int>(kNotFound), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(kNotFound, StatusIs(absl::StatusCode::kNotFound, "no pod default/web"));
  EXPECT_THAT(kNotFound, StatusIs(absl::StatusCode::kNotFound, HasSubstr("default/web")));
  EXPECT_THAT(kNotFound, StatusIs(::testing::AnyOf(absl::StatusCode::kNotFound,
                                                   absl::StatusCode::kUnavailable)));
  EXPECT_THAT(absl::OkStatus(), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(absl::StatusOr<int>(7), StatusIs(absl::StatusCode::kOk, ""));

  // Mismatches: the code, the message, an OK value.
  EXPECT_THAT(kNotFound, Not(StatusIs(absl::StatusCode::kInvalidArgument)));
  EXPECT_THAT(kNotFound, Not(StatusIs(absl::StatusCode::kNotFound, HasSubstr("kube-system"))));
  EXPECT_THAT(absl::StatusOr<int>(7), Not(StatusIs(absl::StatusCode::kNotFound)));

  std::string why;
  EXPECT_FALSE(Explain(StatusIs(absl::StatusCode::kInvalidArgument), kNotFound, &why));
  EXPECT_EQ(why, "whose status code is NOT_FOUND");
  EXPECT_FALSE(Explain(StatusIs(absl::StatusCode::kNotFound, StartsWith("no node")),
                       absl::StatusOr<int>(kNotFound), &why));
  EXPECT_EQ(why, "whose message \"no pod default/web\" does not match");
  EXPECT_TRUE(Explain(StatusIs(absl::StatusCode::kNotFound), kNotFound, &why));

  EXPECT_EQ(DescribeMatcher<absl::Status>(
                StatusIs(absl::StatusCode::kNotFound, HasSubstr("web"))),
            "has a status code that is equal to NOT_FOUND, and a message that has substring "
            "\"web\"");
  EXPECT_EQ(DescribeMatcher<absl::Status>(StatusIs(absl::StatusCode::kNotFound), true),
            "has a status code that isn't equal to NOT_FOUND, or a message that never matches");
}

TEST(StatusMatchers, FailuresPrintCodeAndMessage) {
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(kNotFound, IsOk()),
                          "Expected: is OK\n  Actual: NOT_FOUND: no pod default/web");
  EXPECT_NONFATAL_FAILURE(
      EXPECT_THAT(absl::StatusOr<int>(kNotFound), StatusIs(absl::StatusCode::kInternal)),
      "  Actual: NOT_FOUND: no pod default/web, whose status code is NOT_FOUND");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(absl::StatusOr<int>(4), Not(IsOk())), "  Actual: 4");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(kNotFound) << "while looking",
                          "kNotFound is not OK: NOT_FOUND: no pod default/web\nwhile looking");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::StatusOr<int>(kNotFound)),
                          "is not OK: NOT_FOUND: no pod default/web");
  EXPECT_FATAL_FAILURE(ASSERT_OK(absl::InternalError("boom")), "is not OK: INTERNAL: boom");
}

TEST(StatusMatchers, AssertOkPassesOnOk) {
  ASSERT_OK(absl::OkStatus());
  EXPECT_OK(absl::StatusOr<int>(1));
  ASSERT_OK(absl::StatusOr<std::string>("x")) << "not printed";
}

absl::StatusOr<std::unique_ptr<int>> MakeInt(int v) {
  if (v < 0) return absl::InvalidArgumentError("negative");
  return std::make_unique<int>(v);
}

void AssignNegative() { ASSERT_OK_AND_ASSIGN(auto p, MakeInt(-1)); }

TEST(StatusMatchers, AssertOkAndAssign) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<int> p, MakeInt(4));  // a move-only value
  EXPECT_EQ(*p, 4);
  ASSERT_OK_AND_ASSIGN(p, MakeInt(5));  // an existing variable
  EXPECT_EQ(*p, 5);
  ASSERT_OK_AND_ASSIGN(auto q, MakeInt(6));  // twice on one test: distinct temporaries
  EXPECT_EQ(*q, 6);
  EXPECT_FATAL_FAILURE(AssignNegative(), "MakeInt(-1) is not OK: INVALID_ARGUMENT: negative");
}

}  // namespace
}  // namespace sarena::testing
